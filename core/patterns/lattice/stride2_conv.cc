// A stride-2 Conv -> [BN] -> [Relu] chain with no MaxPool after it: the convolution keeps its
// weights at stride 1 and the target's MaxPool (2x2 stride 2) does the downsampling, after the
// chain (under FPQ, before a 1x1 conv whose chain has no Relu: see graft).
#include <algorithm>

#include "core/onnx/attributes.h"
#include "core/patterns/lattice/emit.h"
#include "core/patterns/lattice/hardware.h"
#include "core/patterns/lattice/patterns.h"

namespace lattice {
namespace {

// Whether a MaxPool reads the Conv's output, directly or through BatchNormalization and Relu
// (the seed's _has_maxpool_after_chain): those chains are LatticeStride2AsymPadConvMaxPoolPattern's.
bool followed_by_maxpool(const MatchContext& ctx, int conv) {
  std::vector<int> frontier{conv};
  for (const char* op : {"BatchNormalization", "Relu"}) {
    std::vector<int> next;
    for (int n : frontier) {
      for (int reader : ctx.view.consumers(ctx.view.node(n).output(0))) {
        if (ctx.view.node(reader).op_type() == op) next.push_back(reader);
      }
    }
    frontier.insert(frontier.end(), next.begin(), next.end());
  }
  for (int n : frontier) {
    for (int reader : ctx.view.consumers(ctx.view.node(n).output(0))) {
      if (ctx.view.node(reader).op_type() == "MaxPool") return true;
    }
  }
  return false;
}

// The target's asymmetric stride-2 form (a Pad -> Conv(3x3, stride 2, pads 0) pair, or the Conv
// padded bottom and right by itself) is left as it is: the target runs it exactly. Rewritten, the
// pair's stride-1 Conv would have its pads snapped to k/2 on top of the Pad's, a grid one row and
// column wider than the original's, which no later layer's refit could then reach.
bool is_stride2_conv(const MatchContext& ctx, int node) {
  auto conv = conv2d(ctx, node);
  return conv && conv->window.strides[0] == 2 && conv->window.strides[1] == 2 && !followed_by_maxpool(ctx, node) &&
         !asymmetric_stride2_conv(ctx, node, *conv);
}

// Stride-1 pads that keep the size, for a Conv whose auto_pad asked for SAME.
std::vector<int64_t> same_pads_stride1(const Window& w) {
  std::vector<int64_t> pads(4);
  for (size_t i = 0; i < 2; ++i) {
    int64_t total = (w.kernel[i] - 1) * w.dilations[i];
    int64_t small = total / 2, large = total - small;
    pads[i] = w.auto_pad == "SAME_LOWER" ? large : small;
    pads[i + 2] = w.auto_pad == "SAME_LOWER" ? small : large;
  }
  return pads;
}

Result<Replacement> graft(const MatchContext& ctx, const Match& m, NameAllocator& names) {
  const std::string& out = ctx.view.node(m.nodes().back()).output(0);
  int conv_index = m.at(0);
  const auto& conv = ctx.view.node(conv_index);
  const std::string label = ctx.view.label(conv_index);
  Conv2d c = *conv2d(ctx, conv_index);
  // Whether auto_pad SAME pads it bottom and right only (the target's asymmetric form, left as it
  // is) depends on the size: unknown, the rewrite is refused naming it.
  if (auto s = pads_resolved(ctx, conv.input(0), c.window); !s) return s.error();

  // FPQ's MaxPooling2D takes unsigned 1.7 (FPGA-UG-02228 Table 4.1): behind a Relu the pool loses
  // nothing, nor before one (or a Clip, which the target runs as ReLU6) that zeroes the negative
  // values anyway; but a chain without one read by anything else (a residual block's 1x1
  // downsample, Conv -> BN -> Add) hands it the BatchNormalization's signed values, and on the
  // device every negative one becomes 0.
  auto rectifier = [&](int reader) {
    const auto& op = ctx.view.node(reader).op_type();
    return op == "Relu" || op == "Clip";
  };
  const auto& readers = ctx.view.consumers(out);
  const bool rectified_after = !ctx.view.is_graph_output(out) && !readers.empty() && std::all_of(readers.begin(), readers.end(), rectifier);
  const bool signed_pool = ctx.options.fixed_point == FixedPoint::kFpq && m.at(m.steps.size() - 1) < 0 && !rectified_after;
  // Such a chain's 1x1 conv reads each position alone, so under FPQ the pool goes before it, on
  // its input, when a Relu (or Clip) wrote that: the values the pool reads are then unsigned, and
  // the conv at stride 1 reads the pooled grid, of the size the stride-2 one gave.
  const int writer = ctx.view.producer(conv.input(0));
  const bool pool_first = signed_pool && c.window.kernel[0] == 1 && c.window.kernel[1] == 1 &&
                          std::all_of(c.window.pads.begin(), c.window.pads.end(), [](int64_t p) { return p == 0; }) &&
                          writer >= 0 && rectifier(writer);

  Replacement r;
  onnx::NodeProto new_conv = conv;
  attr::set_ints(new_conv, "strides", {1, 1});
  if (c.window.auto_pad == "SAME_UPPER" || c.window.auto_pad == "SAME_LOWER") {
    attr::remove(new_conv, "auto_pad");
    attr::set_ints(new_conv, "pads", same_pads_stride1(c.window));
  }
  const PoolForm& form = lattice_target(ctx).max_pool;
  if (pool_first) {
    const std::string pooled = names.fresh(label + ".pool_output_0");
    r.nodes.push_back(lattice_maxpool(ctx, names.fresh(label + ".pool"), conv.input(0), pooled));
    new_conv.set_input(0, pooled);
  }
  r.nodes.push_back(std::move(new_conv));
  for (size_t step = 1; step < m.steps.size(); ++step) {
    if (m.at(step) >= 0) r.nodes.push_back(ctx.view.node(m.at(step)));
  }
  if (pool_first) {
    r.warnings.push_back({label, fmt::format(
        "{}: Conv(stride={}) replaced with MaxPool(kernel_size={}, stride={}) + Conv(stride=(1, 1)) — output will "
        "differ; retraining recommended. Under FPQ the pool goes before this 1x1 conv, on its input, so that no "
        "signed value (its BatchNormalization's, with no Relu after) reaches FPQ's MaxPooling2D",
        label, tuple(c.window.strides), form.kernel, form.stride)});
    return r;
  }
  // The chain's last node now writes a new tensor, and the pool takes over its output name.
  std::string pooled_input = names.fresh(out + ".stride1");
  r.nodes.back().set_output(0, pooled_input);
  r.nodes.push_back(lattice_maxpool(ctx, names.fresh(label + ".pool"), pooled_input, out));
  r.warnings.push_back({label, fmt::format(
      "{}: Conv(stride={}) replaced with Conv(stride=(1, 1)) + MaxPool(kernel_size={}, stride={}) — output will "
      "differ; retraining recommended.",
      label, tuple(c.window.strides), form.kernel, form.stride)});
  if (signed_pool) {
    r.warnings.push_back({label, fmt::format(
        "{}: under FPQ the new MaxPool reads signed values (no Relu before it), and FPQ's MaxPooling2D takes "
        "unsigned 1.7: every value below 0 becomes 0 on the device, a change the float model does not show "
        "(the check's FPQ twin measures it)",
        label)});
  }
  return r;
}

}  // namespace

const Pattern& stride2_conv_bn_relu_pattern() {
  static const Pattern pattern{
      .name = "LatticeStride2ConvBnReLUPattern",
      .phase = Phase::kConversion,
      .numerically_equivalent = false,
      .matches = "Conv stride 2 -> [BatchNormalization] -> [Relu], with no MaxPool after the chain (the target's "
                 "asymmetric stride-2 form, a Pad -> Conv(3x3, stride 2, pads 0) pair or a 3x3 stride-2 Conv with pads "
                 "[0, 0, 1, 1], which it runs, is left as it is)",
      .emits = "the chain with the Conv at stride 1 (weights kept), then MaxPool(2x2, stride 2, pads 0, ceil_mode 1); "
               "under FPQ, a 1x1 Conv whose chain has no Relu and whose input a Relu writes: the MaxPool first, on "
               "its input",
      .chain = {Step{{"Conv"}, is_stride2_conv, false}, Step{{"BatchNormalization"}, {}, true},
                Step{{"Relu"}, {}, true}},
      .graft = graft,
  };
  return pattern;
}

}  // namespace lattice
