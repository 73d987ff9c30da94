#pragma once
// One layer's refit: given the repaired model's input to a Conv or Gemm and the original model's
// output there (both from onnxruntime, on calibration data), the weights and bias whose output
// matches it best in the ridge sense (core/repair/ridge.h), group by group, on sampled positions
// (core/repair/patches.h). The caller (JS) runs the model; this is the arithmetic only.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/repair/layer.h"
#include "core/repair/patches.h"
#include "core/repair/ridge.h"
#include "core/util/result.h"

namespace lattice::repair {

struct FitRequest {
  LayerSpec spec;
  std::span<const float> input;  // Conv [N, C, H, W]; Gemm [N, K]; row-major
  std::vector<int64_t> input_dims;
  std::span<const float> target;  // Conv [N, M, Ho, Wo]; Gemm [N, M]
  std::vector<int64_t> target_dims;
  // The layer's weights and bias now, in the node's layout (a bias absent is zeros): given, the
  // fit also says how far they were from the target (LayerFit::residual_before).
  std::optional<std::span<const float>> current_weights, current_bias;
  // A bound on each new weight's magnitude, in the node's layout (infinity: free): what a fixed-
  // point range lets the layer hold (FPQ's, core/fixed_point/weight_bounds.h). The fit is the
  // best one within them (NormalEquations::bound), after the rectified second fit if any.
  std::optional<std::span<const float>> weight_bounds;
  double ridge = kDefaultRidge;
  uint64_t max_rows = kDefaultMaxRows;  // positions fitted per group, at most
  // The layer's only reader is a Relu: each group is fitted, then fitted again on the same rows
  // with relaxed_targets (core/repair/patches.h), keeping the first fit's sums of the features
  // and their factorisation (NormalEquations::retarget); LayerFit is the second fit's.
  bool rectified = false;
  uint64_t seed = 0;                    // which positions, when there are more
};

struct LayerFit {
  std::vector<float> weights;  // in the node's layout: Conv [M, C/group, kh, kw]; Gemm as transB says
  std::vector<float> bias;     // [M]
  uint64_t rows = 0;           // positions fitted per group
  // ||output - target|| / ||target - its per-channel mean|| over the fitted rows of every group,
  // with the current weights (when given) and with the new ones.
  std::optional<double> residual_before;
  double residual_after = 0;
};

// A fit's normal equations (its features' sums and their factorisation), kept for a second fit of
// the same layer on the same input and rows with other targets, which then costs only the
// targets' sums and the solves (NormalEquations::retarget): a layer the Lattice rewrite put before
// a MaxPool is fitted twice, the second time to where the first put each window's maximum, and
// the features' sums of its two fits were most of ResNet-50's repair. fit_layer's own.
struct KeptEquations {
  // What the rows were made from: a fit of other dims, rows or weights starts from scratch.
  std::vector<int64_t> input_dims, target_dims, weight_shape;
  std::vector<uint64_t> positions;
  std::optional<NormalEquations> equations;  // a fit of one group's
};

// Errors (kOptions) name the field at fault: shapes that do not fit, data of the wrong length,
// NaN or infinity in the data, a ridge or max_rows out of range. With `kept`: a fit of one group
// reuses the equations `kept` holds when they are of the same dims, weights and rows (the caller
// vouches that the input is the same too), and keeps its own there for the next.
Result<LayerFit> fit_layer(const FitRequest& request, KeptEquations* kept = nullptr);

// The heap bytes fit_layer needs for such a layer, the caller's data copied in included:
//   4 (|input| + |target| + 2 |weights| + 2 M)        the data, the current and new weights
//   + NormalEquations::bytes(P, M/group)              one group's sums, its solve and the row block
//   + 8 P (M/group)                                   one group's current weights in double
//   + 4 |weights| + 8 P (M/group) + 16 P threads      `bounded`: the weight bounds, a group's in
//                                                     double, each thread's descent
//   + 8 min(positions, max_rows)                      the sampled positions
//   + 8 (P (M/group) + kBlockRows P + rows (M/group)) a rectified fit's relaxed targets
//   + thread_bytes()                                  the fit's other threads (core/repair/parallel.h)
// with P = C/group * kh * kw (Gemm: K); groups are fitted one after another. The threads share
// their work out by output entries and need no scratch of their own. The same checks as
// fit_layer, so a layer that cannot be fitted is refused here already.
Result<uint64_t> fit_bytes(const LayerSpec& spec, const std::vector<int64_t>& input_dims,
                           const std::vector<int64_t>& target_dims, uint64_t max_rows = kDefaultMaxRows,
                           bool bounded = false);

}  // namespace lattice::repair
