#include "core/onnx/tensor_values.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/onnx/tensor_data.h"
#include "core/onnx/tensor_type.h"
#include "core/util/utf8.h"

namespace lattice {

using onnx::TensorProto;

bool is_float_type(int32_t t) {
  return t == TensorProto::FLOAT || t == TensorProto::DOUBLE || t == TensorProto::FLOAT16;
}

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

// Rounds to nearest even once, from the double's bits: a detour through float rounds twice, and
// turned values just below 65520 (the largest half plus half an ulp) into infinity.
uint16_t double_to_half(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  auto sign = static_cast<uint16_t>((bits >> 48) & 0x8000);
  uint64_t abs = bits & 0x7fffffffffffffff;
  if (abs >= 0x7ff0000000000000) return static_cast<uint16_t>(sign | 0x7c00 | (abs > 0x7ff0000000000000 ? 0x200 : 0));
  int exponent = static_cast<int>(abs >> 52) - 1023;
  if (exponent > 15) return static_cast<uint16_t>(sign | 0x7c00);
  uint64_t mantissa = (abs & 0xfffffffffffff) | (uint64_t{1} << 52);  // value = mantissa * 2^(exponent - 52)
  // Normal halves keep 10 of the 52 fraction bits; subnormals count units of 2^-24, so shift further.
  int shift = exponent >= -14 ? 42 : 28 - exponent;
  if (shift > 54) return sign;  // below a quarter of the smallest subnormal: rounds to zero
  uint64_t half = exponent >= -14 ? (static_cast<uint64_t>(exponent + 15) << 10) | ((mantissa >> shift) & 0x3ff)
                                  : mantissa >> shift;
  uint64_t rest = mantissa & ((uint64_t{1} << shift) - 1), halfway = uint64_t{1} << (shift - 1);
  if (rest > halfway || (rest == halfway && (half & 1))) ++half;  // a carry moves into the exponent, up to infinity
  return static_cast<uint16_t>(sign | half);
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

namespace {

// Element i of a float tensor (checked by the caller), from raw_data or the typed field.
template <typename T>
double element(const TensorProto& t, size_t i);

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

Status check_float_type(const TensorProto& t, std::string_view what) {
  if (is_float_type(t.data_type())) return ok_status();
  return error("{} has element type {}; only float, double and float16 can be folded", what,
               onnx_types::element_name(t.data_type()));
}

Status check_float_tensor(const TensorProto& t, std::string_view what, size_t& count) {
  if (auto s = check_tensor_data(t, what); !s) return s;
  if (auto s = check_float_type(t, what); !s) return s;
  auto n = element_count(t, what);
  if (!n) return n.error();
  count = static_cast<size_t>(*n);
  return ok_status();
}

// One element as stored (T: float, double, or uint16_t for float16 bits), to and from double.
template <typename T>
double widen(T stored) {
  if constexpr (std::is_same_v<T, uint16_t>) {
    return half_to_float(stored);
  } else {
    return stored;
  }
}
template <typename T>
T narrow(double v) {
  if constexpr (std::is_same_v<T, uint16_t>) {
    return double_to_half(v);
  } else {
    return static_cast<T>(v);
  }
}
// Whether `v` rounds to a finite value of T: its magnitude compared with the point from which
// rounding overflows (the largest value plus half an ulp, where the tie rounds up to even), a
// comparison instead of a rounding and a store, as the fold checks every weight (its native
// conversion of ResNet-50 went from 117 to 101 ms).
template <typename T>
bool representable(double v) {
  if constexpr (std::is_same_v<T, uint16_t>) {
    return std::fabs(v) < 65520.0;
  } else if constexpr (std::is_same_v<T, float>) {
    return std::fabs(v) < 0x1.ffffffp+127;
  } else {
    return std::fabs(v) <= std::numeric_limits<double>::max();
  }
}
// The stored values as raw_data would hold them: the typed fields' values are copied.
template <typename T>
std::string raw_bytes(const TensorProto& t, size_t count) {
  if (t.has_raw_data()) return t.raw_data();
  std::string raw;
  raw.reserve(count * sizeof(T));
  for (size_t i = 0; i < count; ++i) {
    T stored = narrow<T>(element<T>(t, i));  // exact: the element came from this type
    raw.append(reinterpret_cast<const char*>(&stored), sizeof(T));
  }
  return raw;
}

}  // namespace

bool fits_type(double v, int32_t t) {
  if (t == TensorProto::FLOAT16) return representable<uint16_t>(v);
  if (t == TensorProto::FLOAT) return representable<float>(v);
  return representable<double>(v);
}

// The same element readers as MappedValues: one place knows how each type is stored.
Result<std::vector<double>> read_values(const TensorProto& t, std::string_view what) {
  size_t count = 0;
  if (auto s = check_float_tensor(t, what, count); !s) return s.error();
  std::vector<double> out(count);
  for (size_t i = 0; i < count; ++i) {
    out[i] = t.data_type() == TensorProto::DOUBLE    ? element<double>(t, i)
             : t.data_type() == TensorProto::FLOAT16 ? element<uint16_t>(t, i)
                                                     : element<float>(t, i);
  }
  return out;
}

TensorProto make_tensor(const std::string& name, int32_t data_type, const std::vector<int64_t>& dims,
                        const std::vector<double>& values) {
  TensorProto t;
  t.set_name(name);
  t.set_data_type(data_type);
  for (auto d : dims) t.add_dims(d);
  size_t width = element_width(data_type);
  std::string raw(values.size() * width, '\0');
  for (size_t i = 0; i < values.size(); ++i) store(raw.data() + i * width, data_type, values[i]);
  t.set_raw_data(std::move(raw));
  return t;
}

Result<std::shared_ptr<const MappedValues>> MappedValues::of(const TensorProto& t, std::string_view what,
                                                             ExternalData* data, BlockMap fn) {
  if (auto s = check_float_type(t, what); !s) return s.error();
  std::shared_ptr<const Deferred> source;
  if (is_external(t) && !t.has_raw_data()) {
    ExternalRef ref = stored_ref(t);  // checked, with its offset and length, by load_needed_values
    if (!data) return error("{} keeps its data in '{}', which was not given", what, printable(ref.location));
    source = ref.location == kProducedLocation
                 ? data->produced(ref)
                 : std::make_shared<InputRange>(ref.location, ref.offset, ref.length);
    if (!source) return error("{} refers to produced data that is not there", what);
  } else {
    size_t count = 0;
    if (auto s = check_float_tensor(t, what, count); !s) return s.error();
    std::string raw = t.data_type() == TensorProto::DOUBLE    ? raw_bytes<double>(t, count)
                      : t.data_type() == TensorProto::FLOAT16 ? raw_bytes<uint16_t>(t, count)
                                                              : raw_bytes<float>(t, count);
    source = std::make_shared<HeldBytes>(std::move(raw));
  }
  return std::make_shared<const MappedValues>(std::move(source), t.data_type(), std::move(fn));
}

namespace {

// Reads the values of `bytes` (raw data of element type T) in blocks of kBlock, widened to double:
// fn(first, stored, values) gets elements first, first + 1, ... as stored and widened.
constexpr size_t kBlock = 2048;
template <typename T, typename Fn>
Status read_blocks(const Deferred& bytes, ExternalData& input, Fn fn) {
  // No larger than the tensor: most tensors of a model are small.
  const size_t block_size = std::clamp<size_t>(static_cast<size_t>(bytes.length() / sizeof(T)), 1, kBlock);
  std::vector<T> stored(block_size);
  std::vector<double> values(block_size);
  size_t filled = 0, first = 0;  // bytes of `stored` filled; the element stored[0] is
  // Widens n elements from `from` (stored's bytes, or a whole block where it lies in a chunk: not
  // copied first, as the fold's write goes through every weight), then hands them to fn, whose
  // `stored` is then only room for what it stores.
  auto block = [&](const char* from, size_t n) {
    for (size_t k = 0; k < n; ++k) {
      T v;
      std::memcpy(&v, from + k * sizeof(T), sizeof v);
      values[k] = widen(v);
    }
    Status s = fn(first, std::span<T>(stored.data(), n), std::span<double>(values.data(), n));
    first += n;
    return s;
  };
  auto read = bytes.write(input, [&](std::string_view chunk) {
    auto* to = reinterpret_cast<char*>(stored.data());
    while (!chunk.empty()) {
      if (filled == 0 && chunk.size() >= block_size * sizeof(T)) {
        if (auto s = block(chunk.data(), block_size); !s) return s;
        chunk.remove_prefix(block_size * sizeof(T));
        continue;
      }
      size_t take = std::min(chunk.size(), block_size * sizeof(T) - filled);
      std::memcpy(to + filled, chunk.data(), take);
      filled += take;
      chunk.remove_prefix(take);
      if (filled == block_size * sizeof(T)) {
        filled = 0;
        if (auto s = block(to, block_size); !s) return s;
      }
    }
    return ok_status();
  });
  if (!read) return read;
  if (filled % sizeof(T) != 0) return error("the data does not hold whole elements");
  return filled > 0 ? block(reinterpret_cast<const char*>(stored.data()), filled / sizeof(T)) : ok_status();
}

// fn instantiated for the stored type of `data_type` (a float type).
template <typename Fn>
Status for_stored_type(int32_t data_type, Fn fn) {
  if (data_type == TensorProto::DOUBLE) return fn(double{});
  if (data_type == TensorProto::FLOAT16) return fn(uint16_t{});
  return fn(float{});
}

}  // namespace

Status MappedValues::run(ExternalData& input, const ByteSink* sink, std::optional<double>* unrepresentable) const {
  return for_stored_type(data_type_, [&](auto tag) {
    using T = decltype(tag);
    return read_blocks<T>(*source_, input, [&](size_t first, std::span<T> stored, std::span<double> values) {
      fn_(first, values);
      if (!sink && !unrepresentable) return ok_status();  // scanning: fn_ has seen the values
      if (unrepresentable) {  // checking, writing nothing
        bool all = true;
        for (double v : values) all &= representable<T>(v);
        for (size_t k = 0; k < values.size() && !all && !*unrepresentable; ++k) {
          if (!representable<T>(values[k])) *unrepresentable = values[k];
        }
        return ok_status();
      }
      for (size_t k = 0; k < values.size(); ++k) stored[k] = narrow<T>(values[k]);
      return (*sink)({reinterpret_cast<const char*>(stored.data()), stored.size() * sizeof(T)});
    });
  });
}

Result<double> largest_magnitude(const Deferred& bytes, int32_t data_type, ExternalData& input) {
  // An IEEE value's magnitude orders as its bits without the sign, NaN above infinity above every
  // finite value: the largest is an integer maximum, which the compiler vectorises.
  auto largest = [&](auto bits_tag) -> Result<double> {
    using Bits = decltype(bits_tag);
    constexpr Bits kMagnitude = std::numeric_limits<Bits>::max() >> 1;  // all but the sign
    Bits top = 0;
    size_t carried = 0;  // bytes of an element split between two chunks
    char partial[sizeof(Bits)];
    auto read = bytes.write(input, [&](std::string_view chunk) {
      if (carried > 0) {
        size_t take = std::min(chunk.size(), sizeof(Bits) - carried);
        std::memcpy(partial + carried, chunk.data(), take);
        carried += take;
        chunk.remove_prefix(take);
        if (carried < sizeof(Bits)) return ok_status();
        Bits b;
        std::memcpy(&b, partial, sizeof b);
        top = std::max<Bits>(top, b & kMagnitude);
        carried = 0;
      }
      const size_t whole = chunk.size() / sizeof(Bits);
      Bits chunk_top = 0;
      for (size_t i = 0; i < whole; ++i) {
        Bits b;
        std::memcpy(&b, chunk.data() + i * sizeof(Bits), sizeof b);
        chunk_top = std::max<Bits>(chunk_top, b & kMagnitude);
      }
      top = std::max(top, chunk_top);
      carried = chunk.size() - whole * sizeof(Bits);
      std::memcpy(partial, chunk.data() + whole * sizeof(Bits), carried);
      return ok_status();
    });
    if (!read) return read.error();
    if (carried != 0) return error("the data does not hold whole elements");
    if constexpr (sizeof(Bits) == 2) {
      return static_cast<double>(half_to_float(top));
    } else if constexpr (sizeof(Bits) == 4) {
      float v;
      std::memcpy(&v, &top, sizeof v);
      return static_cast<double>(v);
    } else {
      double v;
      std::memcpy(&v, &top, sizeof v);
      return v;
    }
  };
  if (data_type == TensorProto::DOUBLE) return largest(uint64_t{});
  if (data_type == TensorProto::FLOAT16) return largest(uint16_t{});
  return largest(uint32_t{});
}

Status MappedValues::write(ExternalData& input, const ByteSink& sink) const { return run(input, &sink, nullptr); }

Status scan_values(const TensorProto& tensor, std::string_view what, ExternalData* data, BlockMap fn) {
  auto mapped = MappedValues::of(tensor, what, data, std::move(fn));
  if (!mapped) return mapped.error();
  return (*mapped)->run(or_no_files(data), nullptr, nullptr);
}

Result<std::optional<double>> MappedValues::first_unrepresentable(ExternalData& input) const {
  std::optional<double> found;
  if (auto s = run(input, nullptr, &found); !s) return s.error();
  return found;
}

}  // namespace lattice
