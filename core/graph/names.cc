#include "core/graph/names.h"

#include "core/onnx/subgraph.h"

namespace lattice {

NameAllocator::NameAllocator(const onnx::GraphProto& graph) { collect(graph, 1); }

void NameAllocator::count(const std::string& name, int delta) {
  auto it = taken_.try_emplace(name, 0).first;
  it->second += delta;
  if (it->second <= 0) taken_.erase(it);
}

void NameAllocator::count(const onnx::NodeProto& node, int delta) {
  count(node.name(), delta);
  for (const auto& o : node.output()) count(o, delta);
  for_each_subgraph(node, [&](const onnx::GraphProto& body) { collect(body, delta); });
}

void NameAllocator::collect(const onnx::GraphProto& graph, int delta) {
  for (const auto& v : graph.input()) count(v.name(), delta);
  for (const auto& v : graph.output()) count(v.name(), delta);
  for (const auto& v : graph.value_info()) count(v.name(), delta);
  for (const auto& t : graph.initializer()) count(t.name(), delta);
  for (const auto& s : graph.sparse_initializer()) count(s.values().name(), delta);
  for (const auto& node : graph.node()) count(node, delta);
}

void NameAllocator::release(const std::string& name) { count(name, -1); }
void NameAllocator::take(const onnx::NodeProto& node) { count(node, 1); }
void NameAllocator::release(const onnx::NodeProto& node) { count(node, -1); }

std::string NameAllocator::fresh(const std::string& base) {
  std::string name = base;
  for (int i = 1; taken_.contains(name) || handed_out_.contains(name); ++i) name = base + "_" + std::to_string(i);
  handed_out_.insert(name);
  return name;
}

}  // namespace lattice
