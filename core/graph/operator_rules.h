#pragma once
// The ONNX operator rules for the attributes and parameters the patterns read, checked before any
// pattern runs: a model that breaks them is refused with the node and the attribute named, never
// "converted" (a kernel_shape that contradicts its weight must not lead to re-initialised weights).
#include "core/graph/graph_view.h"
#include "core/graph/shapes.h"
#include "core/util/result.h"

namespace lattice {

// Conv, ConvTranspose, MaxPool, AveragePool: kernel_shape, strides and dilations >= 1 and of the
// window's rank, pads non-negative and twice that rank, kernel_shape equal to the weight's spatial
// dims, group >= 1 dividing the weight's channels and matching the input's. BatchNormalization:
// scale, B, mean and var of one length, the input's channel count where it is known.
Status check_operator_rules(const GraphView& view, const Shapes& shapes);

}  // namespace lattice
