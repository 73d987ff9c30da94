#pragma once
#include "core/pattern/pattern.h"

namespace lattice {

// Conv / ConvTranspose / Gemm -> BatchNormalization (inference form) folded into the first.
const Pattern& conv_batch_norm_fold_pattern();

}  // namespace lattice
