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
  double ridge = kDefaultRidge;
  uint64_t max_rows = kDefaultMaxRows;  // positions fitted per group, at most
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

// What one fit leaves for the next: a layer fitted again on the same input with other targets
// (before a Relu, wasm/repair.mjs fits each such layer twice) reuses its features' sums and their
// factorisation, per group, instead of summing O(rows P^2) and factorising O(P^3) again. Kept
// until a fit of another layer or input starts (which lets it go first, so two layers' sums are
// never held at once).
struct FitMemory {
  // The request's features: any change in these means other rows.
  LayerSpec spec;
  std::vector<int64_t> input_dims, target_dims;
  std::vector<float> input;
  uint64_t max_rows = 0, seed = 0;
  std::vector<NormalEquations> groups;  // empty: nothing kept

  bool matches(const FitRequest& request) const;
  void clear();
};

// Errors (kOptions) name the field at fault: shapes that do not fit, data of the wrong length,
// NaN or infinity in the data, a ridge or max_rows out of range. With `memory`, the fit reuses
// what the last one left there when it fits the same rows, and leaves its own.
Result<LayerFit> fit_layer(const FitRequest& request, FitMemory* memory = nullptr);

// The heap bytes fit_layer needs for such a layer, the caller's data copied in included:
//   4 (|input| + |target| + 2 |weights| + 2 M)        the data, the current and new weights
//   + NormalEquations::bytes(P, M/group)              one group's sums, its solve and the row block
//   + 8 P (M/group)                                   one group's current weights in double
//   + 8 min(positions, max_rows)                      the sampled positions
//   + 4 |input| + (group - 1) NormalEquations::bytes   what a FitMemory keeps for the next fit
//   + thread_bytes()                                   the fit's other threads (core/repair/parallel.h)
// with P = C/group * kh * kw (Gemm: K); groups are fitted one after another. The threads share
// their work out by output entries and need no scratch of their own. The same checks as
// fit_layer, so a layer that cannot be fitted is refused here already.
Result<uint64_t> fit_bytes(const LayerSpec& spec, const std::vector<int64_t>& input_dims,
                           const std::vector<int64_t>& target_dims, uint64_t max_rows = kDefaultMaxRows);

}  // namespace lattice::repair
