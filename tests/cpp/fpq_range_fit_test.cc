// FpqRangeFitPattern: per-channel scales moved through Conv → BatchNormalization → Relu → Conv
// leave the float model's output as it was, bring the weights into FPQ's [−0.5, 0.5) and the
// Relu's output into [0, 2) on the ranges given, and name a layer no scale can fit.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/fixed_point/channel_scale.h"
#include "core/fixed_point/scheme.h"
#include "core/onnx/attributes.h"
#include "core/onnx/tensor_values.h"
#include "core/repair/weight_bounds.h"
#include "converted.h"

using namespace lattice;
using Catch::Matchers::Contains;

namespace {

constexpr int64_t kChannels = 4;

Options fpq() {
  Options o;
  o.target = "none";
  o.fixed_point = FixedPoint::kFpq;
  return o;
}

// x [1, C, 1, 1] → Conv A (1×1) → BatchNormalization → Relu → Conv B (1×1) → y: A's weights up to
// ±1.8 (a BatchNorm-fused export's stem), B's scaled by `next_scale`.
onnx::ModelProto chain_model(float next_scale = 1.0f) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto& g = *m.mutable_graph();
  g.set_name("range_fit");
  test::set_input_shape(*g.add_input(), "x", {1, kChannels, 1, 1});
  g.add_output()->set_name("y");
  auto b = test::seeded_floats(kChannels * kChannels, -0.1f, 0.1f, 2);
  for (auto& v : b) v *= next_scale;
  *g.add_initializer() = test::float_tensor("wa", {kChannels, kChannels, 1, 1}, test::seeded_floats(kChannels * kChannels, -1.8f, 1.8f, 1));
  *g.add_initializer() = test::float_tensor("gamma", {kChannels}, test::seeded_floats(kChannels, 0.5f, 3.0f, 3));
  *g.add_initializer() = test::float_tensor("beta", {kChannels}, test::seeded_floats(kChannels, 0.5f, 1.5f, 4));
  *g.add_initializer() = test::float_tensor("mean", {kChannels}, test::seeded_floats(kChannels, -0.5f, 0.5f, 5));
  *g.add_initializer() = test::float_tensor("var", {kChannels}, test::seeded_floats(kChannels, 0.5f, 2.0f, 6));
  *g.add_initializer() = test::float_tensor("wb", {kChannels, kChannels, 1, 1}, b);
  test::add_node(g, "Conv", "conv_a", {"x", "wa"}, {"a"});
  test::add_node(g, "BatchNormalization", "bn", {"a", "gamma", "beta", "mean", "var"}, {"n"});
  test::add_node(g, "Relu", "relu", {"n"}, {"r"});
  test::add_node(g, "Conv", "conv_b", {"r", "wb"}, {"y"});
  return m;
}

// The chain computed in double from whatever parameters the model holds: the Relu's output and y.
struct Computed {
  std::vector<double> relu, y;
};
// A BatchNormalization named `name` applied to channel c's value v.
double normalized(const onnx::ModelProto& m, const std::string& name, size_t c, double v) {
  const auto& bn = test::node_named(m, name);
  auto gamma = test::initializer_values(m, bn.input(1)), beta = test::initializer_values(m, bn.input(2)), mean = test::initializer_values(m, bn.input(3)),
       var = test::initializer_values(m, bn.input(4));
  return gamma[c] * (v - mean[c]) / std::sqrt(var[c] + attr::get_float(bn, "epsilon", 1e-5f)) + beta[c];
}

// `outputs` rows of the weights of the layer named `name` (a 1×1 Conv, or a Gemm with transB) on `in`.
std::vector<double> layer_of(const onnx::ModelProto& m, const std::string& name, const std::vector<double>& in, size_t outputs) {
  auto w = test::initializer_values(m, test::node_named(m, name).input(1));
  std::vector<double> out(outputs);
  for (size_t o = 0; o < outputs; ++o) {
    for (size_t i = 0; i < in.size(); ++i) out[o] += w[o * in.size() + i] * in[i];
  }
  return out;
}

Computed compute(const onnx::ModelProto& m, const std::vector<double>& x) {
  Computed out{layer_of(m, "conv_a", x, kChannels), {}};
  for (int64_t c = 0; c < kChannels; ++c) out.relu[c] = std::max(0.0, normalized(m, "bn", c, out.relu[c]));
  if (test::has_node(m, "conv_b")) out.y = layer_of(m, "conv_b", out.relu, kChannels);
  return out;
}

std::vector<std::vector<double>> samples() {
  std::vector<std::vector<double>> xs;
  for (unsigned s = 0; s < 16; ++s) {
    auto v = test::seeded_floats(kChannels, 0.0f, 2.0f, 100 + s);  // FPQ's input range
    xs.emplace_back(v.begin(), v.end());
  }
  return xs;
}

// Per channel, the Relu's largest output over the samples: the ranges a calibration run measures.
std::vector<double> relu_ranges(const onnx::ModelProto& m) {
  std::vector<double> top(kChannels, 0.0);
  for (const auto& x : samples()) {
    auto r = compute(m, x).relu;
    for (int64_t c = 0; c < kChannels; ++c) top[c] = std::max(top[c], r[c]);
  }
  return top;
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

}  // namespace

TEST_CASE("FPQ range fit: the float output stays, weights come into [-0.5, 0.5), activations into [0, 2)") {
  auto input = chain_model();
  Options o = fpq();
  o.channel_ranges["r"] = relu_ranges(input);
  REQUIRE(max_abs(test::initializer_values(input, "wa")) > 1.0);
  REQUIRE(*std::max_element(o.channel_ranges["r"].begin(), o.channel_ranges["r"].end()) > 2.0);

  auto out = test::convert_bytes(input.SerializeAsString(), o);
  REQUIRE(out.report.matches.size() == 1);
  const auto& match = out.report.matches[0];
  CHECK(match.id == "FpqRangeFitPattern:conv_a");
  CHECK(match.applied);
  CHECK(match.numerically_equivalent);
  CHECK(match.nodes == std::vector<std::string>{"conv_a", "bn"});
  for (const auto& w : out.report.warnings) FAIL_CHECK(w.message);  // no channel misses a range

  // Exact in float: the fold-only tolerance of the check (rtol 1e-4), here far below it.
  for (const auto& x : samples()) {
    auto before = compute(input, x).y, after = compute(out.model, x).y;
    for (int64_t c = 0; c < kChannels; ++c) CHECK(std::abs(after[c] - before[c]) <= 1e-5 * (1 + std::abs(before[c])));
  }
  // Every weight within signed 0.7 with scale 0.5; every activation on the data within unsigned 1.7.
  for (const char* layer : {"conv_a", "conv_b"}) {
    for (double w : test::initializer_values(out.model, test::node_named(out.model, layer).input(1))) {
      CHECK_FALSE(fixed_point::kFpqWeights.clips(w));
    }
  }
  for (double top : relu_ranges(out.model)) CHECK_FALSE(fixed_point::kFpqActivation.clips(top));
  // The BatchNormalization's scale and offset stay within signed 5.10.
  CHECK(out.report.fixed_point.has_value());
  for (const auto& bn : out.report.fixed_point->batch_norms) CHECK(bn.fits);
  bool said = false;
  for (const auto& f : out.report.fixed_point->findings) said = said || (f.rule == "range-fit" && f.message.find("measured on data") != std::string::npos);
  CHECK(said);
}

TEST_CASE("FPQ range fit: without ranges it estimates them from the BatchNormalization, and says so") {
  auto input = chain_model();
  auto out = test::convert_bytes(input.SerializeAsString(), fpq());
  REQUIRE(out.report.matches.size() == 1);
  CHECK(out.report.matches[0].applied);
  for (const auto& x : samples()) {
    auto before = compute(input, x).y, after = compute(out.model, x).y;
    for (int64_t c = 0; c < kChannels; ++c) CHECK(std::abs(after[c] - before[c]) <= 1e-5 * (1 + std::abs(before[c])));
  }
  for (double w : test::initializer_values(out.model, test::node_named(out.model, "conv_a").input(1))) CHECK_FALSE(fixed_point::kFpqWeights.clips(w));
  bool said = false;
  for (const auto& f : out.report.fixed_point->findings) said = said || (f.rule == "range-fit" && f.message.find("without data") != std::string::npos);
  CHECK(said);
}

TEST_CASE("FPQ range fit: a channel no scale fits is named with what it would need") {
  // The next layer's weights larger, and activations 40 times as large: no scale fits both.
  auto input = chain_model(3.0f);
  Options o = fpq();
  o.channel_ranges["r"] = relu_ranges(input);
  for (auto& v : o.channel_ranges["r"]) v *= 40;  // a dynamic range FPQ's 8 bits cannot span
  auto out = test::convert_bytes(input.SerializeAsString(), o);
  REQUIRE(out.report.matches.size() == 1);
  CHECK(out.report.matches[0].applied);
  REQUIRE(out.report.warnings.size() == 1);
  const auto& w = out.report.warnings[0];
  CHECK(w.node == "relu");
  CHECK_THAT(w.message, Contains("'relu'") && Contains("'conv_b'") && Contains("would need values up to") &&
                            Contains("bits more range"));
  // Still exact, and the next layer's weights still in range: the activation is what clips.
  for (const auto& x : samples()) {
    auto before = compute(input, x).y, after = compute(out.model, x).y;
    for (int64_t c = 0; c < kChannels; ++c) CHECK(std::abs(after[c] - before[c]) <= 1e-5 * (1 + std::abs(before[c])));
  }
  for (double v : test::initializer_values(out.model, test::node_named(out.model, "conv_b").input(1))) CHECK_FALSE(fixed_point::kFpqWeights.clips(v));
}

TEST_CASE("FPQ range fit: skipped on request, and not run without --fixed-point fpq") {
  auto input = chain_model();
  Options o = fpq();
  o.skip = {"FpqRangeFitPattern"};
  CHECK(test::convert_bytes(input.SerializeAsString(), o).report.matches.empty());
  Options none;
  none.target = "none";
  none.fold_batch_norm = false;
  CHECK(test::convert_bytes(input.SerializeAsString(), none).report.matches.empty());
}

TEST_CASE("FPQ range fit: the channel scales balance the rounding within both ranges") {
  fixed_point::GroupRanges g;
  g.activation_max = 6.0;    // needs s >= 6 / (2 - 1/128)
  g.next_weight_max = 0.05;  // allows s <= 0.496 / 0.05
  auto s = fixed_point::choose_activation_scale(g);
  CHECK(s.scale >= 6.0 / fixed_point::kFpqActivation.max());
  CHECK(s.scale * 0.05 <= fixed_point::kFpqWeights.max());
  CHECK(s.scale == Approx(std::sqrt(6.0 / (2 * 0.05))));
  CHECK(s.need.empty());
  fixed_point::ProducerRanges p;
  p.weight_max = 1.78;
  p.bn_scale = 2.0;
  auto t = fixed_point::choose_weight_scale(p, s.scale);
  CHECK(t.scale * 1.78 <= fixed_point::kFpqWeights.max());
  CHECK(2.0 / (t.scale * s.scale) <= fixed_point::kFpqBatchNorm.max());
  CHECK(t.need.empty());

  g.next_weight_max = 0.4;  // s <= 1.24 < 3.01: no scale fits
  s = fixed_point::choose_activation_scale(g);
  CHECK(s.scale * 0.4 <= fixed_point::kFpqWeights.max());
  CHECK_THAT(s.need, Contains("unsigned 1.7 ends at 2"));
  CHECK(s.missing_bits == Approx(std::log2((6.0 / fixed_point::kFpqActivation.max()) / (fixed_point::kFpqWeights.max() / 0.4))));
  // Where no scale fits, the activation clips at its MSE-optimal clip when that lies below where
  // the weights stop s, and where the weights stop it otherwise.
  g.activation_clip = 1.5;  // s = 1.5 / (2 - 1/128) < 1.24
  CHECK(fixed_point::choose_activation_scale(g).scale == Approx(1.5 / fixed_point::kFpqActivation.max()));
  g.activation_clip = 4.0;
  CHECK(fixed_point::choose_activation_scale(g).scale == Approx(fixed_point::kFpqWeights.max() / 0.4));
  // A BatchNormalization offset beyond signed 5.10 raises the floor too.
  g = {};
  g.activation_max = 1.0;
  g.signed_max = 64.0;
  g.next_weight_max = 0.01;
  CHECK(fixed_point::choose_activation_scale(g).scale >= 64.0 / fixed_point::kFpqBatchNorm.max());
}

namespace {

// chain_model's Conv → BatchNormalization → Relu, then Flatten → Gemm (W [2, C], transB) and, when
// `head_scale` is given, a BatchNormalization of the Gemm's own with that scale.
onnx::ModelProto dense_head_model(std::optional<float> head_scale) {
  auto m = chain_model();
  auto& g = *m.mutable_graph();
  g.mutable_node()->RemoveLast();  // conv_b
  g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(1);
  *g.add_initializer() = test::float_tensor("wd", {2, kChannels}, test::seeded_floats(2 * kChannels, -0.4f, 0.4f, 7));
  test::add_node(g, "Flatten", "flatten", {"r"}, {"f"});
  auto& gemm = test::add_node(g, "Gemm", "fc", {"f", "wd"}, {head_scale ? "d" : "y"});
  attr::set_int(gemm, "transB", 1);
  if (head_scale) {
    *g.add_initializer() = test::float_tensor("hs", {2}, {*head_scale, *head_scale});
    *g.add_initializer() = test::float_tensor("hb", {2}, {0.5f, -0.5f});
    *g.add_initializer() = test::float_tensor("hm", {2}, {0.0f, 0.0f});
    *g.add_initializer() = test::float_tensor("hv", {2}, {1.0f, 1.0f});
    auto& bn = test::add_node(g, "BatchNormalization", "head_bn", {"d", "hs", "hb", "hm", "hv"}, {"y"});
    attr::set_float(bn, "epsilon", 0.0f);
  }
  return m;
}

}  // namespace

TEST_CASE("FPQ weight bounds: a dense head's rows may grow as far as its own BatchNormalization takes them back") {
  // The Relu reaches 8 on every channel: its values need s = 8 / top of unsigned 1.7, so a weight
  // reading them may be 0.5 / s (less the bounds' 1/64 margin) for the range fit to scale them.
  const double top = fixed_point::kFpqActivation.max(), margin = 63.0 / 64;
  repair::MeasuredRanges measured;
  measured.ranges["r"] = std::vector<double>(kChannels, 8.0);
  const double plain = fixed_point::kFpqWeights.max() * margin / (8.0 / top);
  auto bounds_of = [&](const onnx::ModelProto& m, bool through) {
    const auto bytes = m.SerializeAsString();
    auto b = repair::fpq_layer_bounds({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, "fc", measured, through);
    REQUIRE(b.ok());
    REQUIRE(b->bounds.size() == 2 * kChannels);
    CHECK(b->tensors == std::vector<std::string>{"f", "n", "r"});
    return b->bounds;
  };
  // No BatchNormalization of its own: the range fit cannot shrink its rows.
  for (float v : bounds_of(dense_head_model(std::nullopt), false)) CHECK(v == Approx(plain).epsilon(1e-6));
  // One of scale 2: each row may shrink 16 times (its scale up to 32, signed 5.10's top) ...
  const double room = fixed_point::kFpqBatchNorm.max() / 2;
  for (float v : bounds_of(dense_head_model(2.0f), false)) CHECK(v == Approx(plain * room).epsilon(1e-6));
  // ... and fitted as one with it, the weights the fit gives are twice the Gemm's.
  for (float v : bounds_of(dense_head_model(2.0f), true)) CHECK(v == Approx(plain * room * 2).epsilon(1e-6));
}

TEST_CASE("FPQ range fit: a dense head's rows shrink into [-0.5, 0.5) and its BatchNormalization takes them back") {
  auto input = dense_head_model(1.0f);
  // Weights that the Relu's scale would push past signed 0.7.
  auto& wd = *input.mutable_graph()->mutable_initializer(input.graph().initializer_size() - 5);
  REQUIRE(wd.name() == "wd");
  wd = test::float_tensor("wd", {2, kChannels}, test::seeded_floats(2 * kChannels, -0.45f, 0.45f, 7));
  auto options = fpq();
  options.channel_ranges["r"] = std::vector<double>(kChannels, 8.0);
  auto out = test::convert_bytes(input.SerializeAsString(), options);
  const auto& gemm = test::node_named(out.model, "fc");
  const auto& norm = test::node_named(out.model, "head_bn");
  CHECK(max_abs(test::initializer_values(out.model, gemm.input(1))) <= fixed_point::kFpqWeights.max());
  // Each row's scale grew by what its weights shrank, within signed 5.10.
  auto scale = test::initializer_values(out.model, norm.input(1));
  for (double k : scale) CHECK((k > 1.0 && k < fixed_point::kFpqBatchNorm.max()));
  // The float output is what it was.
  auto head = [](const onnx::ModelProto& m, const std::vector<double>& x) {
    auto y = layer_of(m, "fc", compute(m, x).relu, 2);
    for (size_t o = 0; o < y.size(); ++o) y[o] = normalized(m, "head_bn", o, y[o]);
    return y;
  };
  for (const auto& x : samples()) {
    auto before = head(input, x), after = head(out.model, x);
    for (size_t o = 0; o < before.size(); ++o) CHECK(after[o] == Approx(before[o]).epsilon(1e-5).margin(1e-9));
  }
}
