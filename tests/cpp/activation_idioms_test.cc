// Activation idioms: an activation written as several nodes is recognised as one unit, and the
// audit reports it under its name, with all its nodes, grouped in the summary.
#include <catch2/catch.hpp>

#include "converted.h"
#include "core/activation_idioms.h"
#include "core/report/summary.h"

using namespace lattice;
using Catch::Matchers::Contains;

namespace {

// x[1,4,2,2] -> Conv 1x1 -> (the activation, built by `body` from "c" to "y") -> y.
template <typename Body>
onnx::ModelProto with_activation(Body body, int opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  auto& g = *m.mutable_graph();
  test::set_input_shape(*g.add_input(), "x", {1, 4, 2, 2});
  g.add_output()->set_name("y");
  *g.add_initializer() = test::float_tensor("w", {4, 4, 1, 1}, std::vector<float>(16, 0.25f));
  test::add_node(g, "Conv", "conv", {"x", "w"}, {"c"});
  auto scalar = [&](const std::string& name, float v) { *g.add_initializer() = test::float_tensor(name, {}, {v}); };
  body(g, scalar);
  return m;
}

std::vector<ActivationIdiom> idioms_of(const onnx::ModelProto& m) {
  GraphView view(m.graph());
  return find_activation_idioms(view);
}

}  // namespace

TEST_CASE("SiLU written as x*Sigmoid(x) is one unit of two nodes") {
  auto m = with_activation([](onnx::GraphProto& g, auto) {
    test::add_node(g, "Sigmoid", "sig", {"c"}, {"s"});
    test::add_node(g, "Mul", "mul", {"c", "s"}, {"y"});
  });
  auto idioms = idioms_of(m);
  REQUIRE(idioms.size() == 1);
  CHECK(idioms[0].name == "SiLU");
  CHECK(idioms[0].input == "c");
  CHECK(idioms[0].nodes == std::vector<int>{1, 2});
}

TEST_CASE("HardSwish as x*HardSigmoid(x), as x*Clip(x+3, 0, 6)/6, and as its own op") {
  auto hs = with_activation([](onnx::GraphProto& g, auto) {
    test::add_node(g, "HardSigmoid", "hsig", {"c"}, {"h"});
    test::add_node(g, "Mul", "mul", {"c", "h"}, {"y"});
  });
  auto clip = with_activation([](onnx::GraphProto& g, auto scalar) {
    scalar("three", 3);
    scalar("zero", 0);
    scalar("six", 6);
    test::add_node(g, "Add", "add", {"c", "three"}, {"a"});
    test::add_node(g, "Clip", "clip", {"a", "zero", "six"}, {"r"});
    test::add_node(g, "Mul", "mul", {"c", "r"}, {"m"});
    test::add_node(g, "Div", "div", {"m", "six"}, {"y"});
  });
  auto op = with_activation([](onnx::GraphProto& g, auto) { test::add_node(g, "HardSwish", "hswish", {"c"}, {"y"}); }, 14);
  CHECK(idioms_of(hs).at(0).name == "HardSwish");
  auto decomposed = idioms_of(clip);
  REQUIRE(decomposed.size() == 1);
  CHECK(decomposed[0].name == "HardSwish");
  CHECK(decomposed[0].nodes.size() == 4);
  CHECK(idioms_of(op).at(0).form == "HardSwish op");
}

TEST_CASE("HardSigmoid as Clip(x*(1/6) + 1/2, 0, 1), Mish and GELU are recognised") {
  auto hsig = with_activation([](onnx::GraphProto& g, auto scalar) {
    scalar("sixth", 1.0f / 6);
    scalar("half", 0.5f);
    scalar("zero", 0);
    scalar("one", 1);
    test::add_node(g, "Mul", "mul", {"c", "sixth"}, {"m"});
    test::add_node(g, "Add", "add", {"m", "half"}, {"a"});
    test::add_node(g, "Clip", "clip", {"a", "zero", "one"}, {"y"});
  });
  auto mish = with_activation([](onnx::GraphProto& g, auto) {
    test::add_node(g, "Softplus", "sp", {"c"}, {"p"});
    test::add_node(g, "Tanh", "tanh", {"p"}, {"t"});
    test::add_node(g, "Mul", "mul", {"c", "t"}, {"y"});
  });
  auto gelu = with_activation([](onnx::GraphProto& g, auto scalar) {
    scalar("sqrt2", 1.4142135f);
    scalar("one", 1);
    scalar("half", 0.5f);
    test::add_node(g, "Div", "div", {"c", "sqrt2"}, {"d"});
    test::add_node(g, "Erf", "erf", {"d"}, {"e"});
    test::add_node(g, "Add", "add", {"e", "one"}, {"a"});
    test::add_node(g, "Mul", "mul", {"c", "a"}, {"m"});
    test::add_node(g, "Mul", "mul_half", {"m", "half"}, {"y"});
  });
  CHECK(idioms_of(hsig).at(0).name == "HardSigmoid");
  CHECK(idioms_of(mish).at(0).name == "Mish");
  auto g = idioms_of(gelu);
  REQUIRE(g.size() == 1);
  CHECK(g[0].name == "GELU");
  CHECK(g[0].nodes.size() == 5);
}

TEST_CASE("a Sigmoid whose output is also read elsewhere, or a Mul by a constant, is no idiom") {
  auto shared = with_activation([](onnx::GraphProto& g, auto) {
    test::add_node(g, "Sigmoid", "sig", {"c"}, {"s"});
    test::add_node(g, "Mul", "mul", {"c", "s"}, {"y"});
    g.add_output()->set_name("s");
  });
  auto scaled = with_activation([](onnx::GraphProto& g, auto scalar) {
    scalar("two", 2);
    test::add_node(g, "Mul", "mul", {"c", "two"}, {"y"});
  });
  CHECK(idioms_of(shared).empty());
  CHECK(idioms_of(scaled).empty());
}

TEST_CASE("the audit reports each node of an idiom under the idiom's group, and the summary counts units") {
  auto m = with_activation([](onnx::GraphProto& g, auto) {
    test::add_node(g, "Sigmoid", "sig", {"c"}, {"s"});
    test::add_node(g, "Mul", "mul", {"c", "s"}, {"z"});
    test::add_node(g, "Sigmoid", "sig2", {"z"}, {"s2"});
    test::add_node(g, "Mul", "mul2", {"z", "s2"}, {"y"});
  });
  auto result = convert(test::bytes(m.SerializeAsString()), Options{});
  REQUIRE(result.ok());
  const auto& audit = result->report.unsupported;
  REQUIRE(audit.size() == 4);
  for (const auto& u : audit) {
    CHECK(u.group == "SiLU");
    CHECK(u.reason == "part of a SiLU activation (x*Sigmoid(x)), which the accelerator does not run");
  }
  CHECK(audit[0].unit == std::vector<std::string>{"sig", "mul"});
  CHECK(audit[3].unit == std::vector<std::string>{"sig2", "mul2"});
  auto summary = format_summary(result->report, "in.onnx", "");
  CHECK_THAT(summary, Contains("unsupported on lattice (4 nodes)\n  SiLU x 2 (4 nodes): part of a SiLU activation "
                               "(x*Sigmoid(x)), which the accelerator does not run\n      sig + mul; sig2 + mul2\n"));
  CHECK_THAT(result->report.to_json().dump(false), Contains("\"group\":\"SiLU\",\"unit\":[\"sig\",\"mul\"]"));
}
