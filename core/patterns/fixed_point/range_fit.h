#pragma once
#include <string>
#include <vector>

#include "core/pattern/pattern.h"
#include "core/util/result.h"

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

// How large a layer's weights may be for this fit to give each channel of its input a scale that
// keeps it in unsigned 1.7 and the weights in signed 0.7: a refit held to these (the repair under
// FPQ) leaves the fit nothing to clip beyond the activations' MSE-optimal clips. For a Conv or
// Gemm that reads values the fit scales, on the ranges and clips in ctx.options.channel_ranges and
// channel_clips. A layer with a BatchNormalization of its own may have each row as much larger as
// that BatchNormalization's scale can take back within signed 5.10; `through_batch_norm`: the
// bounds of the layer and its BatchNormalization fitted as one (the weights times its scale).
struct FpqWeightBounds {
  std::vector<std::string> tensors;  // the values whose ranges bound them: what to measure
  std::vector<float> bounds;         // per weight element, in the node's layout; empty: no bound
};
Result<FpqWeightBounds> fpq_weight_bounds(const MatchContext& ctx, int node, bool through_batch_norm = false);

}  // namespace lattice
