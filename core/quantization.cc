#include "core/quantization.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "core/onnx/domain.h"
#include "core/onnx/tensor_data.h"
#include "core/onnx/tensor_values.h"

namespace lattice {
namespace {

bool quantization_domain(const std::string& domain) { return is_default_domain(domain) || domain == "com.microsoft"; }

bool is_qdq(const std::string& op) { return op == "QuantizeLinear" || op == "DequantizeLinear"; }

// Quantized operators and the inputs that hold their scales.
struct QOperator {
  std::string_view op;
  std::vector<int> scales;
};
const std::vector<QOperator>& qoperators() {
  static const std::vector<QOperator> ops{
      {"QLinearConv", {1, 4, 6}},    {"QLinearMatMul", {1, 4, 6}}, {"QLinearAdd", {1, 4, 6}},
      {"QLinearMul", {1, 4, 6}},     {"QGemm", {1, 4}},            {"QLinearConcat", {0}},
      {"QLinearSigmoid", {1, 3}},    {"QLinearLeakyRelu", {1, 3}}, {"QLinearAveragePool", {1, 3}},
      {"QLinearGlobalAveragePool", {1, 3}}, {"ConvInteger", {}},   {"MatMulInteger", {}},
  };
  return ops;
}

const QOperator* find_qoperator(const std::string& op) {
  for (const auto& q : qoperators()) {
    if (q.op == op) return &q;
  }
  return nullptr;
}

bool power_of_two(double v) {
  int exponent = 0;
  return v > 0 && std::frexp(v, &exponent) == 0.5;
}

}  // namespace

bool is_quantization_op(const onnx::NodeProto& node) {
  if (!quantization_domain(node.domain())) return false;
  const std::string& op = node.op_type();
  return is_qdq(op) || op == "DynamicQuantizeLinear" || find_qoperator(op) != nullptr;
}

std::optional<Quantization> describe_quantization(const GraphView& view, const Options& options, ExternalData* data) {
  Quantization q;
  size_t qdq = 0, qoperator = 0, dynamic = 0;
  std::vector<double> scales;
  for (int i = view.first(); i >= 0; i = view.next(i)) {
    const auto& n = view.node(i);
    if (!is_quantization_op(n)) continue;
    q.nodes.push_back(view.label(i));
    std::vector<int> scale_inputs;
    if (is_qdq(n.op_type())) {
      ++qdq;
      scale_inputs = {1};
    } else if (n.op_type() == "DynamicQuantizeLinear") {
      ++dynamic;  // its scale is computed at run time
    } else {
      ++qoperator;
      scale_inputs = find_qoperator(n.op_type())->scales;
    }
    for (int input : scale_inputs) {
      if (input >= n.input_size() || n.input(input).empty()) continue;
      const auto* t = view.constant(n.input(input));
      if (!t) continue;  // a scale computed in the graph: nothing to say about its value
      auto loaded = TensorWithData::of(*t, n.input(input), data);
      if (!loaded) continue;
      auto values = read_values(**loaded, n.input(input));
      if (!values) continue;
      if (values->size() > 1) q.per_channel = true;
      scales.insert(scales.end(), values->begin(), values->end());
    }
  }
  if (q.nodes.empty()) return std::nullopt;
  q.form = dynamic > 0 ? "dynamic" : qoperator > 0 ? "qoperator" : "qdq";
  if (!scales.empty()) {
    auto [lo, hi] = std::minmax_element(scales.begin(), scales.end());
    q.scale_min = *lo;
    q.scale_max = *hi;
  }
  std::string what = q.form == "qdq"         ? fmt::format("{} QuantizeLinear/DequantizeLinear nodes", qdq)
                     : q.form == "qoperator" ? fmt::format("{} quantized operators (QLinearConv, ConvInteger, ...)", qoperator + qdq)
                                             : fmt::format("dynamic quantization ({} DynamicQuantizeLinear)", dynamic);
  q.message = fmt::format(
      "This model is already quantized ({}). Lattice's flow quantizes the float model itself (LSCQuant, then the "
      "sensAI compiler; FPGA-UG-02225), so these scales are not carried over: give it the float model.",
      what);
  if (options.fixed_point == FixedPoint::kFpq && !scales.empty()) {
    // FPQ's steps (FPGA-UG-02228 Table 4.1): 1/256 for weights, 1/128 for activations, 1/1024
    // for 16-bit values.
    size_t powers = 0, steps = 0;
    for (double s : scales) {
      powers += power_of_two(s) ? 1 : 0;
      steps += s == 0x1p-8 || s == 0x1p-7 || s == 0x1p-10 ? 1 : 0;
    }
    q.power_of_two = powers == scales.size();
    q.message += fmt::format(
        " Under FPQ: {} of its {} scales are powers of two, {} of them one of FPQ's fixed steps (1/256 weights, 1/128 "
        "activations, 1/1024 16-bit values; FPGA-UG-02228 Table 4.1).",
        powers, scales.size(), steps);
  }
  return q;
}

}  // namespace lattice
