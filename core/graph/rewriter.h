#pragma once
// The one door for graph mutation: applies a Replacement for a Match atomically, or refuses it
// (and changes nothing) when the result would not be a valid graph. It owns the GraphView, the
// Shapes and the NameAllocator of the graph it edits and keeps them current where a rewrite
// changed the graph, so a rewrite costs what it touches, not what the graph holds.
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "core/graph/graph_view.h"
#include "core/graph/names.h"
#include "core/graph/shapes.h"
#include "core/pattern/pattern.h"
#include "core/util/result.h"

namespace lattice {

class Rewriter {
 public:
  // kIncremental updates the index, shapes and names in place; kFullRebuild rebuilds them from
  // the whole graph after every rewrite (sorting it, inferring every shape): the reference the
  // tests hold the incremental path to. Both give the same graphs, messages and refusals.
  enum class Mode { kIncremental, kFullRebuild };

  // `labels` name unnamed nodes (GraphView); `ir_version` decides whether an initializer listed
  // as a graph input is a constant.
  Rewriter(onnx::GraphProto& graph, int64_t opset, int64_t ir_version, const GraphView::Labels* labels, Mode mode);

  const GraphView& view() const { return *view_; }
  const Shapes& shapes() const { return *shapes_; }
  // The allocator for one match's graft: names earlier grafts were handed but the graph did not
  // take are free again, as if it were built anew from the graph.
  NameAllocator& names_for_match() {
    names_->forget_unused();
    return *names_;
  }
  // Changes whenever the view was rebuilt from scratch: node ids from before mean nothing then.
  int generation() const { return generation_; }

  struct Applied {
    // One message per tensor the rest of the graph reads (and per graph output) whose shape
    // changes, naming the old and the new shape.
    std::vector<std::string> shape_changes;
    // Live nodes next to the change (new nodes, readers and writers around it, nodes whose
    // input shapes changed): where matches may have appeared or gone. Unused after a rebuild.
    std::vector<int> touched;
  };
  // Refused, with nothing changed, when the graph would lose a producer, gain a cycle, or have a
  // node whose inputs no longer fit together.
  Result<Applied> apply(const Match& match, Replacement replacement);

  // Writes the graph out as the view sees it: nodes in order, removed nodes, constants and
  // value_info gone. Then, if asked, value_info and graph output shapes that inference now
  // contradicts are rewritten, so no runtime meets a stale declaration. The Rewriter is done then.
  void finish(bool correct_declared_shapes);

 private:
  // Where the new nodes go in the order, or nothing when the spliced order would not be
  // topological (or keys ran out): the whole-graph path sorts then.
  struct Splice {
    int last;  // the matched node the new nodes replace in the order
    GraphView::Slots slots;
  };
  std::optional<Splice> plan_splice(const std::vector<int>& matched, const std::unordered_set<int>& removed,
                                    const Replacement& r) const;
  Result<Applied> apply_in_place(const Match& match, Replacement r, const Splice& splice);
  Result<Applied> apply_by_rebuilding(const Match& match, Replacement r);
  void check_conflict(int id);  // records whether the node's inputs fit together now
  void remove_node(int id);     // out of the view, the names and the conflicts
  void drop_constant(const std::string& name);
  void drop_value_info_of(const std::string& name);
  // Makes graph_ what the view describes; returns each old id's new index (-1: removed).
  std::vector<int> write_back();
  void rebuild();

  onnx::GraphProto& graph_;
  int64_t opset_, ir_version_;
  const GraphView::Labels* labels_;
  Mode mode_;
  int generation_ = 0;
  std::unique_ptr<GraphView> view_;
  std::unique_ptr<Shapes> shapes_;
  std::unique_ptr<NameAllocator> names_;
  bool sorted_ = false;  // the node order is topological
  bool edited_ = false;  // graph_ lags behind the view until write_back()
  // Nodes whose inputs do not fit together (shape_conflict), by order key: a rewrite is refused
  // while any is left, as the whole-graph check would.
  std::map<uint64_t, std::pair<int, std::string>> conflicts_;
  std::unordered_map<std::string, std::vector<const onnx::ValueInfoProto*>> value_info_, inputs_;
  // Entries of graph_'s repeated fields that the view no longer has; write_back() drops them.
  std::unordered_set<const void*> dropped_;
  // Names whose value_info the next rewrite drops if the tensor still does not exist (the
  // whole-graph path prunes value_info before it removes dead constants, so one rewrite later).
  std::unordered_set<std::string> value_info_to_check_;
};

}  // namespace lattice
