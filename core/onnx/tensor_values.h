#pragma once
// Numeric values of floating-point tensors, read into double and written back in the tensor's
// own type with one rounding (float, double, float16).
#include <cmath>
#include <cstring>
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

// A copy of `tensor` named `name` whose element i is fn(i, value_i), computed in double and
// rounded once to the tensor's type; fn is called for i = 0, 1, 2, ... in order. Streams element
// by element: large weights are neither widened to a double array nor copied twice.
template <typename Fn>
Result<onnx::TensorProto> map_values(const onnx::TensorProto& tensor, const std::string& name, std::string_view what,
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
}  // namespace detail

template <typename Fn>
Result<onnx::TensorProto> map_values(const onnx::TensorProto& t, const std::string& name, std::string_view what,
                                     Fn fn) {
  size_t count = 0;
  if (auto s = detail::check_float_tensor(t, what, count); !s) return s.error();
  onnx::TensorProto out;
  out.set_name(name);
  out.set_data_type(t.data_type());
  *out.mutable_dims() = t.dims();
  std::string raw;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    raw.resize(count * sizeof(T));
    char* to = raw.data();
    // raw_data read in place (the weights a fold maps are raw_data as exporters write them);
    // the typed fields element by element.
    const char* in = t.has_raw_data() ? t.raw_data().data() : nullptr;
    for (size_t i = 0; i < count; ++i) {
      T stored;
      if (in) {
        std::memcpy(&stored, in + i * sizeof(T), sizeof(T));
      } else {
        stored = detail::narrow<T>(detail::element<T>(t, i));
      }
      T mapped = detail::narrow<T>(fn(i, detail::widen(stored)));
      std::memcpy(to + i * sizeof(T), &mapped, sizeof(T));
    }
  };
  if (t.data_type() == onnx::TensorProto::DOUBLE) {
    run(double{});
  } else if (t.data_type() == onnx::TensorProto::FLOAT16) {
    run(uint16_t{});
  } else {
    run(float{});
  }
  out.set_raw_data(std::move(raw));
  return out;
}

}  // namespace lattice
