#include "core/graph/graph_view.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/onnx/domain.h"
#include "core/onnx/naming.h"
#include "core/onnx/subgraph.h"

namespace lattice {

namespace {

const std::vector<int> kNone;

void erase_id(std::unordered_map<std::string, std::vector<int>>& index, const std::string& name, int id) {
  auto it = index.find(name);
  if (it == index.end()) return;
  auto& ids = it->second;
  ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
  if (ids.empty()) index.erase(it);
}

}  // namespace

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
  for (int i = 0; i < graph.output_size(); ++i) outputs_.emplace(graph.output(i).name(), i);
  for (const auto& init : graph.initializer()) initializers_.emplace(init.name(), &init);
  int n = graph.node_size();
  nodes_.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    nodes_.push_back(&graph.node(i));
    alive_.push_back(1);
    order_.push_back(static_cast<uint64_t>(i + 1) * kOrderGap);
    prev_.push_back(i - 1);
    next_.push_back(i + 1 < n ? i + 1 : -1);
    link(i);
  }
  first_ = n > 0 ? 0 : -1;
  last_ = n - 1;
}

void GraphView::link(int id) {
  const auto& node = *nodes_[id];
  for (const auto& output : node.output()) {
    if (!output.empty()) producer_.emplace(output, id);
  }
  auto by_order = [this](int a, int b) { return order_[a] < order_[b]; };
  for (const auto& input : node.input()) {
    if (input.empty()) continue;
    auto& readers = consumers_[input];
    auto at = std::upper_bound(readers.begin(), readers.end(), id, by_order);
    if (at == readers.begin() || *(at - 1) != id) readers.insert(at, id);
  }
  for (const auto& name : implicit_inputs(node)) implicit_readers_[name].push_back(id);
}

void GraphView::unlink(int id) {
  const auto& node = *nodes_[id];
  for (const auto& output : node.output()) {
    auto it = producer_.find(output);
    if (it != producer_.end() && it->second == id) producer_.erase(it);
  }
  for (const auto& input : node.input()) erase_id(consumers_, input, id);
  for (const auto& name : implicit_inputs(node)) erase_id(implicit_readers_, name, id);
}

std::optional<GraphView::Slots> GraphView::slots_between(int before, int after, size_t count) const {
  uint64_t low = before >= 0 ? order_[before] : 0;
  uint64_t high;
  if (after >= 0) {
    high = order_[after];
  } else {
    uint64_t end = last_ >= 0 ? order_[last_] : 0;
    if (end > UINT64_MAX - kOrderGap) return std::nullopt;
    high = end + kOrderGap;
  }
  uint64_t step = (high - low) / (count + 1);
  if (step == 0) return std::nullopt;
  return Slots{low, step};
}

std::vector<int> GraphView::replace(const std::vector<int>& removed, int at,
                                    const std::vector<const onnx::NodeProto*>& nodes, const Slots& slots) {
  edited_ = true;
  for (int n : removed) unlink(n);  // first, so the new writers of its outputs are indexed as their producers
  std::vector<int> fresh;
  int before = prev_[at];
  for (size_t k = 0; k < nodes.size(); ++k) {
    int id = size();
    fresh.push_back(id);
    nodes_.push_back(nodes[k]);
    alive_.push_back(1);
    order_.push_back(slots.low + slots.step * (k + 1));
    prev_.push_back(before);
    next_.push_back(at);
    (before >= 0 ? next_[before] : first_) = id;
    prev_[at] = id;
    before = id;
    link(id);
  }
  for (int n : removed) unlist(n);
  return fresh;
}

void GraphView::remove(int id) {
  edited_ = true;
  unlink(id);
  unlist(id);
}

void GraphView::unlist(int id) {
  alive_[id] = 0;
  int before = prev_[id], after = next_[id];
  (before >= 0 ? next_[before] : first_) = after;
  (after >= 0 ? prev_[after] : last_) = before;
  // next_[id] stays: a walk that stood on this node goes on where it would have.
}

void GraphView::add_initializer(const onnx::TensorProto& init, bool listed_as_input) {
  if (listed_as_input) inputs_.insert(init.name());
  initializers_[init.name()] = &init;
}

int GraphView::output_index(const std::string& name) const {
  auto it = outputs_.find(name);
  return it == outputs_.end() ? -1 : it->second;
}

int GraphView::next(int id) const {
  int n = next_[id];
  while (n >= 0 && !alive(n)) n = next_[n];
  return n;
}

int GraphView::position(int id) const {
  if (!edited_) return id;
  int index = 0;
  for (int n = first_; n >= 0 && n != id; n = next(n)) ++index;
  return index;
}

std::string GraphView::label(int id) const {
  const auto& node = *nodes_[id];
  if (labels_ && node.output_size() > 0) {
    auto it = labels_->find(node.output(0));
    if (it != labels_->end()) return it->second;
  }
  return node.name().empty() ? node_label(node, position(id)) : node.name();
}

int GraphView::producer(const std::string& name) const {
  auto it = producer_.find(name);
  return it == producer_.end() ? -1 : it->second;
}

const std::vector<int>& GraphView::consumers(const std::string& name) const {
  auto it = consumers_.find(name);
  return it == consumers_.end() ? kNone : it->second;
}

const std::vector<int>& GraphView::implicit_readers(const std::string& name) const {
  auto it = implicit_readers_.find(name);
  return it == implicit_readers_.end() ? kNone : it->second;
}

int GraphView::reader_count(const std::string& name) const {
  return static_cast<int>(consumers(name).size() + implicit_readers(name).size()) + (is_graph_output(name) ? 1 : 0);
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
    const auto& node = *nodes_[p];
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
      what = fmt::format("output of {} '{}'", node(p).op_type(), label(p));
    }
    text += hops == 0 ? what : ", which reads " + what;
    if (p < 0 || !is_op(node(p), "Identity") || node(p).input_size() != 1) break;
    tensor = &node(p).input(0);
  }
  return text;
}

}  // namespace lattice
