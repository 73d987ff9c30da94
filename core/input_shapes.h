#pragma once
// Pinned input shapes (--input-shape NAME:1,3,640,640, Node `inputShapes`): written into the
// model's graph inputs before the analysis, so that every pattern sees the size the FPGA runs
// and the converted model declares it.
#include "core/options.h"
#include "core/util/result.h"
#include "onnx-ml.pb.h"

namespace lattice {

// Sets each pinned graph input's dims. An unknown input, an initializer, a different rank or a
// dimension the model fixes to another number is an error naming both. True if the model changed.
Result<bool> pin_input_shapes(onnx::ModelProto& model, const Options& options);

}  // namespace lattice
