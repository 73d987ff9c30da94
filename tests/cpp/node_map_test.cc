// The report's node mapping (core/report/node_map.h): input node → converted nodes, followed
// through every later match, exact only when every step is.
#include <catch2/catch.hpp>

#include <set>

#include "converted.h"
#include "core/report/node_map.h"

using namespace lattice;
using Catch::Matchers::Contains;

namespace {

MatchRecord applied(std::string id, bool exact, std::vector<std::string> nodes, std::vector<std::string> new_nodes) {
  MatchRecord m;
  m.id = id;
  m.pattern = id.substr(0, id.find(':'));
  m.numerically_equivalent = exact;
  m.applied = true;
  m.nodes = std::move(nodes);
  m.new_nodes = std::move(new_nodes);
  return m;
}

size_t occurrences(const std::string& text, const std::string& part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

}  // namespace

TEST_CASE("the node map follows an emitted node through the fold that removes it; a refused match maps nothing") {
  // A stride-2 Conv → BN → Relu becomes Conv → BN → Relu → MaxPool; folding then takes the Conv and
  // the emitted BN. A refused match leaves its node unchanged: no entry.
  MatchRecord refused = applied("LatticeMaxPool2dPattern:pool", false, {"pool"}, {});
  refused.applied = false;
  const std::vector<MatchRecord> matches = {
      applied("LatticeStride2ConvBnReLUPattern:conv", false, {"conv", "bn", "relu"}, {"conv", "bn", "relu", "conv.pool"}),
      refused,
      applied("ConvBatchNormFoldPattern:conv", true, {"conv", "bn"}, {"conv"}),
      applied("ConvBatchNormFoldPattern:conv2", true, {"conv2", "bn2"}, {"conv2"}),
  };
  const std::string json = node_map_json(matches).dump(false);
  const std::string steps = R"("steps":[{"match_id":"LatticeStride2ConvBnReLUPattern:conv","pattern":"LatticeStride2ConvBnReLUPattern","numerically_equivalent":false},)"
                            R"({"match_id":"ConvBatchNormFoldPattern:conv","pattern":"ConvBatchNormFoldPattern","numerically_equivalent":true}]})";
  // One-to-many: each node of the chain maps to the chain's converted nodes, the folded BN gone.
  for (const char* node : {"conv", "bn", "relu"}) {
    INFO(node);
    CHECK_THAT(json, Contains(std::string(R"({"node":")") + node + R"(","new_nodes":["conv","relu","conv.pool"],"exact":false,)" + steps));
  }
  // Many-to-one: a fold's two nodes map to its one Conv, exactly.
  CHECK_THAT(json, Contains(R"({"node":"conv2","new_nodes":["conv2"],"exact":true,)"));
  CHECK_THAT(json, Contains(R"({"node":"bn2","new_nodes":["conv2"],"exact":true,)"));
  // The fold of the emitted Conv + BN maps no input node of its own, and the refused pool none.
  CHECK(occurrences(json, R"("node":"pool")") == 0);
  CHECK(occurrences(json, R"("node":"conv")") == 1);
  CHECK(occurrences(json, R"("node":)") == 5);
}

TEST_CASE("the sample's report maps each input node a rewrite took to nodes of the converted model") {
  const auto converted = test::convert_bytes(test::fixture("sample.onnx"), Options{});
  const std::string json = node_map_json(converted.report.matches).dump(false);
  CHECK_THAT(converted.report.to_json().dump(false), Contains(R"("node_map":)" + json));
  // The stem's stride-2 Conv became its Conv at stride 1 and a MaxPool (its BN folded away).
  CHECK_THAT(json, Contains(R"({"node":"/stem/stem.0/Conv","new_nodes":["/stem/stem.0/Conv","/stem/stem.2/Relu","/stem/stem.0/Conv.pool"],"exact":false,)"));
  // A MaxPool taken by a stride-2 chain and then snapped is mapped once, through both.
  CHECK_THAT(json, Contains(R"({"node":"/down/down.1/MaxPool","new_nodes":["/down/down.0/down.0.0/Conv.pad","/down/down.0/down.0.0/Conv","/down/down.0/down.0.2/Relu","/down/down.1/MaxPool"],"exact":false,)"));
  // A fold alone is exact.
  CHECK_THAT(json, Contains(R"({"node":"/neck/neck.1/BatchNormalization","new_nodes":["/neck/neck.0/Conv"],"exact":true,)"));
  // Exactly the input nodes an applied match took have an entry, once each; every converted node
  // an entry names is a node of the converted model.
  auto input = parse_model(test::bytes(test::fixture("sample.onnx")));
  REQUIRE(input.ok());
  std::set<std::string> input_nodes, taken, output_nodes;
  for (const auto& n : input->graph().node()) input_nodes.insert(n.name());
  for (const auto& n : converted.model.graph().node()) output_nodes.insert(n.name());
  for (const auto& m : converted.report.matches) {
    for (const auto& n : m.nodes) {
      if (m.applied && input_nodes.count(n)) taken.insert(n);
    }
  }
  CHECK(occurrences(json, R"("node":)") == taken.size());
  for (const auto& n : taken) CHECK(occurrences(json, R"("node":")" + n + "\"") == 1);
  for (const auto& m : converted.report.matches) {
    for (const auto& n : m.new_nodes) {
      INFO(n);
      if (!output_nodes.count(n)) CHECK(occurrences(json, "\"" + n + "\"") == occurrences(json, R"("node":")" + n + "\""));
    }
  }
}
