#include "core/util/json.h"

#include <cmath>

#include <fmt/format.h>

#include "core/util/utf8.h"

namespace lattice {

Json& Json::push(Json item) {
  std::get<Array>(value_).push_back(std::move(item));
  return *this;
}

Json& Json::set(std::string_view key, Json item) {
  auto& object = std::get<Object>(value_);
  for (auto& [k, v] : object) {
    if (k == key) {
      v = std::move(item);
      return *this;
    }
  }
  object.emplace_back(std::string(key), std::move(item));
  return *this;
}

std::string Json::dump(bool indent) const {
  std::string out;
  write(out, 0, indent);
  if (indent) out += '\n';
  return out;
}

namespace {

void write_string(std::string& out, std::string_view raw) {
  std::string s = valid_utf8(raw);
  out += '"';
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (u < 0x20) {
          out += fmt::format("\\u{:04x}", u);
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void newline(std::string& out, int depth, bool indent) {
  if (!indent) return;
  out += '\n';
  out.append(static_cast<size_t>(depth) * 2, ' ');
}

}  // namespace

void Json::write(std::string& out, int depth, bool indent) const {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::nullptr_t>) {
          out += "null";
        } else if constexpr (std::is_same_v<T, bool>) {
          out += v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          out += fmt::format("{}", v);
        } else if constexpr (std::is_same_v<T, double>) {
          out += std::isfinite(v) ? fmt::format("{}", v) : "null";
        } else if constexpr (std::is_same_v<T, std::string>) {
          write_string(out, v);
        } else if constexpr (std::is_same_v<T, Array>) {
          if (v.empty()) {
            out += "[]";
            return;
          }
          out += '[';
          for (size_t i = 0; i < v.size(); ++i) {
            if (i) out += ',';
            newline(out, depth + 1, indent);
            v[i].write(out, depth + 1, indent);
          }
          newline(out, depth, indent);
          out += ']';
        } else {
          if (v.empty()) {
            out += "{}";
            return;
          }
          out += '{';
          for (size_t i = 0; i < v.size(); ++i) {
            if (i) out += ',';
            newline(out, depth + 1, indent);
            write_string(out, v[i].first);
            out += indent ? ": " : ":";
            v[i].second.write(out, depth + 1, indent);
          }
          newline(out, depth, indent);
          out += '}';
        }
      },
      value_);
}

}  // namespace lattice
