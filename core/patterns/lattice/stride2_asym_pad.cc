// A stride-2 Conv with SAME padding whose chain ends in a MaxPool: Lattice pads stride-2
// convolutions on the bottom and right only, so the symmetric pads become an explicit Pad.
// Only the target's stride-2 kernel runs there (3x3 on Lattice): a larger kernel becomes it,
// re-initialised or transferred (--snap-weights).
#include <algorithm>

#include "core/onnx/attributes.h"
#include "core/patterns/lattice/emit.h"
#include "core/patterns/lattice/hardware.h"
#include "core/patterns/lattice/patterns.h"
#include "core/patterns/lattice/weight_transfer.h"

namespace lattice {
namespace {

bool is_stride2_same_conv(const MatchContext& ctx, int node) {
  auto conv = conv2d(ctx, node);
  if (!conv) return false;
  const Window& w = conv->window;
  // A 1x1 kernel has no padding to move; LatticeConv2dPattern makes it a 3x3 first.
  // Unknown pads (auto_pad SAME on an input of unknown size) match, for the graft to refuse.
  return lattice_target(ctx).stride2_kernel > 0 && w.strides[0] == 2 && w.strides[1] == 2 &&
         std::max(w.kernel[0], w.kernel[1]) > 1 &&
         (!w.pads_known || w.pads_symmetric_same());
}

Result<Replacement> graft(const MatchContext& ctx, const Match& m, NameAllocator& names) {
  int conv_index = m.at(0);
  const auto& conv = ctx.view.node(conv_index);
  const std::string label = ctx.view.label(conv_index);
  Conv2d c = *conv2d(ctx, conv_index);
  if (auto s = pads_resolved(ctx, conv.input(0), c.window); !s) return s.error();
  int64_t kh = c.window.kernel[0], kw = c.window.kernel[1], k = lattice_target(ctx).stride2_kernel;
  bool snap = std::max(kh, kw) > k;
  std::vector<int64_t> pad_ends = snap ? std::vector<int64_t>{k / 2, k / 2} : std::vector<int64_t>{kh / 2, kw / 2};

  Replacement r;
  std::string padded = names.fresh(label + ".padded");
  add_zero_pad(r, names, ctx.opset, names.fresh(label + ".pad"), conv.input(0), padded,
               {0, 0, 0, 0, 0, 0, pad_ends[0], pad_ends[1]});
  onnx::NodeProto new_conv = conv;
  new_conv.set_input(0, padded);
  attr::remove(new_conv, "auto_pad");
  attr::set_ints(new_conv, "pads", {0, 0, 0, 0});
  attr::set_ints(new_conv, "strides", {2, 2});
  if (snap) {
    // The new window: the Pad's bottom/right k/2, then a k x k at stride 2 without pads or dilation.
    std::array<TapAxis, 2> from = tap_axes(c.window), onto{TapAxis{k, 1, 0, k / 2, 2}, TapAxis{k, 1, 0, k / 2, 2}};
    auto weights = snap_conv_weights(ctx, new_conv, label, from, onto, names, r);
    if (!weights) return weights.error();
    attr::remove(new_conv, "dilations");
    r.warnings.push_back({label, fmt::format(
        "{}: Conv(kernel_size={}, stride={}, padding={}) snapped to Pad((0, {}, 0, {})) + Conv(kernel_size={}, "
        "stride={}, padding=(0, 0)) — {}, {}",
        label, tuple({kh, kw}), tuple(c.window.strides), tuple({c.window.pads[0], c.window.pads[1]}), k / 2, k / 2,
        tuple({k, k}), tuple(c.window.strides), weights->what,
        weights->exact ? "output unchanged (numerically equivalent)." : "output will differ; retraining recommended.")});
  } else {
    r.warnings.push_back({label, fmt::format(
        "{}: Conv(stride={}, padding={}) replaced with Pad((0, {}, 0, {})) + Conv(stride={}, padding=(0, 0)) — output "
        "will differ; retraining recommended.",
        label, tuple(c.window.strides), tuple({c.window.pads[0], c.window.pads[1]}), kw / 2, kh / 2,
        tuple(c.window.strides))});
  }
  r.nodes.push_back(std::move(new_conv));
  // The BatchNormalization, Relu and MaxPool of the chain stay as they are.
  for (size_t step = 1; step < m.steps.size(); ++step) {
    if (m.at(step) >= 0) r.nodes.push_back(ctx.view.node(m.at(step)));
  }
  return r;
}

}  // namespace

const Pattern& stride2_asym_pad_conv_maxpool_pattern() {
  static const Pattern pattern{
      .name = "LatticeStride2AsymPadConvMaxPoolPattern",
      .phase = Phase::kConversion,
      .numerically_equivalent = false,
      .matches = "Conv stride 2 with SAME pads -> [BatchNormalization] -> [Relu] -> MaxPool",
      .emits = "Pad(zeros, bottom kh/2, right kw/2) -> Conv(stride 2, pads 0) -> [BN] -> [Relu] -> MaxPool; a kernel "
               "over 3 becomes 3x3 (re-initialised) with Pad(bottom 1, right 1)",
      .chain = {Step{{"Conv"}, is_stride2_same_conv, false}, Step{{"BatchNormalization"}, {}, true},
                Step{{"Relu"}, {}, true}, Step{{"MaxPool"}, {}, false}},
      .graft = graft,
  };
  return pattern;
}

}  // namespace lattice
