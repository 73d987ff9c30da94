#include "core/patterns/lattice/hardware.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include <fmt/ranges.h>

#include "core/onnx/attributes.h"
#include "core/onnx/domain.h"
#include "core/pattern/pattern.h"
#include "core/pattern/registry.h"
#include "core/patterns/lattice/emit.h"

namespace lattice {
namespace {

// Operators the accelerator runs as they are (Conv and MaxPool are checked by their window;
// an unfolded BatchNormalization is reported by the BatchNorm audit).
const std::set<std::string_view>& plain_ops() {
  static const std::set<std::string_view> ops{"Constant", "Relu",    "Clip",     "LeakyRelu", "Add",     "Concat",
                                              "GlobalAveragePool", "Flatten", "Reshape", "Gemm",
                                              "MatMul",  "Identity", "Dropout",   "Pad",     "Resize",
                                              "Upsample"};
  return ops;
}

const std::set<std::string_view>& activations() {
  static const std::set<std::string_view> ops{"Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Elu", "Selu",
                                              "Softplus", "Mish", "Gelu", "PRelu", "Softmax"};
  return ops;
}

std::string accepted_kernels(const Target& target) {
  std::vector<std::string> parts;
  for (const auto& k : target.conv_kernels) parts.push_back(fmt::format("{0}x{0} stride {1}", k.size, fmt::join(k.strides, "/")));
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace

std::optional<Conv2d> conv2d(const MatchContext& ctx, int node) {
  const auto& n = ctx.view.node(node);
  if (n.op_type() != "Conv" || n.input_size() < 2) return std::nullopt;
  const Shape* w = ctx.shapes.of(n.input(1));
  const Shape* x = ctx.shapes.of(n.input(0));
  if (!w || w->size() != 4 || (x && x->size() != 4)) return std::nullopt;
  auto window = window_of(n, x, w);
  if (!window || window->rank() != 2) return std::nullopt;
  return Conv2d{*window, attr::get_int(n, "group", 1), *w};
}

std::optional<Window> pool2d(const MatchContext& ctx, int node) {
  const auto& n = ctx.view.node(node);
  if (n.op_type() != "MaxPool" && n.op_type() != "AveragePool") return std::nullopt;
  const Shape* x = ctx.shapes.of(n.input(0));
  if (x && x->size() != 4) return std::nullopt;
  auto window = window_of(n, x, nullptr);
  if (!window || window->rank() != 2) return std::nullopt;
  return window;
}

bool conv_accepted(const MatchContext& ctx, int node, const Conv2d& conv) {
  const Window& w = conv.window;
  if (w.kernel[0] != w.kernel[1] || w.strides[0] != w.strides[1]) return false;
  int64_t k = w.kernel[0], s = w.strides[0];
  bool zero_pads = std::all_of(w.pads.begin(), w.pads.end(), [](int64_t p) { return p == 0; });
  if (k == 3 && s == 2 && zero_pads) {
    int producer = ctx.view.producer(ctx.view.node(node).input(0));
    if (producer >= 0 && ctx.view.node(producer).op_type() == "Pad") return true;
  }
  if (!w.pads_symmetric_same()) return false;
  for (const auto& accepted : ctx.target.conv_kernels) {
    if (accepted.size == k && std::find(accepted.strides.begin(), accepted.strides.end(), s) != accepted.strides.end()) {
      return true;
    }
  }
  return false;
}

SnappedConv snap_conv(const Target& target, int64_t kernel, int64_t stride) {
  auto nearer = [](int64_t want, int64_t a, int64_t b) {  // is a nearer to want than b (ties: smaller)?
    int64_t da = std::abs(a - want), db = std::abs(b - want);
    return da < db || (da == db && a < b);
  };
  std::optional<int64_t> best_stride;
  for (const auto& k : target.conv_kernels) {
    for (int64_t s : k.strides) {
      if (!best_stride || nearer(stride, s, *best_stride)) best_stride = s;
    }
  }
  std::optional<int64_t> best_kernel;
  for (const auto& k : target.conv_kernels) {
    bool takes = std::find(k.strides.begin(), k.strides.end(), *best_stride) != k.strides.end();
    if (takes && (!best_kernel || nearer(kernel, k.size, *best_kernel))) best_kernel = k.size;
  }
  return {*best_kernel, *best_stride};
}

Result<int64_t> needed_dim(const MatchContext& ctx, const std::string& tensor, size_t axis, std::string_view what) {
  const Shape* s = ctx.shapes.of(tensor);
  if (s && axis < s->size() && (*s)[axis] >= 0) return (*s)[axis];
  std::string known = s ? fmt::format("shape {}", format_shape(*s, &ctx.shapes)) : std::string("shape unknown");
  return error("needs the {} (dimension {}) of '{}', which is unknown ({})", what, axis, tensor, known);
}

bool maxpool_canonical(const Window& w) {
  for (size_t i = 0; i < 2; ++i) {
    if (w.kernel[i] != kPoolKernel || w.strides[i] != kPoolStride || w.dilations[i] != 1) return false;
  }
  return std::all_of(w.pads.begin(), w.pads.end(), [](int64_t p) { return p == 0; });
}

std::optional<std::string> unsupported_reason(const MatchContext& ctx, int node) {
  const auto& n = ctx.view.node(node);
  const std::string& op = n.op_type();
  if (!is_default_domain(n.domain())) {
    return fmt::format("operator {} of domain '{}' is not one the accelerator runs", op, n.domain());
  }
  if (op == "BatchNormalization") return std::nullopt;  // reported by the BatchNorm audit, with its reason
  if (op == "Conv") {
    auto conv = conv2d(ctx, node);
    if (!conv) return "not a 2-D convolution with known weight shape";
    const Window& w = conv->window;
    if (w.dilations[0] != 1 || w.dilations[1] != 1) return fmt::format("dilation {} is not supported", tuple(w.dilations));
    if (!conv_accepted(ctx, node, *conv)) {
      return fmt::format("kernel {}, stride {}, pads {} are outside what the target accepts ({}; pads k/2)",
                         tuple(w.kernel), tuple(w.strides), tuple(w.pads), accepted_kernels(ctx.target));
    }
    return std::nullopt;
  }
  if (op == "MaxPool") {
    auto w = pool2d(ctx, node);
    if (!w || !maxpool_canonical(*w)) return "only a 2x2 MaxPool with stride 2 and no padding is supported";
    return std::nullopt;
  }
  if (op == "Resize" || op == "Upsample") {
    std::string mode = attr::get_string(n, "mode", "nearest");
    if (mode != "nearest") return fmt::format("{} mode '{}' is not supported (nearest only)", op, mode);
    return std::nullopt;
  }
  if (plain_ops().contains(op)) return std::nullopt;
  if (activations().contains(op)) return fmt::format("the accelerator has no {} activation", op);
  return fmt::format("{} is not an operator the accelerator runs", op);
}

}  // namespace lattice
