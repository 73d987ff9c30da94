#include "core/graph/rewriter.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/graph/shapes.h"
#include "core/onnx/domain.h"
#include "core/onnx/subgraph.h"

namespace lattice {
namespace {

// A node whose inputs stop fitting together once the rewrite is made: numbers that differ, or
// two different symbols (or a symbol and a number) where sizes must agree ([N, C, H, W] joined
// with [N, C, floor((H+1)/2), ...]) -- the latter only if the graph did not join them already or
// the rewrite changes what it joins, so a graph that had them keeps working and the rewrite
// that changes them is refused.
template <typename After>
std::optional<std::string> new_conflict(const onnx::NodeProto& node, const After& after, const Shapes& before) {
  if (auto conflict = shape_conflict(node, after)) return conflict;
  auto conflict = shape_conflict(node, after, true);
  if (!conflict) return std::nullopt;
  if (!shape_conflict(node, before, true)) return conflict;
  for (const auto& in : node.input()) {
    if (in.empty()) continue;
    const Shape *was = before.of(in), *now = after.of(in);
    if (was && now && (was->size() != now->size() || *was != *now)) return conflict;
  }
  return std::nullopt;
}

// Whether a tensor's shape changes: a number, or a symbol (a draft interns into its base's
// table, so equal symbols have equal ids).
bool shape_changed(const Shape& before, const Shape& now) {
  if (!same_shape(before, now)) return true;
  for (size_t d = 0; d < before.size(); ++d) {
    if (before[d] < -1 && now[d] != before[d]) return true;
  }
  return false;
}

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

// What both paths check before a rewrite: no graph output is rewired, and every output of a
// removed node that is still read is written again or rewired. Returns what the removed nodes
// read (constants only they read go with them).
Result<std::unordered_set<std::string>> check_removal(const GraphView& view, const std::vector<int>& matched,
                                                      const std::unordered_set<std::string>& written,
                                                      const NameMap& rewires) {
  for (const auto& [from, to] : rewires) {
    if (view.is_graph_output(from)) return error("'{}' is a graph output and cannot be rewired", from);
  }
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
  return read_by_removed;
}

// A message if `name`'s shape differs between `before` and `after`.
void note_shape_change(std::vector<std::string>& changes, const Shapes& before, const ShapeDraft& after,
                       const std::string& name, std::string_view what) {
  const Shape *was = before.of(name), *now = after.of(name);
  if (was && now && shape_changed(*was, *now)) {
    changes.push_back(
        fmt::format("{} '{}' changes shape from {} to {}", what, name, format_shape(*was, &before), format_shape(*now, &before)));
  }
}

// The shape changes of what the new nodes write that the rest of the graph reads (readers
// outside the matched chain; graph outputs are the callers', in their order).
std::vector<std::string> read_shape_changes(const GraphView& view, const Shapes& before, const ShapeDraft& after,
                                            const std::vector<int>& matched, const Replacement& r) {
  std::vector<std::string> changes;
  for (const auto& n : r.nodes) {
    for (const auto& o : n.output()) {
      if (view.reader_count(o) - reads_by(view, matched, o) > 0 && !view.is_graph_output(o)) {
        note_shape_change(changes, before, after, o, "output");
      }
    }
  }
  return changes;
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
  auto reads = check_removal(view, matched, *names, rewires);
  if (!reads) return reads.error();
  std::unordered_set<std::string> read_by_removed = std::move(reads).value();
  // A rewired name may be left unread too (a constant whose reader now reads a new one).
  for (const auto& [from, to] : rewires) read_by_removed.insert(from);

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
    if (auto conflict = new_conflict(*node, after_shapes, shapes)) return error("the result would not be valid: {}", *conflict);
  }
  std::vector<std::string> shape_changes = read_shape_changes(view, shapes, after_shapes, matched, r);
  for (const auto& output : graph.output()) note_shape_change(shape_changes, shapes, after_shapes, output.name(), "graph output");

  google::protobuf::RepeatedPtrField<onnx::NodeProto> sorted;
  sorted.Reserve(static_cast<int>(order.size()));
  for (int i : order) {
    auto* node = sorted.Add();
    node->Swap(nodes[i]);
    if (!rewires.empty()) rename_reads(*node, rewires);
  }
  graph.mutable_node()->Swap(&sorted);
  for (auto& t : r.initializers) add_initializer(graph, t, ir_version);

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

// After conversion: value_info and graph output shapes that inference now contradicts are
// rewritten, so no runtime meets a stale declaration.
void update_declared_shapes(onnx::GraphProto& graph, const Shapes& shapes) {
  auto update = [&](onnx::ValueInfoProto& info) {
    if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return;
    const Shape* inferred = shapes.of(info.name());
    if (!inferred) return;
    auto* shape = info.mutable_type()->mutable_tensor_type()->mutable_shape();
    Shape declared;
    for (const auto& d : shape->dim()) declared.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : -1);
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
  // Order keys between the nearest neighbours that stay (no node after `last` is matched).
  int before = view.previous(last);
  while (before >= 0 && removed.contains(before)) before = view.previous(before);
  auto slots = view.slots_between(before, view.next(last), r.nodes.size());
  if (!slots) return std::nullopt;
  return Splice{last, *slots};
}

Result<Rewriter::Applied> Rewriter::apply_in_place(const Match& match, Replacement r, const Splice& splice) {
  GraphView& view = *view_;
  std::vector<int> matched = match.nodes();
  std::unordered_set<int> removed(matched.begin(), matched.end());
  auto names = names_written(view, removed, r);
  if (!names) return names.error();
  const std::unordered_set<std::string>& written = *names;
  auto reads = check_removal(view, matched, written, NameMap{});  // the in-place path has no rewires
  if (!reads) return reads.error();
  std::unordered_set<std::string> read_by_removed = std::move(reads).value();

  // Shapes as they would be, from the new nodes downstream as far as they change.
  ShapeDraft draft(*shapes_);
  for (const auto& t : r.initializers) draft.add_initializer(t);
  for (const auto& n : r.nodes) draft.add_constant_node(n);
  std::set<std::pair<uint64_t, int>> pending;
  auto reinfer_readers = [&](const std::vector<std::string>& changed) {
    for (const auto& name : changed) {
      for (int reader : view.consumers(name)) {
        if (!removed.contains(reader)) pending.emplace(view.order_key(reader), reader);
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
    if (auto conflict = new_conflict(view.node(n), draft, *shapes_)) old_conflicts.emplace(view.order_key(n), *conflict);
  }
  for (const auto& [key, conflict] : conflicts_) {
    int n = conflict.first;
    if (!removed.contains(n) && !rechecked.contains(n)) old_conflicts.emplace(key, conflict.second);
  }
  uint64_t at = view.order_key(splice.last);
  if (!old_conflicts.empty() && old_conflicts.begin()->first < at) {
    return error("the result would not be valid: {}", old_conflicts.begin()->second);
  }
  for (const auto& n : r.nodes) {
    if (auto conflict = new_conflict(n, draft, *shapes_)) return error("the result would not be valid: {}", *conflict);
  }
  if (!old_conflicts.empty()) return error("the result would not be valid: {}", old_conflicts.begin()->second);

  Applied applied;
  applied.shape_changes = read_shape_changes(view, *shapes_, draft, matched, r);
  // Graph outputs, in their order; only re-inferred tensors can have changed.
  std::vector<std::pair<int, std::string>> outputs;
  auto note_outputs = [&](const onnx::NodeProto& n) {
    for (const auto& o : n.output()) {
      if (int index = view.output_index(o); index >= 0) outputs.emplace_back(index, o);
    }
  };
  for (const auto& n : r.nodes) note_outputs(n);
  for (int n : affected) note_outputs(view.node(n));
  std::sort(outputs.begin(), outputs.end());
  outputs.erase(std::unique(outputs.begin(), outputs.end()), outputs.end());
  for (const auto& [index, name] : outputs) {
    for (int i = index; i < graph_.output_size(); ++i) {
      if (graph_.output(i).name() == name) note_shape_change(applied.shape_changes, *shapes_, draft, name, "graph output");
    }
  }

  // Commit: the new nodes take the place of the last matched node, the matched nodes go.
  edited_ = true;
  std::vector<std::string> vanished;  // outputs of removed nodes nothing writes any more
  for (int n : matched) {
    for (const auto& o : view.node(n).output()) {
      if (!o.empty() && !written.contains(o)) vanished.push_back(o);
    }
  }
  std::vector<const onnx::NodeProto*> added;
  for (auto& n : r.nodes) {
    auto* node = graph_.add_node();  // its index in graph_ is its id until write_back()
    node->Swap(&n);
    added.push_back(node);
  }
  for (int n : matched) conflicts_.erase(view.order_key(n));
  std::vector<int> fresh = view.replace(matched, splice.last, added, splice.slots);
  for (const auto* node : added) names_->take(*node);
  for (int n : matched) names_->release(view.node(n));
  for (auto& t : r.initializers) {
    auto* init = add_initializer(graph_, t, ir_version_);
    if (ir_version_ < 4) inputs_[init->name()].push_back(&graph_.input(graph_.input_size() - 1));
    view.add_initializer(*init, ir_version_ < 4);
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
  uint64_t key = view_->order_key(id);
  conflicts_.erase(key);
  if (auto conflict = shape_conflict(view_->node(id), *shapes_)) conflicts_.emplace(key, std::pair(id, *conflict));
}

void Rewriter::remove_node(int id) {
  conflicts_.erase(view_->order_key(id));
  names_->release(view_->node(id));
  view_->remove(id);
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
  if (const auto* init = view.initializer(name)) {
    dropped_.insert(init);
    // Its data goes now (the empty entry until write_back()), so the weights a conversion
    // replaces do not stay in memory beside their replacements.
    onnx::TensorProto().Swap(const_cast<onnx::TensorProto*>(init));
    view.forget_initializer(name);
    names_->release(name);
    gone = true;
  }
  if (auto it = inputs_.find(name); it != inputs_.end()) {
    for (const auto* v : it->second) {
      dropped_.insert(v);
      names_->release(name);
    }
    inputs_.erase(it);
    view.forget_input(name);
    gone = true;
  }
  int p = view.producer(name);
  std::string read_through;  // what a dropped Identity link read: dead too if nothing else reads it
  if (p >= 0 && is_default_domain(view.node(p).domain()) && view.node(p).output_size() == 1) {
    const auto& node = view.node(p);
    if (node.op_type() == "Identity" && node.input_size() == 1) read_through = node.input(0);
    if (node.op_type() == "Constant" || !read_through.empty()) {
      remove_node(p);
      gone = true;
    }
  }
  if (gone) {
    shapes_->forget(name);
    value_info_to_check_.insert(name);
  }
  // The Identity chains a constant was read through (PyTorch reads a de-duplicated parameter as
  // Identity(original)) go link by link, as in the whole-graph path.
  if (!read_through.empty() && view.reader_count(read_through) == 0 && !view.is_overridable_input(read_through)) {
    drop_constant(read_through);
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
