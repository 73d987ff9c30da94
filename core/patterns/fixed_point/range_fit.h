#pragma once
#include "core/pattern/pattern.h"

namespace lattice {

// FPQ range fitting (FPGA-UG-02228 Table 4.1's fixed ranges): per-channel scales moved through
// Conv → BatchNormalization → Relu → [MaxPool] → [GlobalAveragePool] → [Flatten] → Conv or Gemm,
// so that the weights stay within [−0.5, 0.5) and the Relu's output within [0, 2). Numerically
// equivalent: relu and max pooling commute with a positive per-channel scale, and the
// BatchNormalization and the next layer's weights take it back. Reads per-channel ranges measured
// on data from Options::channel_ranges; without them it estimates the activations from the
// BatchNormalization's statistics.
const Pattern& fpq_range_fit_pattern();

}  // namespace lattice
