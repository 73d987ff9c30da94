#pragma once
// Structural checks on a parsed model (SPEC section 6): every failure names the node, tensor or
// field that is wrong.
#include "core/onnx/external_data.h"
#include "core/util/result.h"
#include "onnx-ml.pb.h"

namespace lattice {

// External tensors are checked against `data` (their location, range and length; nothing is
// read); without it they are refused.
Status validate_model(const onnx::ModelProto& model, ExternalData* data = nullptr);

}  // namespace lattice
