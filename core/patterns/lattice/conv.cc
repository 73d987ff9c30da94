// A 2-D Conv outside the target's kernels, strides or pads k/2 is snapped to the nearest one
// the target accepts. Weights are kept when their shape stays, else re-initialised or
// transferred (--snap-weights); dilation and groups are left as they are (the audit names a
// dilation the hardware lacks).
#include "core/onnx/attributes.h"
#include "core/patterns/lattice/emit.h"
#include "core/patterns/lattice/hardware.h"
#include "core/patterns/lattice/patterns.h"
#include "core/patterns/lattice/weight_transfer.h"

namespace lattice {
namespace {

bool is_nonconforming_conv(const MatchContext& ctx, int node) {
  auto conv = conv2d(ctx, node);
  return conv && !conv_accepted(ctx, node, *conv);
}

Result<Replacement> graft(const MatchContext& ctx, const Match& m, NameAllocator& names) {
  int index = m.at(0);
  const auto& conv = ctx.view.node(index);
  const std::string label = ctx.view.label(index);
  Conv2d c = *conv2d(ctx, index);
  const Window& w = c.window;
  if (auto s = pads_resolved(ctx, conv.input(0), w); !s) return s.error();
  // Per axis: a stride (2, 1) stays (2, 1), so the output keeps its height and width.
  SnappedConv to = snap_conv(lattice_target(ctx), std::max(w.kernel[0], w.kernel[1]), {w.strides[0], w.strides[1]});
  std::vector<int64_t> kernel{to.kernel, to.kernel}, strides{to.strides[0], to.strides[1]};
  // pads k/2, scaled by the dilation (which stays) so that a stride-1 Conv keeps its size.
  std::vector<int64_t> pads{w.dilations[0] * (to.kernel / 2), w.dilations[1] * (to.kernel / 2),
                            w.dilations[0] * (to.kernel / 2), w.dilations[1] * (to.kernel / 2)};

  Replacement r;
  onnx::NodeProto snapped = conv;
  attr::remove(snapped, "auto_pad");
  attr::set_ints(snapped, "kernel_shape", kernel);
  attr::set_ints(snapped, "strides", strides);
  attr::set_ints(snapped, "pads", pads);
  std::vector<int64_t> old_pads{w.pads[0], w.pads[1]}, new_pads{pads[0], pads[1]};
  std::string stride_pads = fmt::format(
      "{}/{} to {}/{}", tuple(w.strides),
      tuple(w.pads == std::vector<int64_t>{w.pads[0], w.pads[1], w.pads[0], w.pads[1]} ? old_pads : w.pads),
      tuple(strides), tuple(new_pads));
  if (kernel != w.kernel) {
    std::array<TapAxis, 2> from = tap_axes(w), onto = from;
    for (size_t a = 0; a < 2; ++a) onto[a] = {to.kernel, w.dilations[a], pads[a], pads[a + 2], to.strides[a]};
    auto weights = snap_conv_weights(ctx, snapped, label, from, onto, names, r);
    if (!weights) return weights.error();
    if (weights->exact) {  // the new window reads what the old one did: one warning, saying so
      r.warnings.push_back({label, fmt::format("{}: kernel_size snapped from {} to {}, stride/padding from {} — {}: "
                                               "output unchanged (numerically equivalent).",
                                               label, tuple(w.kernel), tuple(kernel), stride_pads, weights->what)});
      r.nodes.push_back(std::move(snapped));
      return r;
    }
    r.warnings.push_back({label, fmt::format("{}: kernel_size snapped from {} to {} — {}, output will differ; "
                                             "retraining recommended.",
                                             label, tuple(w.kernel), tuple(kernel), weights->what)});
  }
  if (strides != w.strides || w.pads != pads) {
    r.warnings.push_back({label, fmt::format("{}: stride/padding snapped from {} — output will differ; retraining "
                                             "recommended.",
                                             label, stride_pads)});
  }
  r.nodes.push_back(std::move(snapped));
  return r;
}

}  // namespace

const Pattern& conv2d_pattern() {
  static const Pattern pattern{
      .name = "LatticeConv2dPattern",
      .phase = Phase::kConversion,
      .numerically_equivalent = false,
      .matches = "2-D Conv outside the target's accepted kernels and strides, or with pads other than k/2 (the "
                 "asymmetric stride-2 form, a Pad -> Conv(3x3, stride 2, pads 0) pair or a 3x3 stride-2 Conv with pads "
                 "[0, 0, 1, 1], is accepted)",
      .emits = "the Conv with kernel and stride snapped to the nearest accepted (ties to the smaller; a 1x1 with "
               "stride > 1 becomes 3x3) and pads k/2; weights kept if their shape stays, else re-initialised",
      .chain = {Step{{"Conv"}, is_nonconforming_conv, false}},
      .graft = graft,
  };
  return pattern;
}

}  // namespace lattice
