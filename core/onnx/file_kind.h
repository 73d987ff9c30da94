#pragma once
// What a file given as a model is when its first bytes say it is something else: the formats a
// model is most often mistaken for (an image, a NumPy array or archive, a PyTorch checkpoint, a
// ZIP archive, a Git LFS pointer, text). An ONNX model (a bare protobuf) has no signature of its
// own, so only files that have one are named; the rest are judged by decoding. Every shell says
// it the same way, through the error for bytes that do not decode as a ModelProto.
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "core/util/result.h"

namespace lattice {

// How many first bytes file_kind reads.
inline constexpr size_t kFileKindBytes = 512;

// "a PNG image", "a Git LFS pointer (…)", "text, beginning “…”", … or nullopt when the first
// bytes name no other format.
std::optional<std::string> file_kind(std::span<const uint8_t> first);

// The error for a model of `size` bytes that does not decode as an ONNX ModelProto, naming what
// it is when its first bytes say.
Error undecodable_model(std::span<const uint8_t> first, uint64_t size);

}  // namespace lattice
