#include "core/patterns/fold/channel_affine.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <utility>

#include "core/onnx/attributes.h"
#include "core/onnx/tensor_data.h"
#include "core/onnx/tensor_type.h"
#include "core/onnx/tensor_values.h"

namespace lattice {
namespace {

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

  // Multiplies `values`, the elements first, first + 1, ... of the weight, by the scale of their
  // channel: in runs of one channel (or, kTrailing, of consecutive ones), plain loops with no
  // division per weight, since the fold does this to every weight.
  void scale(size_t first, std::span<double> values, const std::vector<double>& scale) const {
    for (size_t k = 0; k < values.size();) {
      size_t i = first + k;
      size_t run = kind == kLeading ? per_channel - i % per_channel
                   : kind == kTrailing ? columns - i % columns
                                       : spatial - i % spatial;
      auto block = values.subspan(k, std::min(run, values.size() - k));
      if (kind == kTrailing) {
        const double* s = scale.data() + i % columns;
        for (size_t j = 0; j < block.size(); ++j) block[j] *= s[j];
      } else {
        double s = scale[channel_of(i)];
        for (double& v : block) v *= s;
      }
      k += block.size();
    }
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

}  // namespace

Result<std::vector<double>> constant_values(const GraphView& view, ExternalData* data, const onnx::NodeProto& node,
                                            int input, std::string_view role) {
  const std::string& name = node.input(input);
  const auto* t = view.constant(name);
  if (!t) {
    return error("the {} '{}' of '{}' is not a constant: it is the {}", role, name,
                 node.name().empty() ? node.op_type() : node.name(), view.describe(name));
  }
  std::string what = fmt::format("the {} '{}'", role, name);
  auto loaded = TensorWithData::of(*t, what, data);
  if (!loaded) return loaded.error();
  return read_values(**loaded, what);
}

Result<ChannelAffine> batch_norm_affine(const GraphView& view, int64_t opset, ExternalData* data, int bn_index) {
  const auto& bn = view.node(bn_index);
  const std::string label = view.label(bn_index);
  int outputs = 0;
  for (const auto& o : bn.output()) outputs += o.empty() ? 0 : 1;
  if (attr::get_int(bn, "training_mode", 0) != 0 || outputs > 1) {
    return error("BatchNormalization '{}' is in training mode (training_mode=1 or running statistics as outputs)",
                 label);
  }
  if (opset < 7 && attr::get_int(bn, "is_test", 0) == 0) {
    return error("BatchNormalization '{}' is not marked is_test=1 (opset {})", label, opset);
  }
  if (attr::get_int(bn, "spatial", 1) != 1) {
    return error("BatchNormalization '{}' normalises per activation (spatial=0)", label);
  }
  if (bn.input_size() != 5) return error("BatchNormalization '{}' does not have 5 inputs", label);
  auto gamma = constant_values(view, data, bn, 1, "scale");
  if (!gamma) return gamma.error();
  auto beta = constant_values(view, data, bn, 2, "bias");
  if (!beta) return beta.error();
  auto mean = constant_values(view, data, bn, 3, "mean");
  if (!mean) return mean.error();
  auto var = constant_values(view, data, bn, 4, "variance");
  if (!var) return var.error();
  size_t c = gamma->size();
  if (beta->size() != c || mean->size() != c || var->size() != c) {
    return error("the parameters of BatchNormalization '{}' have different lengths", label);
  }
  double eps = attr::get_float(bn, "epsilon", 1e-5f);
  ChannelAffine out;
  for (size_t i = 0; i < c; ++i) {
    double s = (*gamma)[i] / std::sqrt((*var)[i] + eps);
    out.scale.push_back(s);
    out.shift.push_back((*beta)[i] - (*mean)[i] * s);
    // A negative epsilon, a variance of -eps or NaN/Inf parameters would fold into NaN/Inf weights.
    if (!std::isfinite(s) || !std::isfinite(out.shift.back())) {
      return error("BatchNormalization '{}' channel {}: scale / sqrt(var + epsilon) = {} / sqrt({} + {}) and "
                   "bias - mean * scale are not both finite",
                   label, i, (*gamma)[i], (*var)[i], eps);
    }
  }
  return out;
}

Status unfold_channel_affine(const onnx::NodeProto& layer, const onnx::TensorProto& weight, const ChannelAffine& affine,
                             std::vector<float>& weights, std::vector<float>& bias) {
  const size_t channels = affine.scale.size();
  auto layout = weight_layout(layer, weight, channels);
  if (!layout || bias.size() != channels) {
    return error("the weight {} of '{}' does not have the {} output channels of the BatchNormalization after it",
                 format_dims(weight), layer.name(), channels);
  }
  for (size_t i = 0; i < weights.size(); ++i) {
    double s = affine.scale[layout->channel_of(i)];
    weights[i] = s == 0.0 ? 0.0f : static_cast<float>(weights[i] / s);
  }
  for (size_t c = 0; c < channels; ++c) {
    double s = affine.scale[c];
    bias[c] = s == 0.0 ? 0.0f : static_cast<float>((bias[c] - affine.shift[c]) / s);
  }
  return ok_status();
}

Result<Replacement> fold_channel_affine(const MatchContext& ctx, int layer_index, const ChannelAffine& affine,
                                        const std::string& output, std::string_view source, std::string_view suffix,
                                        NameAllocator& names) {
  const auto& layer = ctx.view.node(layer_index);
  const std::string label = ctx.view.label(layer_index);
  size_t channels = affine.scale.size();

  if (layer.input_size() < 2) return error("'{}' has no weight input", label);
  const auto* weight = ctx.view.constant(layer.input(1));
  if (!weight) {
    return error("the weight '{}' of '{}' is not a constant: it is the {}", layer.input(1), label,
                 ctx.view.describe(layer.input(1)));
  }
  const onnx::TensorProto& w = *weight;  // its data stays where it is until the fold reads it below
  if (!is_float_type(w.data_type())) {
    return error("the weight '{}' of '{}' is not float, double or float16", layer.input(1), label);
  }
  const bool gemm = layer.op_type() == "Gemm";
  auto layout = weight_layout(layer, w, channels);
  if (!layout) {
    return error("the weight '{}' {} of '{}' does not have the {} output channels of {}", layer.input(1),
                 format_dims(w), label, channels, source);
  }

  // Gemm computes alpha*A*B + beta*C: the scale goes into B (alpha stays), and the whole bias
  // into C with beta set to 1.
  double beta = gemm ? attr::get_float(layer, "beta", 1.0f) : 1.0;
  std::vector<double> bias(channels, 0.0);
  std::vector<int64_t> bias_dims{static_cast<int64_t>(channels)};
  const bool has_bias = layer.input_size() > 2 && !layer.input(2).empty();
  int32_t bias_type = w.data_type();
  if (has_bias) {
    const auto* bias_tensor = ctx.view.constant(layer.input(2));
    if (!bias_tensor) {
      return error("the bias '{}' of '{}' is not a constant: it is the {}", layer.input(2), label,
                   ctx.view.describe(layer.input(2)));
    }
    auto b_data = TensorWithData::of(*bias_tensor, fmt::format("the bias '{}'", layer.input(2)), ctx.data);
    if (!b_data) return b_data.error();
    const onnx::TensorProto& b = **b_data;
    auto values = read_values(b, layer.input(2));
    if (!values) return values.error();
    bias_type = b.data_type();
    // Conv bias is [Cout]; Gemm's C broadcasts: [], [1], [N], [1, N] become [N].
    bool per_channel = values->size() == channels && (b.dims_size() <= 1 || (b.dims_size() == 2 && b.dims(0) == 1));
    if (per_channel) {
      bias = *values;
    } else if (values->size() == 1) {
      bias.assign(channels, (*values)[0]);
    } else {
      return error("the bias '{}' {} of '{}' is not per output channel", layer.input(2), format_dims(b), label);
    }
    if (gemm && b.dims_size() == 2) bias_dims = {1, static_cast<int64_t>(channels)};
  }

  std::vector<double> folded_b(channels);
  for (size_t c = 0; c < channels; ++c) {
    double added = beta == 0.0 ? 0.0 : beta * bias[c];  // what the layer adds before the affine
    folded_b[c] = added * affine.scale[c] + affine.shift[c];
  }

  Replacement r;
  onnx::NodeProto folded = layer;
  std::string w_name = names.fresh(layer.input(1) + std::string(suffix));
  std::string b_name = names.fresh((has_bias ? layer.input(2) : label + ".bias") + std::string(suffix));
  // The folded weight is computed as the model is written (MappedValues): a conversion never
  // holds every folded layer.
  std::string w_what = fmt::format("the weight '{}'", layer.input(1));
  auto folded_w = MappedValues::of(w, w_what, ctx.data, [layout = *layout, scale = affine.scale](
                                                                  size_t first, std::span<double> values) {
    layout.scale(first, values, scale);
  });
  if (!folded_w) return folded_w.error();
  // The first folded value its type cannot hold (not finite, or float16 from 65520, which rounds to
  // infinity), and that type. |w * s| grows with |w| and |s|, so the largest of each bounds every
  // folded value: one pass over the stored bits instead of computing each value here and again as
  // the model is written (ResNet-50's native fold, with the direct reads of read_blocks: 68 -> 61
  // ms); the values are computed, to name the first, only when the bound does not fit.
  std::optional<std::pair<double, int32_t>> overflow;
  auto largest_w = largest_magnitude(*(*folded_w)->source(), w.data_type(), or_no_files(ctx.data));
  if (!largest_w) return error("{}: cannot read its data: {}", w_what, largest_w.error().message);
  double largest_scale = 0.0;  // a NaN scale, which std::max passes over, makes a NaN bias: refused below
  for (double s : affine.scale) largest_scale = std::max(largest_scale, std::fabs(s));
  if (!fits_type(*largest_w * largest_scale, w.data_type())) {
    auto unrepresentable = (*folded_w)->first_unrepresentable(or_no_files(ctx.data));
    if (!unrepresentable) return error("{}: cannot read its data: {}", w_what, unrepresentable.error().message);
    if (*unrepresentable) overflow.emplace(**unrepresentable, w.data_type());
  }
  for (size_t c = 0; c < channels && !overflow; ++c) {
    if (!fits_type(folded_b[c], bias_type)) overflow.emplace(folded_b[c], bias_type);
  }
  if (overflow) {
    return error("folding {} into '{}' would give the value {}, which {} cannot hold", source, label, overflow->first,
                 onnx_types::element_name(overflow->second));
  }
  auto w_tensor = produced_tensor(w_name, w, *folded_w, ctx.data);
  if (!w_tensor) return w_tensor.error();
  r.initializers.push_back(std::move(w_tensor).value());
  r.initializers.push_back(make_tensor(b_name, bias_type, bias_dims, folded_b));
  folded.set_input(1, w_name);
  if (folded.input_size() > 2) {
    folded.set_input(2, b_name);
  } else {
    folded.add_input(b_name);
  }
  if (gemm) attr::set_float(folded, "beta", 1.0f);  // C now holds the whole bias
  if (ctx.options.fixed_point == FixedPoint::kFpq && layer.op_type() == "Conv") {
    r.warnings.push_back({label, fmt::format(
        "{}: {} folded into Conv '{}' as asked (folding on under FPQ), which gives it a bias: FPQ will refuse it, since a Conv "
        "with a bias must be followed by a BatchNormalization (FPGA-UG-02228 section 5.1.1)",
        label, source, label)});
  }
  folded.set_output(0, output);
  r.nodes.push_back(std::move(folded));
  return r;
}

}  // namespace lattice
