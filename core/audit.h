#pragma once
// The audit (SPEC section 1, step 5): every node of the converted graph the target cannot run,
// with the reason. For every target this includes BatchNormalization nodes left unfolded.
#include "core/graph/graph_view.h"
#include "core/options.h"
#include "core/report/report.h"
#include "onnx-ml.pb.h"

namespace lattice {

// `labels`: the names of unnamed nodes as the driver reported them.
void audit(const onnx::ModelProto& model, const Options& options, const GraphView::Labels& labels, Report& report);

}  // namespace lattice
