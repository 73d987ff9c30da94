#include "core/pattern/matcher.h"

#include <algorithm>

#include "core/onnx/domain.h"

namespace lattice {

std::vector<int> Match::nodes() const {
  std::vector<int> out;
  for (int n : steps) {
    if (n >= 0) out.push_back(n);
  }
  return out;
}

namespace {

bool step_accepts(const Step& step, const MatchContext& ctx, int node) {
  const auto& n = ctx.view.node(node);
  if (!is_default_domain(n.domain())) return false;
  if (std::find(step.op_types.begin(), step.op_types.end(), n.op_type()) == step.op_types.end()) return false;
  return !step.accepts || step.accepts(ctx, node);
}

// The node that continues the chain from `current` at `step`, or -1.
int next_node(const Pattern& pattern, const Step& step, const MatchContext& ctx, int current) {
  const auto& node = ctx.view.node(current);
  if (node.output_size() == 0) return -1;
  const std::string& out = node.output(0);
  const auto& consumers = ctx.view.consumers(out);
  for (int c : consumers) {
    bool reads_first = ctx.view.node(c).input_size() > 0 && ctx.view.node(c).input(0) == out;
    if (!reads_first || !step_accepts(step, ctx, c)) continue;
    if (pattern.intermediates_may_branch || ctx.view.reader_count(out) == 1) return c;
  }
  return -1;
}

}  // namespace

std::optional<Match> match_at(const Pattern& pattern, const MatchContext& ctx, int anchor) {
  if (!step_accepts(pattern.chain[0], ctx, anchor)) return std::nullopt;
  Match m{&pattern, {anchor}};
  int current = anchor;
  for (size_t k = 1; k < pattern.chain.size(); ++k) {
    int next = next_node(pattern, pattern.chain[k], ctx, current);
    if (next < 0 && !pattern.chain[k].optional) return std::nullopt;
    m.steps.push_back(next);
    if (next >= 0) current = next;
  }
  return m;
}

}  // namespace lattice
