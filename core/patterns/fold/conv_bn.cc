// Folding inference BatchNorm into the preceding Conv, ConvTranspose or Gemm (seed 002):
//   scale = gamma / sqrt(var + eps),  W' = W * scale (per output channel),
//   b' = beta + (b - mean) * scale.
// Computed in double from the stored values and rounded once to the weight's type.
#include "core/patterns/fold/conv_bn.h"

#include <cmath>
#include <optional>

#include "core/onnx/attributes.h"
#include "core/patterns/fold/channel_affine.h"

namespace lattice {
namespace {

Result<ChannelAffine> read_batch_norm(const MatchContext& ctx, int bn_index) {
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
  ChannelAffine out;
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

Result<Replacement> fold(const MatchContext& ctx, const Match& match, NameAllocator& names) {
  int bn_index = match.at(1);
  auto norm = read_batch_norm(ctx, bn_index);
  if (!norm) return norm.error();
  return fold_channel_affine(ctx, match.at(0), *norm, ctx.view.node(bn_index).output(0),
                             fmt::format("BatchNormalization '{}'", ctx.view.label(bn_index)), "_bn_folded", names);
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
