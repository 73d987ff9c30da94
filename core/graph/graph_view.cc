#include "core/graph/graph_view.h"

#include <fmt/format.h>

#include "core/onnx/domain.h"
#include "core/onnx/naming.h"
#include "core/onnx/subgraph.h"

namespace lattice {

GraphView::Labels GraphView::original_labels(const onnx::GraphProto& graph) {
  Labels labels;
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    if (node.name().empty() && node.output_size() > 0) labels.emplace(node.output(0), node_label(node, i));
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
  if (node.name().empty() && labels_ && node.output_size() > 0) {
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

namespace {

bool is_op(const onnx::NodeProto& node, std::string_view op) { return node.op_type() == op && is_default_domain(node.domain()); }

}  // namespace

const onnx::TensorProto* GraphView::constant(const std::string& name) const {
  // An Identity chain ends at most size() nodes up; the bound also stops a (refused) cycle.
  const std::string* tensor = &name;
  for (int hops = 0; hops <= size(); ++hops) {
    if (is_overridable_input(*tensor)) return nullptr;
    if (const auto* init = initializer(*tensor)) return init;
    int p = producer(*tensor);
    if (p < 0) return nullptr;
    const auto& node = graph_.node(p);
    if (is_op(node, "Identity") && node.input_size() == 1) {
      tensor = &node.input(0);
      continue;
    }
    if (!is_op(node, "Constant")) return nullptr;
    for (const auto& a : node.attribute()) {
      if (a.name() == "value" && a.has_t()) return &a.t();
    }
    return nullptr;
  }
  return nullptr;
}

std::string GraphView::describe(const std::string& name) const {
  std::string text;
  const std::string* tensor = &name;
  for (int hops = 0; hops <= size(); ++hops) {
    std::string what;
    int p = producer(*tensor);
    if (is_overridable_input(*tensor)) {
      what = initializer(*tensor) ? fmt::format("graph input '{}' (an initializer that may be fed at run time)", *tensor)
                                  : fmt::format("graph input '{}'", *tensor);
    } else if (initializer(*tensor)) {
      what = fmt::format("initializer '{}'", *tensor);
    } else if (p < 0) {
      what = fmt::format("'{}', which nothing writes", *tensor);
    } else {
      what = fmt::format("output of {} '{}'", graph_.node(p).op_type(), label(p));
    }
    text += hops == 0 ? what : ", which reads " + what;
    if (p < 0 || !is_op(graph_.node(p), "Identity") || graph_.node(p).input_size() != 1) break;
    tensor = &graph_.node(p).input(0);
  }
  return text;
}

}  // namespace lattice
