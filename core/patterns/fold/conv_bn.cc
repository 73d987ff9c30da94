// Folding inference BatchNorm into the preceding Conv, ConvTranspose or Gemm (seed 002):
//   scale = gamma / sqrt(var + eps),  W' = W * scale (per output channel),
//   b' = beta + (b - mean) * scale.
// Computed in double from the stored values and rounded once to the weight's type.
#include "core/patterns/fold/conv_bn.h"

#include <cmath>
#include <optional>

#include "core/graph/names.h"
#include "core/onnx/attributes.h"
#include "core/onnx/tensor_data.h"
#include "core/onnx/tensor_type.h"
#include "core/onnx/tensor_values.h"

namespace lattice {
namespace {

// A constant input read as doubles, or the reason it cannot be.
Result<std::vector<double>> constant_values(const MatchContext& ctx, const onnx::NodeProto& node, int input,
                                            std::string_view role) {
  const std::string& name = node.input(input);
  const auto* t = ctx.view.constant(name);
  if (!t) {
    return error("the {} '{}' of '{}' is not a constant (an initializer that is not a graph input, or a Constant node)",
                 role, name, node.name().empty() ? node.op_type() : node.name());
  }
  return read_values(*t, fmt::format("the {} '{}'", role, name));
}

struct BatchNorm {
  std::vector<double> scale, shift;  // y = x * scale + shift, per channel
};

Result<BatchNorm> read_batch_norm(const MatchContext& ctx, int bn_index) {
  const auto& bn = ctx.view.node(bn_index);
  int outputs = 0;
  for (const auto& o : bn.output()) outputs += o.empty() ? 0 : 1;
  if (attr::get_int(bn, "training_mode", 0) != 0 || outputs > 1) {
    return error("BatchNormalization '{}' is in training mode (training_mode=1 or running statistics as outputs)",
                 ctx.view.label(bn_index));
  }
  if (ctx.opset < 7 && attr::get_int(bn, "is_test", 0) == 0) {
    return error("BatchNormalization '{}' is not marked is_test=1 (opset {})", ctx.view.label(bn_index), ctx.opset);
  }
  if (attr::get_int(bn, "spatial", 1) != 1) {
    return error("BatchNormalization '{}' normalises per activation (spatial=0)", ctx.view.label(bn_index));
  }
  if (bn.input_size() != 5) return error("BatchNormalization '{}' does not have 5 inputs", ctx.view.label(bn_index));
  auto gamma = constant_values(ctx, bn, 1, "scale");
  if (!gamma) return gamma.error();
  auto beta = constant_values(ctx, bn, 2, "bias");
  if (!beta) return beta.error();
  auto mean = constant_values(ctx, bn, 3, "mean");
  if (!mean) return mean.error();
  auto var = constant_values(ctx, bn, 4, "variance");
  if (!var) return var.error();
  size_t c = gamma->size();
  if (beta->size() != c || mean->size() != c || var->size() != c) {
    return error("the parameters of BatchNormalization '{}' have different lengths", ctx.view.label(bn_index));
  }
  double eps = attr::get_float(bn, "epsilon", 1e-5f);
  BatchNorm out;
  for (size_t i = 0; i < c; ++i) {
    double s = (*gamma)[i] / std::sqrt((*var)[i] + eps);
    out.scale.push_back(s);
    out.shift.push_back((*beta)[i] - (*mean)[i] * s);
    // A negative epsilon, a variance of -eps or NaN/Inf parameters would fold into NaN/Inf weights.
    if (!std::isfinite(s) || !std::isfinite(out.shift.back())) {
      return error("BatchNormalization '{}' channel {}: scale / sqrt(var + epsilon) = {} / sqrt({} + {}) and "
                   "bias - mean * scale are not both finite",
                   ctx.view.label(bn_index), i, (*gamma)[i], (*var)[i], eps);
    }
  }
  return out;
}

// Which output channel weight element i belongs to. Conv [Cout, Cin/g, k...] and Gemm with transB
// ([N, K]) group by the first axis; Gemm ([K, N]) by the last; ConvTranspose [Cin, Cout/g, k...]
// maps element [ci, j, ...] to o = (ci / (Cin/g)) * (Cout/g) + j, which the seed's plain reshape
// gets wrong when group > 1.
struct ChannelLayout {
  enum Kind { kLeading, kTrailing, kTransposed } kind = kLeading;
  size_t per_channel = 1;                                 // kLeading: elements per output channel
  size_t columns = 1;                                     // kTrailing
  size_t spatial = 1, cout_per_group = 1, cin_per_group = 1;  // kTransposed

  size_t channel_of(size_t i) const {
    switch (kind) {
      case kLeading: return i / per_channel;
      case kTrailing: return i % columns;
      case kTransposed: {
        size_t ci = i / (cout_per_group * spatial), j = (i / spatial) % cout_per_group;
        return (ci / cin_per_group) * cout_per_group + j;
      }
    }
    return 0;
  }
};

Result<ChannelLayout> weight_layout(const onnx::NodeProto& layer, const onnx::TensorProto& w, size_t channels) {
  std::vector<size_t> dims;
  size_t total = 1;  // the data was checked already, so the count fits in memory
  for (auto d : w.dims()) {
    dims.push_back(static_cast<size_t>(d));
    total *= static_cast<size_t>(d);
  }
  const std::string& op = layer.op_type();
  ChannelLayout layout;
  if (op == "Conv") {
    if (dims.size() < 3 || dims[0] != channels) return error("weight dims do not match");
    layout.per_channel = total / channels;
  } else if (op == "ConvTranspose") {
    int64_t group = attr::get_int(layer, "group", 1);
    if (dims.size() < 3 || group <= 0 || dims[0] % static_cast<size_t>(group) != 0 ||
        dims[1] * static_cast<size_t>(group) != channels) {
      return error("weight dims do not match");
    }
    layout.kind = ChannelLayout::kTransposed;
    layout.cin_per_group = dims[0] / static_cast<size_t>(group);
    layout.cout_per_group = dims[1];
    layout.spatial = total / (dims[0] * dims[1]);
  } else {
    bool trans_b = attr::get_int(layer, "transB", 0) != 0;
    if (dims.size() != 2 || (trans_b ? dims[0] : dims[1]) != channels) return error("weight dims do not match");
    layout.kind = trans_b ? ChannelLayout::kLeading : ChannelLayout::kTrailing;
    layout.per_channel = dims[1];
    layout.columns = dims[1];
  }
  return layout;
}

Result<Replacement> fold(const MatchContext& ctx, const Match& match, NameAllocator& names) {
  int layer_index = match.at(0), bn_index = match.at(1);
  const auto& layer = ctx.view.node(layer_index);
  const auto& bn = ctx.view.node(bn_index);
  const std::string label = ctx.view.label(layer_index);
  auto norm = read_batch_norm(ctx, bn_index);
  if (!norm) return norm.error();
  size_t channels = norm->scale.size();

  if (layer.input_size() < 2) return error("'{}' has no weight input", label);
  const auto* w = ctx.view.constant(layer.input(1));
  if (!w) return error("the weight '{}' of '{}' is not a constant", layer.input(1), label);
  if (!is_float_type(w->data_type())) {
    return error("the weight '{}' of '{}' is not float, double or float16", layer.input(1), label);
  }
  const bool gemm = layer.op_type() == "Gemm";
  auto layout = weight_layout(layer, *w, channels);
  if (!layout) {
    return error("the weight '{}' {} of '{}' does not have the {} output channels of BatchNormalization '{}'",
                 layer.input(1), format_dims(*w), label, channels, ctx.view.label(bn_index));
  }

  // Gemm computes alpha*A*B + beta*C: the BN scale goes into B (alpha stays), and the whole
  // bias into C with beta set to 1.
  double beta = gemm ? attr::get_float(layer, "beta", 1.0f) : 1.0;
  std::vector<double> bias(channels, 0.0);
  std::vector<int64_t> bias_dims{static_cast<int64_t>(channels)};
  const bool has_bias = layer.input_size() > 2 && !layer.input(2).empty();
  int32_t bias_type = w->data_type();
  if (has_bias) {
    const auto* b = ctx.view.constant(layer.input(2));
    if (!b) return error("the bias '{}' of '{}' is not a constant", layer.input(2), label);
    auto values = read_values(*b, layer.input(2));
    if (!values) return values.error();
    bias_type = b->data_type();
    // Conv bias is [Cout]; Gemm's C broadcasts: [], [1], [N], [1, N] become [N].
    bool per_channel = values->size() == channels && (b->dims_size() <= 1 || (b->dims_size() == 2 && b->dims(0) == 1));
    if (per_channel) {
      bias = *values;
    } else if (values->size() == 1) {
      bias.assign(channels, (*values)[0]);
    } else {
      return error("the bias '{}' {} of '{}' is not per output channel", layer.input(2), format_dims(*b), label);
    }
    if (gemm && b->dims_size() == 2) bias_dims = {1, static_cast<int64_t>(channels)};
  }

  std::vector<double> folded_b(channels);
  for (size_t c = 0; c < channels; ++c) {
    double added = beta == 0.0 ? 0.0 : beta * bias[c];  // what the layer adds before the BN
    folded_b[c] = added * norm->scale[c] + norm->shift[c];
  }

  Replacement r;
  onnx::NodeProto folded = layer;
  std::string w_name = names.fresh(layer.input(1) + "_bn_folded");
  std::string b_name = names.fresh((has_bias ? layer.input(2) : label + ".bias") + "_bn_folded");
  const auto& scale = norm->scale;
  // The first folded value its type cannot hold (float16 overflows past 65504), and that type.
  std::optional<std::pair<double, int32_t>> overflow;
  auto folded_w = map_values(*w, w_name, fmt::format("the weight '{}'", layer.input(1)), [&](size_t i, double v) {
    double x = v * scale[layout->channel_of(i)];
    if (!overflow && !fits_type(x, w->data_type())) overflow.emplace(x, w->data_type());
    return x;
  });
  if (!folded_w) return folded_w.error();
  for (size_t c = 0; c < channels && !overflow; ++c) {
    if (!fits_type(folded_b[c], bias_type)) overflow.emplace(folded_b[c], bias_type);
  }
  if (overflow) {
    return error("folding BatchNormalization '{}' into '{}' would give the value {}, which {} cannot hold",
                 ctx.view.label(bn_index), label, overflow->first, onnx_types::element_name(overflow->second));
  }
  r.initializers.push_back(std::move(folded_w).value());
  r.initializers.push_back(make_tensor(b_name, bias_type, bias_dims, folded_b));
  folded.set_input(1, w_name);
  if (folded.input_size() > 2) {
    folded.set_input(2, b_name);
  } else {
    folded.add_input(b_name);
  }
  if (gemm) attr::set_float(folded, "beta", 1.0f);  // C now holds the whole bias
  folded.set_output(0, bn.output(0));
  r.nodes.push_back(std::move(folded));
  return r;
}

}  // namespace

const Pattern& conv_batch_norm_fold_pattern() {
  static const Pattern pattern{
      .name = "ConvBatchNormFoldPattern",
      .phase = Phase::kFusion,
      .numerically_equivalent = true,
      .matches = "Conv, ConvTranspose or Gemm -> BatchNormalization (inference form) with constant parameters, "
                 "the layer's output read only by the BatchNormalization",
      .emits = "the layer with folded weight and bias, writing the BatchNormalization's output; BN removed",
      .chain = {Step{{"Conv", "ConvTranspose", "Gemm"}, {}, false}, Step{{"BatchNormalization"}, {}, false}},
      .graft = fold,
  };
  return pattern;
}

}  // namespace lattice
