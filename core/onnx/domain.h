#pragma once
// The default ONNX operator domain, which models write as "" or "ai.onnx".
#include <string>

#include "onnx-ml.pb.h"

namespace lattice {

inline bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

// The version of the default domain the model imports (0 if none).
inline int64_t default_opset(const onnx::ModelProto& model) {
  for (const auto& opset : model.opset_import()) {
    if (is_default_domain(opset.domain())) return opset.version();
  }
  return 0;
}

}  // namespace lattice
