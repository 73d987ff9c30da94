#pragma once
// Facts about ONNX tensor element types (TensorProto.DataType), including types newer than the
// schema we compile (ONNX 1.12), so that newer models are still measured correctly.
#include <cstdint>
#include <optional>
#include <string_view>

namespace lattice::onnx_types {

// Storage of one element, in bits (4 for the packed 4-bit types); nullopt for types without a
// fixed width (STRING, UNDEFINED, unknown codes).
std::optional<int> element_bits(int32_t data_type);

// "float", "int64", ... or "type 42" for codes this build does not know.
std::string_view element_name(int32_t data_type);

// Bytes needed to store `count` elements of a fixed-width type.
inline uint64_t storage_bytes(int bits, uint64_t count) { return (count * static_cast<uint64_t>(bits) + 7) / 8; }

}  // namespace lattice::onnx_types
