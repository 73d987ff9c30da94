#pragma once
// The audit (SPEC section 1, step 5): every node of the converted graph the target cannot run,
// with the reason. For every target this includes BatchNormalization nodes left unfolded.
#include "core/graph/model_index.h"
#include "core/options.h"
#include "core/report/report.h"
#include "onnx-ml.pb.h"

namespace lattice {

void audit(const ModelIndex& converted, const Options& options, Report& report);

}  // namespace lattice
