#include "core/onnx/tensor_values.h"

#include <cmath>
#include <cstring>

#include "core/onnx/tensor_data.h"
#include "core/onnx/tensor_type.h"

namespace lattice {

using onnx::TensorProto;

bool is_float_type(int32_t t) {
  return t == TensorProto::FLOAT || t == TensorProto::DOUBLE || t == TensorProto::FLOAT16;
}

bool fits_half(double v) { return std::isfinite(half_to_float(double_to_half(v))); }

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000 | (mantissa << 13);  // inf / nan
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    int shift = 0;
    while ((mantissa & 0x400) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    bits = sign | (static_cast<uint32_t>(113 - shift) << 23) | ((mantissa & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t abs = bits & 0x7fffffff;
  if (abs >= 0x7f800000) return static_cast<uint16_t>(sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 : 0));
  if (abs >= 0x477ff000) return static_cast<uint16_t>(sign | 0x7c00);  // rounds to infinity
  if (abs < 0x38800000) {  // subnormal or zero in half precision
    if (abs < 0x33000000) return sign;
    uint32_t mantissa = (abs & 0x7fffff) | 0x800000;
    int shift = 126 - static_cast<int>(abs >> 23);  // 14..24: value = mantissa * 2^-24 >> shift
    uint32_t half = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t rounded = abs + 0xfff + ((abs >> 13) & 1);  // round to nearest even at bit 13
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000) >> 13));
}

// double -> half with a single rounding: the float detour can round twice near a half-way point,
// so the neighbours of its result are compared against the exact value.
uint16_t double_to_half(double v) {
  uint16_t h = float_to_half(static_cast<float>(v));
  if ((h & 0x7c00) == 0x7c00) return h;  // inf / nan
  uint16_t best = h;
  double best_error = std::abs(static_cast<double>(half_to_float(h)) - v);
  for (int step : {-1, 1}) {
    auto candidate = static_cast<uint16_t>(h + step);
    if ((candidate & 0x7fff) >= 0x7c00 || ((candidate ^ h) & 0x8000)) continue;  // left finite values or changed sign
    double err = std::abs(static_cast<double>(half_to_float(candidate)) - v);
    if (err < best_error || (err == best_error && (candidate & 1) == 0)) {
      best = candidate;
      best_error = err;
    }
  }
  return best;
}

Result<std::vector<int64_t>> read_int_values(const TensorProto& t, std::string_view what) {
  if (auto s = check_tensor_data(t, what); !s) return s.error();
  std::vector<int64_t> out;
  if (t.data_type() == TensorProto::INT64) {
    if (!t.has_raw_data()) return std::vector<int64_t>(t.int64_data().begin(), t.int64_data().end());
    out.resize(t.raw_data().size() / 8);
    std::memcpy(out.data(), t.raw_data().data(), out.size() * 8);
    return out;
  }
  if (t.data_type() == TensorProto::INT32) {
    if (!t.has_raw_data()) return std::vector<int64_t>(t.int32_data().begin(), t.int32_data().end());
    for (size_t i = 0; i < t.raw_data().size() / 4; ++i) {
      int32_t v;
      std::memcpy(&v, t.raw_data().data() + i * 4, 4);
      out.push_back(v);
    }
    return out;
  }
  return error("{} has element type {}; expected int64 or int32", what, onnx_types::element_name(t.data_type()));
}

namespace detail {

template <>
double element<float>(const TensorProto& t, size_t i) {
  if (!t.has_raw_data()) return t.float_data(static_cast<int>(i));
  float v;
  std::memcpy(&v, t.raw_data().data() + i * 4, 4);
  return v;
}

template <>
double element<double>(const TensorProto& t, size_t i) {
  if (!t.has_raw_data()) return t.double_data(static_cast<int>(i));
  double v;
  std::memcpy(&v, t.raw_data().data() + i * 8, 8);
  return v;
}

template <>
double element<uint16_t>(const TensorProto& t, size_t i) {
  uint16_t bits;
  if (t.has_raw_data()) {
    std::memcpy(&bits, t.raw_data().data() + i * 2, 2);
  } else {
    bits = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
  }
  return half_to_float(bits);
}

size_t element_width(int32_t data_type) {
  return data_type == TensorProto::DOUBLE ? 8 : data_type == TensorProto::FLOAT16 ? 2 : 4;
}

void store(char* out, int32_t data_type, double v) {
  if (data_type == TensorProto::DOUBLE) {
    std::memcpy(out, &v, 8);
  } else if (data_type == TensorProto::FLOAT16) {
    uint16_t h = double_to_half(v);
    std::memcpy(out, &h, 2);
  } else {
    auto f = static_cast<float>(v);
    std::memcpy(out, &f, 4);
  }
}

Status check_float_tensor(const TensorProto& t, std::string_view what, size_t& count) {
  if (auto s = check_tensor_data(t, what); !s) return s;
  if (!is_float_type(t.data_type())) {
    return error("{} has element type {}; only float, double and float16 can be folded", what,
                 onnx_types::element_name(t.data_type()));
  }
  auto n = element_count(t, what);
  if (!n) return n.error();
  count = static_cast<size_t>(*n);
  return ok_status();
}

}  // namespace detail

// The same element readers as map_values: one place knows how each type is stored.
Result<std::vector<double>> read_values(const TensorProto& t, std::string_view what) {
  size_t count = 0;
  if (auto s = detail::check_float_tensor(t, what, count); !s) return s.error();
  std::vector<double> out(count);
  for (size_t i = 0; i < count; ++i) {
    out[i] = t.data_type() == TensorProto::DOUBLE    ? detail::element<double>(t, i)
             : t.data_type() == TensorProto::FLOAT16 ? detail::element<uint16_t>(t, i)
                                                     : detail::element<float>(t, i);
  }
  return out;
}

TensorProto make_tensor(const std::string& name, int32_t data_type, const std::vector<int64_t>& dims,
                        const std::vector<double>& values) {
  TensorProto t;
  t.set_name(name);
  t.set_data_type(data_type);
  for (auto d : dims) t.add_dims(d);
  size_t width = detail::element_width(data_type);
  std::string raw(values.size() * width, '\0');
  for (size_t i = 0; i < values.size(); ++i) detail::store(raw.data() + i * width, data_type, values[i]);
  t.set_raw_data(std::move(raw));
  return t;
}

}  // namespace lattice
