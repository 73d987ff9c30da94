#pragma once
// A repair's new weights into the model: each named Conv / Gemm reads new weight and bias
// initializers, put in through the Rewriter like any rewrite (so the index, the shapes and the
// names stay right, and tensors nothing reads any more are dropped), then the model is validated
// and serialised again.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/graph/graph_view.h"
#include "core/util/result.h"
#include "onnx-ml.pb.h"

namespace lattice::repair {

struct LayerWeights {
  std::string node;            // the node's label, as the report and describe name it
  std::vector<float> weights;  // in the weight's layout and element count
  std::vector<float> bias;     // one per output channel
  // The weights and bias are what the node and the BatchNormalization that alone reads its output
  // compute as one (a fit through it): the node takes them with that map taken out.
  bool through_batch_norm = false;
};

// The model with the layers' new weights, stored in the weight's own element type (float,
// double or float16, rounded once). A weight initializer only that node reads is replaced under
// its own name; one that other nodes also read stays for them, and the node reads a new one
// named `<weight>_repaired`. A Conv or Gemm without a bias gains one (`<node>.bias`).
//
// The model must hold all its tensor data: one keeping data in external files is refused (the
// page and the Node API hold the converted model in memory; convert with dataLayout 'inline'
// first). Errors, with nothing written: a layer fitted through a BatchNormalization whose output
// is not read by one inference BatchNormalization alone, a label no node has, a node listed twice, a node that is
// not a Conv or Gemm, a weight that is not a constant float tensor, a Gemm with alpha or beta
// other than 1, a weight or bias count that does not match, a value that is NaN, infinite or out
// of the element type's range.
Result<std::string> set_layer_weights(std::span<const uint8_t> model, const std::vector<LayerWeights>& layers);

// The same on a model held in memory (a repair session's), in place; `labels` as
// GraphView::original_labels gave them when it was loaded (a node taking new weights keeps its
// place and its outputs, so they stay right). The entries are checked before anything is written;
// an error after that (a rewrite refused, a result that does not validate, out of memory) may
// leave the model half written.
Status write_layer_weights(onnx::ModelProto& model, const GraphView::Labels& labels, const std::vector<LayerWeights>& layers);

}  // namespace lattice::repair
