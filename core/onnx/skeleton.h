#pragma once
// A model is a small skeleton (graph, nodes, attributes, tensor metadata) plus tensor data that
// stays where it is. Splitting walks the protobuf wire format of the input (with protobuf-lite's
// own CodedInputStream, the reader protobuf itself trusts) and leaves out the raw_data of every
// large top-level initializer: in the skeleton such a tensor is an external reference to the
// input file itself (location kInputLocation), so the whole core, which already reads external
// tensors only when a pattern needs their values, never holds the bytes of the others.
//
// Splicing is the way back: the skeleton, serialised by protobuf, with each such reference
// replaced by the raw_data field it stands for, as a list of segments (new bytes, or ranges of the
// input). The segments put together are byte for byte what protobuf would serialise for the
// model with its data inline: fields in number order, raw_data (9) between name (8) and
// double_data (10), the lengths of the enclosing messages grown to match.
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/onnx/external_data.h"
#include "core/util/result.h"

namespace lattice {

// Data smaller than this stays in the skeleton: load_needed_values would read it back anyway.
inline constexpr uint64_t kSkeletonThreshold = kReadAlways + 1;

struct Skeleton {
  std::string bytes;  // a serialised ModelProto
  uint64_t tensors_left_out = 0, bytes_left_out = 0;
};

// `input` reads the model file (kInputLocation) of `size` bytes. Reads everything but the raw_data
// payloads it leaves out, in order, once. A wire-format error gives parse_model's message.
Result<Skeleton> split_skeleton(ExternalData& input, uint64_t size, uint64_t threshold = kSkeletonThreshold);

// Only the skeleton's own references may name a reserved location: a tensor of the input naming
// one elsewhere (in a subgraph, a Constant's value) would read the model file itself and be
// written out as it is, so it is refused like one on a top-level initializer.
Status check_reserved_locations(onnx::ModelProto& skeleton_model, const Skeleton& skeleton);

// The serialised model with every top-level initializer that refers to kInputLocation or
// kProducedLocation written back as inline raw_data (a range of the input, or of the produced
// data); other bytes as they are.
Result<std::vector<DataSegment>> splice_skeleton(std::string serialized);

// The input file as an ExternalData: a span in memory (the tests, the native CLI's mapping).
class SpanData final : public ExternalData {
 public:
  explicit SpanData(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  Result<uint64_t> size(const std::string& location) override;
  Result<std::string> read(const std::string& location, uint64_t offset, uint64_t length) override;
  std::optional<std::string_view> view(const std::string& location, uint64_t offset, uint64_t length) override;

 private:
  std::span<const uint8_t> bytes_;
};

// What the conversion reads and makes: the input model (kInputLocation) from `input`, every other
// location from `data` (which may be null: a model referring to data files is then refused when
// its references are checked), and the data its patterns produce (kProducedLocation), held as
// Deferred pieces, one after the other. Produced data of `defer_from` bytes or more, as large as
// what the skeleton leaves in the input, is deferred; smaller data stays in the model.
class ModelSource final : public ExternalData {
 public:
  ModelSource(ExternalData& input, ExternalData* data, uint64_t defer_from = kSkeletonThreshold)
      : input_(input), data_(data), defer_from_(defer_from) {}
  Result<uint64_t> size(const std::string& location) override;
  Result<std::string> read(const std::string& location, uint64_t offset, uint64_t length) override;
  bool has_files() const override;
  std::optional<std::string_view> view(const std::string& location, uint64_t offset, uint64_t length) override;
  std::optional<ExternalRef> defer(std::shared_ptr<const Deferred> data) override;
  std::shared_ptr<const Deferred> produced(const ExternalRef& ref) override;

  // Takes `data` whatever its size.
  ExternalRef store(std::shared_ptr<const Deferred> data);
  // Moves the raw_data of each top-level initializer of at least kSkeletonThreshold bytes that the
  // conversion produced into the store, so that protobuf never copies it. The model is then only
  // fit for serialising and splicing.
  void set_aside_produced(onnx::ModelProto& model);
  // The segments with each range of produced data replaced by the Deferred piece itself: the
  // output's readers know only the input's files.
  Result<std::vector<DataSegment>> resolve_produced(std::vector<DataSegment> segments);

 private:
  ExternalData& input_;
  ExternalData* data_;
  uint64_t defer_from_;
  std::map<uint64_t, std::shared_ptr<const Deferred>> produced_;  // by offset in kProducedLocation
  uint64_t produced_size_ = 0;
};

}  // namespace lattice
