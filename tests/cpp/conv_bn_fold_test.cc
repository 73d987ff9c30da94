// ConvBatchNormFoldPattern: what it folds, what it refuses and why, and what it leaves intact.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "core/convert.h"
#include "core/onnx/attributes.h"
#include "core/onnx/model_io.h"
#include "core/onnx/tensor_values.h"
#include "core/onnx/validate.h"
#include "converted.h"

using namespace lattice;
using Catch::Matchers::Contains;

namespace {

test::Converted convert_model(const onnx::ModelProto& input, Options options = {}) {
  options.target = "none";
  return test::convert_bytes(input.SerializeAsString(), options);
}

using test::initializer;

bool has_initializer(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer()) {
    if (t.name() == name) return true;
  }
  return false;
}

std::vector<double> values(const onnx::TensorProto& t) {
  auto v = read_values(t, t.name());
  REQUIRE(v.ok());
  return *v;
}

// y = BN(W x + b) for the 1x1 conv of conv_bn_model, straight from the definition, with the
// BatchNormalization's own epsilon (ONNX's default 1e-5 when the attribute is absent).
std::vector<double> reference(const onnx::ModelProto& m, const std::vector<double>& x) {
  auto get = [&](const std::string& n) { return values(initializer(m, n)); };
  double epsilon = 1e-5;
  for (const auto& n : m.graph().node()) {
    for (const auto& a : n.attribute()) {
      if (n.op_type() == "BatchNormalization" && a.name() == "epsilon") epsilon = a.f();
    }
  }
  auto w = get("w"), gamma = get("gamma"), beta = get("beta"), mean = get("mean"), var = get("var");
  std::vector<double> b = has_initializer(m, "b") ? get("b") : std::vector<double>(x.size(), 0.0);
  std::vector<double> y;
  for (size_t o = 0; o < x.size(); ++o) {
    double c = b[o];
    for (size_t i = 0; i < x.size(); ++i) c += w[o * x.size() + i] * x[i];
    y.push_back((c - mean[o]) / std::sqrt(var[o] + epsilon) * gamma[o] + beta[o]);
  }
  return y;
}

// y = W' x + b' for the folded model.
std::vector<double> folded_output(const onnx::ModelProto& m, const std::vector<double>& x) {
  const auto& conv = m.graph().node(0);
  auto w = values(initializer(m, conv.input(1))), b = values(initializer(m, conv.input(2)));
  std::vector<double> y;
  for (size_t o = 0; o < x.size(); ++o) {
    double c = b[o];
    for (size_t i = 0; i < x.size(); ++i) c += w[o * x.size() + i] * x[i];
    y.push_back(c);
  }
  return y;
}

void check_equivalent(const onnx::ModelProto& before, const onnx::ModelProto& after, double tolerance) {
  std::vector<double> x{0.7, -1.3, 2.1};
  auto want = reference(before, x), got = folded_output(after, x);
  for (size_t i = 0; i < want.size(); ++i) CHECK(std::abs(want[i] - got[i]) <= tolerance * (1 + std::abs(want[i])));
}

}  // namespace

TEST_CASE("a Conv followed by BatchNormalization becomes one Conv writing the BN's output") {
  auto model = test::conv_bn_model(3, true);
  auto [out, report] = convert_model(model);
  REQUIRE(out.graph().node_size() == 1);
  CHECK(out.graph().node(0).op_type() == "Conv");
  CHECK(out.graph().node(0).output(0) == "y");
  CHECK(out.graph().node(0).name() == "conv");
  REQUIRE(report.matches.size() == 1);
  CHECK(report.matches[0].id == "ConvBatchNormFoldPattern:conv");
  CHECK(report.matches[0].applied);
  CHECK(report.matches[0].nodes == std::vector<std::string>{"conv", "bn"});
  CHECK(report.matches[0].numerically_equivalent);
  // The BN parameters and the old weight are gone; nothing unused is left behind.
  CHECK(out.graph().initializer_size() == 2);
  check_equivalent(model, out, 1e-6);
}

TEST_CASE("the BatchNormalization's epsilon is its attribute's, not the default (TensorFlow exports use 1e-3)") {
  for (float epsilon : {1e-3f, 0.25f}) {
    CAPTURE(epsilon);
    auto model = test::conv_bn_model(3, true);
    attr::set_float(*model.mutable_graph()->mutable_node(1), "epsilon", epsilon);
    auto [out, report] = convert_model(model);
    REQUIRE(report.matches.at(0).applied);
    check_equivalent(model, out, 1e-6);
  }
}

TEST_CASE("a Conv without bias gains one") {
  auto model = test::conv_bn_model(3, false);
  auto [out, report] = convert_model(model);
  REQUIRE(out.graph().node(0).input_size() == 3);
  check_equivalent(model, out, 1e-6);
}

TEST_CASE("float16 and double weights are folded in their own type, rounded once") {
  for (auto type : {onnx::TensorProto::FLOAT16, onnx::TensorProto::DOUBLE}) {
    auto model = test::conv_bn_model(3, true);
    for (auto& t : *model.mutable_graph()->mutable_initializer()) {
      auto v = values(t);
      t = make_tensor(t.name(), type, {t.dims().begin(), t.dims().end()}, v);
    }
    auto [out, report] = convert_model(model);
    REQUIRE(report.matches.at(0).applied);
    CHECK(initializer(out, out.graph().node(0).input(1)).data_type() == type);
    check_equivalent(model, out, type == onnx::TensorProto::DOUBLE ? 1e-12 : 2e-3);
  }
}

TEST_CASE("BatchNorm parameters held in Constant nodes are folded and the Constants removed") {
  auto model = test::conv_bn_model(3, true);
  auto& g = *model.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (const char* name : {"gamma", "beta", "mean", "var"}) {
    auto* c = nodes.Add();
    c->set_op_type("Constant");
    c->set_name(std::string("const_") + name);
    c->add_output(name);
    auto* a = c->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = initializer(model, name);
  }
  for (auto& n : *g.mutable_node()) *nodes.Add() = n;
  g.mutable_node()->Swap(&nodes);
  onnx::ModelProto reference_model = model;  // keeps the initializers for the reference
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (const auto& t : g.initializer()) {
    if (t.name() == "w" || t.name() == "b") *kept.Add() = t;
  }
  g.mutable_initializer()->Swap(&kept);
  auto [out, report] = convert_model(model);
  REQUIRE(report.matches.at(0).applied);
  REQUIRE(out.graph().node_size() == 1);
  check_equivalent(reference_model, out, 1e-6);
}

TEST_CASE("a weight shared with another Conv is copied, never changed in place") {
  auto model = test::conv_bn_model(3, true);
  auto& g = *model.mutable_graph();
  test::add_node(g, "Conv", "other", {"x", "w", "b"}, {"z"});
  g.add_output()->set_name("z");
  auto [out, report] = convert_model(model);
  REQUIRE(report.matches.at(0).applied);
  CHECK(initializer(out, "w").SerializeAsString() == initializer(model, "w").SerializeAsString());
  CHECK(initializer(out, "b").SerializeAsString() == initializer(model, "b").SerializeAsString());
  CHECK(out.graph().node(0).input(1) != "w");
}

TEST_CASE("training-mode BatchNormalization is left alone, with the reason") {
  auto with_attr = test::conv_bn_model(3, true, 15);
  attr::set_int(*with_attr.mutable_graph()->mutable_node(1), "training_mode", 1);
  auto three_outputs = test::conv_bn_model(3, true, 13);
  three_outputs.mutable_graph()->mutable_node(1)->add_output("running_mean");
  three_outputs.mutable_graph()->mutable_node(1)->add_output("running_var");
  auto two_outputs = test::conv_bn_model(3, true, 15);  // one running statistic is enough
  two_outputs.mutable_graph()->mutable_node(1)->add_output("");
  two_outputs.mutable_graph()->mutable_node(1)->add_output("running_var");
  for (const auto& model : {with_attr, three_outputs, two_outputs}) {
    auto [out, report] = convert_model(model);
    CHECK(out.graph().node_size() == 2);
    REQUIRE(report.matches.size() == 1);
    CHECK_FALSE(report.matches[0].applied);
    CHECK_THAT(report.matches[0].reason, Contains("training mode"));
    REQUIRE(report.unsupported.size() == 1);
    CHECK_THAT(report.unsupported[0].reason, Contains("training mode"));
  }
}

TEST_CASE("a folded weight its type cannot hold refuses the fold, naming the first such value") {
  // Channel 1's scale is about 1e10 (gamma, var 1): a weight of 3e30 there becomes 3e40, past float's
  // range, while the folded bias (0) fits. A NaN weight stays NaN whatever the scale.
  auto set = [](onnx::ModelProto& m, const std::string& name, size_t i, float v) {
    for (auto& t : *m.mutable_graph()->mutable_initializer()) {
      if (t.name() == name) t.set_float_data(static_cast<int>(i), v);
    }
  };
  auto too_large = test::conv_bn_model(3, false);
  set(too_large, "gamma", 1, 1e10f);
  set(too_large, "mean", 1, 0.0f);
  set(too_large, "beta", 1, 0.0f);
  set(too_large, "var", 1, 1.0f);
  set(too_large, "w", 4, 3e30f);  // [1, 1]
  auto not_a_number = test::conv_bn_model(3, false);
  set(not_a_number, "w", 7, std::nanf(""));  // [2, 1]
  for (const auto& [model, value] : {std::pair{too_large, "2.99998"}, std::pair{not_a_number, "nan"}}) {
    auto [out, report] = convert_model(model);
    REQUIRE(report.matches.size() == 1);
    CHECK_FALSE(report.matches[0].applied);
    CHECK_THAT(report.matches[0].reason,
               Contains(std::string("would give the value ") + value) && Contains("which float cannot hold"));
    CHECK(out.graph().node_size() == 2);
  }
}

TEST_CASE("a folded bias its type cannot hold refuses the fold, though every folded weight fits") {
  // Channel 0: scale 10 (gamma 10, var 1 - epsilon), mean 3.4e38: the shift -3.4e39 is finite in
  // double, past float's range, while the weights only grow tenfold.
  auto model = test::conv_bn_model(3, false);
  for (auto& t : *model.mutable_graph()->mutable_initializer()) {
    if (t.name() == "gamma") t.set_float_data(0, 10.0f);
    if (t.name() == "var") t.set_float_data(0, 1.0f - 1e-5f);
    if (t.name() == "mean") t.set_float_data(0, 3.4e38f);
  }
  auto [out, report] = convert_model(model);
  REQUIRE(report.matches.size() == 1);
  CHECK_FALSE(report.matches[0].applied);
  CHECK_THAT(report.matches[0].reason, Contains("would give the value -3.39999") && Contains("which float cannot hold"));
  CHECK(out.graph().node_size() == 2);
}

TEST_CASE("a BatchNormalization whose scale or shift is not finite is not folded, with the reason") {
  // A negative epsilon under a small variance: sqrt of a negative number. A variance of exactly
  // -epsilon: a division by zero. An infinite mean: an infinite shift.
  struct Case {
    const char* what;
    float epsilon, var0, mean0;
  };
  for (const auto& c : {Case{"negative epsilon", -1.0f, 0.5f, 0.0f}, Case{"var = -epsilon", 1e-5f, -1e-5f, 0.0f},
                        Case{"infinite mean", 1e-5f, 0.5f, std::numeric_limits<float>::infinity()}}) {
    CAPTURE(c.what);
    auto model = test::conv_bn_model(3, true);
    attr::set_float(*model.mutable_graph()->mutable_node(1), "epsilon", c.epsilon);
    for (auto& t : *model.mutable_graph()->mutable_initializer()) {
      if (t.name() == "var") t.set_float_data(0, c.var0);
      if (t.name() == "mean") t.set_float_data(0, c.mean0);
    }
    auto [out, report] = convert_model(model);
    REQUIRE(report.matches.size() == 1);
    CHECK_FALSE(report.matches[0].applied);
    CHECK_THAT(report.matches[0].reason, Contains("BatchNormalization 'bn' channel 0: scale / sqrt(var + epsilon)") &&
                                             Contains("are not both finite"));
    CHECK(out.graph().node_size() == 2);
  }
}

TEST_CASE("BatchNormalization with spatial=0, or before opset 7 without is_test, is not folded") {
  auto per_activation = test::conv_bn_model(3, true, 7);
  attr::set_int(*per_activation.mutable_graph()->mutable_node(1), "spatial", 0);
  auto not_test = test::conv_bn_model(3, true, 6);
  auto is_test = test::conv_bn_model(3, true, 6);
  attr::set_int(*is_test.mutable_graph()->mutable_node(1), "is_test", 1);
  auto reason = [](const onnx::ModelProto& m) {
    auto [out, report] = convert_model(m);
    REQUIRE(report.matches.size() == 1);
    return report.matches[0].applied ? std::string("applied") : report.matches[0].reason;
  };
  CHECK(reason(per_activation) == "BatchNormalization 'bn' normalises per activation (spatial=0)");
  CHECK(reason(not_test) == "BatchNormalization 'bn' is not marked is_test=1 (opset 6)");
  CHECK(reason(is_test) == "applied");
}

TEST_CASE("parameters that are graph inputs are not constants and are not folded") {
  auto model = test::conv_bn_model(3, true);
  test::set_input_shape(*model.mutable_graph()->add_input(), "var", {3});
  auto [out, report] = convert_model(model);
  REQUIRE(report.matches.size() == 1);
  CHECK_FALSE(report.matches[0].applied);
  CHECK_THAT(report.matches[0].reason, Contains("the variance 'var' of 'bn' is not a constant"));
}

TEST_CASE("a Conv whose output is also read elsewhere is not matched") {
  auto model = test::conv_bn_model(3, true);
  model.mutable_graph()->add_output()->set_name("c");
  auto [out, report] = convert_model(model);
  CHECK(report.matches.empty());
  REQUIRE(report.unsupported.size() == 1);
  CHECK_THAT(report.unsupported[0].reason, Contains("also read elsewhere"));
}

TEST_CASE("an initializer still read inside a subgraph survives the fold") {
  auto model = test::conv_bn_model(3, true);
  auto& g = *model.mutable_graph();
  auto& branch = test::add_node(g, "If", "branch", {"cond"}, {"z"});
  *g.add_initializer() = test::float_tensor("cond", {}, {1});
  g.mutable_initializer()->rbegin()->set_data_type(onnx::TensorProto::BOOL);
  g.mutable_initializer()->rbegin()->clear_float_data();
  g.mutable_initializer()->rbegin()->add_int32_data(1);
  for (const char* name : {"then_branch", "else_branch"}) {
    auto* a = branch.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    auto* body = a->mutable_g();
    body->set_name(name);
    test::add_node(*body, "Identity", std::string(name) + "_id", {"gamma"}, {std::string(name) + "_out"});
    body->add_output()->set_name(std::string(name) + "_out");
  }
  g.add_output()->set_name("z");
  auto [out, report] = convert_model(model);
  REQUIRE(report.matches.at(0).applied);
  CHECK(has_initializer(out, "gamma"));
  CHECK_FALSE(has_initializer(out, "var"));
}

TEST_CASE("Gemm folding covers transB, beta and a broadcast C") {
  for (int trans_b : {0, 1}) {
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(13);
    auto& g = *m.mutable_graph();
    test::set_input_shape(*g.add_input(), "a", {1, 2});
    g.add_output()->set_name("y");
    // B as [K=2, N=3], or [N=3, K=2] with transB.
    std::vector<float> b_kn{1, 2, 3, 4, 5, 6};
    std::vector<float> b = b_kn;
    if (trans_b) b = {1, 4, 2, 5, 3, 6};
    *g.add_initializer() = test::float_tensor("B", trans_b ? std::vector<int64_t>{3, 2} : std::vector<int64_t>{2, 3}, b);
    *g.add_initializer() = test::float_tensor("C", {1}, {0.5f});
    *g.add_initializer() = test::float_tensor("gamma", {3}, {1, 2, 3});
    *g.add_initializer() = test::float_tensor("beta", {3}, {0.1f, 0.2f, 0.3f});
    *g.add_initializer() = test::float_tensor("mean", {3}, {1, -1, 0});
    *g.add_initializer() = test::float_tensor("var", {3}, {1, 4, 9});
    auto& gemm = test::add_node(g, "Gemm", "fc", {"a", "B", "C"}, {"h"});
    attr::set_int(gemm, "transB", trans_b);
    attr::set_float(gemm, "alpha", 2.0f);
    attr::set_float(gemm, "beta", 0.5f);
    test::add_node(g, "BatchNormalization", "bn", {"h", "gamma", "beta", "mean", "var"}, {"y"});
    auto [out, report] = convert_model(m);
    REQUIRE(report.matches.at(0).applied);
    const auto& folded = out.graph().node(0);
    CHECK(attr::get_float(folded, "beta", 0) == 1.0f);
    CHECK(attr::get_float(folded, "alpha", 0) == 2.0f);
    auto fb = values(initializer(out, folded.input(1))), fc = values(initializer(out, folded.input(2)));
    std::vector<double> a{0.3, -0.7};
    std::vector<double> gamma{1, 2, 3}, beta{0.1, 0.2, 0.3}, mean{1, -1, 0}, var{1, 4, 9};
    for (size_t n = 0; n < 3; ++n) {
      double h = 0.5 * 0.5, folded_y = fc[n];
      for (size_t k = 0; k < 2; ++k) {
        h += 2.0 * a[k] * b_kn[k * 3 + n];
        folded_y += 2.0 * a[k] * (trans_b ? fb[n * 2 + k] : fb[k * 3 + n]);
      }
      double want = (h - mean[n]) / std::sqrt(var[n] + 1e-5) * gamma[n] + beta[n];
      CHECK(std::abs(folded_y - want) < 1e-5);
    }
  }
}

TEST_CASE("folding is deterministic and a folded model converts to itself") {
  auto model = test::conv_bn_model(4, true);
  std::string bytes = model.SerializeAsString();
  Options options;
  options.target = "none";
  auto first = convert(test::bytes(bytes), options), second = convert(test::bytes(bytes), options);
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  CHECK(*first->output(bytes) == *second->output(bytes));
  auto again = convert(test::bytes(*first->output(bytes)), options);
  REQUIRE(again.ok());
  CHECK(again->report.matches.empty());
  CHECK_FALSE(again->converted.has_value());
}

TEST_CASE("the output model records the tool, target and applied patterns") {
  auto [out, report] = convert_model(test::conv_bn_model(2, true));
  std::map<std::string, std::string> props;
  for (const auto& p : out.metadata_props()) props[p.key()] = p.value();
  CHECK(props["onnx_lattice.target"] == "none");
  CHECK(props["onnx_lattice.applied_patterns"] == "ConvBatchNormFoldPattern");
  CHECK(props["onnx_lattice.version"] == kToolVersion);
}

TEST_CASE("a skipped match is reported and not applied") {
  Options options;
  options.skip_matches = {"ConvBatchNormFoldPattern:conv"};
  auto [out, report] = convert_model(test::conv_bn_model(2, true), options);
  CHECK(out.graph().node_size() == 2);
  REQUIRE(report.matches.size() == 1);
  CHECK_FALSE(report.matches[0].applied);
  CHECK_THAT(report.matches[0].reason, Contains("skipped on request"));
}

TEST_CASE("a mapped value is unrepresentable exactly from where rounding to its type overflows") {
  // Each case maps a one-element tensor of `type` to `ok` (the largest magnitude that rounds to a
  // finite value) and to `over` (the smallest that rounds to infinity).
  struct Case {
    int32_t type;
    double ok, over;
  };
  const Case cases[] = {
      {onnx::TensorProto::FLOAT, 0x1.fffffefffffffp+127, 0x1.ffffffp+127},  // float's max + half an ulp
      {onnx::TensorProto::FLOAT16, std::nextafter(65520.0, 0.0), 65520.0},  // 65504 + half an ulp
      {onnx::TensorProto::DOUBLE, std::numeric_limits<double>::max(), std::numeric_limits<double>::infinity()},
  };
  for (const auto& c : cases) {
    CAPTURE(c.type);
    auto t = make_tensor("t", c.type, {1}, {1.0});
    for (double to : {c.ok, -c.ok, c.over, -c.over}) {
      auto mapped = MappedValues::of(t, "t", nullptr, [to](size_t, std::span<double> v) { v[0] = to; });
      REQUIRE(mapped);
      NoFiles none;
      auto found = (*mapped)->first_unrepresentable(none);
      REQUIRE(found);
      CHECK(found->has_value() == (std::fabs(to) == c.over));
      auto bytes = materialise(**mapped, none);
      REQUIRE(bytes);
      onnx::TensorProto written = t;
      written.set_raw_data(*bytes);
      CHECK(std::isfinite(values(written)[0]) == !found->has_value());
    }
  }
}

namespace {

// Bytes handed over `step` at a time, so that elements and blocks are split between chunks.
struct Chunked final : Deferred {
  Chunked(std::string b, size_t s) : bytes(std::move(b)), step(s) {}
  std::string bytes;
  size_t step;
  uint64_t length() const override { return bytes.size(); }
  Status write(ExternalData&, const ByteSink& sink) const override {
    for (size_t at = 0; at < bytes.size(); at += step) {
      if (auto s = sink(std::string_view(bytes).substr(at, step)); !s) return s;
    }
    return ok_status();
  }
};

}  // namespace

TEST_CASE("the largest stored magnitude is read from the bits, in each float type, however the bytes are chunked") {
  const double inf = std::numeric_limits<double>::infinity();
  for (int32_t type : {onnx::TensorProto::FLOAT, onnx::TensorProto::FLOAT16, onnx::TensorProto::DOUBLE}) {
    for (const auto& [values, largest] : {std::pair{std::vector<double>{0.5, -3.5, 2.0, -0.0}, 3.5},
                                          std::pair{std::vector<double>{1.0, -inf, 2.0}, inf},
                                          std::pair{std::vector<double>{-0.0}, 0.0},
                                          std::pair{std::vector<double>{}, 0.0}}) {
      for (size_t step : {1, 3, 5, 8, 1000}) {
        CAPTURE(type, values, step);
        NoFiles none;
        auto found = largest_magnitude(Chunked(make_tensor("t", type, {static_cast<int64_t>(values.size())},
                                                               values).raw_data(), step),
                                       type, none);
        REQUIRE(found);
        CHECK(*found == largest);
        auto with_nan = values;
        with_nan.insert(with_nan.begin(), -std::nan(""));
        auto nan = largest_magnitude(Chunked(make_tensor("t", type, {static_cast<int64_t>(with_nan.size())},
                                                             with_nan).raw_data(), step),
                                     type, none);
        REQUIRE(nan);
        CHECK(std::isnan(*nan));
      }
    }
    NoFiles none;
    CHECK_FALSE(largest_magnitude(Chunked(std::string(3, '\0'), 2), type, none));  // not whole elements
  }
}

TEST_CASE("mapped values are the same however their bytes are chunked, whole blocks or split ones") {
  // 2,048 values make a block: tensors shorter, as long and longer, in chunks that split elements,
  // that hold whole blocks, and one chunk for all. Each value is tripled.
  for (size_t count : {1, 2047, 2048, 2049, 5000}) {
    std::vector<double> given(count), tripled(count);
    for (size_t i = 0; i < count; ++i) {
      given[i] = static_cast<double>(i) * 0.25 / 3.0 - 7.0;
      tripled[i] = static_cast<double>(static_cast<float>(given[i])) * 3.0;
    }
    const auto dims = std::vector<int64_t>{static_cast<int64_t>(count)};
    std::string stored = make_tensor("t", onnx::TensorProto::FLOAT, dims, given).raw_data();
    std::string expected = make_tensor("t", onnx::TensorProto::FLOAT, dims, tripled).raw_data();
    for (size_t step : {size_t{1}, size_t{3}, size_t{4}, size_t{4 * 2048}, size_t{4 * 2048 + 3}, stored.size()}) {
      CAPTURE(count, step);
      MappedValues mapped(std::make_shared<Chunked>(stored, step), onnx::TensorProto::FLOAT,
                          [](size_t, std::span<double> v) {
                            for (double& x : v) x *= 3.0;
                          });
      NoFiles none;
      auto bytes = materialise(mapped, none);
      REQUIRE(bytes);
      CHECK(*bytes == expected);
    }
  }
}

TEST_CASE("double to half precision rounds once to nearest even") {
  CHECK(double_to_half(1.0) == 0x3c00);
  CHECK(half_to_float(0x3c00) == 1.0f);
  CHECK(double_to_half(65504.0) == 0x7bff);
  CHECK(double_to_half(1e6) == 0x7c00);
  CHECK(double_to_half(-std::numeric_limits<double>::infinity()) == 0xfc00);
  CHECK((double_to_half(std::nan("")) & 0x7fff) > 0x7c00);
  CHECK(half_to_float(0x0001) == std::ldexp(1.0f, -24));
  CHECK(double_to_half(std::numeric_limits<double>::denorm_min()) == 0x0000);
  // Every half value, and the points either side of each half-way point to its successor (the
  // successor of 65504 being 65536, where rounding overflows): a value rounds to the nearer
  // half, a tie to the even one. Through float, the double just below 65520 became infinity.
  for (uint16_t sign : {0x0000, 0x8000}) {
    for (uint16_t h = 0; h < 0x7c00; ++h) {
      double x = half_to_float(h), next = h == 0x7bff ? 65536.0 : half_to_float(static_cast<uint16_t>(h + 1));
      double mid = (x + next) / 2, s = sign ? -1.0 : 1.0;  // exact: halves have 11 significant bits
      CAPTURE(h, sign);
      CHECK(double_to_half(s * x) == (sign | h));
      CHECK(double_to_half(s * std::nextafter(mid, 0.0)) == (sign | h));
      CHECK(double_to_half(s * std::nextafter(mid, 1e9)) == (sign | (h + 1)));
      CHECK(double_to_half(s * mid) == (sign | ((h & 1) ? h + 1 : h)));
    }
  }
}

TEST_CASE("before IR 4, initializers listed as graph inputs are constants: folded, then removed with their inputs") {
  auto model = test::conv_bn_model(3, true, 7);
  model.set_ir_version(3);
  for (const auto& t : std::vector<onnx::TensorProto>(model.graph().initializer().begin(), model.graph().initializer().end())) {
    test::set_input_shape(*model.mutable_graph()->add_input(), t.name(), {t.dims().begin(), t.dims().end()});
  }
  auto [out, report] = convert_model(model);
  REQUIRE(report.matches.at(0).applied);
  for (const char* gone : {"gamma", "beta", "mean", "var", "w", "b"}) {
    CHECK_FALSE(has_initializer(out, gone));
    for (const auto& input : out.graph().input()) CHECK(input.name() != gone);
  }
  CHECK(out.graph().input(0).name() == "x");
  check_equivalent(model, out, 1e-6);
}
