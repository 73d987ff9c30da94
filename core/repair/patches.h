#pragma once
// The rows a layer's fit sees: which output positions are sampled, and the patch under the
// kernel at each (im2col, zero padding) paired with the target there.
#include <cstdint>
#include <span>
#include <vector>

#include "core/repair/layer.h"
#include "core/repair/ridge.h"

namespace lattice::repair {

// Output positions per group fitted when a layer has more (the rows of the normal equations).
inline constexpr uint64_t kDefaultMaxRows = 16384;

// `count` of the positions 0 .. total-1 in increasing order, all of them when total <= count.
// Otherwise a uniform sample without replacement by selection sampling (Knuth, TAOCP 3.4.2,
// Algorithm S) driven by splitmix64 from `seed`: one pass, no memory beyond the result, and the
// same positions in every build (integer arithmetic and exactly rounded double products only).
// A position is (image n, output row, output column), numbered n * Ho * Wo + row * Wo + column.
std::vector<uint64_t> sample_positions(uint64_t total, uint64_t count, uint64_t seed);

// The rows of group `group` at `positions`: for a Conv the input patch [C/group, kh, kw]
// (flattened in the weight's order, zeros where the window reaches into the padding) against
// the target's M/group channels of that group; for a Gemm the input row against the target row.
// `input` and `target` hold the shapes `geometry` was made from, row-major.
void add_rows(NormalEquations& eq, const LayerGeometry& geometry, int64_t group, std::span<const float> input,
              std::span<const float> target, std::span<const uint64_t> positions);
// The same rows with their targets given per row: row_targets[r * M/group + m] for positions[r].
void add_rows(NormalEquations& eq, const LayerGeometry& geometry, int64_t group, std::span<const float> input,
              std::span<const double> row_targets, std::span<const uint64_t> positions);

// Before a Relu, a value the original had at or below zero needs only to stay there: the targets
// at `positions` (per row, as above) with each such value that the layer with `weights` (P x
// M/group, RidgeFit's layout) and `bias` also puts at or below zero replaced by what it gives
// there, so that a second fit spends its freedom where the Relu lets values through.
std::vector<double> relaxed_targets(const LayerGeometry& geometry, int64_t group, std::span<const float> input,
                                    std::span<const float> target, std::span<const uint64_t> positions,
                                    std::span<const double> weights, std::span<const double> bias);

}  // namespace lattice::repair
