#pragma once
#include "core/pattern/pattern.h"

namespace lattice {

// FPQ (Lattice sensAI, FPGA-UG-02228 section 5.1.1): a Conv with a bias must be followed by a
// BatchNormalization, which absorbs the bias. Moves each Conv bias into the BatchNormalization
// that follows (its mean becomes mean - bias), or gives the Conv one that carries the bias exactly.
const Pattern& fpq_conv_bias_into_batch_norm_pattern();

// The same for a dense layer (Gemm), so that it has a BatchNormalization whose scale takes back the
// row scales the range fit gives its weights.
const Pattern& fpq_dense_bias_into_batch_norm_pattern();

}  // namespace lattice
