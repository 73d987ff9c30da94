#include "core/graph/names.h"

#include "core/onnx/subgraph.h"

namespace lattice {

NameAllocator::NameAllocator(const onnx::GraphProto& graph) { collect(graph); }

void NameAllocator::collect(const onnx::GraphProto& graph) {
  for (const auto& v : graph.input()) taken_.insert(v.name());
  for (const auto& v : graph.output()) taken_.insert(v.name());
  for (const auto& v : graph.value_info()) taken_.insert(v.name());
  for (const auto& t : graph.initializer()) taken_.insert(t.name());
  for (const auto& s : graph.sparse_initializer()) taken_.insert(s.values().name());
  for (const auto& node : graph.node()) {
    taken_.insert(node.name());
    for (const auto& o : node.output()) taken_.insert(o);
    for_each_subgraph(node, [this](const onnx::GraphProto& body) { collect(body); });
  }
}

std::string NameAllocator::fresh(const std::string& base) {
  std::string name = base;
  for (int i = 1; taken_.contains(name); ++i) name = base + "_" + std::to_string(i);
  taken_.insert(name);
  return name;
}

}  // namespace lattice
