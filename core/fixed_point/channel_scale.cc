#include "core/fixed_point/channel_scale.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/fixed_point/scheme.h"

namespace lattice::fixed_point {
namespace {

constexpr double kUnbounded = std::numeric_limits<double>::infinity();

// The scale with the least rounding error in [lo, hi] given the error is a·x + b/x: √(b/a), moved
// into the interval.
double balanced(double best, double lo, double hi) { return std::clamp(best, lo, hi); }

}  // namespace

double least_activation_scale(const GroupRanges& r) {
  return std::max(r.activation_max / kFpqActivation.max(), r.signed_max / kFpqBatchNorm.max());
}

ScaleChoice choose_activation_scale(const GroupRanges& r, bool rows_rescale) {
  ScaleChoice out;
  if (r.activation_max <= 0 || r.next_weight_max <= 0) return out;
  // s ≥ lo keeps the activation's largest value within unsigned 1.7 and the signed values within
  // signed 5.10; s ≤ hi keeps the next layers' weights times s within signed 0.7 with scale 0.5.
  // Between them, the relative rounding errors of the activation's top (s / (128·a)) and of the
  // weights' (1 / (256·w·s)) are balanced: s = √(a / 2w).
  const double lo = least_activation_scale(r);
  const double hi = kFpqWeights.max() / r.next_weight_max;
  if (lo <= hi) {
    out.scale = rows_rescale ? lo : balanced(std::sqrt(r.activation_max / (2 * r.next_weight_max)), lo, hi);
    return out;
  }
  // No scale fits both: the weights stay in range (a clipped weight changes every output, a
  // clipped activation only its largest values) and the activation is said to need more. It
  // clips at its MSE-optimal clip where that is below where the weights stop s: a coarser step
  // would cost more than the values it keeps.
  out.scale = hi;
  const double clip = std::max(r.activation_clip / kFpqActivation.max(), r.signed_max / kFpqBatchNorm.max());
  if (r.activation_clip > 0 && clip < hi) out.scale = clip;
  out.missing_bits = std::log2(lo / hi);
  out.need = fmt::format(
      "values up to {:.3g} where unsigned 1.7 ends at 2, or the next layer's weights up to {:.3g} where signed 0.7 "
      "ends at 0.5: {:.1f} bits more range than FPQ's fixed steps give",
      r.activation_max / hi, r.next_weight_max * lo, out.missing_bits);
  return out;
}

ScaleChoice choose_weight_scale(const ProducerRanges& r, double s) {
  ScaleChoice out;
  // t ≤ hi keeps the conv's weights within signed 0.7 with scale 0.5 and its output within signed
  // 5.10 (without a measured output, t never grows past 1); t ≥ lo keeps the BatchNormalization's
  // scale divided by t·s within signed 5.10. Between them, the weights' relative step
  // (1 / (256·w·t)) and the scale's (t·s / (1024·|k|)) are balanced: t = 2·√(|k| / (w·s)).
  const double k = std::abs(r.bn_scale);
  double hi = r.weight_max > 0 ? kFpqWeights.max() / r.weight_max : kUnbounded;
  hi = std::min(hi, r.conv_output_max > 0 ? kFpqConvOutput.max() / r.conv_output_max
                                          : std::max(1.0, k / (s * kFpqBatchNorm.max())));
  const double lo = k / (s * kFpqBatchNorm.max());
  if (k == 0 || r.weight_max == 0) {
    out.scale = std::min(1.0, hi);
  } else if (lo <= hi) {
    out.scale = balanced(2 * std::sqrt(k / (r.weight_max * s)), lo, hi);
  } else {
    out.scale = hi;
    out.missing_bits = std::log2(lo / hi);
    out.need = fmt::format(
        "a BatchNormalization scale of {:.3g} where signed 5.10 ends at 32 once its weights are within signed 0.7 "
        "with scale 0.5: {:.1f} bits more range than FPQ's fixed steps give",
        k / (s * hi), out.missing_bits);
  }
  return out;
}

}  // namespace lattice::fixed_point
