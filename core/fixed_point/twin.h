#pragma once
// The FPQ twin: a copy of a converted model in which every value FPGA-UG-02228 Table 4.1 gives a
// representation is held in it (rounded to its step, clamped to its range), written with standard
// ONNX operators so that any runtime computes what FPQ's fixed point does to the float model.
// The check runs it against the converted model; `--fpq-twin FILE` writes it.
//
// Where each value is held (Table 4.1, restated in ONNX terms):
// - a float graph input: unsigned 1.7 (the input layer);
// - Conv / ConvTranspose weights, and a Gemm's or MatMul's constant weights (a dense layer):
//   signed 0.7 with scale 0.5; their outputs signed 5.10 (a dense layer's 2.13 when its only
//   readers are Sigmoids);
// - a GEMM (a Gemm or MatMul whose second operand is computed): that operand signed 5.10; its
//   output is left in float, since the table gives two representations without saying which;
// - conv and dense biases: signed 5.10, the accumulator they add to (FPQ itself refuses a biased
//   conv without a BatchNormalization after it, section 5.1.1; the fit analysis says so);
// - BatchNormalization: its per-channel scale γ/√(σ² + ε) and offset β − μ·scale signed 5.10
//   (what the 16-bit layer stores), its output signed 5.10;
// - Relu, MaxPool and Add outputs: unsigned 1.7;
// - GlobalAveragePool, AveragePool and GlobalMaxPool outputs: their input's representation (not in
//   Table 4.1; LSQ's Table 4.2 holds GlobalAveragePooling2D in 8 bits, and an average or maximum of
//   values a representation holds is within its range); with an input held in none, float;
// - data movement (Concat, Flatten, Reshape, Transpose, Slice, Split, Squeeze, Unsqueeze,
//   Identity, Dropout): as its input, so nothing is added.
// Any other op that computes floats is left in float and listed in `not_simulated`: the twin is
// exact there and the hardware may not be (or may not run it at all).
//
// The form: QuantizeLinear then DequantizeLinear (zero point 0, the step as scale) for the 8-bit
// representations, and for the 16-bit ones from opset 21 (int16 Q/DQ); below opset 21 a 16-bit
// one is Mul(1/step), Round, Clip(−2^15, 2^15 − 1), Mul(step), which computes the same values.
// Rounding is ONNX's, to nearest with ties to even; the FPGA's own rounding is not documented.
#include <string>
#include <vector>

#include "core/util/json.h"
#include "core/util/result.h"
#include "onnx-ml.pb.h"

namespace lattice::fixed_point {

// One value the twin holds in a representation.
struct TwinValue {
  std::string tensor;          // as the converted model names it
  std::string node;            // the node that reads (weights, bias, parameters) or writes it
  std::string role;            // "input", "weights", "bias", "parameters", "output"
  std::string representation;  // "signed 5.10"
  std::string form;            // "QuantizeLinear/DequantizeLinear (int8)", "Mul/Round/Clip/Mul", "constant"
  double step, min, max;       // the representation's
  // An output every reader of which is a Relu: its negative values, which the Relu zeroes anyway,
  // lose nothing to an unsigned representation (a residual Add's before its Relu).
  bool rectified_next = false;
};

// An op the twin leaves in float, and why.
struct TwinGap {
  std::string node, op, reason;
};

struct FpqTwin {
  onnx::ModelProto model;
  int64_t opset = 0;
  std::vector<TwinValue> values;  // in graph order
  std::vector<TwinGap> not_simulated;
  // {source, opset, rounding, forms: {representation: form}, values: [{representation, role,
  // count}], activations: [{tensor, role, representation, step, min, max}] (the graph inputs' and
  // node outputs' representations, for the activations' fit on data), not_simulated: [{node, op,
  // reason}]}: what the check's `fpq` comparison reports.
  Json to_json() const;
};

// What build_fpq_twin gives: the twin model with its values, or the values alone (which tensor
// FPQ holds in which representation: what the range fit's report measures on data), which need
// no operator of any opset and so are given for every model.
enum class TwinScope { model, values };

// The twin of `converted`. The model is refused (kModel) below opset 11, where Round and Clip's
// bounds as inputs do not exist; with TwinScope::values, `model` is left empty. Tensors kept in
// external data files stay references to them; a BatchNormalization whose parameters are among
// them is left in float and said so.
Result<FpqTwin> build_fpq_twin(const onnx::ModelProto& converted, TwinScope scope = TwinScope::model);

}  // namespace lattice::fixed_point
