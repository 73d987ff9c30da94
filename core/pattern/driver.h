#pragma once
// Runs a target's patterns over a model (SPEC section 1): the ONNX operator rules first (a model
// that breaks them is refused before any pattern runs), then the conversion phase repeated until
// an iteration changes nothing (at most 16 iterations), then the fusion phase once. Every match,
// applied or not, and every warning goes into the report.
#include "core/graph/graph_view.h"
#include "core/onnx/external_data.h"
#include "core/options.h"
#include "core/progress.h"
#include "core/report/report.h"
#include "core/util/result.h"
#include "onnx-ml.pb.h"

namespace lattice {

inline constexpr int kMaxConversionIterations = 16;

// `labels` starts as GraphView::original_labels of the loaded model and keeps the labels of
// unnamed nodes as they move. `progress` hears of each pass as it starts, the fraction counting
// the phases' own work (the conversion passes, then the fusion pass).
// `data` reads the tensors whose data the model keeps in files (core/onnx/external_data.h).
Status run_phases(onnx::ModelProto& model, const Options& options, GraphView::Labels& labels, Report& report,
                  const ProgressFn& progress = {}, ExternalData* data = nullptr);

// The same, rebuilding the index and the shapes from the whole graph after every rewrite and
// rescanning from the first node: the reference the tests hold run_phases to.
Status run_phases_rebuilding(onnx::ModelProto& model, const Options& options, GraphView::Labels& labels,
                             Report& report);

}  // namespace lattice
