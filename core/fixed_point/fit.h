#pragma once
// The fit analysis (report key `fixed_point`): how the converted model's weights and
// BatchNormalization parameters fare in a Lattice sensAI fixed-point scheme, and the structural
// rules it breaks, each finding with its source. Values are read where they lie (scan_values), so
// the analysis never holds more than a block of a layer.
#include "core/graph/graph_view.h"
#include "core/onnx/external_data.h"
#include "core/options.h"
#include "core/report/report.h"
#include "core/util/result.h"
#include "onnx-ml.pb.h"

namespace lattice {

// `view` indexes the converted graph, its unnamed nodes labelled as the report does; `report` holds
// the conversion's matches (LSQ notes which rewrites it would not need); `data` reads tensors kept
// in files and the conversion's produced (folded) tensors. Does nothing without a scheme.
Status analyse_fixed_point(const GraphView& view, const Options& options, ExternalData* data, Report& report);

}  // namespace lattice
