#pragma once
// The candidates for a pattern's next match, in graph order (as LLVM's InstCombine and MLIR's
// greedy driver keep a worklist instead of rescanning): one sweep over every node, plus the
// nodes behind the sweep whose neighbourhood a rewrite changed. Taking the first candidate that
// matches gives the match a rescan from the first node would find, at the cost of what changed.
#include <set>
#include <vector>

#include "core/graph/graph_view.h"

namespace lattice {

class Worklist {
 public:
  // How far, in edges between writers and readers, a change can alter a match: a chain of up to
  // four steps, the three readers after it that LatticeStride2ConvBnReLUPattern looks through
  // for a MaxPool, and the Pad before a Conv that LatticeConv2dPattern looks at, plus one.
  // Patterns that look further need a larger radius.
  static constexpr int kLookAround = 8;

  explicit Worklist(const GraphView& view) { restart(view); }
  // Every node again, from the first: after the view was rebuilt.
  void restart(const GraphView& view);
  // The nodes within kLookAround of `changed` become candidates again.
  void revisit_around(const GraphView& view, const std::vector<int>& changed);
  // The next candidate in graph order, or -1.
  int next(const GraphView& view);

 private:
  struct InOrder {
    const GraphView* view;
    // Order keys of removed nodes stay, so the set stays ordered while nodes go; a new node may
    // take a removed node's key, hence the tie on ids.
    bool operator()(int a, int b) const { return view->before(a, b) || (!view->before(b, a) && a < b); }
  };
  void settle(const GraphView& view);  // moves the sweep off a removed node

  int sweep_ = -1;  // the sweep's next node
  std::set<int, InOrder> revisit_{InOrder{nullptr}};
};

}  // namespace lattice
