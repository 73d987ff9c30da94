#include "core/onnx/model_io.h"

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

Result<onnx::ModelProto> parse_model(std::span<const uint8_t> bytes) {
  if (auto s = check_model_size(bytes.size()); !s) return s.error();
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return error("not an ONNX model: the {} bytes do not decode as an ONNX ModelProto (truncated or corrupted file?)",
                 bytes.size());
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
