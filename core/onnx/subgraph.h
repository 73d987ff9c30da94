#pragma once
// Subgraphs (If/Loop/Scan bodies) read tensors of the graphs around them by name. These helpers
// find those reads, so that validation and rewriting count them as real consumers.
#include <functional>
#include <string>
#include <unordered_set>

#include "onnx-ml.pb.h"

namespace lattice {

// Calls `visit` for each graph held in the node's attributes (GRAPH and GRAPHS).
void for_each_subgraph(const onnx::NodeProto& node, const std::function<void(const onnx::GraphProto&)>& visit);

// Names that the node's subgraphs read but do not define themselves: its implicit inputs.
std::unordered_set<std::string> implicit_inputs(const onnx::NodeProto& node);

}  // namespace lattice
