#pragma once
// A value or a readable error. The core reports bad input through this type, never through
// exceptions, so the same code behaves identically natively and in WebAssembly.
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace lattice {

// What a caller can do about an error: fix the model, fix the options it passed, give the
// conversion more memory, or fix a file that cannot be read or written (kIO: a missing input, a
// folder, no permission; the model itself was never judged). The CLI's exit status and the Node
// API's `code` follow it.
enum class ErrorKind { kModel, kOptions, kMemory, kIO };

struct Error {
  std::string message;
  ErrorKind kind = ErrorKind::kModel;
  // kIO: the file at fault as the user named it, and the C library's name of the failure
  // ("ENOENT"), empty when the file is there but of the wrong kind.
  std::string path = {};
  std::string errno_name = {};
};

// The Node API's Error.code and the CLIs' `--json` error code of each kind (wasm/index.d.ts).
inline const char* error_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kOptions: return "ERR_ONNX_LATTICE_OPTIONS";
    case ErrorKind::kMemory: return "ERR_ONNX_LATTICE_MEMORY";
    case ErrorKind::kIO: return "ERR_ONNX_LATTICE_IO";
    case ErrorKind::kModel: break;
  }
  return "ERR_ONNX_LATTICE_MODEL";
}

template <typename... Args>
Error error(fmt::format_string<Args...> format, Args&&... args) {
  return Error{fmt::format(format, std::forward<Args>(args)...)};
}

template <typename... Args>
Error options_error(fmt::format_string<Args...> format, Args&&... args) {
  return Error{fmt::format(format, std::forward<Args>(args)...), ErrorKind::kOptions};
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error err) : state_(std::move(err)) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const Error& error() const { return std::get<Error>(state_); }

 private:
  std::variant<T, Error> state_;
};

// Success without a value.
struct Ok {};
using Status = Result<Ok>;
inline Status ok_status() { return Ok{}; }

}  // namespace lattice
