#pragma once
// Quantized inputs (report key `quantization`): QuantizeLinear / DequantizeLinear pairs (QDQ),
// quantized operators (QLinearConv, ConvInteger, ...) and dynamic quantization are annotations of
// someone else's quantization, not compute the accelerator lacks. Lattice's flow quantizes the
// float model itself (LSCQuant, FPGA-UG-02225), so the section says once that these scales are
// not carried over, instead of auditing every Q/DQ node.
#include <optional>

#include "core/graph/graph_view.h"
#include "core/onnx/external_data.h"
#include "core/options.h"
#include "core/report/report.h"
#include "onnx-ml.pb.h"

namespace lattice {

// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear and the QOperator ops, in the default
// or the com.microsoft domain.
bool is_quantization_op(const onnx::NodeProto& node);

// The section for the graph `view` indexes, nullopt when it has no quantization op. With FPQ it says whether the
// scales are powers of two and FPQ's fixed steps.
std::optional<Quantization> describe_quantization(const GraphView& view, const Options& options, ExternalData* data);

}  // namespace lattice
