// FpqConvBiasIntoBatchNormPattern. In FPQ a Conv2D or DepthwiseConv2D with a bias loads only when
// a BatchNormalization follows it (FPGA-UG-02228 section 5.1.1), so the bias moves into one.
// FpqDenseBiasIntoBatchNormPattern does the same for a dense layer (a Gemm: a classifier's head),
// for range rather than for the rule: a Dense's output and a BatchNormalization's input are both
// signed 5.10 (Table 4.1), and the BatchNormalization's 16-bit scale (up to 32) is what lets the
// range fit shrink each of the head's rows into signed 0.7 and take it back, as it does a conv's;
// without one the head's weights decide alone how far the values it reads can be scaled.
//   BN(conv(x) + b) with mean m  ==  BN(conv(x)) with mean m - b          (computed in double,
//   conv(x) + b  ==  BN(conv(x)) with scale 1, B = b, mean 0, var 1 - eps  rounded once)
// The inserted BatchNormalization's epsilon is 2^-16, so that var + eps is exactly 1 in float:
// sqrt(1) = 1 and the node adds b and nothing else (with 1e-5, 1 - eps is not a float and the
// output would be scaled by 1 +- 3e-8).
#include "core/patterns/fixed_point/conv_bias_into_batch_norm.h"

#include <cmath>

#include "core/onnx/attributes.h"
#include "core/onnx/tensor_values.h"
#include "core/patterns/fold/channel_affine.h"
#include "core/patterns/lattice/emit.h"

namespace lattice {
namespace {

constexpr double kInsertedEpsilon = 0x1p-16;

bool has_bias(const onnx::NodeProto& conv) { return conv.input_size() > 2 && !conv.input(2).empty(); }

// A Conv with a bias, except one a fold gave its bias in this run (the user asked for the fold).
bool biased_conv(const MatchContext& ctx, int node) {
  const auto& conv = ctx.view.node(node);
  if (!has_bias(conv) || conv.output_size() == 0) return false;
  return !ctx.fused || !ctx.fused->contains(conv.output(0));
}

// A dense layer whose bias is one value per output (a Gemm of a constant matrix with C of [N] or
// [1, N]), from opset 11, where C may be left out; not one whose only readers are Sigmoids, whose
// output FPQ holds in signed 2.13 (a BatchNormalization's is signed 5.10).
bool biased_dense(const MatchContext& ctx, int node) {
  const auto& gemm = ctx.view.node(node);
  if (ctx.opset < 11 || !has_bias(gemm) || gemm.output_size() != 1 || attr::get_int(gemm, "transA", 0) != 0) return false;
  const auto* w = ctx.view.constant(gemm.input(1));
  const auto* c = ctx.view.constant(gemm.input(2));
  if (!w || !c || w->dims_size() != 2 || !is_float_type(w->data_type()) || !is_float_type(c->data_type())) return false;
  const int64_t outputs = w->dims(attr::get_int(gemm, "transB", 0) != 0 ? 0 : 1);
  const bool per_output = (c->dims_size() == 1 && c->dims(0) == outputs) ||
                          (c->dims_size() == 2 && c->dims(0) == 1 && c->dims(1) == outputs);
  if (!per_output) return false;
  const auto& readers = ctx.view.consumers(gemm.output(0));
  bool sigmoids = !readers.empty();
  for (int r : readers) sigmoids = sigmoids && ctx.view.node(r).op_type() == "Sigmoid";
  return !sigmoids;
}

// A BatchNormalization in inference form whose mean can take the bias: a float constant.
bool takes_bias(const MatchContext& ctx, int node) {
  const auto& bn = ctx.view.node(node);
  int outputs = 0;
  for (const auto& o : bn.output()) outputs += o.empty() ? 0 : 1;
  if (attr::get_int(bn, "training_mode", 0) != 0 || outputs != 1 || bn.input_size() != 5) return false;
  if (ctx.opset < 7 && attr::get_int(bn, "is_test", 0) == 0) return false;
  const auto* mean = ctx.view.constant(bn.input(3));
  return mean && is_float_type(mean->data_type());
}

Result<Replacement> move_bias(const MatchContext& ctx, const Match& m, NameAllocator& names) {
  int conv_index = m.at(0), bn_index = m.at(1);
  const auto& conv = ctx.view.node(conv_index);
  const std::string label = ctx.view.label(conv_index);
  const auto* bias_tensor = ctx.view.constant(conv.input(2));
  if (!bias_tensor) {
    return error("the bias '{}' of '{}' is not a constant: it is the {}", conv.input(2), label,
                 ctx.view.describe(conv.input(2)));
  }
  auto bias = constant_values(ctx, conv, 2, "bias");
  if (!bias) return bias.error();
  // A Gemm adds beta·C.
  if (const double beta = conv.op_type() == "Gemm" ? attr::get_float(conv, "beta", 1.0f) : 1.0; beta != 1) {
    for (double& b : *bias) b *= beta;
  }

  Replacement r;
  onnx::NodeProto unbiased = conv;
  unbiased.mutable_input()->RemoveLast();
  if (bn_index >= 0) {
    const auto& bn = ctx.view.node(bn_index);
    auto mean = constant_values(ctx, bn, 3, "mean");
    if (!mean) return mean.error();
    if (mean->size() != bias->size()) {
      return error("the bias '{}' of '{}' has {} values and the mean '{}' of BatchNormalization '{}' has {}",
                   conv.input(2), label, bias->size(), bn.input(3), ctx.view.label(bn_index), mean->size());
    }
    const auto* mean_tensor = ctx.view.constant(bn.input(3));
    std::vector<double> moved(mean->size());
    for (size_t c = 0; c < moved.size(); ++c) {
      moved[c] = (*mean)[c] - (*bias)[c];
      if (!fits_type(moved[c], mean_tensor->data_type())) {
        return error("moving the bias of '{}' into BatchNormalization '{}' would give the mean {}, which its type "
                     "cannot hold",
                     label, ctx.view.label(bn_index), moved[c]);
      }
    }
    std::vector<int64_t> dims(mean_tensor->dims().begin(), mean_tensor->dims().end());
    auto new_mean = make_tensor(names.fresh(bn.input(3) + "_fpq_bias"), mean_tensor->data_type(), dims, moved);
    onnx::NodeProto norm = bn;
    norm.set_input(3, new_mean.name());
    r.initializers.push_back(std::move(new_mean));
    r.nodes.push_back(std::move(unbiased));
    r.nodes.push_back(std::move(norm));
    return r;
  }

  // No BatchNormalization follows: one carries the bias, writing the conv's output.
  int32_t type = bias_tensor->data_type();
  auto channels = static_cast<int64_t>(bias->size());
  std::string base = conv.name().empty() ? label : conv.name();
  unbiased.set_output(0, names.fresh(conv.output(0) + "_fpq_unbiased"));
  auto norm = make_node("BatchNormalization", names.fresh(base + "_fpq_bias"), {unbiased.output(0)}, {conv.output(0)});
  const std::vector<double> ones(bias->size(), 1.0), zeros(bias->size(), 0.0),
      variance(bias->size(), 1.0 - kInsertedEpsilon);
  for (auto [suffix, values] : {std::pair{".scale", &ones}, {".bias", &*bias}, {".mean", &zeros}, {".var", &variance}}) {
    auto t = make_tensor(names.fresh(norm.name() + suffix), type, {channels}, *values);
    norm.add_input(t.name());
    r.initializers.push_back(std::move(t));
  }
  attr::set_float(norm, "epsilon", static_cast<float>(kInsertedEpsilon));
  if (ctx.opset < 7) attr::set_int(norm, "is_test", 1);  // before opset 7 the default is training
  r.nodes.push_back(std::move(unbiased));
  r.nodes.push_back(std::move(norm));
  return r;
}

}  // namespace

const Pattern& fpq_conv_bias_into_batch_norm_pattern() {
  static const Pattern pattern{
      .name = "FpqConvBiasIntoBatchNormPattern",
      .phase = Phase::kFusion,
      .numerically_equivalent = true,
      .matches = "Conv with a bias (grouped and depthwise included) -> [BatchNormalization in inference form with a "
                 "constant mean], under --fixed-point fpq; not a Conv the BatchNorm fold produced (folding asked for under FPQ)",
      .emits = "the Conv without its bias, and the BatchNormalization with mean - bias; or, when none follows, a new "
               "BatchNormalization(scale 1, B = bias, mean 0, var 1 - eps) writing the Conv's output",
      .chain = {Step{{"Conv"}, biased_conv, false}, Step{{"BatchNormalization"}, takes_bias, true}},
      .graft = move_bias,
      .scheme = FixedPoint::kFpq,
  };
  return pattern;
}

const Pattern& fpq_dense_bias_into_batch_norm_pattern() {
  static const Pattern pattern{
      .name = "FpqDenseBiasIntoBatchNormPattern",
      .phase = Phase::kFusion,
      .numerically_equivalent = true,
      .matches = "Gemm with a constant matrix and a bias of one value per output (opset 11 on), not read by Sigmoids "
                 "alone -> [BatchNormalization in inference form with a constant mean], under --fixed-point fpq",
      .emits = "the Gemm without its bias, and the BatchNormalization with mean - beta*bias; or, when none follows, a "
               "new BatchNormalization(scale 1, B = beta*bias, mean 0, var 1 - eps) writing the Gemm's output",
      .chain = {Step{{"Gemm"}, biased_dense, false}, Step{{"BatchNormalization"}, takes_bias, true}},
      .graft = move_bias,
      .scheme = FixedPoint::kFpq,
  };
  return pattern;
}

}  // namespace lattice
