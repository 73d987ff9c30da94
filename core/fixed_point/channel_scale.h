#pragma once
// The per-channel scales FPQ range fitting moves between two layers (Nagel et al. 2019, "Data-Free
// Quantization", cross-layer equalisation), chosen against FPQ's fixed ranges (FPGA-UG-02228
// Table 4.1). For one channel c of Conv → BatchNormalization → Relu → … → next layer:
//   - `activation` (s): the Relu's output is divided by s. relu(y / s) = relu(y) / s for s > 0, so
//     the BatchNormalization's γ and β are divided by s and the next layer's weights on channel c
//     multiplied by s: exact in float, up to rounding.
//   - `weights` (t): the conv's output channel c is multiplied by t, and the BatchNormalization
//     takes it back: γ / t, mean · t (BN(t·y) with those equals BN(y)).
// No graph here: the numbers in, the two scales out.
#include <string>

namespace lattice::fixed_point {

struct ChannelRanges {
  // The largest value of the Relu's output on channel c (measured, or estimated); 0: none, or no
  // Relu after the BatchNormalization (then the activation is not moved).
  double activation_max = 0;
  // The largest |w| the next layer multiplies channel c by; 0: no next layer takes a scale.
  double next_weight_max = 0;
  // The largest |w| of the conv's output channel c.
  double weight_max = 0;
  // The largest |conv output| on channel c (before the BatchNormalization); 0: unknown, and the
  // conv's weights are then never scaled up (only into range).
  double conv_output_max = 0;
  // The BatchNormalization's per-channel scale γ/√(σ² + ε) and offset β − μ·scale.
  double bn_scale = 1, bn_offset = 0;
};

struct ChannelScale {
  double activation = 1;  // s
  double weights = 1;     // t
  // Empty when both ranges are met; otherwise what the channel would need, in words, and how many
  // bits of range it lacks.
  std::string activation_need, weights_need;
  double activation_missing_bits = 0, weights_missing_bits = 0;
};

// The scales with the least rounding error that keep every value in range: s puts the activation's
// largest value at the top of unsigned 1.7 ([0, 2)), unless the next layer's weights would leave
// [−0.5, 0.5) — then s stops where they fit and the activation is said to need more; t balances the
// conv's weight steps (1/256) against the BatchNormalization's scale steps (1/1024) within both
// ranges and the conv output's signed 5.10.
ChannelScale choose_channel_scale(const ChannelRanges& ranges);

}  // namespace lattice::fixed_point
