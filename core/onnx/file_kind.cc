#include "core/onnx/file_kind.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "core/util/utf8.h"

namespace lattice {
namespace {

bool starts_with(std::span<const uint8_t> bytes, std::initializer_list<uint8_t> magic) {
  return bytes.size() >= magic.size() && std::equal(magic.begin(), magic.end(), bytes.begin());
}

std::string_view chars(std::span<const uint8_t> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// A ZIP archive by its first entry's name (local file header: name length at 26, name at 30):
// numpy's .npz holds .npy files, torch.save's checkpoints a pickle.
std::string zip_kind(std::span<const uint8_t> bytes) {
  if (bytes.size() < 30) return "a ZIP archive";
  size_t length = bytes[26] | (size_t{bytes[27]} << 8);
  std::string_view name = chars(bytes.subspan(30, std::min(length, bytes.size() - 30)));
  if (name.ends_with(".npy")) return "a NumPy archive (.npz)";
  if (name.ends_with(".pkl")) return "a PyTorch checkpoint (torch.save's ZIP archive: export the model to ONNX first)";
  return "a ZIP archive";
}

// Whether `tail` (at most 3 bytes) is the start of a UTF-8 sequence cut short: a lead byte, then
// fewer continuation bytes than it announces.
bool cut_sequence(std::string_view tail) {
  if (tail.empty() || tail.size() > 3) return false;
  auto lead = static_cast<unsigned char>(tail[0]);
  size_t length = lead >= 0xf0 && lead <= 0xf4 ? 4 : lead >= 0xe0 && lead < 0xf0 ? 3 : lead >= 0xc2 && lead < 0xe0 ? 2 : 0;
  if (tail.size() >= length) return false;
  return std::all_of(tail.begin() + 1, tail.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xc0) == 0x80; });
}

// UTF-8 without control characters other than white space: the start of a text file (a sequence
// cut short by the end of the bytes read allowed). A protobuf's field tags and lengths are
// control bytes, so a model does not pass.
std::optional<std::string_view> text_start(std::span<const uint8_t> bytes) {
  std::string_view text = chars(bytes);
  for (size_t cut = 0; cut < 4 && cut <= text.size(); ++cut) {
    std::string_view head = text.substr(0, text.size() - cut);
    if (cut > 0 && !cut_sequence(text.substr(head.size()))) continue;
    if (valid_utf8(head) != head) continue;
    bool control = std::any_of(head.begin(), head.end(), [](char c) {
      auto u = static_cast<unsigned char>(c);
      return (u < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f') || u == 0x7f;
    });
    if (control) return std::nullopt;
    return head;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> file_kind(std::span<const uint8_t> first) {
  first = first.subspan(0, std::min(first.size(), kFileKindBytes));
  if (starts_with(first, {0x89, 'P', 'N', 'G'})) return "a PNG image";
  if (starts_with(first, {0xff, 0xd8, 0xff})) return "a JPEG image";
  if (starts_with(first, {0x93, 'N', 'U', 'M', 'P', 'Y'})) return "a NumPy array (.npy)";
  if (starts_with(first, {'P', 'K', 0x03, 0x04})) return zip_kind(first);
  if (first.empty()) return std::nullopt;
  auto text = text_start(first);
  if (!text) return std::nullopt;
  if (text->starts_with("version https://git-lfs.github.com/spec/")) {
    return "a Git LFS pointer, not the file it points to (fetch it with git lfs pull)";
  }
  std::string_view line = *text;
  line.remove_prefix(std::min(line.find_first_not_of(" \t\r\n\f"), line.size()));
  line = line.substr(0, line.find_first_of("\r\n"));
  if (line.empty()) return std::nullopt;  // white space only: judged by decoding
  // Cut on a character boundary: a UTF-8 continuation byte is 10xxxxxx.
  size_t keep = std::min<size_t>(line.size(), 60);
  while (keep < line.size() && keep > 0 && (static_cast<unsigned char>(line[keep]) & 0xc0) == 0x80) --keep;
  return fmt::format("text, beginning “{}{}”", printable(line.substr(0, keep)), keep < line.size() ? "…" : "");
}

Error undecodable_model(std::span<const uint8_t> first, uint64_t size) {
  if (auto kind = file_kind(first)) return error("not an ONNX model: it is {}", *kind);
  return error("not an ONNX model: the {} bytes do not decode as an ONNX ModelProto (truncated or corrupted file?)", size);
}

}  // namespace lattice
