#pragma once
// A description of a model for viewers (the page's graph view, properties panel and model card):
// its nodes with op, label, attributes and the shapes of what they read and write, its graph
// inputs and outputs with symbolic dimensions kept as names, and the facts of the model card.
// Nodes are labelled as the report labels them, so a viewer can join the two by name.
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/graph/model_index.h"
#include "core/util/json.h"
#include "core/util/result.h"

namespace lattice {

// `model` as it is now, `bytes` its serialised size, `labels` the report's labels (GraphView's:
// unnamed nodes by first output), so a viewer can join nodes and matches by name.
Json describe_graph(const onnx::ModelProto& model, const GraphView::Labels& labels, uint64_t bytes);
// The same from an index of `model`'s graph already built (ModelIndex).
Json describe_graph(const onnx::ModelProto& model, const ModelIndex& index, uint64_t bytes);

// A node's attributes as a description writes them: {name: value}, a tensor or a subgraph summarised.
Json node_attributes_json(const onnx::NodeProto& node);

// A model file's description, its nodes labelled as a conversion of it labels them. With
// `input_shapes` (as --input-shape pins them), every shape at those sizes: the repair matches a
// dynamic model's tensors with a pinned conversion's by value.
Result<Json> describe_model(std::span<const uint8_t> bytes,
                            const std::vector<std::pair<std::string, std::vector<int64_t>>>& input_shapes = {});

}  // namespace lattice
