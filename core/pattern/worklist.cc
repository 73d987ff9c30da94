#include "core/pattern/worklist.h"

#include <unordered_set>

namespace lattice {

void Worklist::restart(const GraphView& view) {
  sweep_ = view.first();
  revisit_ = std::set<int, InOrder>(InOrder{&view});
}

void Worklist::settle(const GraphView& view) {
  if (sweep_ >= 0 && !view.alive(sweep_)) sweep_ = view.next(sweep_);
}

void Worklist::revisit_around(const GraphView& view, const std::vector<int>& changed) {
  settle(view);
  std::unordered_set<int> seen;
  std::vector<int> frontier;
  for (int n : changed) {
    if (view.alive(n) && seen.insert(n).second) frontier.push_back(n);
  }
  for (int distance = 0; distance < kLookAround && !frontier.empty(); ++distance) {
    std::vector<int> further;
    auto reach = [&](int n) {
      if (n >= 0 && view.alive(n) && seen.insert(n).second) further.push_back(n);
    };
    for (int n : frontier) {
      const auto& node = view.node(n);
      for (const auto& in : node.input()) reach(view.producer(in));
      for (const auto& out : node.output()) {
        for (int reader : view.consumers(out)) reach(reader);
        for (int reader : view.implicit_readers(out)) reach(reader);
      }
    }
    frontier = std::move(further);
  }
  // Nodes at or after the sweep are still ahead of it.
  for (int n : seen) {
    if (sweep_ < 0 || view.before(n, sweep_)) revisit_.insert(n);
  }
}

int Worklist::next(const GraphView& view) {
  settle(view);
  while (!revisit_.empty()) {
    int n = *revisit_.begin();
    if (sweep_ >= 0 && !view.before(n, sweep_)) break;
    revisit_.erase(revisit_.begin());
    if (view.alive(n)) return n;
  }
  int n = sweep_;
  if (n >= 0) sweep_ = view.next(n);
  return n;
}

}  // namespace lattice
