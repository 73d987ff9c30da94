#pragma once
// The conversion's node mapping: which nodes of the converted model each input node became, and
// through which matches. Read from the matches alone, so every shell's report carries the same
// mapping and a viewer (the page's side-by-side view, another tool) need not re-derive it.
#include <vector>

#include "core/report/report.h"
#include "core/util/json.h"

namespace lattice {

// One entry per input node an applied match took, in the order the matches took them; a node
// without one is in the converted model unchanged, under its own name. A match maps its chain as
// a whole: each of its nodes to all of its new nodes.
//   node:      the input node, as the matches name it
//   new_nodes: its match's new nodes, each followed through the later matches that took it (an
//              emitted BatchNorm a fold then removed is replaced by the fold's Conv): nodes of the
//              converted model
//   steps:     those matches in the order they were applied: {match_id, pattern, numerically_equivalent}
//   exact:     every step numerically equivalent (a fold)
Json node_map_json(const std::vector<MatchRecord>& matches);

}  // namespace lattice
