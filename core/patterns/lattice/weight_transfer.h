#pragma once
// What a snapped convolution keeps of its trained kernel (--snap-weights transfer): the snapped
// kernel that minimises the expected squared error of the layer's output, for inputs whose pixels
// are uncorrelated (white, zero-mean). Under that model E[(y_old - y_new)^2] is the squared
// distance between the two kernels once both are placed on the input positions they read, so the
// minimiser keeps every old tap that lands on a position the new kernel reads, and nothing else:
// for an odd kernel snapped at the same centre, its centre crop; for a kernel that grows, the old
// kernel embedded where its taps were. Alignment is by input position relative to the window's
// anchor (stride x output index), which the old and new pads decide: a 5x5 with SAME pads snapped
// to Pad(bottom 1, right 1) + 3x3 pads 0 keeps its bottom-right 3x3, the taps that read the same
// pixels. The bias is kept as it is (the layer's mean response is unchanged under the model).
// One implementation for every pattern that snaps a Conv kernel.
#include <array>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/graph/names.h"
#include "core/graph/window.h"
#include "core/pattern/pattern.h"

namespace lattice {

// One spatial axis of a Conv window: tap j reads input position stride * i + dilation * j -
// pad_begin for output i.
struct TapAxis {
  int64_t kernel = 1, dilation = 1, pad_begin = 0, pad_end = 0, stride = 1;
  int64_t position(int64_t tap) const { return dilation * tap - pad_begin; }
};

// A kernel [Cout, Cin/g, kh, kw] carried onto new axes: `values` is [Cout, Cin/g, KH, KW].
struct KernelTransfer {
  std::vector<double> values;
  double kept_energy = 1;  // |W_new|^2 / |W_old|^2 (1 for an all-zero kernel: nothing was lost)
  bool lossless = true;    // every non-zero old tap landed on a new one
  std::string placement;   // "centre 3x3 of 5x5", "1x1 at the centre of 3x3", ...
};

// The transfer of `weights` (row-major [Cout, Cin/g, kh, kw], `dims` its shape) from the `from`
// axes (height, width) to the `to` axes.
KernelTransfer transfer_kernel(std::span<const double> weights, std::span<const int64_t> dims,
                               const std::array<TapAxis, 2>& from, const std::array<TapAxis, 2>& to);

// Whether the new window computes exactly the old one's outputs given `lossless` taps: the same
// stride and the same output size on both axes (for `input` [N, C, H, W] sizes that are known
// numbers, at those sizes; otherwise at every size).
bool same_outputs(const std::array<TapAxis, 2>& from, const std::array<TapAxis, 2>& to, const Shape* input);

// The result of snapping a Conv's weight: the new weight tensor, and what the report says.
struct SnappedWeights {
  onnx::TensorProto weight;
  bool exact = false;  // the rewrite computes what the layer computed (up to nothing: values are copied)
  WeightsNote note;
  std::string what;  // "weights transferred (centre 3×3 of 5×5, 79 % of the kernel's energy)"
};

// Transfers the trained weight of `conv` (the matched node, read through ctx.data where it lies in
// a file) onto the snapped window `to`; the bias is left to the caller (kept as it is). An error
// names the weight when its values cannot be read (not a constant, not float/double/float16).
Result<SnappedWeights> transfer_conv_weights(const MatchContext& ctx, const onnx::NodeProto& conv,
                                             const std::string& label, const std::array<TapAxis, 2>& from,
                                             const std::array<TapAxis, 2>& to, NameAllocator& names);

// The old window's axes, as the Conv's `window` reads them.
std::array<TapAxis, 2> tap_axes(const Window& window);

// What snap_conv_weights did, for the pattern's warning.
struct WeightsSnapped {
  bool exact = false;
  std::string what;  // "weights reinitialized" (the seed's words), "weights transferred (...)"
};

// Gives `conv` (a copy of the matched Conv, which keeps the matched node's inputs) its snapped
// `to` weight by the method ctx.options.snap_weights names, adding the new tensors, the report's note and,
// when the layer's output stays the same, `exact` to `r`: reinit draws weight and bias anew (the
// seed's behaviour, bytes unchanged), transfer carries the kernel over (transfer_conv_weights) and
// keeps the bias tensor itself, so its values stay bit for bit.
Result<WeightsSnapped> snap_conv_weights(const MatchContext& ctx, onnx::NodeProto& conv, const std::string& label,
                                         const std::array<TapAxis, 2>& from, const std::array<TapAxis, 2>& to,
                                         NameAllocator& names, Replacement& r);

}  // namespace lattice
