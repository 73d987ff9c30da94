// FpqRangeFitPattern: per-channel scales moved through Conv → BatchNormalization → Relu → Conv
// leave the float model's output as it was, bring the weights into FPQ's [−0.5, 0.5) and the
// Relu's output into [0, 2) on the ranges given, and name a layer no scale can fit.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/fixed_point/channel_scale.h"
#include "core/fixed_point/scheme.h"
#include "core/onnx/attributes.h"
#include "core/onnx/tensor_values.h"
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
Computed compute(const onnx::ModelProto& m, const std::vector<double>& x) {
  const auto &a = test::node_named(m, "conv_a"), &bn = test::node_named(m, "bn"), &b = test::node_named(m, "conv_b");
  auto wa = test::initializer_values(m, a.input(1)), wb = test::initializer_values(m, b.input(1));
  auto gamma = test::initializer_values(m, bn.input(1)), beta = test::initializer_values(m, bn.input(2)), mean = test::initializer_values(m, bn.input(3)),
       var = test::initializer_values(m, bn.input(4));
  double eps = attr::get_float(bn, "epsilon", 1e-5f);
  Computed out{std::vector<double>(kChannels), std::vector<double>(kChannels)};
  for (int64_t c = 0; c < kChannels; ++c) {
    double conv = 0;
    for (int64_t i = 0; i < kChannels; ++i) conv += wa[c * kChannels + i] * x[i];
    out.relu[c] = std::max(0.0, gamma[c] * (conv - mean[c]) / std::sqrt(var[c] + eps) + beta[c]);
  }
  for (int64_t o = 0; o < kChannels; ++o) {
    for (int64_t c = 0; c < kChannels; ++c) out.y[o] += wb[o * kChannels + c] * out.relu[c];
  }
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
