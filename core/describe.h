#pragma once
// A description of a model for viewers (the page's graph view, properties panel and model card):
// its nodes with op, label, attributes and the shapes of what they read and write, its graph
// inputs and outputs with symbolic dimensions kept as names, and the facts of the model card.
// Nodes are labelled as the report labels them, so a viewer can join the two by name.
#include <cstdint>
#include <span>

#include "core/graph/graph_view.h"
#include "core/util/json.h"
#include "core/util/result.h"

namespace lattice {

// `labels` names unnamed nodes by their first output (GraphView's labels); pass the input
// model's labels when describing a converted model, so its untouched unnamed nodes keep the
// labels the report used. Without it the model's own `<op_type>_<index>` labels are used.
Result<Json> describe_model(std::span<const uint8_t> bytes, const GraphView::Labels* labels = nullptr);

}  // namespace lattice
