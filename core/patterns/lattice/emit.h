#pragma once
// Building blocks the Lattice grafts emit: nodes in the form the model's opset needs, and
// deterministically initialised weights.
#include <string>
#include <vector>

#include "core/graph/names.h"
#include "core/pattern/pattern.h"

namespace lattice {

onnx::NodeProto make_node(const std::string& op, const std::string& name, std::vector<std::string> inputs,
                          std::vector<std::string> outputs);

// The target's MaxPool (its kernel and stride, pads 0, ceil_mode 1). ceil_mode exists from
// opset 10; before it the pool floors, which the shape-change warnings then report.
onnx::NodeProto lattice_maxpool(const MatchContext& ctx, const std::string& name, const std::string& input,
                                const std::string& output);

// A zero Pad of `pads` (ONNX order: begins, then ends) appended to `r`: `pads` is an attribute
// before opset 11 and an int64 initializer input from opset 11.
void add_zero_pad(Replacement& r, NameAllocator& names, int64_t opset, const std::string& name,
                  const std::string& input, const std::string& output, const std::vector<int64_t>& pads);

// PyTorch's default Conv initialisation, Kaiming-uniform with a = sqrt(5): U(-b, b) with
// b = 1 / sqrt(fan_in), from a generator seeded by the tensor's name, so the same model and
// options always give the same bytes.
onnx::TensorProto kaiming_uniform(const std::string& name, int32_t data_type, const std::vector<int64_t>& dims,
                                  int64_t fan_in);

// Gives `conv` (a copy of a Conv whose weight is [Cout, Cin/g, ...]) a new kernel x kernel
// weight, and a new bias if it had one, Kaiming-initialised in the old weight's type; the new
// tensors go into `r`. Named from `label`, so the bytes are deterministic.
void reinitialise_conv(const MatchContext& ctx, onnx::NodeProto& conv, const std::string& label, int64_t kernel,
                       NameAllocator& names, Replacement& r);

// A fresh inference BatchNormalization (gamma 1, beta 0, mean 0, var 1) over `channels`, with
// its parameters as new initializers of `r`.
onnx::NodeProto fresh_batch_norm(Replacement& r, NameAllocator& names, int64_t opset, const std::string& name,
                                 const std::string& input, const std::string& output, int64_t channels);

// "(2, 2)", as the seed's warnings print tuples.
std::string tuple(const std::vector<int64_t>& values);

}  // namespace lattice
