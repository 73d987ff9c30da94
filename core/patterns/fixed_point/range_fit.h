#pragma once
#include "core/pattern/pattern.h"

namespace lattice {

// FPQ range fitting (FPGA-UG-02228 Table 4.1's fixed ranges): per-channel scales moved from each
// Conv → BatchNormalization through the values its channels reach (Relu, pools, Resize, Flatten,
// Concat's slices, both branches of an Add: core/fixed_point/scale_group.h) to the layers that
// read them, so that weights stay within [−0.5, 0.5) and activations within [0, 2). Numerically
// equivalent: every node between is positive-homogeneous per channel, and the BatchNormalizations
// and the readers' weights take the scales back. Reads per-channel ranges measured on data from
// Options::channel_ranges (and where no scale fits, the clips in Options::channel_clips); without
// them it estimates a lone BatchNormalization's activations from its statistics.
const Pattern& fpq_range_fit_pattern();

}  // namespace lattice
