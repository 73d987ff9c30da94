#pragma once
// The sliding window of Conv, ConvTranspose, MaxPool and AveragePool over the spatial axes, with
// auto_pad resolved to explicit pads where the input size is known.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "onnx-ml.pb.h"

namespace lattice {

// A dimension is a number (>= 0), -1 when nothing is known of it, or a symbol (a dim_param such
// as "batch") encoded as a negative id below -1 from the model's symbol table (Shapes), so that
// equal symbols compare equal. Every test `d < 0` reads "not a known number".
using Shape = std::vector<int64_t>;

struct Window {
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<int64_t> pads;  // ONNX order: all begins, then all ends
  bool ceil_mode = false;
  std::string auto_pad = "NOTSET";
  // False when auto_pad SAME at a stride over 1 meets an input whose size is not a known number:
  // the pads depend on it, and `pads` holds zeros for those axes.
  bool pads_known = true;

  size_t rank() const { return kernel.size(); }
  // pads == dilation * (kernel / 2) on every side: the padding that keeps the size at stride 1
  // (for an undilated window, the SPEC's pads == k/2).
  bool pads_symmetric_same() const;
};

// `input` is the node's input shape ([N, C, spatial...]) if known; `weight` the Conv weight's.
// nullopt when the kernel is not known (no kernel_shape and no weight shape).
std::optional<Window> window_of(const onnx::NodeProto& node, const Shape* input, const Shape* weight);

// Output size along one spatial axis of a pooling or convolution window; -1 if `in` is not a
// number, except that a size-keeping window (stride 1, pads filling the extent) keeps a symbol.
int64_t window_output(const Window& w, size_t axis, int64_t in);

}  // namespace lattice
