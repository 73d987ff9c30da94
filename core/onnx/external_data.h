#pragma once
// Tensors whose bytes ONNX keeps outside the model file (data_location = EXTERNAL, keys
// `location`, `offset`, `length`). The core never opens a file: it reads through the
// ExternalData its host provides, only the tensors a pattern may need, and only after every
// reference has been checked. Untouched tensors are written as ranges of their source file.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/result.h"
#include "onnx-ml.pb.h"

namespace lattice {

// Reads the data files of one model. `location` has passed check_location: relative, no `..`.
// A file-system host also refuses a location whose file resolves outside the model's folder.
class ExternalData {
 public:
  virtual ~ExternalData() = default;
  virtual Result<uint64_t> size(const std::string& location) = 0;
  virtual Result<std::string> read(const std::string& location, uint64_t offset, uint64_t length) = 0;
};

struct ExternalRef {
  std::string location;
  uint64_t offset = 0;
  uint64_t length = 0;  // resolved: the `length` key, or the rest of the file
};

bool is_external(const onnx::TensorProto& tensor);

// As onnx's checker (CVE-2024-27318/27319): empty, absolute, drive-letter and `..` locations
// are refused, naming `what`.
Status check_location(const std::string& location, std::string_view what);

// The tensor's reference with every key checked (location, integer offset/length, the range
// inside its file, the length equal to what the dims need). Asks `data` for the file's size
// only; reads nothing.
Result<ExternalRef> external_ref(const onnx::TensorProto& tensor, std::string_view what, ExternalData& data);

// Where a tensor is stored in the model: `what` names it for messages ("initializer 'w'").
struct TensorPlace {
  std::string what;
  bool sparse = false;  // the values or indices of a sparse initializer: never moved out
};

// Calls fn(tensor, place) for every tensor stored in the model: initializers, sparse
// initializers' values and indices, and tensor attributes, in subgraphs too.
void for_each_tensor(onnx::ModelProto& model,
                     const std::function<void(onnx::TensorProto&, const TensorPlace&)>& fn);

// Reads into raw_data the external tensors whose values a pattern or the shape inference may
// read: every one up to kReadAlways bytes (BatchNorm parameters, biases, shapes, axes) and, when
// folding, the weight and bias of each Conv, ConvTranspose or Gemm whose output a
// BatchNormalization reads. A loaded tensor keeps its external reference, so it is still written
// as a range of its source file unless a rewrite replaces it.
inline constexpr uint64_t kReadAlways = 64 * 1024;
Status load_needed_values(onnx::ModelProto& model, bool fold_batch_norm, ExternalData& data);

// A piece of an output data file: bytes the conversion made, or a range of an input data file.
struct DataSegment {
  std::string bytes;
  std::string location;  // empty: `bytes`
  uint64_t offset = 0, length = 0;
  uint64_t size() const { return location.empty() ? bytes.size() : length; }
};

inline constexpr uint64_t kDataAlignment = 4096;
inline constexpr uint64_t kExternalThreshold = 1024;

// Rewrites the model so that its data lives in one file named `data_file` (beside the model):
// every external tensor points there (offsets aligned to kDataAlignment), and every tensor with at
// least `move_threshold` bytes of raw_data moves there too (0: none moves; sparse initializers,
// which onnx's own external-data writer leaves inline too, stay). Returns the file's
// segments in order, padding included.
std::vector<DataSegment> lay_out_external(onnx::ModelProto& model, const std::string& data_file,
                                          uint64_t move_threshold);

// Reads every external tensor back into raw_data: the single-file layout. Refused, before any
// read, when the model would exceed protobuf's 2 GiB.
Status inline_external(onnx::ModelProto& model, ExternalData& data);

// The bytes of a data file laid out by lay_out_external.
Result<std::string> assemble(const std::vector<DataSegment>& segments, ExternalData& data);

}  // namespace lattice
