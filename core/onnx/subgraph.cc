#include "core/onnx/subgraph.h"

namespace lattice {

void for_each_subgraph(const onnx::NodeProto& node, const std::function<void(const onnx::GraphProto&)>& visit) {
  for (const auto& attr : node.attribute()) {
    if (attr.has_g()) visit(attr.g());
    for (const auto& graph : attr.graphs()) visit(graph);
  }
}

namespace {

void collect_free_reads(const onnx::GraphProto& graph, std::unordered_set<std::string>& reads) {
  std::unordered_set<std::string> defined;
  for (const auto& input : graph.input()) defined.insert(input.name());
  for (const auto& init : graph.initializer()) defined.insert(init.name());
  for (const auto& sparse : graph.sparse_initializer()) defined.insert(sparse.values().name());
  for (const auto& node : graph.node()) {
    for (const auto& output : node.output()) defined.insert(output);
  }
  auto read = [&](const std::string& name) {
    if (!name.empty() && !defined.contains(name)) reads.insert(name);
  };
  for (const auto& node : graph.node()) {
    for (const auto& input : node.input()) read(input);
    for (const auto& inner : implicit_inputs(node)) read(inner);
  }
  for (const auto& output : graph.output()) read(output.name());
}

}  // namespace

std::unordered_set<std::string> implicit_inputs(const onnx::NodeProto& node) {
  std::unordered_set<std::string> reads;
  for_each_subgraph(node, [&](const onnx::GraphProto& graph) { collect_free_reads(graph, reads); });
  return reads;
}

}  // namespace lattice
