#pragma once
// Numeric values of floating-point tensors, read into double and written back in the tensor's
// own type with one rounding (float, double, float16).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/util/result.h"
#include "onnx-ml.pb.h"

namespace lattice {

bool is_float_type(int32_t data_type);  // FLOAT, DOUBLE, FLOAT16

// Whether `v` is finite and stays finite once rounded to `data_type` (float16 tops out at 65504).
// Inline: a fold asks it of every weight.
bool fits_half(double v);
inline bool fits_type(double v, int32_t data_type) {
  if (data_type == onnx::TensorProto::FLOAT16) return fits_half(v);
  if (data_type == onnx::TensorProto::FLOAT) return std::isfinite(static_cast<float>(v));
  return std::isfinite(v);
}

// The values, in row-major order; an error naming `what` for other element types.
Result<std::vector<double>> read_values(const onnx::TensorProto& tensor, std::string_view what);

// Integer values (int64, int32) as int64: shapes, pads, axes.
Result<std::vector<int64_t>> read_int_values(const onnx::TensorProto& tensor, std::string_view what);

// A tensor named `name` of `data_type` (a float type) with `dims`, holding `values` rounded once
// to that type, stored as raw_data (little-endian, as ONNX requires).
onnx::TensorProto make_tensor(const std::string& name, int32_t data_type, const std::vector<int64_t>& dims,
                              const std::vector<double>& values);

// IEEE 754 binary16 <-> float, rounding to nearest even; double -> binary16 rounds once.
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
uint16_t double_to_half(double v);

// A copy of `tensor` named `name` with its values mapped by fn(first, values): `values` holds
// elements first, first + 1, ... of one block, widened to double, to be replaced in place. Blocks
// come in order; the results are rounded once to the tensor's type. Streams block by block (large
// weights are never widened whole), in loops the compiler vectorises: a fold maps every weight.
struct MappedTensor {
  onnx::TensorProto tensor;
  // The first mapped value the type cannot hold (not finite, or float16 past 65504), if any.
  std::optional<double> unrepresentable;
};
template <typename Fn>
Result<MappedTensor> map_values(const onnx::TensorProto& tensor, const std::string& name, std::string_view what,
                                Fn fn);

namespace detail {
// Element i of a float tensor (checked by the caller), from raw_data or the typed field.
template <typename T>
double element(const onnx::TensorProto& t, size_t i);
Status check_float_tensor(const onnx::TensorProto& t, std::string_view what, size_t& count);

// One element as stored (T: float, double, or uint16_t for float16 bits), to and from double.
template <typename T>
inline double widen(T stored) {
  if constexpr (std::is_same_v<T, uint16_t>) {
    return half_to_float(stored);
  } else {
    return stored;
  }
}
template <typename T>
inline T narrow(double v) {
  if constexpr (std::is_same_v<T, uint16_t>) {
    return double_to_half(v);
  } else {
    return static_cast<T>(v);
  }
}
// Whether a stored element is finite: its exponent bits are not all ones. Bit tests, so that the
// check vectorises with the rounding.
template <typename T>
inline bool finite(T stored) {
  if constexpr (std::is_same_v<T, uint16_t>) {
    return (stored & 0x7c00) != 0x7c00;
  } else if constexpr (std::is_same_v<T, float>) {
    return (std::bit_cast<uint32_t>(stored) & 0x7f800000u) != 0x7f800000u;
  } else {
    return (std::bit_cast<uint64_t>(stored) & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
  }
}
}  // namespace detail

template <typename Fn>
Result<MappedTensor> map_values(const onnx::TensorProto& t, const std::string& name, std::string_view what, Fn fn) {
  size_t count = 0;
  if (auto s = detail::check_float_tensor(t, what, count); !s) return s.error();
  MappedTensor mapped;
  onnx::TensorProto& out = mapped.tensor;
  out.set_name(name);
  out.set_data_type(t.data_type());
  *out.mutable_dims() = t.dims();
  auto run = [&](auto tag) {
    using T = decltype(tag);
    constexpr size_t kBlock = 2048;
    std::vector<double> values(kBlock);
    std::vector<T> stored(kBlock);
    std::string raw;
    raw.reserve(count * sizeof(T));  // appended to block by block: never zero-filled first
    // raw_data read in place (the weights a fold maps are raw_data as exporters write them).
    const char* in = t.has_raw_data() ? t.raw_data().data() : nullptr;
    for (size_t first = 0; first < count; first += kBlock) {
      size_t n = std::min(kBlock, count - first);
      if (in) {
        std::memcpy(stored.data(), in + first * sizeof(T), n * sizeof(T));
        for (size_t k = 0; k < n; ++k) values[k] = detail::widen(stored[k]);
      } else {
        for (size_t k = 0; k < n; ++k) values[k] = detail::element<T>(t, first + k);
      }
      fn(first, std::span<double>(values.data(), n));
      bool all_finite = true;
      for (size_t k = 0; k < n; ++k) {
        stored[k] = detail::narrow<T>(values[k]);
        all_finite &= detail::finite(stored[k]);
      }
      if (!all_finite && !mapped.unrepresentable) {
        for (size_t k = 0; k < n && !mapped.unrepresentable; ++k) {
          if (!detail::finite(stored[k])) mapped.unrepresentable = values[k];
        }
      }
      raw.append(reinterpret_cast<const char*>(stored.data()), n * sizeof(T));
    }
    out.set_raw_data(std::move(raw));
  };
  if (t.data_type() == onnx::TensorProto::DOUBLE) {
    run(double{});
  } else if (t.data_type() == onnx::TensorProto::FLOAT16) {
    run(uint16_t{});
  } else {
    run(float{});
  }
  return mapped;
}

}  // namespace lattice
