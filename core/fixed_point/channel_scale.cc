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

ChannelScale choose_channel_scale(const ChannelRanges& r) {
  ChannelScale out;
  const double top = kFpqActivation.max(), weight_top = kFpqWeights.max(), bn_top = kFpqBatchNorm.max();

  // s: the activation divided by s keeps its largest value within unsigned 1.7 (s ≥ lo); the next
  // layer's weights times s stay within signed 0.7 with scale 0.5 (s ≤ hi); the BatchNormalization's
  // offset divided by s stays within signed 5.10. Between them, the relative rounding errors of the
  // activation's top (s / (128·a)) and of the weights' (1 / (256·w·s)) are balanced: s = √(a / 2w).
  if (r.activation_max > 0 && r.next_weight_max > 0) {
    double lo = std::max(r.activation_max / top, std::abs(r.bn_offset) / bn_top);
    double hi = weight_top / r.next_weight_max;
    if (lo <= hi) {
      out.activation = balanced(std::sqrt(r.activation_max / (2 * r.next_weight_max)), lo, hi);
    } else {
      // No scale fits both: the weights stay in range (a clipped weight changes every output, a
      // clipped activation only its largest values) and the activation is said to need more.
      out.activation = hi;
      out.activation_missing_bits = std::log2(lo / hi);
      out.activation_need = fmt::format(
          "values up to {:.3g} where unsigned 1.7 ends at 2, or the next layer's weights up to {:.3g} where signed 0.7 "
          "ends at 0.5: {:.1f} bits more range than FPQ's fixed steps give",
          r.activation_max / hi, r.next_weight_max * lo, std::log2(lo / hi));
    }
  }

  // t: the conv's weights times t stay within signed 0.7 with scale 0.5 (t ≤ hi), and its output
  // within signed 5.10 (t ≤ hi; without a measured output, t never grows past 1); the
  // BatchNormalization's scale divided by t·s stays within signed 5.10 (t ≥ lo). Between them, the
  // weights' relative step (1 / (256·w·t)) and the scale's (t·s / (1024·|k|)) are balanced:
  // t = 2·√(|k| / (w·s)).
  const double s = out.activation, k = std::abs(r.bn_scale);
  double hi = r.weight_max > 0 ? weight_top / r.weight_max : kUnbounded;
  hi = std::min(hi, r.conv_output_max > 0 ? kFpqConvOutput.max() / r.conv_output_max : std::max(1.0, k / (s * bn_top)));
  double lo = k / (s * bn_top);
  if (k == 0 || r.weight_max == 0) {
    out.weights = std::min(1.0, hi);
  } else if (lo <= hi) {
    out.weights = balanced(2 * std::sqrt(k / (r.weight_max * s)), lo, hi);
  } else {
    out.weights = hi;
    out.weights_missing_bits = std::log2(lo / hi);
    out.weights_need = fmt::format(
        "a BatchNormalization scale of {:.3g} where signed 5.10 ends at 32 once its weights are within signed 0.7 "
        "with scale 0.5: {:.1f} bits more range than FPQ's fixed steps give",
        k / (s * hi), std::log2(lo / hi));
  }
  return out;
}

}  // namespace lattice::fixed_point
