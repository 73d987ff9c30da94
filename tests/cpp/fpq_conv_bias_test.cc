// FpqConvBiasIntoBatchNormPattern and the FPQ options around it: the bias moves into the
// BatchNormalization after the conv, or into one that carries it exactly; a conv the user folds
// keeps its bias and is warned about; without --fixed-point nothing changes.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/onnx/attributes.h"
#include "core/onnx/tensor_values.h"
#include "converted.h"

using namespace lattice;
using Catch::Matchers::Contains;

namespace {

Options fpq(std::optional<bool> fold = std::nullopt) {
  Options o;
  o.target = "none";
  o.fixed_point = FixedPoint::kFpq;
  o.fold_batch_norm = fold;
  o.skip = {"FpqRangeFitPattern"};  // the bias move alone (tests/cpp/fpq_range_fit_test.cc tests the fit)
  return o;
}

const onnx::NodeProto& node_of(const onnx::ModelProto& m, const std::string& op) {
  for (const auto& n : m.graph().node()) {
    if (n.op_type() == op) return n;
  }
  FAIL("no " << op);
  throw std::logic_error("unreachable");
}

// x -> Conv(w, b) -> y, no BatchNormalization.
onnx::ModelProto biased_conv_model(int64_t channels) {
  auto m = test::conv_bn_model(channels, true);
  auto& g = *m.mutable_graph();
  g.mutable_node()->RemoveLast();  // the BatchNormalization
  g.mutable_node(0)->set_output(0, "y");
  return m;
}

}  // namespace

TEST_CASE("FPQ: a conv's bias moves into the BatchNormalization after it, as mean - bias") {
  auto input = test::conv_bn_model(3, true);
  auto out = test::convert_bytes(input.SerializeAsString(), fpq());
  REQUIRE(out.report.matches.size() == 1);
  const auto& match = out.report.matches[0];
  CHECK(match.id == "FpqConvBiasIntoBatchNormPattern:conv");
  CHECK(match.applied);
  CHECK(match.numerically_equivalent);
  CHECK(match.nodes == std::vector<std::string>{"conv", "bn"});
  const auto& conv = node_of(out.model, "Conv");
  CHECK(conv.input_size() == 2);  // no bias
  const auto& bn = node_of(out.model, "BatchNormalization");
  CHECK(bn.input(0) == conv.output(0));
  auto mean = test::initializer_values(out.model, bn.input(3));
  auto old_mean = test::initializer_values(input, "mean"), bias = test::initializer_values(input, "b");
  for (size_t c = 0; c < mean.size(); ++c) CHECK(mean[c] == static_cast<float>(old_mean[c] - bias[c]));
  CHECK(out.report.warnings.empty());
  // BatchNormalization is an FPQ layer of its own: not in the audit.
  CHECK(out.report.unsupported.empty());
}

TEST_CASE("FPQ: a biased conv without a BatchNormalization gets one that adds exactly its bias") {
  auto input = biased_conv_model(4);
  auto out = test::convert_bytes(input.SerializeAsString(), fpq());
  REQUIRE(out.report.matches.size() == 1);
  CHECK(out.report.matches[0].nodes == std::vector<std::string>{"conv"});
  CHECK(out.report.matches[0].new_node_ops == std::vector<std::string>{"Conv", "BatchNormalization"});
  const auto& conv = node_of(out.model, "Conv");
  const auto& bn = node_of(out.model, "BatchNormalization");
  CHECK(conv.input_size() == 2);
  CHECK(bn.input(0) == conv.output(0));
  CHECK(bn.output(0) == "y");  // the graph output keeps its name
  float eps = attr::get_float(bn, "epsilon", 1e-5f);
  CHECK(eps == 0x1p-16f);
  for (double v : test::initializer_values(out.model, bn.input(1))) CHECK(v == 1.0);
  CHECK(test::initializer_values(out.model, bn.input(2)) == test::initializer_values(input, "b"));
  for (double v : test::initializer_values(out.model, bn.input(3))) CHECK(v == 0.0);
  // var + eps is exactly 1 in float, so the node scales by exactly 1.
  for (double v : test::initializer_values(out.model, bn.input(4))) CHECK(static_cast<float>(v) + eps == 1.0f);

  // Idempotent: the output has no biased conv left.
  auto again = test::convert_bytes(out.model.SerializeAsString(), fpq());
  CHECK(again.report.matches.empty());
}

TEST_CASE("FPQ with --fold-bn: the fold is applied and warned about, and its conv keeps the bias") {
  auto input = test::conv_bn_model(3, true);
  auto out = test::convert_bytes(input.SerializeAsString(), fpq(true));
  REQUIRE(out.report.matches.size() == 1);
  CHECK(out.report.matches[0].pattern == "ConvBatchNormFoldPattern");
  REQUIRE(out.report.warnings.size() == 1);
  CHECK_THAT(out.report.warnings[0].message, Contains("FPQ will refuse it") && Contains("FPGA-UG-02228 section 5.1.1"));
  CHECK(node_of(out.model, "Conv").input_size() == 3);
  REQUIRE(out.report.fixed_point);
  bool flagged = false;
  for (const auto& f : out.report.fixed_point->findings) flagged |= f.rule == "conv-bias-needs-batchnorm" && f.node == "conv";
  CHECK(flagged);
}

TEST_CASE("FPQ: a skipped match leaves the bias, and the fit analysis flags it") {
  auto input = biased_conv_model(2);
  auto options = fpq();
  options.skip_matches = {"FpqConvBiasIntoBatchNormPattern:conv"};
  auto result = convert(test::bytes(input.SerializeAsString()), options);
  REQUIRE(result.ok());
  REQUIRE(result->report.matches.size() == 1);
  CHECK_FALSE(result->report.matches[0].applied);
  REQUIRE(result->report.fixed_point);
  CHECK(result->report.fixed_point->findings.back().rule == "conv-bias-needs-batchnorm");
}

TEST_CASE("without --fixed-point nothing moves and the report has no fixed_point key") {
  auto input = biased_conv_model(2);
  auto result = convert(test::bytes(input.SerializeAsString()), Options{.target = "none"});
  REQUIRE(result.ok());
  CHECK(result->report.matches.empty());
  CHECK_FALSE(result->report.fixed_point);
  CHECK(result->report.to_json().dump().find("fixed_point") == std::string::npos);
}

namespace {

// x [1, 3] -> Gemm(W [2, 3], transB, C, beta) -> y, read by `reader` when given.
onnx::ModelProto dense_model(float beta = 1.0f, std::vector<int64_t> bias_dims = {2}, const std::string& reader = "") {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto& g = *m.mutable_graph();
  g.set_name("dense");
  test::set_input_shape(*g.add_input(), "x", {1, 3});
  g.add_output()->set_name(reader.empty() ? "y" : "z");
  *g.add_initializer() = test::float_tensor("w", {2, 3}, {0.5f, -1.5f, 2.0f, 0.25f, 3.0f, -0.75f});
  *g.add_initializer() = test::float_tensor("c", bias_dims, {0.125f, -2.5f});
  auto& gemm = test::add_node(g, "Gemm", "fc", {"x", "w", "c"}, {"y"});
  attr::set_int(gemm, "transB", 1);
  if (beta != 1.0f) attr::set_float(gemm, "beta", beta);
  if (!reader.empty()) test::add_node(g, reader, "after", {"y"}, {"z"});
  return m;
}

Options fpq_dense() {
  auto o = fpq();
  o.skip.push_back("FpqConvBiasIntoBatchNormPattern");
  return o;
}

}  // namespace

TEST_CASE("FPQ: a dense layer's bias moves into a BatchNormalization of its own, beta times C") {
  for (auto [beta, dims] : {std::pair{1.0f, std::vector<int64_t>{2}}, {2.0f, {1, 2}}}) {
    auto input = dense_model(beta, dims);
    auto out = test::convert_bytes(input.SerializeAsString(), fpq_dense());
    REQUIRE(out.report.matches.size() == 1);
    CHECK(out.report.matches[0].id == "FpqDenseBiasIntoBatchNormPattern:fc");
    CHECK(out.report.matches[0].numerically_equivalent);
    const auto& gemm = node_of(out.model, "Gemm");
    const auto& bn = node_of(out.model, "BatchNormalization");
    CHECK(gemm.input_size() == 2);
    CHECK(bn.input(0) == gemm.output(0));
    CHECK(bn.output(0) == "y");
    CHECK(test::initializer_values(out.model, bn.input(2)) == std::vector<double>{0.125 * beta, -2.5 * beta});
    for (double v : test::initializer_values(out.model, bn.input(1))) CHECK(v == 1.0);
  }
}

TEST_CASE("FPQ: a dense layer only Sigmoids read keeps its bias (its output is signed 2.13, not 5.10)") {
  auto out = test::convert_bytes(dense_model(1.0f, {2}, "Sigmoid").SerializeAsString(), fpq_dense());
  CHECK(out.report.matches.empty());
  auto relu = test::convert_bytes(dense_model(1.0f, {2}, "Relu").SerializeAsString(), fpq_dense());
  CHECK(relu.report.matches.size() == 1);
}

TEST_CASE("FPQ: a dense layer with a bias that is not one value per output keeps it") {
  auto input = dense_model(1.0f, {1, 2});
  auto& c = *input.mutable_graph()->mutable_initializer(1);
  c = test::float_tensor("c", {2, 2}, {0.125f, -2.5f, 1.0f, 1.0f});  // [M, N]: a value per sample
  input.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(2);
  auto out = test::convert_bytes(input.SerializeAsString(), fpq_dense());
  CHECK(out.report.matches.empty());
}
