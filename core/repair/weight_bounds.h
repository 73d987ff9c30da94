#pragma once
// How large a repaired layer's new weights may be under FPQ: the range fit's bounds
// (core/patterns/fixed_point/range_fit.h, fpq_weight_bounds) for a model in bytes, the layer
// named by its label, on the ranges measured on the repaired model so far. The repair asks twice:
// with no ranges, for the values to measure; with them, for the bounds its fit is held to.
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/patterns/fixed_point/range_fit.h"
#include "core/util/result.h"

namespace lattice::repair {

// Per tensor, per channel: the largest value (unsigned activations) or |value| (a
// BatchNormalization's output), as Options::channel_ranges; an activation's MSE-optimal clip, as
// Options::channel_clips.
struct MeasuredRanges {
  std::map<std::string, std::vector<double>> ranges, clips;
};

// `through_batch_norm`: the layer is fitted as one with its BatchNormalization (fpq_weight_bounds).
// Errors: bytes that are not a model, a label no node has.
Result<FpqWeightBounds> fpq_layer_bounds(std::span<const uint8_t> model, const std::string& node, MeasuredRanges measured,
                                         bool through_batch_norm = false);

}  // namespace lattice::repair
