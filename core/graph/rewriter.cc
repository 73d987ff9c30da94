#include "core/graph/rewriter.h"

#include <algorithm>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/graph/shapes.h"
#include "core/onnx/subgraph.h"

namespace lattice {
namespace {

// Moves `t` into the graph's initializers. Before IR 4 every initializer must also be a graph
// input (onnx's checker refuses the model else), so one is listed for it too.
onnx::TensorProto* add_initializer(onnx::GraphProto& graph, onnx::TensorProto& t, int64_t ir_version) {
  if (ir_version < 4) {
    auto* input = graph.add_input();
    input->set_name(t.name());
    auto* type = input->mutable_type()->mutable_tensor_type();
    type->set_elem_type(t.data_type());
    for (int64_t d : t.dims()) type->mutable_shape()->add_dim()->set_dim_value(d);
  }
  auto* init = graph.add_initializer();
  init->Swap(&t);
  return init;
}

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

// The names the replacement's nodes write, or an error when one would be written twice: by two
// new nodes, or by a new node and a node, initializer or graph input that stays.
Result<std::unordered_set<std::string>> names_written(const GraphView& view, const std::unordered_set<int>& removed,
                                                      const Replacement& r) {
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
  return written;
}

// How many explicit reads of `name` the matched nodes make.
int reads_by(const GraphView& view, const std::vector<int>& matched, const std::string& name) {
  int reads = 0;
  for (int j : matched) {
    for (const auto& in : view.node(j).input()) reads += (in == name) ? 1 : 0;
  }
  return reads;
}

// The whole-graph path: checks, sorts, infers the shapes of and prunes the whole graph.
Result<std::vector<std::string>> replace_and_sort(onnx::GraphProto& graph, const GraphView& view,
                                                  const Shapes& shapes, const Match& match,
                                                  Replacement r, int64_t ir_version) {
  std::vector<int> matched = match.nodes();
  std::unordered_set<int> removed(matched.begin(), matched.end());
  NameMap rewires(r.rewires.begin(), r.rewires.end());
  auto names = names_written(view, removed, r);
  if (!names) return names.error();
  const std::unordered_set<std::string>& written = *names;
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
      if (view.reader_count(o) - reads_by(view, matched, o) > 0) {
        return error("'{}' of node '{}' is still read elsewhere", o, view.label(i));
      }
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
  ShapeDraft after_shapes(shapes);
  for (const auto& t : r.initializers) after_shapes.add_initializer(t);
  for (const auto* node : prospective) after_shapes.add_constant_node(*node);
  for (const auto* node : prospective) after_shapes.infer(*node);
  for (const auto* node : prospective) {
    if (auto conflict = shape_conflict(*node, after_shapes)) return error("the result would not be valid: {}", *conflict);
  }
  std::vector<std::string> shape_changes;
  auto compare = [&](const std::string& name, std::string_view what) {
    const Shape *before = shapes.of(name), *now = after_shapes.of(name);
    if (before && now && !same_shape(*before, *now)) {
      shape_changes.push_back(fmt::format("{} '{}' changes shape from {} to {}", what, name, format_shape(*before),
                                          format_shape(*now)));
    }
  };
  // Tensors the rest of the graph reads: readers outside the matched chain.
  for (const auto& n : r.nodes) {
    for (const auto& o : n.output()) {
      if (view.reader_count(o) - reads_by(view, matched, o) > 0 && !view.is_graph_output(o)) compare(o, "output");
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
  for (auto& t : r.initializers) add_initializer(graph, t, ir_version);

  // Constants that only the removed nodes read are dropped, counting readers in subgraphs.
  // Before IR 4 an initializer is also listed as a graph input; the two go together.
  GraphView after(graph, nullptr, ir_version);
  auto dead = [&](const std::string& name) {
    return read_by_removed.contains(name) && after.reader_count(name) == 0 && !after.is_overridable_input(name);
  };
  filter(*graph.mutable_initializer(), [&](const onnx::TensorProto& t) { return !dead(t.name()); });
  filter(*graph.mutable_input(), [&](const onnx::ValueInfoProto& v) { return !dead(v.name()); });
  filter(*graph.mutable_node(), [&](const onnx::NodeProto& n) {
    return !(n.op_type() == "Constant" && n.output_size() == 1 && dead(n.output(0)));
  });
  // value_info of tensors that no longer exist goes with them.
  filter(*graph.mutable_value_info(), [&](const onnx::ValueInfoProto& v) {
    return after.producer(v.name()) >= 0 || after.initializer(v.name()) || after.is_graph_input(v.name());
  });
  return shape_changes;
}

// After conversion: value_info and graph output shapes that inference now contradicts are
// rewritten, so no runtime meets a stale declaration.
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
      } else if (i < static_cast<size_t>(shape->dim_size()) && shape->dim(static_cast<int>(i)).has_dim_param()) {
        dim->set_dim_param(shape->dim(static_cast<int>(i)).dim_param());
      }
    }
    *shape = std::move(fresh);
  };
  for (auto& info : *graph.mutable_value_info()) update(info);
  for (auto& info : *graph.mutable_output()) update(info);
}

}  // namespace

Rewriter::Rewriter(onnx::GraphProto& graph, int64_t opset, int64_t ir_version, const GraphView::Labels* labels,
                   Mode mode)
    : graph_(graph), opset_(opset), ir_version_(ir_version), labels_(labels), mode_(mode) {
  rebuild();
}

void Rewriter::rebuild() {
  ++generation_;
  edited_ = false;
  dropped_.clear();
  view_ = std::make_unique<GraphView>(graph_, labels_, ir_version_);
  shapes_ = std::make_unique<Shapes>(*view_, opset_);
  names_ = std::make_unique<NameAllocator>(graph_);
  const GraphView& view = *view_;
  sorted_ = true;
  conflicts_.clear();
  for (int n = view.first(); n >= 0; n = view.next(n)) {
    const auto& node = view.node(n);
    auto earlier = [&](const std::string& name) {
      int p = view.producer(name);
      return p < 0 || p == n || view.before(p, n);
    };
    for (const auto& in : node.input()) sorted_ = sorted_ && earlier(in);
    for (const auto& in : implicit_inputs(node)) sorted_ = sorted_ && earlier(in);
    check_conflict(n);
  }
  value_info_.clear();
  inputs_.clear();
  value_info_to_check_.clear();
  for (const auto& v : graph_.value_info()) value_info_[v.name()].push_back(&v);
  for (const auto& v : graph_.input()) inputs_[v.name()].push_back(&v);
  // value_info of tensors that do not exist goes at the next rewrite, as the whole-graph path does.
  for (const auto& [name, entries] : value_info_) value_info_to_check_.insert(name);
}

Result<Rewriter::Applied> Rewriter::apply(const Match& match, Replacement r) {
  std::vector<int> matched = match.nodes();
  std::unordered_set<int> removed(matched.begin(), matched.end());
  std::optional<Splice> splice;
  if (mode_ == Mode::kIncremental && sorted_ && r.rewires.empty()) splice = plan_splice(matched, removed, r);
  return splice ? apply_in_place(match, std::move(r), *splice) : apply_by_rebuilding(match, std::move(r));
}

Result<Rewriter::Applied> Rewriter::apply_by_rebuilding(const Match& match, Replacement r) {
  Match at = match;
  if (edited_) {
    std::vector<int> index = write_back();
    for (int& step : at.steps) step = step >= 0 ? index[step] : -1;
    rebuild();
  }
  auto shape_changes = replace_and_sort(graph_, *view_, *shapes_, at, std::move(r), ir_version_);
  if (!shape_changes) return shape_changes.error();
  rebuild();
  return Applied{std::move(shape_changes).value(), {}};
}

std::optional<Rewriter::Splice> Rewriter::plan_splice(const std::vector<int>& matched,
                                                      const std::unordered_set<int>& removed,
                                                      const Replacement& r) const {
  const GraphView& view = *view_;
  int last = matched.front();
  for (int n : matched) last = view.before(last, n) ? n : last;
  // The new nodes sit where `last` was: whatever they read must come before it, whatever reads
  // them after it, and among themselves a node reads only earlier ones. Then the stable sort of
  // the whole-graph path would leave this order as it is.
  std::unordered_map<std::string, size_t> written;
  for (size_t k = 0; k < r.nodes.size(); ++k) {
    for (const auto& o : r.nodes[k].output()) written.emplace(o, k);
  }
  for (size_t k = 0; k < r.nodes.size(); ++k) {
    auto reads_earlier = [&](const std::string& name) {
      if (auto it = written.find(name); it != written.end()) return it->second <= k;
      int p = view.producer(name);
      return p < 0 || removed.contains(p) || view.before(p, last);
    };
    const auto& node = r.nodes[k];
    for (const auto& in : node.input()) {
      if (!in.empty() && !reads_earlier(in)) return std::nullopt;
    }
    for (const auto& in : implicit_inputs(node)) {
      if (!reads_earlier(in)) return std::nullopt;
    }
    for (const auto& o : node.output()) {
      if (o.empty()) continue;
      for (const auto* readers : {&view.consumers(o), &view.implicit_readers(o)}) {
        for (int reader : *readers) {
          if (!removed.contains(reader) && !view.before(last, reader)) return std::nullopt;
        }
      }
    }
  }
  // Order keys between the nearest neighbours that stay.
  int before = view.prev_[last], after = view.next_[last];
  while (before >= 0 && removed.contains(before)) before = view.prev_[before];
  while (after >= 0 && removed.contains(after)) after = view.next_[after];
  uint64_t low = before >= 0 ? view.order_[before] : 0;
  if (after < 0 && view.order_[last] > UINT64_MAX - GraphView::kOrderGap) return std::nullopt;
  uint64_t high = after >= 0 ? view.order_[after] : view.order_[last] + GraphView::kOrderGap;
  uint64_t step = (high - low) / (r.nodes.size() + 1);
  if (step == 0) return std::nullopt;
  return Splice{last, low, step};
}

Result<Rewriter::Applied> Rewriter::apply_in_place(const Match& match, Replacement r, const Splice& splice) {
  GraphView& view = *view_;
  std::vector<int> matched = match.nodes();
  std::unordered_set<int> removed(matched.begin(), matched.end());
  auto names = names_written(view, removed, r);
  if (!names) return names.error();
  const std::unordered_set<std::string>& written = *names;
  // Every output of a removed node that is still read must be written again.
  std::unordered_set<std::string> read_by_removed;
  for (int i : matched) {
    for (const auto& in : view.node(i).input()) read_by_removed.insert(in);
  }
  for (int i : matched) {
    for (const auto& o : view.node(i).output()) {
      if (o.empty() || written.contains(o)) continue;
      if (view.reader_count(o) - reads_by(view, matched, o) > 0) {
        return error("'{}' of node '{}' is still read elsewhere", o, view.label(i));
      }
    }
  }

  // Shapes as they would be, from the new nodes downstream as far as they change.
  ShapeDraft draft(*shapes_);
  for (const auto& t : r.initializers) draft.add_initializer(t);
  for (const auto& n : r.nodes) draft.add_constant_node(n);
  std::set<std::pair<uint64_t, int>> pending;
  auto reinfer_readers = [&](const std::vector<std::string>& changed) {
    for (const auto& name : changed) {
      for (int reader : view.consumers(name)) {
        if (!removed.contains(reader)) pending.emplace(view.order_[reader], reader);
      }
    }
  };
  for (const auto& n : r.nodes) reinfer_readers(draft.infer(n));
  std::vector<int> affected;  // old nodes whose inputs' shapes change
  while (!pending.empty()) {
    int n = pending.begin()->second;
    pending.erase(pending.begin());
    affected.push_back(n);
    reinfer_readers(draft.infer(view.node(n)));
  }
  // The first node in the new order whose inputs stop fitting together refuses the rewrite.
  std::map<uint64_t, std::string> old_conflicts;
  std::unordered_set<int> rechecked(affected.begin(), affected.end());
  for (int n : affected) {
    if (auto conflict = shape_conflict(view.node(n), draft)) old_conflicts.emplace(view.order_[n], *conflict);
  }
  for (const auto& [key, conflict] : conflicts_) {
    int n = conflict.first;
    if (!removed.contains(n) && !rechecked.contains(n)) old_conflicts.emplace(key, conflict.second);
  }
  uint64_t at = view.order_[splice.last];
  if (!old_conflicts.empty() && old_conflicts.begin()->first < at) {
    return error("the result would not be valid: {}", old_conflicts.begin()->second);
  }
  for (const auto& n : r.nodes) {
    if (auto conflict = shape_conflict(n, draft)) return error("the result would not be valid: {}", *conflict);
  }
  if (!old_conflicts.empty()) return error("the result would not be valid: {}", old_conflicts.begin()->second);

  Applied applied;
  auto compare = [&](const std::string& name, std::string_view what) {
    const Shape *before = shapes_->of(name), *now = draft.of(name);
    if (before && now && !same_shape(*before, *now)) {
      applied.shape_changes.push_back(fmt::format("{} '{}' changes shape from {} to {}", what, name,
                                                  format_shape(*before), format_shape(*now)));
    }
  };
  // Tensors the rest of the graph reads: readers outside the matched chain.
  for (const auto& n : r.nodes) {
    for (const auto& o : n.output()) {
      if (view.reader_count(o) - reads_by(view, matched, o) > 0 && !view.is_graph_output(o)) compare(o, "output");
    }
  }
  // Graph outputs, in their order; only re-inferred tensors can have changed.
  std::vector<std::pair<int, std::string>> outputs;
  auto note_outputs = [&](const onnx::NodeProto& n) {
    for (const auto& o : n.output()) {
      if (auto it = view.outputs_.find(o); it != view.outputs_.end()) outputs.emplace_back(it->second, o);
    }
  };
  for (const auto& n : r.nodes) note_outputs(n);
  for (int n : affected) note_outputs(view.node(n));
  std::sort(outputs.begin(), outputs.end());
  outputs.erase(std::unique(outputs.begin(), outputs.end()), outputs.end());
  for (const auto& [index, name] : outputs) {
    for (int i = index; i < graph_.output_size(); ++i) {
      if (graph_.output(i).name() == name) compare(name, "graph output");
    }
  }

  // Commit: the new nodes take the place of the last matched node, the matched nodes go.
  edited_ = true;
  view.edited_ = true;
  std::vector<std::string> vanished;  // outputs of removed nodes nothing writes any more
  for (int n : matched) {
    for (const auto& o : view.node(n).output()) {
      if (!o.empty() && !written.contains(o)) vanished.push_back(o);
    }
    view.unlink(n);  // first, so the new writers of its outputs are indexed as their producers
  }
  std::vector<int> fresh;
  int before = view.prev_[splice.last];
  for (size_t k = 0; k < r.nodes.size(); ++k) {
    auto* node = graph_.add_node();  // its index in graph_ is its id until write_back()
    node->Swap(&r.nodes[k]);
    int id = view.size();
    fresh.push_back(id);
    view.nodes_.push_back(node);
    view.alive_.push_back(1);
    view.order_.push_back(splice.low + splice.step * (k + 1));
    view.prev_.push_back(before);
    view.next_.push_back(splice.last);
    (before >= 0 ? view.next_[before] : view.first_) = id;
    view.prev_[splice.last] = id;
    before = id;
    view.link(id);
    names_->take(*node);
  }
  for (int n : matched) retire(n);
  for (auto& t : r.initializers) {
    auto* init = add_initializer(graph_, t, ir_version_);
    if (ir_version_ < 4) {  // the graph input add_initializer listed for it
      view.inputs_.insert(init->name());
      inputs_[init->name()].push_back(&graph_.input(graph_.input_size() - 1));
    }
    view.initializers_[init->name()] = init;
    shapes_->add_initializer(*init);
    names_->take(init->name());
  }
  shapes_->commit(draft);
  for (const auto& o : vanished) shapes_->forget(o);
  for (int n : fresh) check_conflict(n);
  for (int n : affected) check_conflict(n);

  // value_info of tensors that no longer exist, then constants only the removed nodes read
  // (counting readers in subgraphs; before IR 4 an initializer is also a graph input, and the
  // two go together).
  auto exists = [&](const std::string& name) {
    return view.producer(name) >= 0 || view.initializer(name) || view.is_graph_input(name);
  };
  std::unordered_set<std::string> check = std::move(value_info_to_check_);
  value_info_to_check_.clear();
  check.insert(vanished.begin(), vanished.end());
  for (const auto& name : check) {
    if (!exists(name)) drop_value_info_of(name);
  }
  std::vector<std::string> dead;
  for (const auto& name : read_by_removed) {
    if (view.reader_count(name) == 0 && !view.is_overridable_input(name)) dead.push_back(name);
  }
  for (const auto& name : dead) drop_constant(name);

  // Where matches may have changed: the new nodes, nodes whose input shapes changed, and the
  // writers of what the removed nodes read (they lost a reader).
  applied.touched = fresh;
  applied.touched.insert(applied.touched.end(), affected.begin(), affected.end());
  for (const auto& name : read_by_removed) {
    if (int p = view.producer(name); p >= 0) applied.touched.push_back(p);
  }
  return applied;
}

void Rewriter::check_conflict(int id) {
  uint64_t key = view_->order_[id];
  conflicts_.erase(key);
  if (auto conflict = shape_conflict(view_->node(id), *shapes_)) conflicts_.emplace(key, std::pair(id, *conflict));
}

void Rewriter::remove_node(int id) {
  view_->unlink(id);
  retire(id);
}

void Rewriter::retire(int id) {
  GraphView& view = *view_;
  conflicts_.erase(view.order_[id]);
  names_->release(view.node(id));
  view.alive_[id] = 0;
  int before = view.prev_[id], after = view.next_[id];
  (before >= 0 ? view.next_[before] : view.first_) = after;
  (after >= 0 ? view.prev_[after] : view.last_) = before;
  // next_[id] stays: a walk that stood on this node goes on where it would have.
}

void Rewriter::drop_value_info_of(const std::string& name) {
  auto it = value_info_.find(name);
  if (it == value_info_.end()) return;
  for (const auto* v : it->second) {
    dropped_.insert(v);
    names_->release(name);
  }
  value_info_.erase(it);
  shapes_->forget(name);
}

void Rewriter::drop_constant(const std::string& name) {
  GraphView& view = *view_;
  bool gone = false;
  if (auto it = view.initializers_.find(name); it != view.initializers_.end()) {
    dropped_.insert(it->second);
    // Its data goes now (the empty entry until write_back()), so the weights a conversion
    // replaces do not stay in memory beside their replacements.
    onnx::TensorProto().Swap(const_cast<onnx::TensorProto*>(it->second));
    view.initializers_.erase(it);
    names_->release(name);
    gone = true;
  }
  if (auto it = inputs_.find(name); it != inputs_.end()) {
    for (const auto* v : it->second) {
      dropped_.insert(v);
      names_->release(name);
    }
    inputs_.erase(it);
    view.inputs_.erase(name);
    gone = true;
  }
  int p = view.producer(name);
  if (p >= 0 && view.node(p).op_type() == "Constant" && view.node(p).output_size() == 1) {
    remove_node(p);
    gone = true;
  }
  if (gone) {
    shapes_->forget(name);
    value_info_to_check_.insert(name);
  }
}

std::vector<int> Rewriter::write_back() {
  const GraphView& view = *view_;
  std::vector<int> index(static_cast<size_t>(view.size()), -1);
  google::protobuf::RepeatedPtrField<onnx::NodeProto> ordered;
  ordered.Reserve(graph_.node_size());
  int count = 0;
  for (int n = view.first(); n >= 0; n = view.next(n)) {
    index[n] = count++;
    ordered.Add()->Swap(graph_.mutable_node(n));
  }
  graph_.mutable_node()->Swap(&ordered);
  auto kept = [this](const auto& entry) { return !dropped_.contains(&entry); };
  filter(*graph_.mutable_initializer(), kept);
  filter(*graph_.mutable_input(), kept);
  filter(*graph_.mutable_value_info(), kept);
  edited_ = false;
  dropped_.clear();
  return index;
}

void Rewriter::finish(bool correct_declared_shapes) {
  // The shapes kept current are those a whole-graph inference would give the written graph.
  if (edited_) write_back();
  if (correct_declared_shapes) update_declared_shapes(graph_, *shapes_);
  names_.reset();
  shapes_.reset();
  view_.reset();
}


}  // namespace lattice
