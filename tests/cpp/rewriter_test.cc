// The Rewriter's refusals, asked directly (no pattern would produce these replacements, which is
// why the conversion tests never meet them): each is refused in both engines, with the reason,
// and the graph is left as it was.
#include <catch2/catch.hpp>

#include "core/graph/rewriter.h"
#include "support.h"

using namespace lattice;
using Catch::Matchers::Contains;

namespace {

// x -> Relu a -> Relu b -> Relu y: nodes 0, 1, 2.
onnx::ModelProto chain() {
  onnx::ModelProto m = test::tiny_model();
  auto& g = *m.mutable_graph();
  g.mutable_node()->Clear();
  test::set_input_shape(*g.mutable_input(0), "x", {1, 2, 4, 4});
  test::add_node(g, "Relu", "ra", {"x"}, {"a"});
  test::add_node(g, "Relu", "rb", {"a"}, {"b"});
  test::add_node(g, "Relu", "ry", {"b"}, {"y"});
  return m;
}

Match match_of(std::vector<int> nodes) { return Match{nullptr, std::move(nodes)}; }

// Applies `r` for `matched` in the given engine; returns the refusal, checking nothing changed.
std::string refusal(Rewriter::Mode mode, std::vector<int> matched, Replacement r) {
  onnx::ModelProto m = chain();
  std::string before = m.SerializeAsString();
  auto labels = GraphView::original_labels(m.graph());
  Rewriter rewriter(*m.mutable_graph(), 13, m.ir_version(), &labels, mode);
  auto applied = rewriter.apply(match_of(std::move(matched)), std::move(r));
  REQUIRE_FALSE(applied);
  rewriter.finish(false);
  CHECK(m.SerializeAsString() == before);
  return applied.error().message;
}

onnx::NodeProto node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs) {
  onnx::GraphProto g;
  return test::add_node(g, op, "new_" + op, std::move(inputs), std::move(outputs));
}

const Rewriter::Mode kModes[] = {Rewriter::Mode::kIncremental, Rewriter::Mode::kFullRebuild};

}  // namespace

TEST_CASE("a replacement that reads a tensor computed from its own output is refused: it would make a cycle") {
  for (auto mode : kModes) {
    CAPTURE(static_cast<int>(mode));
    // ra is replaced by a = Add(x, b), but b = Relu(a).
    Replacement r;
    r.nodes.push_back(node("Add", {"x", "b"}, {"a"}));
    CHECK(refusal(mode, {0}, std::move(r)) == "the replacement would create a cycle");
  }
}

TEST_CASE("a replacement that writes a tensor another node still writes is refused") {
  for (auto mode : kModes) {
    CAPTURE(static_cast<int>(mode));
    Replacement r;
    r.nodes.push_back(node("Relu", {"x"}, {"a"}));
    r.nodes.push_back(node("Relu", {"a"}, {"b"}));  // rb stays and writes b
    CHECK(refusal(mode, {0}, std::move(r)) == "the replacement would write 'b' twice");
    Replacement twice;
    twice.nodes.push_back(node("Relu", {"x"}, {"a"}));
    twice.nodes.push_back(node("Sigmoid", {"x"}, {"a"}));
    CHECK(refusal(mode, {0}, std::move(twice)) == "the replacement would write 'a' twice");
    Replacement input;
    input.nodes.push_back(node("Relu", {"a"}, {"x"}));
    CHECK(refusal(mode, {0}, std::move(input)) == "the replacement would write 'x' twice");
  }
}

TEST_CASE("removing a node whose output is still read, and not writing it again, is refused") {
  for (auto mode : kModes) {
    CAPTURE(static_cast<int>(mode));
    Replacement r;
    r.nodes.push_back(node("Relu", {"x"}, {"a2"}));  // a is gone, rb still reads it
    CHECK(refusal(mode, {0}, std::move(r)) == "'a' of node 'ra' is still read elsewhere");
  }
}

TEST_CASE("a graph output cannot be rewired to another tensor") {
  for (auto mode : kModes) {
    CAPTURE(static_cast<int>(mode));
    Replacement r;
    r.nodes.push_back(node("Relu", {"b"}, {"y2"}));
    r.rewires.emplace_back("y", "y2");
    CHECK(refusal(mode, {2}, std::move(r)) == "'y' is a graph output and cannot be rewired");
  }
}

TEST_CASE("a replacement whose shapes no longer fit a reader is refused, naming the reader") {
  for (auto mode : kModes) {
    CAPTURE(static_cast<int>(mode));
    onnx::ModelProto m = chain();
    auto& g = *m.mutable_graph();
    test::add_node(g, "Add", "sum", {"a", "x"}, {"s"});  // a and x must keep one shape
    g.add_output()->set_name("s");
    auto labels = GraphView::original_labels(m.graph());
    Rewriter rewriter(g, 13, m.ir_version(), &labels, mode);
    Replacement r;
    auto pool = node("MaxPool", {"x"}, {"a"});
    onnx::AttributeProto* k = pool.add_attribute();
    k->set_name("kernel_shape");
    k->set_type(onnx::AttributeProto::INTS);
    k->add_ints(2);
    k->add_ints(2);
    *pool.add_attribute() = *k;
    pool.mutable_attribute(1)->set_name("strides");
    r.nodes.push_back(pool);  // a becomes [1, 2, 2, 2]
    auto applied = rewriter.apply(match_of({0}), std::move(r));
    REQUIRE_FALSE(applied);
    CHECK_THAT(applied.error().message, Contains("the result would not be valid: ") && Contains("'sum'"));
  }
}
