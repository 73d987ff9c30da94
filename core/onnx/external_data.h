#pragma once
// Tensors whose bytes ONNX keeps outside the model file (data_location = EXTERNAL, keys
// `location`, `offset`, `length`). The core never opens a file: it reads through the
// ExternalData its host provides, only the tensors a pattern may need, and only after every
// reference has been checked. Untouched tensors are written as ranges of their source file.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/onnx/deferred_data.h"
#include "core/util/result.h"
#include "onnx-ml.pb.h"

namespace lattice {

struct ExternalRef {
  std::string location;
  uint64_t offset = 0;
  uint64_t length = 0;  // resolved: the `length` key, or the rest of the file
};

// Reads the data files of one model. `location` has passed check_location: relative, no `..`.
// A file-system host also refuses a location whose file resolves outside the model's folder.
class ExternalData {
 public:
  virtual ~ExternalData() = default;
  virtual Result<uint64_t> size(const std::string& location) = 0;
  virtual Result<std::string> read(const std::string& location, uint64_t offset, uint64_t length) = 0;
  // Whether data files can be read at all (a model that names one is refused otherwise).
  virtual bool has_files() const { return true; }
  // The range where it lies in memory, when the host holds or maps its file (valid while the host
  // lives), so that a reader that only looks at it copies nothing; nullopt: read() it.
  virtual std::optional<std::string_view> view(const std::string& location, uint64_t offset, uint64_t length) {
    (void)location, (void)offset, (void)length;
    return std::nullopt;
  }
  // The conversion's store of data its patterns produced (ModelSource; a host has none). defer
  // takes `data` and returns the reference by which the model names it (kProducedLocation), or
  // nullopt: no store, or data small enough to stay in the model, which the caller then computes
  // and holds.
  virtual std::optional<ExternalRef> defer(std::shared_ptr<const Deferred> data) {
    (void)data;
    return std::nullopt;
  }
  // The produced data a reference to kProducedLocation names.
  virtual std::shared_ptr<const Deferred> produced(const ExternalRef& ref) {
    (void)ref;
    return nullptr;
  }
};

// No files at all: what a pattern reads through when it was given none (a model in memory).
class NoFiles final : public ExternalData {
 public:
  Result<uint64_t> size(const std::string&) override { return error("no data files were given"); }
  Result<std::string> read(const std::string&, uint64_t, uint64_t) override {
    return error("no data files were given");
  }
  bool has_files() const override { return false; }
};

// `data`, or NoFiles where none was given.
ExternalData& or_no_files(ExternalData* data);

// The location by which the core refers to the input model file itself, where the skeleton
// (core/onnx/skeleton.h) left out an initializer's raw_data. The NUL byte makes it no file name:
// check_location refuses it in a model, and the splitter refuses a model that names it.
inline const std::string kInputLocation("\0onnx-lattice:model", 19);
// The location of data the conversion produced (ExternalData::defer), computed as it is written.
inline const std::string kProducedLocation("\0onnx-lattice:new", 17);
inline constexpr std::string_view kReservedLocationPrefix{"\0onnx-lattice:", 14};
// A data file's range to be spliced into the model file as raw_data when it is written (the
// single-file layout): the file's location follows the prefix.
inline constexpr std::string_view kInlinedPrefix{"\0onnx-lattice:inline:", 21};
// Whether a location is one of the core's own, not a data file of the model.
inline bool is_reserved_location(std::string_view location) { return location.starts_with(kReservedLocationPrefix); }

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

// Reads into raw_data every external tensor of up to kReadAlways bytes, whose values the shape
// inference or a pattern's predicates may read (BatchNorm parameters, biases, shapes, axes), and
// writes the checked offset and length of every reference. Larger tensors are read by the pattern
// that needs their values (with_data). A loaded tensor keeps its external reference, so it is
// still written as a range of its source file unless a rewrite replaces it.
inline constexpr uint64_t kReadAlways = 64 * 1024;
Status load_needed_values(onnx::ModelProto& model, ExternalData& data, uint64_t read_always = kReadAlways);

// The reference as stored, once load_needed_values has checked it and written its offset and length.
ExternalRef stored_ref(const onnx::TensorProto& tensor);

// Makes the tensor refer to `ref` (data_location EXTERNAL, its keys), its raw_data dropped.
void refer_to(onnx::TensorProto& tensor, const ExternalRef& ref);

// A tensor with its data in memory: the tensor itself, or a copy of it holding its external data,
// read now and dropped with this value, so that a pattern holds one layer's weights at a time.
class TensorWithData {
 public:
  static Result<TensorWithData> of(const onnx::TensorProto& tensor, std::string_view what, ExternalData* data);
  const onnx::TensorProto& operator*() const { return copy_ ? *copy_ : *tensor_; }
  const onnx::TensorProto* operator->() const { return &**this; }

 private:
  const onnx::TensorProto* tensor_ = nullptr;
  std::optional<onnx::TensorProto> copy_;
};

// A new tensor named `name` with the type and dims of `like`, holding `data`: deferred to the
// conversion's store (`source`, which may be null) when it takes it, else computed now into raw_data.
Result<onnx::TensorProto> produced_tensor(const std::string& name, const onnx::TensorProto& like,
                                          std::shared_ptr<const Deferred> data, ExternalData* source);

// A piece of an output file: bytes the conversion made, a range of an input file, or data it
// produced, computed as it is written (from the input: Deferred::write).
struct DataSegment {
  std::string bytes;
  std::string location;  // empty: `bytes`, or `deferred`
  uint64_t offset = 0, length = 0;
  std::shared_ptr<const Deferred> deferred;
  uint64_t size() const { return deferred ? deferred->length() : location.empty() ? bytes.size() : length; }
};

// The bytes the segments make when written one after the other.
uint64_t size_of(const std::vector<DataSegment>& segments);

inline constexpr uint64_t kDataAlignment = 4096;
inline constexpr uint64_t kExternalThreshold = 1024;

// Rewrites the model so that its data lives in one file named `data_file` (beside the model):
// every external tensor points there (offsets aligned to kDataAlignment), and every tensor with at
// least `move_threshold` bytes of raw_data moves there too (0: none moves; sparse initializers,
// which onnx's own external-data writer leaves inline too, stay). Returns the file's
// segments in order, padding included.
std::vector<DataSegment> lay_out_external(onnx::ModelProto& model, const std::string& data_file,
                                          uint64_t move_threshold);

// The single-file layout: every tensor of the input's data files back in the model. Top-level
// initializers are spliced in from their files as the model is written (kInlinedPrefix), as is
// what the skeleton left in the model file; the rest (in subgraphs, attributes) are read into
// raw_data. Refused, before any read, when the model would exceed protobuf's 2 GiB.
Status inline_external(onnx::ModelProto& model, ExternalData& data);

// Reads back into raw_data the external tensors `pick` chooses, and drops their references.
Status read_back(onnx::ModelProto& model, ExternalData& data, const std::function<bool(const ExternalRef&)>& pick);

// The bytes of a data file laid out by lay_out_external.
Result<std::string> assemble(const std::vector<DataSegment>& segments, ExternalData& data);

}  // namespace lattice
