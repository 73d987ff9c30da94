#pragma once
// A converted model's graph as the passes after the rewrites read it (the audit, the quantization
// section, the fixed-point fit, the description): its index and its inferred shapes, built once
// for all of them. The Rewriter's own cannot serve: writing the graph back in order moves every
// node into a new list, so the ids its view held name nothing any more.
#include <cstdint>

#include "core/graph/graph_view.h"
#include "core/graph/shapes.h"
#include "core/onnx/domain.h"
#include "onnx-ml.pb.h"

namespace lattice {

struct ModelIndex {
  // `labels`: the names of unnamed nodes as the driver reported them.
  ModelIndex(const onnx::ModelProto& model, const GraphView::Labels& labels)
      : opset(default_opset(model)), view(model.graph(), &labels, model.ir_version()), shapes(view, opset) {}
  // `shapes` holds a reference to `view`: the index stays where it was built.
  ModelIndex(const ModelIndex&) = delete;
  ModelIndex& operator=(const ModelIndex&) = delete;

  int64_t opset;
  GraphView view;
  Shapes shapes;
};

}  // namespace lattice
