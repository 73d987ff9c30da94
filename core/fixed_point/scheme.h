#pragma once
// Lattice sensAI's fixed-point representations, as the ML engine's documents give them
// (FPGA-UG-02228 Tables 4.1 and 4.2, FPGA-UG-02225): the numbers the fit analysis measures
// against and the rows `onnx-lattice hardware` prints. Facts only; no graph here.
#include <cmath>
#include <span>
#include <string_view>

#include "core/options.h"

namespace lattice::fixed_point {

// Where each rule comes from.
inline constexpr std::string_view kSchemesSource = "FPGA-UG-02225 (LSCQuant); FPGA-UG-02228 section 4";
inline constexpr std::string_view kFpqTable = "FPGA-UG-02228 Table 4.1";
inline constexpr std::string_view kLsqTable = "FPGA-UG-02228 Table 4.2";
inline constexpr std::string_view kBiasRule = "FPGA-UG-02228 section 5.1.1";
inline constexpr std::string_view kInputRange = "FPGA-UG-02225 section 3.1";

// A fixed-point format: `fraction` bits after the point, values from -2^integer (0 when unsigned)
// to 2^integer - step, times `scale`; a sign bit when signed.
struct Format {
  std::string_view name;  // "signed 0.7 with scale 0.5"
  int integer, fraction;
  double scale;
  bool is_signed = true;

  int bits() const { return (is_signed ? 1 : 0) + integer + fraction; }
  double step() const { return std::ldexp(scale, -fraction); }
  double min() const { return is_signed ? -std::ldexp(scale, integer) : 0.0; }
  double max() const { return std::ldexp(scale, integer) - step(); }
  // Round to nearest (ties to even, as numpy's round) in steps, then clamp to the range.
  double quantize(double v) const {
    double q = std::nearbyint(v / step()) * step();
    return q < min() ? min() : q > max() ? max() : q;
  }
  // Whether rounding `v` lands outside the range (so quantize clamps it).
  bool clips(double v) const {
    double q = std::nearbyint(v / step()) * step();
    return q < min() || q > max();
  }
};

// FPQ conv, depthwise conv and dense weights: signed 0.7 with scale 0.5, [-0.5, 0.5 - 1/256] in
// steps of 1/256.
inline constexpr Format kFpqWeights{"signed 0.7 with scale 0.5", 0, 7, 0.5};
// FPQ BatchNormalization parameters and conv outputs: signed 5.10, [-32, 32 - 1/1024].
inline constexpr Format kFpqBatchNorm{"signed 5.10", 5, 10, 1.0};
// Conv, depthwise conv, dense and BatchNormalization outputs: the same signed 5.10.
inline constexpr Format kFpqConvOutput = kFpqBatchNorm;
// A dense layer's output before a sigmoid: signed 2.13, [-4, 4 - 1/8192].
inline constexpr Format kFpqBeforeSigmoid{"signed 2.13", 2, 13, 1.0};
// The input layer's, ReLU's, MaxPooling2D's and Add's outputs: unsigned 1.7, [0, 2 - 1/128].
inline constexpr Format kFpqActivation{"unsigned 1.7", 1, 7, 1.0, false};

// A layer fits FPQ when none of its weights clips and ‖w − q(w)‖ / ‖w‖ is under this: the
// project's threshold, not Lattice's (the guide gives none). 8-bit rounding of weights spread
// over the range gives about 1 %; 10 % means most of the layer's weights sit within a few steps
// of zero, where the rounding is most of the value.
inline constexpr double kFpqErrorThreshold = 0.10;

// One row of the fixed-point columns of `onnx-lattice hardware`: an ONNX op as the sensAI layer it
// maps to, and its representation under each scheme.
struct SchemeRow {
  std::string_view op;      // ONNX operator(s)
  std::string_view layer;   // the sensAI (Keras) layer
  std::string_view fpq;     // representation in FPQ, "" when not listed
  std::string_view lsq;     // in LSQ
};
std::span<const SchemeRow> scheme_rows();

// What the scheme is, in one line with its source, for the report.
std::string_view scheme_description(FixedPoint scheme);

}  // namespace lattice::fixed_point
