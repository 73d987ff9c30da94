#include "core/onnx/model_io.h"

#include <google/protobuf/io/coded_stream.h>

#include "core/onnx/file_kind.h"

namespace lattice {

namespace {
std::string mib(uint64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }
}  // namespace

Status check_model_size(uint64_t bytes) {
  if (bytes == 0) return error("the file is empty; expected an ONNX model (.onnx)");
  if (bytes > kMaxModelBytes) {
    return error("the model is {} ({} bytes); a single-file ONNX model is limited to 2 GiB by protobuf",
                 mib(bytes), bytes);
  }
  return ok_status();
}

namespace {

// protobuf's default: each nested If/Loop/Scan body costs three levels (node, attribute, graph).
constexpr int kRecursionLimit = 100;

// Whether the bytes fail only for their nesting: then the message can say so instead of calling
// the file corrupt. Decoded once more with a higher limit, and thrown away.
bool decodes_when_nested_deeper(std::span<const uint8_t> bytes) {
  google::protobuf::io::CodedInputStream input(bytes.data(), static_cast<int>(bytes.size()));
  input.SetRecursionLimit(10 * kRecursionLimit);
  onnx::ModelProto model;
  return model.ParseFromCodedStream(&input) && input.ConsumedEntireMessage();
}

}  // namespace

Result<onnx::ModelProto> parse_model(std::span<const uint8_t> bytes, uint64_t file_size) {
  if (auto s = check_model_size(bytes.size()); !s) return s.error();
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    if (decodes_when_nested_deeper(bytes)) {
      return error("the model's messages are nested more than {} deep (protobuf's recursion limit; subgraphs of "
                   "If/Loop/Scan nested about {} levels or more)",
                   kRecursionLimit, kRecursionLimit / 3);
    }
    return undecodable_model(bytes, file_size ? file_size : bytes.size());
  }
  return model;
}

Result<std::string> serialize_model(const onnx::ModelProto& model) {
  size_t size = model.ByteSizeLong();
  if (size > kMaxModelBytes) {
    return error("the converted model would be {}, over the 2 GiB limit of a single-file ONNX model", mib(size));
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) return error("could not serialise the converted model");
  return bytes;
}

}  // namespace lattice
