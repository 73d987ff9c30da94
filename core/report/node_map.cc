#include "core/report/node_map.h"

#include <algorithm>
#include <string>

namespace lattice {

namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

// Written for size: the page's first load weighs every byte of the converter.
Json node_map_json(const std::vector<MatchRecord>& matches) {
  Json entries = Json::array();
  // Input nodes already mapped, and every node the matches so far emitted: a later match taking
  // one of those (the fold of an emitted BatchNorm, the snap of a pool a stride-2 chain kept) maps
  // no input node of its own.
  std::vector<std::string> done;
  for (size_t first = 0; first < matches.size(); ++first) {
    if (!matches[first].applied) continue;
    for (const auto& node : matches[first].nodes) {
      if (contains(done, node)) continue;
      done.push_back(node);
      std::vector<std::string> now = matches[first].new_nodes;
      Json steps = Json::array();
      bool exact = true;
      // The matches are in the order they were applied: what a match emitted can only be taken by
      // a match after it.
      for (size_t i = first; i < matches.size(); ++i) {
        const MatchRecord& m = matches[i];
        bool taken = i == first;
        for (const auto& n : now) taken = taken || contains(m.nodes, n);
        if (!m.applied || !taken) continue;
        if (i != first) {
          std::vector<std::string> next;
          for (const auto& n : now) {
            for (const auto& out : contains(m.nodes, n) ? m.new_nodes : std::vector<std::string>{n}) {
              if (!contains(next, out)) next.push_back(out);
            }
          }
          now = std::move(next);
        }
        exact = exact && m.numerically_equivalent;
        steps.push(Json::object().set("match_id", m.id).set("pattern", m.pattern).set("numerically_equivalent", m.numerically_equivalent));
      }
      entries.push(Json::object().set("node", node).set("new_nodes", Json::array_of(now)).set("exact", exact).set("steps", std::move(steps)));
    }
    for (const auto& n : matches[first].new_nodes) done.push_back(n);
  }
  return entries;
}

}  // namespace lattice
