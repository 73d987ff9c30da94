#include "core/onnx/tensor_type.h"

#include <array>

namespace lattice::onnx_types {
namespace {

struct TypeInfo {
  std::string_view name;
  int bits;  // 0: no fixed width
};

// Indexed by TensorProto.DataType; 17..23 are the float8, 4-bit and float4 types of ONNX >= 1.14.
constexpr std::array<TypeInfo, 24> kTypes{{
    {"undefined", 0}, {"float", 32},      {"uint8", 8},          {"int8", 8},
    {"uint16", 16},   {"int16", 16},      {"int32", 32},         {"int64", 64},
    {"string", 0},    {"bool", 8},        {"float16", 16},       {"double", 64},
    {"uint32", 32},   {"uint64", 64},     {"complex64", 64},     {"complex128", 128},
    {"bfloat16", 16}, {"float8e4m3fn", 8}, {"float8e4m3fnuz", 8}, {"float8e5m2", 8},
    {"float8e5m2fnuz", 8}, {"uint4", 4},  {"int4", 4},           {"float4e2m1", 4},
}};

}  // namespace

std::optional<int> element_bits(int32_t data_type) {
  if (data_type < 0 || data_type >= static_cast<int32_t>(kTypes.size())) return std::nullopt;
  int bits = kTypes[data_type].bits;
  if (bits == 0) return std::nullopt;
  return bits;
}

std::string_view element_name(int32_t data_type) {
  if (data_type < 0 || data_type >= static_cast<int32_t>(kTypes.size())) return "unknown type";
  return kTypes[data_type].name;
}

}  // namespace lattice::onnx_types
