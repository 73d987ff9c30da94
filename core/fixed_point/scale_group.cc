#include "core/fixed_point/scale_group.h"

#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "core/onnx/attributes.h"
#include "core/onnx/domain.h"

namespace lattice::fixed_point {
namespace {

// Ops with one input and one output whose output channel c is f(input channel c), f positive-
// homogeneous. Resize and Upsample interpolate within a channel, linearly whatever the mode.
const std::unordered_set<std::string> kChannelwise = {"Relu",          "LeakyRelu",         "MaxPool",
                                                      "AveragePool",   "GlobalAveragePool", "GlobalMaxPool",
                                                      "Identity",      "Dropout",           "Resize",
                                                      "Upsample",      "Flatten"};

class GroupBuilder {
 public:
  GroupBuilder(const GraphView& view, const Shapes& shapes, const GroupRules& rules)
      : view_(view), shapes_(shapes), rules_(rules) {}

  ScaleGroups groups_of(int bn) {
    const std::string& start = view_.node(bn).output(0);
    if (!add(start)) return {};
    for (size_t next = 0; next < queue_.size(); ++next) {
      const std::string tensor = queue_[next];
      follow_writer(tensor);
      follow_readers(tensor);
    }
    std::unordered_map<size_t, size_t> index;  // root slot → group
    ScaleGroups out;
    auto& groups = out.groups;
    const size_t first = base_.at(start), channels = channels_.at(start);
    for (size_t c = 0; c < channels; ++c) {
      auto [it, added] = index.emplace(root(first + c), groups.size());
      if (added) groups.emplace_back();
      out.of_channel.push_back(it->second);
    }
    for (size_t slot = 0; slot < parent_.size(); ++slot) {
      auto it = index.find(root(slot));
      if (it == index.end()) continue;
      ScaleGroup& g = groups[it->second];
      g.values.push_back({slot_tensor_[slot], slot_channel_[slot]});
      g.frozen = g.frozen || frozen_[slot];
      g.through_add = g.through_add || through_add_[slot];
      const size_t of = channels_.at(slot_tensor_[slot]);
      for (int node : producers_[slot]) g.producers.push_back({node, slot_channel_[slot], of});
      for (int node : consumers_[slot]) g.consumers.push_back({node, slot_channel_[slot], of});
    }
    return out;
  }

 private:
  // A Flatten on axis 1 keeps each channel's values together: its output has its input's channels.
  bool flattens_channels(int node) const {
    const auto& n = view_.node(node);
    return n.op_type() == "Flatten" && attr::get_int(n, "axis", 1) == 1;
  }

  size_t channels_of(const std::string& tensor) const {
    int writer = view_.producer(tensor);
    if (writer >= 0 && flattens_channels(writer)) {
      const Shape* in = shapes_.of(view_.node(writer).input(0));
      return in && in->size() >= 2 && (*in)[1] > 0 ? static_cast<size_t>((*in)[1]) : 0;
    }
    const Shape* s = shapes_.of(tensor);
    return s && s->size() >= 2 && (*s)[1] > 0 ? static_cast<size_t>((*s)[1]) : 0;
  }

  // Gives the tensor its channel slots (once) and queues it; false when its channels are unknown.
  bool add(const std::string& tensor) {
    if (base_.contains(tensor)) return true;
    size_t channels = channels_of(tensor);
    if (channels == 0) return false;
    base_[tensor] = parent_.size();
    channels_[tensor] = channels;
    for (size_t c = 0; c < channels; ++c) {
      parent_.push_back(parent_.size());
      slot_tensor_.push_back(tensor);
      slot_channel_.push_back(c);
      frozen_.push_back(false);
      through_add_.push_back(false);
      producers_.emplace_back();
      consumers_.emplace_back();
    }
    queue_.push_back(tensor);
    return true;
  }

  size_t root(size_t slot) {
    while (parent_[slot] != slot) slot = parent_[slot] = parent_[parent_[slot]];
    return slot;
  }

  void unite(size_t a, size_t b) { parent_[root(a)] = root(b); }

  void freeze(const std::string& tensor) {
    auto it = base_.find(tensor);
    if (it == base_.end()) return;
    for (size_t c = 0; c < channels_.at(tensor); ++c) {
      frozen_[it->second + c] = true;
    }
  }

  // Joins a node's inputs to its output channel by channel; false (nothing joined) when it does not
  // keep channels apart as the group needs.
  bool join(int node) {
    const auto& n = view_.node(node);
    if (!is_default_domain(n.domain()) || n.output_size() < 1) return false;
    const std::string& out = n.output(0);
    const std::string& op = n.op_type();
    if (kChannelwise.contains(op)) {
      for (int i = 1; i < n.output_size(); ++i) {
        if (!n.output(i).empty() && op != "Dropout") return false;  // MaxPool's indices
      }
      if (op == "Flatten" && !flattens_channels(node)) return false;
      const std::string& in = n.input(0);
      if (!add(in) || !add(out) || channels_.at(in) != channels_.at(out)) return false;
      for (size_t c = 0; c < channels_.at(in); ++c) unite(base_.at(in) + c, base_.at(out) + c);
      return true;
    }
    if (op == "Concat") {
      const Shape* shape = shapes_.of(out);
      int64_t axis = attr::get_int(n, "axis", 1);
      if (!shape || (axis < 0 ? axis + static_cast<int64_t>(shape->size()) : axis) != 1 || !add(out)) return false;
      size_t offset = 0;
      for (const auto& in : n.input()) {
        if (!add(in) || offset + channels_.at(in) > channels_.at(out)) return false;
        for (size_t c = 0; c < channels_.at(in); ++c) unite(base_.at(in) + c, base_.at(out) + offset + c);
        offset += channels_.at(in);
      }
      return offset == channels_.at(out);
    }
    if (op == "Add") {
      // No broadcasting: both operands carry the output's channels at its rank. A constant operand
      // is a tensor no producer can scale, so the group it joins keeps scale 1.
      const Shape* shape = shapes_.of(out);
      if (n.input_size() != 2 || !shape || !add(out)) return false;
      for (const auto& in : n.input()) {
        const Shape* s = shapes_.of(in);
        if (!s || s->size() != shape->size() || !add(in) || channels_.at(in) != channels_.at(out)) return false;
      }
      for (size_t c = 0; c < channels_.at(out); ++c) {
        for (const auto& in : n.input()) unite(base_.at(in) + c, base_.at(out) + c);
        through_add_[base_.at(out) + c] = true;
      }
      return true;
    }
    return false;
  }

  bool joining(int node) const {
    const std::string& op = view_.node(node).op_type();
    return kChannelwise.contains(op) || op == "Concat" || op == "Add";
  }

  // Joins a node once; when it cannot be joined, every tensor of it in the group keeps scale 1.
  void join_or_freeze(int node, const std::string& tensor) {
    if (!joined_.insert(node).second) {
      if (!failed_.contains(node)) return;
    } else if (join(node)) {
      return;
    } else {
      failed_.insert(node);
    }
    // It does not keep its channels apart.
    const auto& n = view_.node(node);
    freeze(tensor);
    for (const auto& in : n.input()) freeze(in);
    for (const auto& o : n.output()) freeze(o);
  }

  void follow_writer(const std::string& tensor) {
    int writer = view_.producer(tensor);
    if (writer < 0) {
      freeze(tensor);  // a graph input or a constant
    } else if (rules_.producer(writer) && view_.node(writer).output(0) == tensor) {
      for (size_t c = 0; c < channels_.at(tensor); ++c) producers_[base_.at(tensor) + c].push_back(writer);
    } else if (joining(writer)) {
      join_or_freeze(writer, tensor);
    } else {
      freeze(tensor);  // its writer cannot divide it by a scale
    }
  }

  void follow_readers(const std::string& tensor) {
    const auto& readers = view_.consumers(tensor);
    std::unordered_set<int> unique(readers.begin(), readers.end());
    if (view_.is_graph_output(tensor)) freeze(tensor);
    if (view_.reader_count(tensor) > static_cast<int>(readers.size()) + (view_.is_graph_output(tensor) ? 1 : 0)) {
      freeze(tensor);  // read inside a subgraph
    }
    for (int r : unique) {
      const auto& n = view_.node(r);
      int reads = 0;
      for (const auto& in : n.input()) reads += in == tensor;
      if (rules_.consumer(r) && reads == 1 && n.input(0) == tensor) {
        for (size_t c = 0; c < channels_.at(tensor); ++c) consumers_[base_.at(tensor) + c].push_back(r);
      } else if (joining(r) && (n.op_type() == "Add" || n.op_type() == "Concat" || (n.input(0) == tensor && reads == 1))) {
        join_or_freeze(r, tensor);
      } else {
        freeze(tensor);  // its reader cannot take a scale back
      }
    }
  }

  const GraphView& view_;
  const Shapes& shapes_;
  const GroupRules& rules_;
  std::unordered_map<std::string, size_t> base_, channels_;
  std::vector<size_t> parent_, slot_channel_;
  std::vector<std::string> slot_tensor_;
  std::vector<bool> frozen_;
  std::vector<bool> through_add_;
  std::vector<std::vector<int>> producers_, consumers_;
  std::vector<std::string> queue_;  // every tensor added, followed in turn
  std::unordered_set<int> joined_, failed_;
};

}  // namespace

ScaleGroups scale_groups(const GraphView& view, const Shapes& shapes, int bn, const GroupRules& rules) {
  return GroupBuilder(view, shapes, rules).groups_of(bn);
}

}  // namespace lattice::fixed_point
