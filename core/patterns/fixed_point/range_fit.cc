// FpqRangeFitPattern: cross-layer scaling (Nagel et al. 2019, "Data-Free Quantization") against
// FPQ's fixed ranges. For each channel c of Conv A → BatchNormalization → Relu → … → layer B:
//   A's weights (and bias) × t_c, BN's mean × t_c and γ / (t_c·s_c), BN's β / s_c, B's weights on
//   channel c × s_c.
// BN(t·y) with mean t·μ and γ/t equals BN(y); dividing γ and β by s divides BN's output by s; Relu,
// MaxPool and GlobalAveragePool commute with a positive per-channel scale and Flatten keeps each
// channel's values together; B's weights multiplied by s take it back. So B's output, and
// everything after it, is what it was; the chain's last layer keeps its output scale.
// The scales are fixed_point::choose_channel_scale's, from the ranges in Options::channel_ranges
// (keyed by tensor name: the Relu's output, per channel its largest value; the conv's output, its
// largest |value|) or, without any, from the BatchNormalization's statistics (the Relu sees about
// N(β, γ²) per channel, so β + 3|γ|), which the report's options say.
#include "core/patterns/fixed_point/range_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "core/fixed_point/channel_scale.h"
#include "core/onnx/attributes.h"
#include "core/onnx/tensor_values.h"
#include "core/patterns/fold/channel_affine.h"

namespace lattice {
namespace {

// Chain positions.
enum : size_t { kConv, kNorm, kRelu, kPool, kGlobalPool, kFlatten, kNext };

// Standard deviations above β taken as a channel's largest activation when no data is given.
constexpr double kEstimateSigmas = 3.0;

bool constant_float(const MatchContext& ctx, const onnx::NodeProto& n, int input) {
  if (n.input_size() <= input || n.input(input).empty()) return false;
  const auto* t = ctx.view.constant(n.input(input));
  return t && is_float_type(t->data_type());
}

bool plain_conv(const MatchContext& ctx, int node) {
  const auto& conv = ctx.view.node(node);
  if (!constant_float(ctx, conv, 1) || conv.output_size() != 1) return false;
  return conv.input_size() < 3 || conv.input(2).empty() || constant_float(ctx, conv, 2);
}

// An inference BatchNormalization whose four parameters are float constants.
bool constant_norm(const MatchContext& ctx, int node) {
  const auto& bn = ctx.view.node(node);
  if (attr::get_int(bn, "training_mode", 0) != 0 || bn.output_size() != 1 || bn.input_size() != 5) return false;
  if (ctx.opset < 7 && attr::get_int(bn, "is_test", 0) == 0) return false;
  for (int i = 1; i < 5; ++i) {
    if (!constant_float(ctx, bn, i)) return false;
  }
  return true;
}

bool single_output(const MatchContext& ctx, int node) { return ctx.view.node(node).output_size() == 1; }

bool channels_flatten(const MatchContext& ctx, int node) {
  return attr::get_int(ctx.view.node(node), "axis", 1) == 1;
}

// A layer that takes a per-input-channel scale into its constant weights.
bool scalable_layer(const MatchContext& ctx, int node) {
  const auto& n = ctx.view.node(node);
  if (!constant_float(ctx, n, 1)) return false;
  return n.op_type() == "Conv" || attr::get_int(n, "transA", 0) == 0;
}

struct Weights {
  const onnx::TensorProto* tensor;
  std::vector<double> values;
};

Result<Weights> read_weights(const MatchContext& ctx, const onnx::NodeProto& node, int input, std::string_view role) {
  auto values = constant_values(ctx, node, input, role);
  if (!values) return values.error();
  return Weights{ctx.view.constant(node.input(input)), std::move(values).value()};
}

onnx::TensorProto rewritten(const Weights& w, const std::vector<double>& values, NameAllocator& names) {
  std::vector<int64_t> dims(w.tensor->dims().begin(), w.tensor->dims().end());
  return make_tensor(names.fresh(w.tensor->name() + "_fpq_range"), w.tensor->data_type(), dims, values);
}

// For each element of B's weights, the channel of its input it multiplies (or an error when the
// weights' shape does not fit `channels`).
Result<std::vector<size_t>> input_channels(const onnx::NodeProto& next, const onnx::TensorProto& w, size_t channels) {
  std::vector<size_t> dims(w.dims().begin(), w.dims().end());
  size_t total = 1;
  for (size_t d : dims) total *= d;
  std::vector<size_t> of(total);
  if (next.op_type() == "Conv") {
    auto group = static_cast<size_t>(attr::get_int(next, "group", 1));
    if (dims.size() < 3 || group == 0 || dims[1] * group != channels || dims[0] % group != 0) {
      return error("the weights of '{}' do not read {} channels", next.name(), channels);
    }
    size_t spatial = total / (dims[0] * dims[1]), out_per_group = dims[0] / group;
    for (size_t i = 0; i < total; ++i) {
      size_t o = i / (dims[1] * spatial), j = (i / spatial) % dims[1];
      of[i] = (o / out_per_group) * dims[1] + j;
    }
    return of;
  }
  // Gemm: B is [K, N], or [N, K] with transB; Flatten laid each channel's values out together.
  if (dims.size() != 2) return error("the weights of '{}' are not a matrix", next.name());
  bool transposed = attr::get_int(next, "transB", 0) != 0;
  size_t k = transposed ? dims[1] : dims[0];
  if (k % channels != 0) return error("'{}' reads {} values, not a whole number per each of {} channels", next.name(), k, channels);
  size_t per_channel = k / channels;
  for (size_t i = 0; i < total; ++i) of[i] = (transposed ? i % dims[1] : i / dims[1]) / per_channel;
  return of;
}

// A BatchNormalization that carries only a bias (FpqConvBiasIntoBatchNormPattern's: scale 1, mean
// 0, var + ε = 1) says nothing about its activations.
bool carries_only_bias(const std::vector<double>& gamma, const std::vector<double>& mean,
                       const std::vector<double>& var, double eps) {
  for (size_t c = 0; c < gamma.size(); ++c) {
    if (gamma[c] != 1 || mean[c] != 0 || std::abs(var[c] + eps - 1) > 1e-6) return false;
  }
  return true;
}

// The channel where a range is missed by most, described once for the layer.
struct Worst {
  size_t count = 0, channel = 0;
  std::string need;
  double bits = -1;
  void note(size_t c, const std::string& n, double b) {
    if (n.empty()) return;
    ++count;
    if (b > bits) bits = b, channel = c, need = n;
  }
};

Result<Replacement> fit_ranges(const MatchContext& ctx, const Match& m, NameAllocator& names) {
  const auto& conv = ctx.view.node(m.at(kConv));
  const auto& bn = ctx.view.node(m.at(kNorm));
  const std::string conv_label = ctx.view.label(m.at(kConv)), bn_label = ctx.view.label(m.at(kNorm));
  // The activation moves only through a Relu to a layer that takes the scale back; otherwise the
  // Relu's output keeps its scale and only the conv's weights are fitted.
  int next = m.at(kRelu) >= 0 ? m.at(kNext) : -1;
  if (next >= 0 && (ctx.view.node(next).op_type() == "Gemm") != (m.at(kFlatten) >= 0)) next = -1;

  auto weights = read_weights(ctx, conv, 1, "weight");
  if (!weights) return weights.error();
  std::vector<Weights> params;
  for (int i = 1; i < 5; ++i) {
    auto p = read_weights(ctx, bn, i, std::array{"scale", "bias", "mean", "variance"}[i - 1]);
    if (!p) return p.error();
    params.push_back(std::move(p).value());
  }
  const auto &gamma = params[0].values, &beta = params[1].values, &mean = params[2].values, &var = params[3].values;
  const size_t channels = gamma.size();
  if (weights->tensor->dims_size() < 1 || static_cast<size_t>(weights->tensor->dims(0)) != channels ||
      beta.size() != channels || mean.size() != channels || var.size() != channels) {
    return error("'{}' has {} output channels and BatchNormalization '{}' {} parameters", conv_label,
                 weights->tensor->dims_size() ? weights->tensor->dims(0) : 0, bn_label, channels);
  }
  const double eps = attr::get_float(bn, "epsilon", 1e-5f);
  const size_t per_channel = weights->values.size() / channels;

  std::optional<Weights> next_weights;
  std::vector<size_t> next_channel;
  if (next >= 0) {
    auto w = read_weights(ctx, ctx.view.node(next), 1, "weight");
    if (!w) return w.error();
    auto of = input_channels(ctx.view.node(next), *w->tensor, channels);
    if (!of) return of.error();
    next_weights = std::move(w).value();
    next_channel = std::move(of).value();
  }

  // The ranges: measured, or estimated from the BatchNormalization.
  const auto& given = ctx.options.channel_ranges;
  auto measured = [&](int node) -> const std::vector<double>* {
    auto it = node >= 0 ? given.find(ctx.view.node(node).output(0)) : given.end();
    return it != given.end() && it->second.size() == channels ? &it->second : nullptr;
  };
  const auto* activations = measured(m.at(kRelu));
  const auto* conv_outputs = measured(m.at(kConv));
  const bool estimate = given.empty() && !carries_only_bias(gamma, mean, var, eps);

  std::vector<fixed_point::ChannelRanges> ranges(channels);
  for (size_t c = 0; c < channels; ++c) {
    auto& r = ranges[c];
    r.bn_scale = gamma[c] / std::sqrt(var[c] + eps);
    r.bn_offset = beta[c] - mean[c] * r.bn_scale;
    for (size_t i = 0; i < per_channel; ++i) r.weight_max = std::max(r.weight_max, std::abs(weights->values[c * per_channel + i]));
    if (conv_outputs) r.conv_output_max = (*conv_outputs)[c];
    if (next < 0) continue;
    r.activation_max = activations ? (*activations)[c] : estimate ? std::max(0.0, beta[c] + kEstimateSigmas * std::abs(gamma[c])) : 0;
  }
  if (next_weights) {
    for (size_t i = 0; i < next_weights->values.size(); ++i) {
      auto& r = ranges[next_channel[i]];
      r.next_weight_max = std::max(r.next_weight_max, std::abs(next_weights->values[i]));
    }
  }

  std::vector<double> s(channels), t(channels);
  Worst activation_worst, weights_worst;
  bool changes = false;
  for (size_t c = 0; c < channels; ++c) {
    auto scale = fixed_point::choose_channel_scale(ranges[c]);
    s[c] = scale.activation;
    t[c] = scale.weights;
    changes = changes || s[c] != 1 || t[c] != 1;
    activation_worst.note(c, scale.activation_need, scale.activation_missing_bits);
    weights_worst.note(c, scale.weights_need, scale.weights_missing_bits);
  }
  if (!changes) return error("every channel of '{}' is in FPQ's ranges as it is", conv_label);

  Replacement r;
  std::vector<double> w = weights->values;
  for (size_t i = 0; i < w.size(); ++i) w[i] *= t[i / per_channel];
  onnx::NodeProto fitted_conv = conv;
  r.initializers.push_back(rewritten(*weights, w, names));
  fitted_conv.set_input(1, r.initializers.back().name());
  if (conv.input_size() > 2 && !conv.input(2).empty()) {
    auto bias = read_weights(ctx, conv, 2, "bias");
    if (!bias) return bias.error();
    std::vector<double> b = bias->values;
    for (size_t c = 0; c < b.size() && c < channels; ++c) b[c] *= t[c];
    r.initializers.push_back(rewritten(*bias, b, names));
    fitted_conv.set_input(2, r.initializers.back().name());
  }
  r.nodes.push_back(std::move(fitted_conv));

  std::vector<std::vector<double>> fitted(4);
  for (size_t c = 0; c < channels; ++c) {
    fitted[0].push_back(gamma[c] / (t[c] * s[c]));
    fitted[1].push_back(beta[c] / s[c]);
    fitted[2].push_back(mean[c] * t[c]);
    fitted[3].push_back(var[c]);
  }
  onnx::NodeProto fitted_bn = bn;
  for (int i = 0; i < 3; ++i) {
    for (double v : fitted[i]) {
      if (!fits_type(v, params[i].tensor->data_type())) {
        return error("fitting '{}' would give BatchNormalization '{}' a parameter of {}, which its type cannot hold",
                     conv_label, bn_label, v);
      }
    }
    r.initializers.push_back(rewritten(params[i], fitted[i], names));
    fitted_bn.set_input(i + 1, r.initializers.back().name());
  }
  r.nodes.push_back(std::move(fitted_bn));
  for (size_t step = kRelu; step < kNext; ++step) {
    if (m.at(step) >= 0) r.nodes.push_back(ctx.view.node(m.at(step)));
  }
  if (m.at(kNext) >= 0) {
    onnx::NodeProto layer = ctx.view.node(m.at(kNext));
    if (next_weights) {
      std::vector<double> v = next_weights->values;
      for (size_t i = 0; i < v.size(); ++i) v[i] *= s[next_channel[i]];
      r.initializers.push_back(rewritten(*next_weights, v, names));
      layer.set_input(1, r.initializers.back().name());
    }
    r.nodes.push_back(std::move(layer));
  }

  // What no scale could fit, named once per layer with its worst channel.
  const std::string relu_label = m.at(kRelu) >= 0 ? ctx.view.label(m.at(kRelu)) : "";
  if (activation_worst.count) {
    r.warnings.push_back({relu_label, fmt::format("'{}': {} of {} channels have no scale that keeps both this activation "
                                                  "in unsigned 1.7 and '{}''s weights in range; channel {} would need {}",
                                                  relu_label, activation_worst.count, channels,
                                                  ctx.view.label(next), activation_worst.channel, activation_worst.need)});
  }
  if (weights_worst.count) {
    r.warnings.push_back({conv_label, fmt::format("'{}': {} of {} channels have no scale that keeps both its weights and "
                                                  "BatchNormalization '{}''s scale in range; channel {} would need {}",
                                                  conv_label, weights_worst.count, channels, bn_label,
                                                  weights_worst.channel, weights_worst.need)});
  }
  return r;
}

}  // namespace

const Pattern& fpq_range_fit_pattern() {
  static const Pattern pattern{
      .name = "FpqRangeFitPattern",
      .phase = Phase::kFusion,
      .numerically_equivalent = true,
      .matches = "Conv with constant weights -> BatchNormalization with constant parameters -> [Relu -> [MaxPool] -> "
                 "[GlobalAveragePool] -> [Flatten] -> Conv or Gemm with constant weights], under --fixed-point fpq",
      .emits = "the same nodes with per-channel scales moved between them: the Conv's weights and the BatchNormalization's "
               "mean times t, its scale over t·s and offset over s, the next layer's weights on each channel times s; "
               "weights within [-0.5, 0.5) and the Relu's output within [0, 2) on the ranges given",
      .chain = {Step{{"Conv"}, plain_conv, false}, Step{{"BatchNormalization"}, constant_norm, false},
                Step{{"Relu"}, single_output, true}, Step{{"MaxPool"}, single_output, true},
                Step{{"GlobalAveragePool"}, single_output, true}, Step{{"Flatten"}, channels_flatten, true},
                Step{{"Conv", "Gemm"}, scalable_layer, true}},
      .graft = fit_ranges,
      .scheme = FixedPoint::kFpq,
  };
  return pattern;
}

}  // namespace lattice
