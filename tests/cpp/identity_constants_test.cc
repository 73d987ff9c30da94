// Constants read through Identity chains (PyTorch's exporter de-duplicates identical parameters
// and reads the duplicate as Identity(original)): folded like any constant, the original left
// for its other readers, and a message that says what a non-constant tensor really is.
#include <catch2/catch.hpp>

#include "converted.h"
#include "core/graph/graph_view.h"

using namespace lattice;
using Catch::Matchers::Contains;

namespace {

const onnx::TensorProto* find_initializer(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer()) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

int count_ops(const onnx::ModelProto& m, const std::string& op) {
  int n = 0;
  for (const auto& node : m.graph().node()) n += node.op_type() == op ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("a tensor that is Identity of Identity of an initializer is a constant; of a graph input it is not") {
  auto model = test::tiny_model();
  auto& g = *model.mutable_graph();
  *g.add_initializer() = test::float_tensor("w", {1}, {2.0f});
  test::add_node(g, "Identity", "/Identity", {"w"}, {"w1"});
  test::add_node(g, "Identity", "/Identity_1", {"w1"}, {"w2"});
  test::add_node(g, "Identity", "/Identity_3", {"x"}, {"x1"});
  GraphView view(g);
  REQUIRE(view.constant("w2") == view.initializer("w"));
  CHECK(view.constant("x1") == nullptr);
  CHECK(view.describe("x1") == "output of Identity '/Identity_3', which reads graph input 'x'");
  CHECK(view.describe("w2") ==
        "output of Identity '/Identity_1', which reads output of Identity '/Identity', which reads initializer 'w'");
}

TEST_CASE("a BatchNorm bias read through Identity is folded, and the shared original is left for its other reader") {
  auto bytes = test::fixture("identity_shared.onnx");
  Options options;
  options.target = "none";
  options.skip_matches = {"ConvBatchNormFoldPattern:/conv1/Conv"};
  auto [out, report] = test::convert_bytes(bytes, options);
  REQUIRE(report.matches.size() == 2);
  CHECK(report.matches[1].id == "ConvBatchNormFoldPattern:/conv2/Conv");
  CHECK(report.matches[1].applied);
  auto original = parse_model(test::bytes(bytes));
  REQUIRE(original.ok());
  // bn1 and conv1 still read their parameters, bit for bit as they were.
  for (const char* name : {"bn1.bias", "conv1.bias"}) {
    const auto* before = find_initializer(*original, name);
    const auto* after = find_initializer(out, name);
    REQUIRE(before);
    REQUIRE(after);
    CHECK(after->SerializeAsString() == before->SerializeAsString());
  }
  // The Identity chains only the folded pair read are gone with it.
  CHECK(count_ops(out, "Identity") == 0);
  CHECK(count_ops(out, "BatchNormalization") == 1);
}

TEST_CASE("with both blocks folded, nothing of the shared parameters or their Identity chains is left") {
  Options options;
  options.target = "none";
  auto [out, report] = test::convert_bytes(test::fixture("identity_shared.onnx"), options);
  REQUIRE(report.matches.size() == 2);
  CHECK(report.matches[0].applied);
  CHECK(report.matches[1].applied);
  CHECK(out.graph().node_size() == 4);
  CHECK_FALSE(find_initializer(out, "bn1.bias"));
}

TEST_CASE("a BatchNorm bias that is Identity of a graph input is refused, saying so") {
  auto model = test::conv_bn_model(3, true);
  auto& g = *model.mutable_graph();
  test::set_input_shape(*g.add_input(), "b_in", {3});
  test::add_node(g, "Identity", "/Identity_3", {"b_in"}, {"beta_seen"});
  g.mutable_node(1)->set_input(2, "beta_seen");
  Options options;
  options.target = "none";
  auto result = convert(test::bytes(model.SerializeAsString()), options);
  REQUIRE(result.ok());
  const auto& report = result->report;
  REQUIRE(report.matches.size() == 1);
  CHECK_FALSE(report.matches[0].applied);
  CHECK_THAT(report.matches[0].reason,
             Contains("the bias 'beta_seen' of 'bn' is not a constant: it is the output of Identity '/Identity_3', "
                      "which reads graph input 'b_in'"));
}
