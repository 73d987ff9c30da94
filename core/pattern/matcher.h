#pragma once
// Finds where a pattern's chain of steps matches the graph.
#include <optional>

#include "core/pattern/pattern.h"

namespace lattice {

// The match of `pattern` whose chain starts at node `anchor`, if there is one.
std::optional<Match> match_at(const Pattern& pattern, const MatchContext& ctx, int anchor);

}  // namespace lattice
