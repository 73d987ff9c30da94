// Any MaxPool other than the target's (2x2 stride 2 unpadded on Lattice) is snapped to it
// (outside SPPF blocks, which LatticeSPPFMaxPoolPattern rewrites whole).
#include "core/onnx/attributes.h"
#include "core/patterns/lattice/emit.h"
#include "core/patterns/lattice/hardware.h"
#include "core/patterns/lattice/patterns.h"

namespace lattice {
namespace {

bool is_nonconforming_maxpool(const MatchContext& ctx, int node) {
  const auto& n = ctx.view.node(node);
  int outputs = 0;
  for (const auto& o : n.output()) outputs += o.empty() ? 0 : 1;
  if (outputs != 1 || is_sppf_maxpool(ctx, node)) return false;
  auto w = pool2d(ctx, node);
  return w && !maxpool_canonical(lattice_target(ctx), *w);
}

Result<Replacement> graft(const MatchContext& ctx, const Match& m, NameAllocator&) {
  int pool = m.at(0);
  const auto& n = ctx.view.node(pool);
  Window w = *pool2d(ctx, pool);
  Replacement r;
  const PoolForm& form = lattice_target(ctx).max_pool;
  onnx::NodeProto snapped = lattice_maxpool(ctx, n.name(), n.input(0), n.output(0));
  r.nodes.push_back(std::move(snapped));
  r.warnings.push_back({ctx.view.label(pool), fmt::format(
      "{}: MaxPool snapped from kernel_size={} stride={} padding={} to kernel_size={} stride={} padding=(0, 0) — "
      "output will differ",
      ctx.view.label(pool), tuple(w.kernel), tuple(w.strides), tuple({w.pads[0], w.pads[1]}),
      tuple({form.kernel, form.kernel}), tuple({form.stride, form.stride}))});
  return r;
}

}  // namespace

const Pattern& maxpool2d_pattern() {
  static const Pattern pattern{
      .name = "LatticeMaxPool2dPattern",
      .phase = Phase::kConversion,
      .numerically_equivalent = false,
      .matches = "MaxPool other than 2x2 / stride 2 / pads 0 / dilation 1, not part of an SPPF block, one output",
      .emits = "MaxPool(2x2, stride 2, pads 0, ceil_mode 1)",
      .chain = {Step{{"MaxPool"}, is_nonconforming_maxpool, false}},
      .graft = graft,
  };
  return pattern;
}

}  // namespace lattice
