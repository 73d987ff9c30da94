#include "core/graph/window.h"

#include "core/onnx/attributes.h"

namespace lattice {

namespace {
// No model has a window of 2^31 or more along an axis, nor a size of 2^62: bounding both keeps
// every product and sum of them (the extent, the pads around it, the windows' starts) inside
// int64, and an attribute or size beyond them leaves the window or the output size unknown.
constexpr int64_t kMaxWindowAttribute = int64_t{1} << 31;
constexpr int64_t kMaxSize = int64_t{1} << 62;
}  // namespace

bool Window::pads_symmetric_same() const {
  for (size_t i = 0; i < rank(); ++i) {
    int64_t same = dilations[i] * (kernel[i] / 2);
    if (pads[i] != same || pads[i + rank()] != same) return false;
  }
  return true;
}

std::optional<Window> window_of(const onnx::NodeProto& node, const Shape* input, const Shape* weight) {
  Window w;
  if (auto k = attr::get_ints(node, "kernel_shape")) {
    w.kernel = *k;
  } else if (weight && weight->size() >= 3) {
    w.kernel.assign(weight->begin() + 2, weight->end());
  } else {
    return std::nullopt;
  }
  size_t rank = w.kernel.size();
  for (auto k : w.kernel) {
    if (k <= 0) return std::nullopt;
  }
  w.strides = attr::get_ints(node, "strides").value_or(std::vector<int64_t>(rank, 1));
  w.dilations = attr::get_ints(node, "dilations").value_or(std::vector<int64_t>(rank, 1));
  w.pads = attr::get_ints(node, "pads").value_or(std::vector<int64_t>(2 * rank, 0));
  w.ceil_mode = attr::get_int(node, "ceil_mode", 0) != 0;
  w.auto_pad = attr::get_string(node, "auto_pad", "NOTSET");
  if (w.strides.size() != rank || w.dilations.size() != rank || w.pads.size() != 2 * rank) return std::nullopt;
  for (size_t i = 0; i < rank; ++i) {
    if (w.strides[i] <= 0 || w.dilations[i] <= 0) return std::nullopt;
  }
  for (const auto* values : {&w.kernel, &w.strides, &w.dilations, &w.pads}) {
    for (int64_t v : *values) {
      if (v >= kMaxWindowAttribute || v <= -kMaxWindowAttribute) return std::nullopt;
    }
  }
  if (w.auto_pad == "VALID") {
    w.pads.assign(2 * rank, 0);
  } else if ((w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") && node.op_type() != "ConvTranspose") {
    // out = ceil(in / stride); the odd pad goes to the end (UPPER) or the beginning (LOWER).
    // At stride 1 the pads keep the size whatever it is; otherwise they depend on it.
    for (size_t i = 0; i < rank; ++i) {
      int64_t in = input && input->size() == rank + 2 ? (*input)[i + 2] : -1;
      if ((in < 0 || in >= kMaxSize) && w.strides[i] != 1) {
        w.pads_known = false;
        continue;
      }
      if (in < 0 || in >= kMaxSize) in = 1;
      int64_t out = (in + w.strides[i] - 1) / w.strides[i];
      int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
      int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[i] + extent - in);
      int64_t small = total / 2, large = total - small;
      w.pads[i] = w.auto_pad == "SAME_UPPER" ? small : large;
      w.pads[i + rank] = w.auto_pad == "SAME_UPPER" ? large : small;
    }
  }
  return w;
}

int64_t window_output(const Window& w, size_t axis, int64_t in) {
  int64_t extent = (w.kernel[axis] - 1) * w.dilations[axis] + 1;
  if (in < 0) return w.strides[axis] == 1 && w.pads[axis] + w.pads[axis + w.rank()] == extent - 1 ? in : -1;
  if (in >= kMaxSize) return -1;
  int64_t span = in + w.pads[axis] + w.pads[axis + w.rank()] - extent;
  if (span < 0) return -1;
  int64_t s = w.strides[axis];
  int64_t out = (w.ceil_mode ? (span + s - 1) / s : span / s) + 1;
  // With ceil_mode, the last window must start inside the input or the begin padding.
  if (w.ceil_mode && (out - 1) * s >= in + w.pads[axis]) --out;
  return out;
}

}  // namespace lattice
