#include "core/graph/rewriter.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "core/graph/shapes.h"
#include "core/onnx/domain.h"
#include "core/onnx/subgraph.h"

namespace lattice {
namespace {

using NameMap = std::unordered_map<std::string, std::string>;

// Renames reads (explicit inputs and reads inside subgraph bodies) according to `rewires`.
void rename_reads(onnx::NodeProto& node, const NameMap& rewires);

void rename_reads(onnx::GraphProto& graph, const NameMap& rewires) {
  for (auto& node : *graph.mutable_node()) rename_reads(node, rewires);
}

void rename_reads(onnx::NodeProto& node, const NameMap& rewires) {
  for (auto& input : *node.mutable_input()) {
    auto it = rewires.find(input);
    if (it != rewires.end()) input = it->second;
  }
  for (auto& a : *node.mutable_attribute()) {
    if (a.has_g()) rename_reads(*a.mutable_g(), rewires);
    for (auto& g : *a.mutable_graphs()) rename_reads(g, rewires);
  }
}

// Kahn's algorithm, taking ready nodes in their current order: a graph that is already sorted
// keeps its order exactly, and new nodes sit where they were inserted unless they must move.
// Returns positions into `nodes`; fewer than nodes.size() means a cycle.
std::vector<int> stable_topological_order(const std::vector<onnx::NodeProto*>& nodes) {
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    for (const auto& o : nodes[i]->output()) {
      if (!o.empty()) producer[o] = i;
    }
  }
  std::vector<std::vector<int>> consumers(nodes.size());
  std::vector<int> pending(nodes.size(), 0);
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    std::unordered_set<int> deps;
    auto depend = [&](const std::string& name) {
      auto it = producer.find(name);
      if (it != producer.end() && it->second != i) deps.insert(it->second);
    };
    for (const auto& in : nodes[i]->input()) depend(in);
    for (const auto& in : implicit_inputs(*nodes[i])) depend(in);
    for (int d : deps) consumers[d].push_back(i);
    pending[i] = static_cast<int>(deps.size());
  }
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<int> order;
  order.reserve(nodes.size());
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int c : consumers[i]) {
      if (--pending[c] == 0) ready.push(c);
    }
  }
  return order;
}

template <typename T, typename Keep>
void filter(google::protobuf::RepeatedPtrField<T>& field, Keep keep) {
  int kept = 0;
  for (int i = 0; i < field.size(); ++i) {
    if (keep(field.Get(i))) field.SwapElements(kept++, i);
  }
  field.DeleteSubrange(kept, field.size() - kept);
}

}  // namespace

Result<std::vector<std::string>> apply_replacement(onnx::GraphProto& graph, const MatchContext& ctx,
                                                   const Match& match, Replacement r, int64_t ir_version) {
  const GraphView& view = ctx.view;
  std::vector<int> matched = match.nodes();
  std::unordered_set<int> removed(matched.begin(), matched.end());
  NameMap rewires(r.rewires.begin(), r.rewires.end());
  std::unordered_set<std::string> written;
  for (const auto& n : r.nodes) {
    for (const auto& o : n.output()) {
      if (o.empty()) continue;
      int p = view.producer(o);
      if ((p >= 0 && !removed.contains(p)) || view.initializer(o) || view.is_graph_input(o) || !written.insert(o).second) {
        return error("the replacement would write '{}' twice", o);
      }
    }
  }
  for (const auto& [from, to] : rewires) {
    if (view.is_graph_output(from)) return error("'{}' is a graph output and cannot be rewired", from);
  }
  // Every output of a removed node that is still read must be written again or rewired.
  std::unordered_set<std::string> read_by_removed;
  for (int i : matched) {
    for (const auto& in : view.node(i).input()) read_by_removed.insert(in);
  }
  for (int i : matched) {
    for (const auto& o : view.node(i).output()) {
      if (o.empty() || written.contains(o) || rewires.contains(o)) continue;
      int readers = view.reader_count(o);
      for (int j : matched) {
        for (const auto& in : view.node(j).input()) readers -= (in == o) ? 1 : 0;
      }
      if (readers > 0) return error("'{}' of node '{}' is still read elsewhere", o, view.label(i));
    }
  }

  // The new node list, checked for cycles before anything is changed.
  int last = *std::max_element(matched.begin(), matched.end());
  std::vector<onnx::NodeProto*> nodes;
  nodes.reserve(static_cast<size_t>(graph.node_size()) + r.nodes.size());
  for (int i = 0; i < graph.node_size(); ++i) {
    if (!removed.contains(i)) {
      nodes.push_back(graph.mutable_node(i));
    } else if (i == last) {
      for (auto& n : r.nodes) nodes.push_back(&n);
    }
  }
  std::vector<int> order = stable_topological_order(nodes);
  if (order.size() != nodes.size()) return error("the replacement would create a cycle");

  // Shapes as they would be: every node whose inputs stop fitting together refuses the rewrite.
  std::vector<const onnx::NodeProto*> prospective;
  for (int i : order) prospective.push_back(nodes[i]);
  Shapes after_shapes(view, ctx.opset, prospective, r.initializers);
  for (const auto* node : prospective) {
    if (auto conflict = shape_conflict(*node, after_shapes)) return error("the result would not be valid: {}", *conflict);
    // Different symbols where inputs must agree ([N, C, H, W] joined with [N, C, floor((H+1)/2), ...])
    // refuse the rewrite that brings them, not a graph that had them already.
    if (auto conflict = shape_conflict(*node, after_shapes, true); conflict && !shape_conflict(*node, ctx.shapes, true)) {
      return error("the result would not be valid: {}", *conflict);
    }
  }
  std::vector<std::string> shape_changes;
  auto compare = [&](const std::string& name, std::string_view what) {
    const Shape *before = ctx.shapes.of(name), *now = after_shapes.of(name);
    if (!before || !now) return;
    // Symbols compare by name: the two Shapes number them each in their own order.
    bool changed = !same_shape(*before, *now);
    for (size_t d = 0; d < before->size() && d < now->size(); ++d) {
      changed = changed || ((*before)[d] < -1 && format_dim((*now)[d], &after_shapes) != format_dim((*before)[d], &ctx.shapes));
    }
    if (changed) {
      shape_changes.push_back(fmt::format("{} '{}' changes shape from {} to {}", what, name,
                                          format_shape(*before, &ctx.shapes), format_shape(*now, &after_shapes)));
    }
  };
  // Tensors the rest of the graph reads: readers outside the matched chain.
  for (const auto& n : r.nodes) {
    for (const auto& o : n.output()) {
      int outside = view.reader_count(o);
      for (int j : matched) {
        for (const auto& in : view.node(j).input()) outside -= (in == o) ? 1 : 0;
      }
      if (outside > 0 && !view.is_graph_output(o)) compare(o, "output");
    }
  }
  for (const auto& output : graph.output()) compare(output.name(), "graph output");

  google::protobuf::RepeatedPtrField<onnx::NodeProto> sorted;
  sorted.Reserve(static_cast<int>(order.size()));
  for (int i : order) {
    auto* node = sorted.Add();
    node->Swap(nodes[i]);
    if (!rewires.empty()) rename_reads(*node, rewires);
  }
  graph.mutable_node()->Swap(&sorted);
  for (auto& t : r.initializers) *graph.add_initializer() = std::move(t);

  // Constants that only the removed nodes read are dropped, counting readers in subgraphs, and
  // so are the Identity chains a constant was read through (PyTorch reads a de-duplicated
  // parameter as Identity(original)), link by link. Before IR 4 an initializer is also listed as
  // a graph input; the two go together.
  auto after = std::make_unique<GraphView>(graph, nullptr, ir_version);
  auto dead = [&](const std::string& name) {
    return read_by_removed.contains(name) && after->reader_count(name) == 0 && !after->is_overridable_input(name);
  };
  for (bool dropped = true; dropped;) {
    dropped = false;
    filter(*graph.mutable_node(), [&](const onnx::NodeProto& n) {
      bool constant = is_default_domain(n.domain()) &&
                      (n.op_type() == "Constant" || (n.op_type() == "Identity" && n.input_size() == 1));
      if (!constant || n.output_size() != 1 || !dead(n.output(0))) return true;
      for (const auto& in : n.input()) read_by_removed.insert(in);
      dropped = true;
      return false;
    });
    if (dropped) after = std::make_unique<GraphView>(graph, nullptr, ir_version);
  }
  filter(*graph.mutable_initializer(), [&](const onnx::TensorProto& t) { return !dead(t.name()); });
  filter(*graph.mutable_input(), [&](const onnx::ValueInfoProto& v) { return !dead(v.name()); });
  // value_info of tensors that no longer exist goes with them.
  filter(*graph.mutable_value_info(), [&](const onnx::ValueInfoProto& v) {
    return after->producer(v.name()) >= 0 || after->initializer(v.name()) || after->is_graph_input(v.name());
  });
  return shape_changes;
}

void update_declared_shapes(onnx::GraphProto& graph, const Shapes& shapes) {
  auto update = [&](onnx::ValueInfoProto& info) {
    if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return;
    const Shape* inferred = shapes.of(info.name());
    if (!inferred) return;
    auto* shape = info.mutable_type()->mutable_tensor_type()->mutable_shape();
    Shape declared;
    for (const auto& d : shape->dim()) declared.push_back(d.has_dim_value() ? d.dim_value() : -1);
    if (same_shape(declared, *inferred)) return;
    onnx::TensorShapeProto fresh;
    for (size_t i = 0; i < inferred->size(); ++i) {
      auto* dim = fresh.add_dim();
      if ((*inferred)[i] >= 0) {
        dim->set_dim_value((*inferred)[i]);
      } else if (const std::string* symbol = shapes.symbol((*inferred)[i])) {
        dim->set_dim_param(*symbol);
      } else if (i < static_cast<size_t>(shape->dim_size()) && shape->dim(static_cast<int>(i)).has_dim_param()) {
        dim->set_dim_param(shape->dim(static_cast<int>(i)).dim_param());
      }
    }
    *shape = std::move(fresh);
  };
  for (auto& info : *graph.mutable_value_info()) update(info);
  for (auto& info : *graph.mutable_output()) update(info);
}

}  // namespace lattice
