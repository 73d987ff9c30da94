// The repair's session (core/repair/session.h): the parts it cuts (part.h), which part each step
// runs and which tensors are held between steps (part_runs.h), and new weights written in place,
// bit for bit what set_layer_weights writes into the model's bytes. That the parts compute what
// the whole model does is run in onnxruntime by tests/node/repair_parts.test.mjs.
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/onnx/model_io.h"
#include "core/repair/session.h"
#include "support.h"

using namespace lattice;
using namespace lattice::repair;
using Catch::Matchers::Contains;
using Strings = std::vector<std::string>;

namespace {

// x[1, 2, 4, 4] -> c1 (w1) -> t1 -> r1 (Relu) -> t2 -> c2 (w2, bias kb) -> t3; add(t3, t1) -> y;
// kb = k (Identity) of the initializer b2: computed, but the same for every sample.
onnx::ModelProto chain_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  m.set_producer_name("chain");
  auto& g = *m.mutable_graph();
  g.set_name("chain");
  test::set_input_shape(*g.add_input(), "x", {1, 2, 4, 4});
  g.add_output()->set_name("y");
  *g.add_initializer() = test::float_tensor("w1", {2, 2, 1, 1}, {1, 2, 3, 4});
  *g.add_initializer() = test::float_tensor("w2", {2, 2, 1, 1}, {5, 6, 7, 8});
  *g.add_initializer() = test::float_tensor("b2", {2}, {0.5f, -0.5f});
  test::add_node(g, "Conv", "c1", {"x", "w1"}, {"t1"});
  test::add_node(g, "Relu", "r1", {"t1"}, {"t2"});
  test::add_node(g, "Identity", "k", {"b2"}, {"kb"});
  test::add_node(g, "Conv", "c2", {"t2", "w2", "kb"}, {"t3"});
  test::add_node(g, "Add", "add", {"t3", "t1"}, {"y"});
  return m;
}

GivenTensors given(const Strings& names) {
  GivenTensors out;
  for (const auto& name : names) out[name] = {1, {1, 2, 4, 4}};
  return out;
}

Strings node_names(const onnx::ModelProto& m) {
  Strings out;
  for (const auto& n : m.graph().node()) out.push_back(n.name());
  return out;
}

std::unique_ptr<RepairSession> open_session(const onnx::ModelProto& original, const onnx::ModelProto& converted) {
  std::string theirs = original.SerializeAsString(), mine = converted.SerializeAsString();
  auto session = RepairSession::open(test::bytes(theirs), test::bytes(mine));
  REQUIRE(session.ok());
  return std::move(session).value();
}

}  // namespace

TEST_CASE("a part holds the nodes between the given tensors and the asked ones, with what they read", "[repair][session]") {
  auto m = chain_model();
  ModelParts parts(m);

  auto first = parts.cut(given({"x"}), {"t2"});
  REQUIRE(first.ok());
  REQUIRE(first->nodes == std::vector<int>{0, 1});
  REQUIRE(first->inputs == Strings{"x"});
  auto model = parse_model(test::bytes(first->bytes));
  REQUIRE(model.ok());
  REQUIRE(node_names(*model) == Strings{"c1", "r1"});
  REQUIRE(model->graph().initializer_size() == 1);
  REQUIRE(model->graph().initializer(0).name() == "w1");
  // The model's own fields, and the given input's samples left free.
  REQUIRE(model->producer_name() == "chain");
  REQUIRE(model->opset_import(0).version() == 13);
  const auto& dims = model->graph().input(0).type().tensor_type().shape().dim();
  REQUIRE(dims.size() == 4);
  REQUIRE(dims[0].dim_param() == "n");
  REQUIRE(dims[1].dim_value() == 2);
  REQUIRE(model->graph().output(0).name() == "t2");

  // From t2 on, y still needs t1: the part computes it again from x rather than asking for it.
  auto second = parts.cut(given({"x", "t2"}), {"y"});
  REQUIRE(second.ok());
  REQUIRE(second->nodes == std::vector<int>{0, 2, 3, 4});
  REQUIRE(second->inputs == Strings{"x", "t2"});
  auto after = parts.cut(given({"t1", "t2"}), {"y"});
  REQUIRE(after.ok());
  REQUIRE(after->nodes == std::vector<int>{2, 3, 4});
}

TEST_CASE("a part that needs a tensor it was not given, or a name no node computes, is refused in words", "[repair][session]") {
  auto m = chain_model();
  ModelParts parts(m);
  auto missing = parts.cut({}, {"t2"});
  REQUIRE_FALSE(missing.ok());
  REQUIRE_THAT(missing.error().message, Contains("a part of the model needs 'x', which it was not given"));
  auto nothing = parts.cut(given({"x"}), {"nope"});
  REQUIRE_FALSE(nothing.ok());
  REQUIRE_THAT(nothing.error().message, Contains("no node of the model computes 'nope' from what was given"));
}

TEST_CASE("each step runs what is not held, holds what later nodes read, and lets the rest go", "[repair][session]") {
  auto m = chain_model();
  ModelParts parts(m);
  PartRuns runs({"x"}, {"t3"});

  // t2 committed: t1 is held too (add reads it later), x let go (only c1 read it).
  auto step = runs.next(parts, given({"x"}), {"t2"}, {});
  REQUIRE(step.ok());
  REQUIRE(step->part.nodes == std::vector<int>{0, 1});
  REQUIRE(step->hold == Strings{"t2", "t1"});
  REQUIRE(step->drop == Strings{"x"});
  REQUIRE(step->per_sample == Strings{"x", "t2", "t1"});
  REQUIRE(step->aside.empty());

  // Asked again: everything is held, nothing runs.
  auto none = runs.next(parts, given({"t1", "t2"}), {"t2"}, {});
  REQUIRE(none.ok());
  REQUIRE(none->part.bytes.empty());
  REQUIRE(none->part.nodes.empty());

  // t3 peeked (its layer's weights may change): run aside, nothing held, nothing let go.
  auto peek = runs.next(parts, given({"t1", "t2"}), {}, {"t3"});
  REQUIRE(peek.ok());
  REQUIRE(peek->part.nodes == std::vector<int>{2, 3});
  REQUIRE(peek->aside == Strings{"t3"});
  REQUIRE(peek->hold.empty());
  REQUIRE(peek->drop.empty());
  REQUIRE(peek->per_sample == Strings{"t2", "t3"});

  // The layer kept its weights: what was peeked is final, and t2, which only c2 read, goes.
  auto drop = runs.adopt(parts, {"t1", "t2", "t3"});
  REQUIRE(drop == Strings{"t2"});
  // t3 was asked for (keep) until released; t1 is read by add until y is committed.
  auto last = runs.next(parts, given({"t1", "t3"}), {"y"}, {});
  REQUIRE(last.ok());
  REQUIRE(last->part.nodes == std::vector<int>{4});
  // y is the caller's from this step's values: no node reads it, and nobody asked to keep it.
  REQUIRE(last->drop == Strings{"t1", "y"});
  runs.release("t3");
  REQUIRE(runs.adopt(parts, {"t3", "y"}) == Strings{"t3", "y"});
}

TEST_CASE("a tensor computed from initializers alone is not per sample: held once, given whole", "[repair][session]") {
  auto m = chain_model();
  ModelParts parts(m);
  PartRuns runs({"x"}, {});
  auto step = runs.next(parts, given({"x"}), {"kb", "t1"}, {});
  REQUIRE(step.ok());
  REQUIRE(step->outputs == Strings{"kb", "t1"});
  REQUIRE(step->per_sample == Strings{"x", "t1"});
}

TEST_CASE("a peeked layer that is not adopted runs again when committed", "[repair][session]") {
  auto m = chain_model();
  ModelParts parts(m);
  PartRuns runs({"x"}, {});
  REQUIRE(runs.next(parts, given({"x"}), {"t2"}, {}).ok());
  auto peek = runs.next(parts, given({"t1", "t2"}), {}, {"t3"});
  REQUIRE(peek.ok());
  // New weights for c2: t3 is asked again, and its nodes run again, now as final.
  auto again = runs.next(parts, given({"t1", "t2"}), {"y"}, {});
  REQUIRE(again.ok());
  REQUIRE(again->part.nodes == std::vector<int>{2, 3, 4});
  REQUIRE(again->drop == Strings{"t1", "t2", "y"});
}

TEST_CASE("the session writes new weights in place, bit for bit as into the model's bytes", "[repair][session]") {
  auto original = chain_model();
  auto converted = chain_model();
  auto session = open_session(original, converted);
  std::vector<LayerWeights> first = {{"c2", {0.25f, -1.5f, 2, 3}, {1, 2}}};
  std::vector<LayerWeights> second = {{"c1", {9, 8, 7, 6}, {0.125f, 0}}};

  std::string bytes = converted.SerializeAsString();
  for (const auto* layers : {&first, &second}) {
    REQUIRE(session->set_weights(*layers).ok());
    auto written = set_layer_weights(test::bytes(bytes), *layers);
    REQUIRE(written.ok());
    bytes = *written;
    auto held = session->converted_bytes();
    REQUIRE(held.ok());
    REQUIRE(*held == bytes);
  }

  // The parts are cut from the model with its new weights: c1 reads its new bias.
  session->start(RepairSession::Which::kConverted, {"x"}, {});
  auto step = session->next(RepairSession::Which::kConverted, given({"x"}), {"t1"}, {});
  REQUIRE(step.ok());
  auto part = parse_model(test::bytes(step->part.bytes));
  REQUIRE(part.ok());
  REQUIRE(part->graph().node(0).input_size() == 3);
  REQUIRE(test::initializer_values(*part, part->graph().node(0).input(2)) == std::vector<double>{0.125, 0});
  // The original is as it was.
  session->start(RepairSession::Which::kOriginal, {"x"}, {});
  auto theirs = session->next(RepairSession::Which::kOriginal, given({"x"}), {"t1"}, {});
  REQUIRE(theirs.ok());
  auto original_part = parse_model(test::bytes(theirs->part.bytes));
  REQUIRE(original_part.ok());
  REQUIRE(original_part->graph().node(0).input_size() == 2);
}

TEST_CASE("a refused entry leaves the session as it was; the runs must be started", "[repair][session]") {
  auto m = chain_model();
  auto session = open_session(m, m);
  auto before = session->converted_bytes();
  REQUIRE(before.ok());
  auto refused = session->set_weights({{"c1", {1, 2, 3, 4}, {0, 0}}, {"nope", {1}, {1}}});
  REQUIRE_FALSE(refused.ok());
  REQUIRE_THAT(refused.error().message, Contains("no node is labelled 'nope'"));
  auto after = session->converted_bytes();
  REQUIRE(after.ok());
  REQUIRE(*after == *before);
  REQUIRE(session->set_weights({{"c1", {1, 2, 3, 4}, {0, 0}}}).ok());

  auto unstarted = session->next(RepairSession::Which::kOriginal, given({"x"}), {"t1"}, {});
  REQUIRE_FALSE(unstarted.ok());
  REQUIRE_THAT(unstarted.error().message, Contains("not started"));

  std::string garbage = "not a model";
  std::string good = m.SerializeAsString();
  auto bad = RepairSession::open(test::bytes(good), test::bytes(garbage));
  REQUIRE_FALSE(bad.ok());
  REQUIRE_THAT(bad.error().message, Contains("the converted model"));
}
