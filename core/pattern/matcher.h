#pragma once
// Finds the places where a pattern's chain of steps matches the graph.
#include <vector>

#include "core/pattern/pattern.h"

namespace lattice {

// Every match of `pattern`, in the order of their anchor nodes.
std::vector<Match> find_matches(const Pattern& pattern, const MatchContext& ctx);

}  // namespace lattice
