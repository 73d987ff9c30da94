#pragma once
// A small JSON value that keeps object keys in insertion order, so reports are stable and
// read in the order they were written.
#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace lattice {

class Json {
 public:
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;

  Json() : value_(nullptr) {}
  Json(std::nullptr_t) : value_(nullptr) {}                         // NOLINT
  Json(bool b) : value_(b) {}                                       // NOLINT
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  Json(T v) : value_(static_cast<int64_t>(v)) {}                    // NOLINT
  Json(double v) : value_(v) {}                                     // NOLINT
  Json(std::string s) : value_(std::move(s)) {}                     // NOLINT
  Json(std::string_view s) : value_(std::string(s)) {}              // NOLINT
  Json(const char* s) : value_(std::string(s)) {}                   // NOLINT
  Json(Array a) : value_(std::move(a)) {}                           // NOLINT
  Json(Object o) : value_(std::move(o)) {}                          // NOLINT

  static Json array() { return Json(Array{}); }
  static Json object() { return Json(Object{}); }
  template <typename Range>
  static Json array_of(const Range& items) {
    Array out;
    for (const auto& item : items) out.emplace_back(item);
    return Json(std::move(out));
  }

  // Appends to an array, or sets a key of an object (keys keep their first position).
  Json& push(Json item);
  Json& set(std::string_view key, Json item);

  // Two-space indented when `indent` is true, else compact.
  std::string dump(bool indent = true) const;

 private:
  void write(std::string& out, int depth, bool indent) const;
  std::variant<std::nullptr_t, bool, int64_t, double, std::string, Array, Object> value_;
};

}  // namespace lattice
