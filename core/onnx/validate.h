#pragma once
// Structural checks on a parsed model (SPEC section 6): every failure names the node, tensor or
// field that is wrong.
#include "core/util/result.h"
#include "onnx-ml.pb.h"

namespace lattice {

Status validate_model(const onnx::ModelProto& model);

}  // namespace lattice
