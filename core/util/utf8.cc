#include "core/util/utf8.h"

#include <cstdint>

#include <fmt/format.h>

namespace lattice {
namespace {

constexpr std::string_view kReplacement = "\xef\xbf\xbd";

// Calls `emit(code_point, encoded)` for each valid UTF-8 sequence of `text`, and
// `emit(-1, kReplacement)` for each byte that does not start one.
template <typename Emit>
void decode(std::string_view text, Emit emit) {
  size_t i = 0;
  while (i < text.size()) {
    auto c = static_cast<unsigned char>(text[i]);
    size_t length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool valid = length > 0 && i + length <= text.size();
    uint32_t code = length == 1 ? c : length == 2 ? (c & 0x1f) : length == 3 ? (c & 0x0f) : (c & 0x07);
    for (size_t k = 1; valid && k < length; ++k) {
      auto next = static_cast<unsigned char>(text[i + k]);
      valid = (next & 0xc0) == 0x80;
      code = (code << 6) | (next & 0x3f);
    }
    // Overlong forms, surrogates and values past U+10FFFF are invalid too.
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    valid = valid && code >= kMin[length] && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff);
    if (valid) {
      emit(static_cast<int64_t>(code), text.substr(i, length));
      i += length;
    } else {
      emit(-1, kReplacement);
      ++i;
    }
  }
}

}  // namespace

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  decode(text, [&](int64_t, std::string_view encoded) { out.append(encoded); });
  return out;
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  decode(text, [&](int64_t code, std::string_view encoded) {
    switch (code) {
      case '\n': out += "\\n"; return;
      case '\r': out += "\\r"; return;
      case '\t': out += "\\t"; return;
      case 0: out += "\\0"; return;
      default: break;
    }
    if ((code >= 0 && code < 0x20) || code == 0x7f) {
      out += fmt::format("\\x{:02x}", code);
    } else if ((code >= 0x80 && code < 0xa0) || code == 0x2028 || code == 0x2029) {
      out += fmt::format("\\u{:04x}", code);
    } else {
      out.append(encoded);
    }
  });
  return out;
}

}  // namespace lattice
