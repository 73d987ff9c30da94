#include "core/repair/layer.h"

#include <algorithm>

#include <fmt/ranges.h>

namespace lattice::repair {
namespace {

std::string dims_text(const std::vector<int64_t>& dims) { return fmt::format("[{}]", fmt::join(dims, ", ")); }

// Dimensions a fit indexes must be positive numbers, and their product must be an index even in
// 32-bit WebAssembly (2^31 float elements are 8 GiB, twice its heap).
Status check_dims(const std::vector<int64_t>& dims, std::string_view what) {
  double product = 1;
  for (int64_t d : dims) {
    if (d <= 0) return options_error("the {} dims {} must all be positive", what, dims_text(dims));
    product *= static_cast<double>(d);
  }
  if (product > 0x1p31) return options_error("the {} dims {} hold too many elements", what, dims_text(dims));
  return ok_status();
}

// The window of a 2-D Conv, auto_pad resolved, as core/graph/window.cc's window_of resolves it for
// the conversion: computed here from the spec's values rather than from a NodeProto, so the fit
// (its own WebAssembly module, loaded only when a repair runs) links no protobuf.
Result<Window> conv_window(const LayerSpec& spec, const std::vector<int64_t>& in, const std::vector<int64_t>& w) {
  Window win;
  win.kernel = {w[2], w[3]};
  win.strides = spec.strides.empty() ? std::vector<int64_t>{1, 1} : spec.strides;
  win.dilations = spec.dilations.empty() ? std::vector<int64_t>{1, 1} : spec.dilations;
  win.pads = spec.pads.empty() ? std::vector<int64_t>{0, 0, 0, 0} : spec.pads;
  win.auto_pad = spec.auto_pad;
  bool valid = win.strides.size() == 2 && win.dilations.size() == 2 && win.pads.size() == 4;
  for (size_t i = 0; valid && i < 2; ++i) valid = win.strides[i] > 0 && win.dilations[i] > 0;
  if (!valid) {
    return options_error("strides {}, dilations {} and pads {} do not describe a 2-D window (2, 2 and 4 values, strides "
                         "and dilations positive)",
                         dims_text(spec.strides), dims_text(spec.dilations), dims_text(spec.pads));
  }
  if (win.auto_pad == "VALID") win.pads.assign(4, 0);
  if (win.auto_pad == "SAME_UPPER" || win.auto_pad == "SAME_LOWER") {
    // out = ceil(in / stride); the odd pad goes to the end (UPPER) or the beginning (LOWER).
    for (size_t i = 0; i < 2; ++i) {
      int64_t out = (in[i + 2] + win.strides[i] - 1) / win.strides[i];
      int64_t extent = (win.kernel[i] - 1) * win.dilations[i] + 1;
      int64_t total = std::max<int64_t>(0, (out - 1) * win.strides[i] + extent - in[i + 2]);
      int64_t small = total / 2, large = total - small;
      win.pads[i] = win.auto_pad == "SAME_UPPER" ? small : large;
      win.pads[i + 2] = win.auto_pad == "SAME_UPPER" ? large : small;
    }
  }
  return win;
}

// floor((in + pads - extent) / stride) + 1, or 0 when the kernel does not fit the padded input.
int64_t conv_output(const Window& w, size_t axis, int64_t in) {
  int64_t extent = (w.kernel[axis] - 1) * w.dilations[axis] + 1;
  int64_t span = in + w.pads[axis] + w.pads[axis + 2] - extent;
  return span < 0 ? 0 : span / w.strides[axis] + 1;
}

Result<LayerGeometry> conv_geometry(const LayerSpec& spec, const std::vector<int64_t>& in,
                                    const std::vector<int64_t>& out) {
  const auto& w = spec.weight_shape;
  auto spatial = [](size_t rank) { return rank >= 2 ? rank - 2 : 0; };
  for (auto [rank, what] : {std::pair{w.size(), "weight shape"}, std::pair{in.size(), "input"}}) {
    if (rank != 4) {
      return options_error("only 2-D Conv can be refitted: the {} has {} dims ({}-D), where [N, C, H, W] has 4", what,
                           rank, spatial(rank));
    }
  }
  if (!spec.kernel_shape.empty() && spec.kernel_shape.size() != 2) {
    return options_error("only 2-D Conv can be refitted: kernel_shape {} has {} values", dims_text(spec.kernel_shape),
                         spec.kernel_shape.size());
  }
  if (auto s = check_dims(w, "weight shape"); !s) return s.error();
  if (auto s = check_dims(in, "input"); !s) return s.error();
  if (auto s = check_dims(out, "target"); !s) return s.error();
  if (spec.auto_pad != "NOTSET" && spec.auto_pad != "VALID" && spec.auto_pad != "SAME_UPPER" &&
      spec.auto_pad != "SAME_LOWER") {
    return options_error("auto_pad '{}' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER", spec.auto_pad);
  }
  for (const auto& p : spec.pads) {
    if (p < 0) return options_error("pads {} must not be negative", dims_text(spec.pads));
  }
  LayerGeometry g;
  g.batch = in[0];
  g.channels = in[1];
  g.height = in[2];
  g.width = in[3];
  g.group = spec.group;
  if (g.group < 1 || g.channels % g.group != 0 || w[0] % g.group != 0) {
    return options_error("group {} must divide the input's {} channels and the weight's {} output channels", g.group,
                         g.channels, w[0]);
  }
  if (w[1] != g.channels / g.group) {
    return options_error("the weight shape {} does not fit an input of {} channels in {} groups (dimension 1 must be {})",
                         dims_text(w), g.channels, g.group, g.channels / g.group);
  }
  if (!spec.kernel_shape.empty() && (spec.kernel_shape[0] != w[2] || spec.kernel_shape[1] != w[3])) {
    return options_error("kernel_shape {} is not the weight's {}", dims_text(spec.kernel_shape), dims_text(w));
  }
  auto window = conv_window(spec, in, w);
  if (!window) return window.error();
  g.window = *window;
  g.out_channels = w[0];
  g.out_height = conv_output(g.window, 0, g.height);
  g.out_width = conv_output(g.window, 1, g.width);
  if (g.out_height <= 0 || g.out_width <= 0) {
    return options_error("the window does not fit the input {}: the kernel is larger than the padded input",
                         dims_text(in));
  }
  std::vector<int64_t> expected{g.batch, g.out_channels, g.out_height, g.out_width};
  if (out != expected) {
    return options_error("the target's dims {} are not the Conv's output {} for the input {}", dims_text(out),
                         dims_text(expected), dims_text(in));
  }
  g.columns = w[1] * w[2] * w[3];
  g.outputs = g.out_channels / g.group;
  return g;
}

Result<LayerGeometry> gemm_geometry(const LayerSpec& spec, const std::vector<int64_t>& in,
                                    const std::vector<int64_t>& out) {
  // A scaled product or bias would need the fitted values divided back: refuse rather than guess.
  if (spec.alpha != 1.0 || spec.beta != 1.0) {
    return options_error("Gemm with alpha {} and beta {} cannot be refitted: only alpha = beta = 1", spec.alpha,
                         spec.beta);
  }
  if (spec.trans_a) return options_error("Gemm with transA = 1 cannot be refitted: its input must be [N, K]");
  const auto& w = spec.weight_shape;
  if (w.size() != 2 || in.size() != 2 || out.size() != 2) {
    return options_error("Gemm's weight shape {}, input {} and target {} must each be 2-D", dims_text(w),
                         dims_text(in), dims_text(out));
  }
  if (auto s = check_dims(w, "weight shape"); !s) return s.error();
  if (auto s = check_dims(in, "input"); !s) return s.error();
  if (auto s = check_dims(out, "target"); !s) return s.error();
  int64_t k = spec.trans_b ? w[1] : w[0], m = spec.trans_b ? w[0] : w[1];
  if (in[1] != k || out[0] != in[0] || out[1] != m) {
    return options_error("Gemm's input {}, weight shape {} (transB {}) and target {} do not fit [N, K] x [K, M] -> [N, M]",
                         dims_text(in), dims_text(w), spec.trans_b ? 1 : 0, dims_text(out));
  }
  LayerGeometry g;
  g.conv = false;
  g.batch = in[0];
  g.channels = k;
  g.out_channels = m;
  g.columns = k;
  g.outputs = m;
  return g;
}

}  // namespace

Result<LayerGeometry> layer_geometry(const LayerSpec& spec, const std::vector<int64_t>& input_dims,
                                     const std::vector<int64_t>& target_dims) {
  if (spec.op == "Conv") return conv_geometry(spec, input_dims, target_dims);
  if (spec.op == "Gemm") return gemm_geometry(spec, input_dims, target_dims);
  return options_error("op '{}' cannot be refitted: only Conv and Gemm", spec.op);
}

}  // namespace lattice::repair
