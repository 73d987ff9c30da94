// Folding inference BatchNorm into the preceding Conv, ConvTranspose or Gemm (seed 002):
//   scale = gamma / sqrt(var + eps),  W' = W * scale (per output channel),
//   b' = beta + (b - mean) * scale.
// Computed in double from the stored values and rounded once to the weight's type.
#include "core/patterns/fold/conv_bn.h"

#include "core/patterns/fold/channel_affine.h"

namespace lattice {
namespace {

Result<Replacement> fold(const MatchContext& ctx, const Match& match, NameAllocator& names) {
  int bn_index = match.at(1);
  auto norm = batch_norm_affine(ctx.view, ctx.opset, ctx.data, bn_index);
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
