// Folding Conv -> [Mul(s)] -> [Add(t)] with per-channel constants s and t into the Conv, as
// onnxruntime's ConvMulFusion and ConvAddFusion do: W' = W * s, b' = b * s + t. The broadcast
// is checked exactly, so the fold never changes the output's shape: s and t are scalars or hold
// the channel count on the channel axis and 1 elsewhere ([C, 1, 1], [1, C, 1, 1]).
#include "core/patterns/fold/conv_scale_shift.h"

#include <optional>

#include "core/onnx/domain.h"
#include "core/onnx/tensor_values.h"
#include "core/patterns/fold/channel_affine.h"

namespace lattice {
namespace {

// The output channels and rank of a Conv with a constant weight, or nullopt.
struct ConvOutput {
  int64_t channels;
  size_t rank;
};

std::optional<ConvOutput> conv_output(const MatchContext& ctx, int conv) {
  const auto& n = ctx.view.node(conv);
  if (n.op_type() != "Conv" || n.input_size() < 2) return std::nullopt;
  const auto* w = ctx.view.constant(n.input(1));
  if (!w || w->dims_size() < 3 || !is_float_type(w->data_type())) return std::nullopt;
  return ConvOutput{w->dims(0), static_cast<size_t>(w->dims_size())};
}

// The operand of an elementwise Mul or Add that is not `x`, when it is a float constant that
// broadcasts per channel over a Conv output: its values, one per channel.
std::optional<std::vector<double>> per_channel(const MatchContext& ctx, const onnx::NodeProto& op,
                                               const std::string& x, const ConvOutput& out) {
  if (op.input_size() != 2 || op.input(0) != x || op.input(1) == x) return std::nullopt;
  const auto* t = ctx.view.constant(op.input(1));
  if (!t || !is_float_type(t->data_type()) || static_cast<size_t>(t->dims_size()) > out.rank) return std::nullopt;
  // Right-aligned broadcasting: constant axis j lies on output axis j + rank - dims.
  size_t offset = out.rank - static_cast<size_t>(t->dims_size());
  bool on_channels = false;
  for (int j = 0; j < t->dims_size(); ++j) {
    int64_t d = t->dims(j);
    if (d == 1) continue;
    if (d != out.channels || offset + static_cast<size_t>(j) != 1) return std::nullopt;
    on_channels = true;
  }
  auto loaded = TensorWithData::of(*t, op.input(1), ctx.data);
  if (!loaded) return std::nullopt;
  auto values = read_values(**loaded, op.input(1));
  if (!values) return std::nullopt;
  if (!on_channels) return std::vector<double>(static_cast<size_t>(out.channels), (*values)[0]);
  return std::move(values).value();
}

// Whether `node` (Mul or Add) takes the output of the Conv `conv` times (plus) a per-channel constant.
bool scales_or_shifts(const MatchContext& ctx, int conv, int node) {
  auto out = conv_output(ctx, conv);
  return out && per_channel(ctx, ctx.view.node(node), ctx.view.node(conv).output(0), *out).has_value();
}

// The Conv step: only a Conv whose one reader is a Mul or Add by a per-channel constant starts
// a match, so a bare Conv is never reported.
bool feeds_scale_or_shift(const MatchContext& ctx, int conv) {
  const auto& out = ctx.view.node(conv).output(0);
  const auto& readers = ctx.view.consumers(out);
  if (readers.size() != 1 || ctx.view.reader_count(out) != 1) return false;
  const auto& next = ctx.view.node(readers[0]);
  return (next.op_type() == "Mul" || next.op_type() == "Add") && is_default_domain(next.domain()) &&
         scales_or_shifts(ctx, conv, readers[0]);
}

// The Mul/Add steps: per-channel relative to the chain's Conv, whichever tensor they read.
int chain_conv(const MatchContext& ctx, int node) {
  int p = ctx.view.producer(ctx.view.node(node).input(0));
  while (p >= 0 && ctx.view.node(p).op_type() == "Mul") p = ctx.view.producer(ctx.view.node(p).input(0));
  return p >= 0 && ctx.view.node(p).op_type() == "Conv" ? p : -1;
}

bool per_channel_step(const MatchContext& ctx, int node) {
  int conv = chain_conv(ctx, node);
  if (conv < 0) return false;
  auto out = conv_output(ctx, conv);
  const auto& n = ctx.view.node(node);
  return out && per_channel(ctx, n, n.input(0), *out).has_value();
}

Result<Replacement> fold(const MatchContext& ctx, const Match& m, NameAllocator& names) {
  int conv = m.at(0), mul = m.at(1), add = m.at(2);
  auto out = conv_output(ctx, conv);
  if (!out) return error("the weight of Conv '{}' is not a float constant", ctx.view.label(conv));
  auto channels = static_cast<size_t>(out->channels);
  ChannelAffine affine{std::vector<double>(channels, 1.0), std::vector<double>(channels, 0.0)};
  std::string source;
  if (mul >= 0) {
    const auto& n = ctx.view.node(mul);
    affine.scale = *per_channel(ctx, n, n.input(0), *out);
    source = fmt::format("Mul '{}'", ctx.view.label(mul));
  }
  if (add >= 0) {
    const auto& n = ctx.view.node(add);
    affine.shift = *per_channel(ctx, n, n.input(0), *out);
    source += fmt::format("{}Add '{}'", source.empty() ? "" : " and ", ctx.view.label(add));
  }
  const auto& last = ctx.view.node(m.nodes().back());
  return fold_channel_affine(ctx, conv, affine, last.output(0), source, "_scale_folded", names);
}

}  // namespace

const Pattern& conv_scale_shift_fold_pattern() {
  static const Pattern pattern{
      .name = "ConvScaleShiftFoldPattern",
      .phase = Phase::kFusion,
      .numerically_equivalent = true,
      .matches = "Conv -> [Mul] -> [Add] (at least one) by float constants that are scalars or per output channel "
                 "([C, 1, 1], [1, C, 1, 1]), each intermediate output read only by the next",
      .emits = "the Conv with the scale folded into its weight and bias and the shift into its bias, writing the "
               "chain's output",
      .chain = {Step{{"Conv"}, feeds_scale_or_shift, false}, Step{{"Mul"}, per_channel_step, true},
                Step{{"Add"}, per_channel_step, true}},
      .graft = fold,
  };
  return pattern;
}

}  // namespace lattice
