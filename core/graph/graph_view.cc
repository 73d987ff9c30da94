#include "core/graph/graph_view.h"

#include <fmt/format.h>

#include "core/onnx/domain.h"
#include "core/onnx/naming.h"
#include "core/onnx/subgraph.h"

namespace lattice {

GraphView::Labels GraphView::original_labels(const onnx::GraphProto& graph) {
  // Every node gets a label no other node has: its name; `<op_type>_<index>` when unnamed; and
  // for the second and later nodes sharing a name, `name#2`, `name#3`, ... in model order, so a
  // match id never stands for two matches.
  std::unordered_set<std::string> taken;
  for (const auto& node : graph.node()) taken.insert(node.name());
  std::unordered_map<std::string, int> seen;
  Labels labels;
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    if (node.output_size() == 0) continue;
    std::string label;
    if (node.name().empty()) {
      label = node_label(node, i);
    } else if (int n = ++seen[node.name()]; n > 1) {
      for (int k = n; label.empty() || taken.contains(label); ++k) label = fmt::format("{}#{}", node.name(), k);
    } else {
      continue;
    }
    taken.insert(label);
    labels.emplace(node.output(0), std::move(label));
  }
  return labels;
}

GraphView::GraphView(const onnx::GraphProto& graph, const Labels* labels, int64_t ir_version)
    : graph_(graph), labels_(labels), initializer_inputs_overridable_(ir_version >= 4) {
  for (const auto& input : graph.input()) inputs_.insert(input.name());
  for (const auto& output : graph.output()) outputs_.insert(output.name());
  for (const auto& init : graph.initializer()) initializers_.emplace(init.name(), &init);
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    for (const auto& output : node.output()) {
      if (!output.empty()) producer_.emplace(output, i);
    }
    for (const auto& input : node.input()) {
      if (input.empty()) continue;
      auto& readers = consumers_[input];
      if (readers.empty() || readers.back() != i) readers.push_back(i);
    }
    for (const auto& name : implicit_inputs(node)) ++implicit_readers_[name];
  }
}

std::string GraphView::label(int i) const {
  const auto& node = graph_.node(i);
  if (labels_ && node.output_size() > 0) {
    auto it = labels_->find(node.output(0));
    if (it != labels_->end()) return it->second;
  }
  return node_label(node, i);
}

int GraphView::producer(const std::string& name) const {
  auto it = producer_.find(name);
  return it == producer_.end() ? -1 : it->second;
}

const std::vector<int>& GraphView::consumers(const std::string& name) const {
  static const std::vector<int> kNone;
  auto it = consumers_.find(name);
  return it == consumers_.end() ? kNone : it->second;
}

int GraphView::reader_count(const std::string& name) const {
  auto implicit = implicit_readers_.find(name);
  return static_cast<int>(consumers(name).size()) + (implicit == implicit_readers_.end() ? 0 : implicit->second) +
         (is_graph_output(name) ? 1 : 0);
}

const onnx::TensorProto* GraphView::initializer(const std::string& name) const {
  auto it = initializers_.find(name);
  return it == initializers_.end() ? nullptr : it->second;
}

const onnx::TensorProto* GraphView::constant(const std::string& name) const {
  if (is_overridable_input(name)) return nullptr;
  if (const auto* init = initializer(name)) return init;
  int p = producer(name);
  if (p < 0) return nullptr;
  const auto& node = graph_.node(p);
  if (node.op_type() != "Constant" || !is_default_domain(node.domain())) return nullptr;
  for (const auto& a : node.attribute()) {
    if (a.name() == "value" && a.has_t()) return &a.t();
  }
  return nullptr;
}

}  // namespace lattice
