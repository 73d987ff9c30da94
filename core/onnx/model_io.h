#pragma once
// Bytes <-> ModelProto. Parsing keeps unknown fields, so content from newer ONNX versions
// survives a round trip.
#include <cstdint>
#include <span>
#include <string>

#include "core/util/result.h"
#include "onnx-ml.pb.h"

namespace lattice {

// protobuf addresses messages with an int: ONNX's own limit for a single-file model.
inline constexpr uint64_t kMaxModelBytes = (uint64_t{1} << 31) - 1;

// Models larger than kMaxModelBytes are refused before any byte is read.
Status check_model_size(uint64_t bytes);
Result<onnx::ModelProto> parse_model(std::span<const uint8_t> bytes);
Result<std::string> serialize_model(const onnx::ModelProto& model);

}  // namespace lattice
