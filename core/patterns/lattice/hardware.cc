#include "core/patterns/lattice/hardware.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/ranges.h>

#include "core/fixed_point/scheme.h"
#include "core/onnx/attributes.h"
#include "core/onnx/domain.h"
#include "core/pattern/pattern.h"
#include "core/pattern/registry.h"
#include "core/patterns/lattice/emit.h"

namespace lattice {
namespace {

// Where a row's facts come from. Where the sources disagree, the target follows the seed (the
// Embedl Deploy Lattice backend), and the row says so.
constexpr std::string_view kSeed = "seed (Embedl Deploy's Lattice conversions)";
constexpr std::string_view kEmbedl = "Embedl Deploy docs (Lattice backend: Conv2d, MaxPool2d, AdaptiveAvgPool2d, LeakyReLU)";
constexpr std::string_view kSensai = "Lattice sensAI guide FPGA-UG-02228";
constexpr std::string_view kAssumed = "assumed";

// The operator table: what the accelerator runs as it is (Conv and MaxPool within their
// windows), and what it does not, each with its source.
const std::vector<HardwareOp>& operator_table() {
  static const std::vector<HardwareOp> table{
      {"Conv", true, "the target's kernels and strides, pads k/2, no dilation", kSeed, "", false},
      {"MaxPool", true, "2x2, stride 2, no padding", kSeed, "Embedl Deploy: MaxPool2d", false},
      {"GlobalAveragePool", true, "", kEmbedl, "sensAI guide: GlobalAveragePooling2D", false},
      {"LeakyRelu", true, "", kEmbedl, "", false},
      {"Relu", true, "", kSensai, "ReLU", false},
      {"Clip", true, "as ReLU6", kAssumed, "", false},
      {"Add", true, "", kSensai, "Add", false},
      {"Concat", true, "", kSensai, "Concatenate", false},
      {"Flatten", true, "", kSensai, "Flatten", false},
      {"Reshape", true, "", kSensai, "Reshape", false},
      {"Gemm", true, "", kSensai, "Dense, GEMM", false},
      {"MatMul", true, "", kSensai, "Dense", false},
      {"Resize", true, "mode nearest", kSensai,
       "nearest UpSampling/Resizing; the guide also lists bilinear, which the target does not assume", false},
      {"Upsample", true, "mode nearest", kSensai, "as Resize", false},
      {"Pad", true, "", kSeed, "emitted by the stride-2 pattern", false},
      {"Identity", true, "", kAssumed, "no computation at inference", false},
      {"Dropout", true, "", kAssumed, "no computation at inference", false},
      {"Constant", true, "", kAssumed, "no computation at inference", false},
      {"BatchNormalization", false, "folded into the preceding layer", kSeed,
       "the sensAI guide lists BatchNormalization; the target follows the seed, which folds it", false},
      {"Mul", false, "", kSensai, "Multiply as a standalone layer is not supported on the FPGA", false},
      {"Reciprocal", false, "", kSensai, "not supported on the FPGA", false},
      {"Sigmoid", false, "", kEmbedl,
       "the sensAI guide lists sigmoid and SiLU; the target follows the seed, whose backend has no such conversion", true},
      {"Softmax", false, "", kEmbedl, "the sensAI guide lists Softmax; the target follows the seed", true},
      {"Transpose", false, "", kEmbedl, "the sensAI guide lists Permute; the target follows the seed", false},
      {"Split", false, "", kEmbedl, "the sensAI guide lists Split; the target follows the seed", false},
      {"Slice", false, "", kEmbedl, "the sensAI guide lists slicing; the target follows the seed", false},
      {"Tanh", false, "", kAssumed, "", true},
      {"HardSigmoid", false, "", kAssumed, "", true},
      {"HardSwish", false, "", kAssumed, "", true},
      {"Elu", false, "", kAssumed, "", true},
      {"Selu", false, "", kAssumed, "", true},
      {"Softplus", false, "", kAssumed, "", true},
      {"Mish", false, "", kAssumed, "", true},
      {"Gelu", false, "", kAssumed, "", true},
      {"PRelu", false, "", kAssumed, "", true},
  };
  return table;
}

const HardwareOp* find_op(std::string_view op) {
  for (const auto& row : operator_table()) {
    if (row.op == op) return &row;
  }
  return nullptr;
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
  if (!w.pads_known || !w.pads_symmetric_same()) return false;
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

Status pads_resolved(const MatchContext& ctx, const std::string& input, const Window& w) {
  if (w.pads_known) return ok_status();
  for (size_t axis : {2, 3}) {
    auto d = needed_dim(ctx, input, axis, fmt::format("{} (auto_pad {} at stride {} pads by it)", axis == 2 ? "height" : "width",
                                                       w.auto_pad, w.strides[axis - 2]));
    if (!d) return d.error();
  }
  return ok_status();
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
    if (!w.pads_known) {
      return fmt::format("its pads (auto_pad {} at stride {}) depend on the input's height and width, which are unknown",
                         w.auto_pad, tuple(w.strides));
    }
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
  const HardwareOp* row = find_op(op);
  if (row && row->runs) return std::nullopt;
  if (row && row->activation) {
    return fmt::format("the accelerator has no {} activation", op);
  }
  return fmt::format("{} is not an operator the accelerator runs", op);
}

std::span<const HardwareOp> hardware_operators() { return operator_table(); }

Json hardware_json() {
  Json targets = Json::array();
  for (const Target& t : all_targets()) {
    if (t.conv_kernels.empty()) continue;
    targets.push(Json::object().set("name", t.name).set("conv_kernels", accepted_kernels(t)));
  }
  Json ops = Json::array();
  for (const auto& row : operator_table()) {
    ops.push(Json::object()
                 .set("op", row.op)
                 .set("runs", row.runs)
                 .set("condition", row.condition)
                 .set("source", row.source)
                 .set("note", row.note));
  }
  Json schemes = Json::array();
  for (const auto& row : fixed_point::scheme_rows()) {
    schemes.push(Json::object().set("op", row.op).set("layer", row.layer).set("fpq", row.fpq).set("lsq", row.lsq));
  }
  return Json::object()
      .set("follows", "where the sources disagree, the targets follow the seed (Embedl Deploy's Lattice backend)")
      .set("targets", std::move(targets))
      .set("operators", std::move(ops))
      .set("otherwise", "any other operator is not one the accelerator runs (assumed)")
      .set("fixed_point", Json::object()
                              .set("source", fmt::format("{}; FPQ {}, LSQ {}", fixed_point::kSchemesSource,
                                                         fixed_point::kFpqTable, fixed_point::kLsqTable))
                              .set("operators", std::move(schemes)));
}

std::string hardware_text() {
  std::string s = "Lattice CNN accelerator, as onnx-lattice models it. Where the sources disagree, the targets follow\n"
                  "the seed (Embedl Deploy's Lattice backend); other operators are taken not to run (assumed).\n\n";
  for (const Target& t : all_targets()) {
    if (!t.conv_kernels.empty()) s += fmt::format("target {}: Conv {}\n", t.name, accepted_kernels(t));
  }
  s += "\n";
  for (const auto& row : operator_table()) {
    s += fmt::format("{:<20} {}{}{}\n", row.op, row.runs ? "runs" : "no", row.condition.empty() ? "" : "  ", row.condition);
    s += fmt::format("{:<25} source: {}{}\n", "", row.source, row.note.empty() ? "" : fmt::format(" — {}", row.note));
  }
  s += fmt::format("\nFixed point (--fixed-point fpq|lsq), the sensAI ML engine's two schemes. Sources: {}; FPQ {}, "
                   "LSQ {}.\n\n",
                   fixed_point::kSchemesSource, fixed_point::kFpqTable, fixed_point::kLsqTable);
  for (const auto& row : fixed_point::scheme_rows()) {
    s += fmt::format("{} ({})\n", row.op, row.layer);
    s += fmt::format("{:<25} FPQ: {}\n", "", row.fpq.empty() ? "not listed" : row.fpq);
    s += fmt::format("{:<25} LSQ: {}\n", "", row.lsq.empty() ? "not listed" : row.lsq);
  }
  return s;
}

}  // namespace lattice
