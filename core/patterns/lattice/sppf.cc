// SPPF (YOLO's Spatial Pyramid Pooling - Fast): three cascaded stride-1 MaxPools whose outputs
// all feed a Concat. Lattice runs only the 2x2 stride-2 pool, and snapping these would halve
// the spatial size inside the block, so each pool becomes Conv -> BatchNormalization -> Relu,
// the Conv's kernel the nearest of the target's SPPF kernel set to the pool's.
#include <algorithm>
#include <cstdlib>
#include <optional>

#include "core/onnx/attributes.h"
#include "core/patterns/lattice/emit.h"
#include "core/patterns/lattice/hardware.h"
#include "core/patterns/lattice/patterns.h"

namespace lattice {

bool is_sppf_maxpool(const MatchContext& ctx, int node) {
  const auto& n = ctx.view.node(node);
  if (n.op_type() != "MaxPool" || n.output_size() != 1) return false;
  auto w = pool2d(ctx, node);
  if (!w || w->strides[0] != 1 || w->strides[1] != 1) return false;
  // The block is recognised by its structure alone; its graft needs only the channel count, and
  // says so when that is unknown (a YOLO export with a dynamic batch keeps it).
  const auto& readers = ctx.view.consumers(n.output(0));
  return std::any_of(readers.begin(), readers.end(), [&](int r) { return ctx.view.node(r).op_type() == "Concat"; });
}

namespace {

// Conv(c -> c, k x k, pads k/2, no bias) -> BatchNormalization -> Relu replacing one pool; the
// Relu writes the pool's output name, so the Concat and the next stage read the new chain.
void replace_pool(const MatchContext& ctx, int pool, int64_t c, int64_t kernel, const std::string& input,
                  Replacement& r, NameAllocator& names) {
  const auto& n = ctx.view.node(pool);
  const std::string label = ctx.view.label(pool);
  auto w = kaiming_uniform(names.fresh(label + ".conv.weight"), onnx::TensorProto::FLOAT, {c, c, kernel, kernel},
                           c * kernel * kernel);
  std::string conv_out = names.fresh(label + ".conv_output"), bn_out = names.fresh(label + ".bn_output");
  auto conv = make_node("Conv", names.fresh(label + ".conv"), {input, w.name()}, {conv_out});
  attr::set_ints(conv, "kernel_shape", {kernel, kernel});
  attr::set_ints(conv, "strides", {1, 1});
  attr::set_ints(conv, "pads", {kernel / 2, kernel / 2, kernel / 2, kernel / 2});
  r.initializers.push_back(std::move(w));
  r.nodes.push_back(std::move(conv));
  r.nodes.push_back(fresh_batch_norm(r, names, ctx.opset, names.fresh(label + ".bn"), conv_out, bn_out, c));
  r.nodes.push_back(make_node("Relu", names.fresh(label + ".relu"), {bn_out}, {n.output(0)}));
}

// The target's SPPF kernel nearest to the pool's, ties to the smaller.
int64_t conv_kernel(const MatchContext& ctx, int64_t pool_kernel) {
  std::optional<int64_t> best;
  for (int64_t k : lattice_target(ctx).sppf_kernels) {
    int64_t d = std::abs(k - pool_kernel);
    if (!best || d < std::abs(*best - pool_kernel) || (d == std::abs(*best - pool_kernel) && k < *best)) best = k;
  }
  return *best;
}

Result<Replacement> graft(const MatchContext& ctx, const Match& m, NameAllocator& names) {
  Replacement r;
  std::string input = ctx.view.node(m.at(0)).input(0);
  auto channels = needed_dim(ctx, input, 1, "channel count");
  if (!channels) return channels.error();
  for (int pool : m.nodes()) {
    auto w = *pool2d(ctx, pool);
    int64_t k = conv_kernel(ctx, std::max(w.kernel[0], w.kernel[1]));
    replace_pool(ctx, pool, *channels, k, input, r, names);
    input = ctx.view.node(pool).output(0);
    r.warnings.push_back({ctx.view.label(pool), fmt::format(
        "{}: MaxPool(kernel_size={}, stride={}) replaced with Conv(kernel_size=({}, {})) + BatchNormalization + Relu "
        "— output will differ; retraining required.",
        ctx.view.label(pool), tuple(w.kernel), tuple(w.strides), k, k)});
  }
  return r;
}

// The two SPPF patterns differ only in their name, which says in the report which kernel set the
// target gave the emitted Convs.
Pattern sppf_pattern(std::string_view name, std::string_view emits) {
  Step pool{{"MaxPool"}, is_sppf_maxpool, false};
  return Pattern{
      .name = name,
      .phase = Phase::kConversion,
      .numerically_equivalent = false,
      .matches = "three cascaded stride-1 MaxPools, each feeding a Concat (YOLO SPPF); needs the input's channel count",
      .emits = emits,
      .chain = {pool, pool, pool},
      .intermediates_may_branch = true,
      .graft = graft,
  };
}

}  // namespace

const Pattern& sppf_maxpool_pattern() {
  static const Pattern pattern = sppf_pattern(
      "LatticeSPPFMaxPoolPattern",
      "three cascaded Conv(c->c, 3x3, pad 1, no bias) -> BatchNormalization -> Relu chains");
  return pattern;
}

const Pattern& sppf_maxpool_advanced_pattern() {
  static const Pattern pattern = sppf_pattern(
      "LatticeSPPFMaxPoolAdvancedPattern",
      "three cascaded Conv(c->c, k x k, pad k/2, no bias) -> BatchNormalization -> Relu chains, k the nearest of 3, "
      "5, 7 to the pool kernel");
  return pattern;
}

}  // namespace lattice
