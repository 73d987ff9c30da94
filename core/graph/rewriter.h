#pragma once
// The one door for graph mutation: applies a Replacement for a Match atomically, or refuses it
// (and changes nothing) when the result would not be a valid graph.
#include "core/graph/graph_view.h"
#include "core/pattern/pattern.h"
#include "core/util/result.h"

namespace lattice {

// `ctx` must describe `graph` as it is now; on success it is stale. `ir_version` decides whether
// an initializer listed as a graph input is a constant. A replacement is refused, with nothing
// changed, when the graph would lose a producer, gain a cycle, or have a node whose inputs no
// longer fit together. On success: one message per tensor the rest of the graph reads (and per
// graph output) whose shape changes, naming the old and the new shape.
Result<std::vector<std::string>> apply_replacement(onnx::GraphProto& graph, const MatchContext& ctx, const Match& match,
                                                   Replacement replacement, int64_t ir_version);

// After conversion: value_info and graph output shapes that inference now contradicts are
// rewritten, so no runtime meets a stale declaration.
void update_declared_shapes(onnx::GraphProto& graph, const Shapes& shapes);

}  // namespace lattice
