#pragma once
// The per-channel scales FPQ range fitting moves (Nagel et al. 2019, "Data-Free Quantization",
// cross-layer equalisation), chosen against FPQ's fixed ranges (FPGA-UG-02228 Table 4.1):
//   - the activation scale s of one group of values (core/fixed_point/scale_group.h): every value
//     in it is divided by s — its BatchNormalizations' γ and β divided by s, the weights that read
//     it multiplied by s: exact in float, up to rounding;
//   - the weight scale t of one conv output channel: the conv's weights times t, and its
//     BatchNormalization takes it back (γ / t, mean · t: BN(t·y) with those equals BN(y)).
// No graph here: the numbers in, the scales out.
#include <string>

namespace lattice::fixed_point {

// What bounds one group's s.
struct GroupRanges {
  // The largest value of the group's values held in unsigned 1.7 (Relu, MaxPool, Add outputs …),
  // measured or estimated; 0: none known (the group then keeps its scale).
  double activation_max = 0;
  // The largest |value| held in signed 5.10: its BatchNormalizations' offsets β − μ·scale, and
  // their outputs where measured.
  double signed_max = 0;
  // The largest |w| the layers reading the group multiply it by; 0: none.
  double next_weight_max = 0;
  // The activation's MSE-optimal clip on data (the largest over its values' channels); 0: none.
  double activation_clip = 0;
};

// What bounds one conv output channel's t.
struct ProducerRanges {
  double weight_max = 0;       // the largest |w| of the conv's output channel
  double conv_output_max = 0;  // its largest |output| (before the BatchNormalization); 0: unknown,
                               // and its weights are then never scaled up (only into range)
  double bn_scale = 1;         // the BatchNormalization's γ/√(σ² + ε) on that channel
};

struct ScaleChoice {
  double scale = 1;
  // Empty when every range is met; otherwise what the channel would need, in words, and how many
  // bits of range it lacks.
  std::string need;
  double missing_bits = 0;
};

// s with the least rounding error that keeps the activation's largest value within unsigned 1.7
// ([0, 2)), the signed values within signed 5.10 and the next layers' weights within [−0.5, 0.5):
// where no s meets all, the weights stay in range and the activation clips: at its MSE-optimal clip
// if that lies below where the weights stop s, else there, and it is said to need more.
// `rows_rescale`: every reader can scale its weights' rows back up to fill their range (a conv with
// a BatchNormalization of its own), so only the activation's rounding counts and s puts its
// largest value at the top of unsigned 1.7.
ScaleChoice choose_activation_scale(const GroupRanges& ranges, bool rows_rescale = false);

// The least s that keeps the activation's largest value within unsigned 1.7 and the signed values
// within signed 5.10 (0 when nothing is known): a reader's weights times it must stay in signed 0.7.
double least_activation_scale(const GroupRanges& ranges);

// t that balances the conv's weight steps (1/256) against its BatchNormalization's scale steps
// (1/1024, the scale then being bn_scale / (t·s)) within both ranges and the conv output's signed
// 5.10, given the group's s.
ScaleChoice choose_weight_scale(const ProducerRanges& ranges, double activation_scale);

}  // namespace lattice::fixed_point
