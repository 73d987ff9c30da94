#pragma once
// Bytes <-> ModelProto. Parsing keeps unknown fields, so content from newer ONNX versions
// survives a round trip.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/util/result.h"
#include "onnx-ml.pb.h"

namespace lattice {

// protobuf addresses messages with an int: ONNX's own limit for a single-file model.
inline constexpr uint64_t kMaxModelBytes = (uint64_t{1} << 31) - 1;

// Models larger than kMaxModelBytes are refused before any byte is read.
Status check_model_size(uint64_t bytes);
// `file_size`, when the bytes are a skeleton (core/onnx/skeleton.h), is the model file's size for
// messages.
Result<onnx::ModelProto> parse_model(std::span<const uint8_t> bytes, uint64_t file_size = 0);

inline std::span<const uint8_t> as_span(std::string_view bytes) {
  return {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
}
Result<std::string> serialize_model(const onnx::ModelProto& model);

}  // namespace lattice
