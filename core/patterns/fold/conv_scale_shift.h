#pragma once
#include "core/pattern/pattern.h"

namespace lattice {

// Conv -> Mul(per-channel constant) -> Add(per-channel constant), either or both: the inference
// BatchNorm TensorFlow, Keras and Paddle exporters leave behind, folded into the Conv.
const Pattern& conv_scale_shift_fold_pattern();

}  // namespace lattice
