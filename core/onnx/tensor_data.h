#pragma once
// The stored data of a TensorProto: its element count and whether the bytes agree with the dims.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/util/result.h"
#include "onnx-ml.pb.h"

namespace lattice {

// "[1, 3, 224, 224]"
std::string format_dims(const onnx::TensorProto& tensor);

// The product of the dims; an error naming `what` ("initializer 'w'") for negative or
// overflowing dims.
Result<uint64_t> element_count(const onnx::TensorProto& tensor, std::string_view what);

// Bytes the tensor's data takes stored raw (raw_data, or an external file): nullopt for types
// without a fixed width (strings, types newer than this build); an error naming `what` for bad
// dims or no data type.
Result<std::optional<uint64_t>> raw_bytes_needed(const onnx::TensorProto& tensor, std::string_view what);

// Strings are never raw bytes: an error naming `what` and where the bytes are (`stored_in`:
// "raw_data", "the external file 'x'") for a string tensor.
Status check_not_string(const onnx::TensorProto& tensor, std::string_view what, std::string_view stored_in);
// Segmented tensors are not supported: an error naming `what` for one.
Status check_not_segmented(const onnx::TensorProto& tensor, std::string_view what);

// The data held (raw_data or the typed field for its type) matches the dims, and is in memory
// (inline, or an external tensor already read).
Status check_tensor_data(const onnx::TensorProto& tensor, std::string_view what);

}  // namespace lattice
