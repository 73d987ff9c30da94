#pragma once
// Numeric values of floating-point tensors, read into double and written back in the tensor's
// own type with one rounding (float, double, float16).
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/result.h"
#include "onnx-ml.pb.h"

namespace lattice {

bool is_float_type(int32_t data_type);  // FLOAT, DOUBLE, FLOAT16

// Whether `v` is finite and stays finite once rounded to `data_type` (float16 tops out at 65504).
bool fits_type(double v, int32_t data_type);

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
// rounded once to the tensor's type. Streams element by element: large weights are neither
// widened to a double array nor copied twice.
template <typename Fn>
Result<onnx::TensorProto> map_values(const onnx::TensorProto& tensor, const std::string& name, std::string_view what,
                                     Fn fn);

namespace detail {
// Element i of a float tensor (checked by the caller), from raw_data or the typed field.
template <typename T>
double element(const onnx::TensorProto& t, size_t i);
void store(char* out, int32_t data_type, double v);
size_t element_width(int32_t data_type);
Status check_float_tensor(const onnx::TensorProto& t, std::string_view what, size_t& count);
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
  size_t width = detail::element_width(t.data_type());
  std::string raw;
  raw.resize(count * width);
  char* p = raw.data();
  auto run = [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < count; ++i, p += width) detail::store(p, t.data_type(), fn(i, detail::element<T>(t, i)));
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
