#pragma once
// Which layers of a converted model a repair refits, and what each must reproduce: a Conv or Gemm
// with constant weights whose output the original computes too (same name, same shape by value),
// or, for a layer a rewrite made, the tensor the chain after it writes (its activation's, or the
// MaxPool's that does a stride-2 layer's downsampling); past a pool the conversion made coarser,
// the original's tensor at whole multiples of the layer's grid. Layers with no such tensor are
// left, each with the reason, so the report says what was left as converted. Read from the two
// models' own index and inferred shapes (ModelIndex), described at the samples' sizes, so a
// dynamic original matches a conversion pinned with --input-shape by value.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/graph/model_index.h"
#include "core/util/json.h"
#include "core/util/result.h"
#include "onnx-ml.pb.h"

namespace lattice::repair {

// A match of the conversion's report, as much of it as the plan reads.
struct ConversionMatch {
  std::string id;
  bool applied = false;
  bool numerically_equivalent = false;
  std::vector<std::string> new_nodes;  // labels
};

// A stride-2 layer's target through the MaxPool its rewrite put after it: the original's tensor at
// the pool's output, brought back to the layer's finer grid.
struct Unpooled {
  std::vector<int64_t> kernel, strides;  // the pool's
  Shape fine;                            // the layer's output shape
  std::string tensor;                    // what the fit reproduces: the layer's output, or its BatchNormalization's
};

// What a layer of the plan is in both lists: its node's label, op, input and whether a rewrite
// changed it (its match in the report is not numerically equivalent; every layer without a report).
struct PlanEntry {
  std::string node, op, input;
  bool rewritten = false;
  std::optional<std::string> match_id;
};

struct PlannedLayer {
  PlanEntry entry;
  std::string target;   // the original's tensor it reproduces
  std::string through;  // the ops between the layer and its target, "Relu", "BatchNormalization → Relu → MaxPool"; "" for none
  std::optional<std::array<int64_t, 2>> pooled;  // the original's grid is this many times the layer's, in height and width
  std::optional<Unpooled> unpooled;
  bool rectified = false;           // a Relu alone reads it (or its BatchNormalization)
  bool through_batch_norm = false;  // fitted with the BatchNormalization that alone reads it, as one
  Json attributes;                  // the node's, as the description writes them
  Shape weight_shape;
  bool has_bias = false;
  // Per sample, 4 bytes an element, an unknown dimension counting 1: its input and target in the
  // converted model, its target in the original.
  double input_bytes = 0, target_bytes = 0, original_target_bytes = 0;
};

struct LeftLayer {
  PlanEntry entry;
  std::string reason;
};

struct RepairPlan {
  std::vector<PlannedLayer> layers;  // in the converted model's order
  std::vector<LeftLayer> left;
  // Per sample, the most bytes of activations each model has in flight at once (live_bytes).
  double original_live_bytes = 0, converted_live_bytes = 0;
};

// The plan from the two models' indexes. `matches`: the conversion report's; nullopt without a
// report, when no layer is known to be as the original's.
RepairPlan plan_repair(const ModelIndex& original, const ModelIndex& converted,
                       const std::optional<std::vector<ConversionMatch>>& matches);

// One sample's dims of each input the samples feed.
using SampleSizes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

// The plan of two models a repair holds, each described at the samples' sizes first when one of
// its inputs is not a fixed size (as describe_model pins them; a model that cannot be pinned to
// them is planned on its symbols, and a layer whose tensors then do not match is left). The
// models are as they were when it returns.
RepairPlan plan_repair(onnx::ModelProto& original, onnx::ModelProto& converted, const GraphView::Labels& converted_labels,
                       const std::optional<std::vector<ConversionMatch>>& matches, const SampleSizes& sizes);

// Per sample, the most bytes of activations a model has in flight at once: at each node, the
// tensors it or a later node reads that it or an earlier node wrote.
double live_bytes(const ModelIndex& model);

// {layers, left, bytesPerSample}: the layers and left entries with the fields the JavaScript
// that drives the repair reads (node, op, input, rewritten, match_id?, ...).
Json plan_json(const RepairPlan& plan);

}  // namespace lattice::repair
