#pragma once
// The one door for graph mutation: applies a Replacement for a Match atomically, or refuses it
// (and changes nothing) when the result would not be a valid graph.
#include "core/graph/graph_view.h"
#include "core/pattern/pattern.h"
#include "core/util/result.h"

namespace lattice {

// `view` must index `graph` as it is now. On success the view is stale: build a new one.
// `ir_version` decides whether an initializer listed as a graph input is a constant.
Status apply_replacement(onnx::GraphProto& graph, const GraphView& view, const Match& match, Replacement replacement,
                         int64_t ir_version);

}  // namespace lattice
