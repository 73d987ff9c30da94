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

const HardwareOp* find_op(const LatticeTarget& target, std::string_view op) {
  for (const auto& row : target.operators) {
    if (row.op == op) return &row;
  }
  return nullptr;
}

std::string accepted_kernels(const LatticeTarget& target) {
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

namespace {

// Whether the accepted kernel runs at `stride` along an axis.
bool takes_stride(const ConvKernel& k, int64_t stride) {
  return std::find(k.strides.begin(), k.strides.end(), stride) != k.strides.end();
}

}  // namespace

bool asymmetric_stride2_conv(const MatchContext& ctx, int node, const Conv2d& conv) {
  const Window& w = conv.window;
  int64_t k = lattice_target(ctx).stride2_kernel;
  if (k <= 0 || w.kernel[0] != k || w.kernel[1] != k || w.strides[0] != 2 || w.strides[1] != 2 || w.dilations[0] != 1 ||
      w.dilations[1] != 1 || !w.pads_known) {
    return false;
  }
  // Padded by the Conv itself, bottom and right only: the same arithmetic as the pair.
  if (w.pads == std::vector<int64_t>{0, 0, k / 2, k / 2}) return true;
  bool zero_pads = std::all_of(w.pads.begin(), w.pads.end(), [](int64_t p) { return p == 0; });
  int producer = ctx.view.producer(ctx.view.node(node).input(0));
  return zero_pads && producer >= 0 && ctx.view.node(producer).op_type() == "Pad";
}

bool conv_accepted(const MatchContext& ctx, int node, const Conv2d& conv) {
  const Window& w = conv.window;
  if (w.kernel[0] != w.kernel[1]) return false;
  int64_t k = w.kernel[0];
  const LatticeTarget& target = lattice_target(ctx);
  if (asymmetric_stride2_conv(ctx, node, conv)) return true;
  if (!w.pads_known || !w.pads_symmetric_same()) return false;
  // The strides an accepted kernel lists hold along each axis: a 3x3 at stride (2, 1) runs.
  for (const auto& accepted : target.conv_kernels) {
    if (accepted.size == k && takes_stride(accepted, w.strides[0]) && takes_stride(accepted, w.strides[1])) return true;
  }
  return false;
}

SnappedConv snap_conv(const LatticeTarget& target, int64_t kernel, std::array<int64_t, 2> strides) {
  auto nearer = [](int64_t want, int64_t a, int64_t b) {  // is a nearer to want than b (ties: smaller)?
    int64_t da = std::abs(a - want), db = std::abs(b - want);
    return da < db || (da == db && a < b);
  };
  auto nearest_stride = [&](int64_t stride) {
    std::optional<int64_t> best;
    for (const auto& k : target.conv_kernels) {
      for (int64_t s : k.strides) {
        if (!best || nearer(stride, s, *best)) best = s;
      }
    }
    return *best;
  };
  std::array<int64_t, 2> snapped{nearest_stride(strides[0]), nearest_stride(strides[1])};
  auto best_kernel = [&](std::array<int64_t, 2> s) {
    std::optional<int64_t> best;
    for (const auto& k : target.conv_kernels) {
      bool takes = takes_stride(k, s[0]) && takes_stride(k, s[1]);
      if (takes && (!best || nearer(kernel, k.size, *best))) best = k.size;
    }
    return best;
  };
  if (auto k = best_kernel(snapped)) return {*k, snapped};
  // No kernel takes both axes' strides: the larger on both, as a square stride.
  int64_t s = nearest_stride(std::max(strides[0], strides[1]));
  return {*best_kernel({s, s}), {s, s}};
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

bool maxpool_canonical(const LatticeTarget& target, const Window& w) {
  for (size_t i = 0; i < 2; ++i) {
    if (w.kernel[i] != target.max_pool.kernel || w.strides[i] != target.max_pool.stride || w.dilations[i] != 1) {
      return false;
    }
  }
  return std::all_of(w.pads.begin(), w.pads.end(), [](int64_t p) { return p == 0; });
}

namespace {

// Why `target` cannot run this node, or nullopt if it can.
std::optional<std::string> unsupported_reason(const LatticeTarget& target, const MatchContext& ctx, int node) {
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
                         tuple(w.kernel), tuple(w.strides), tuple(w.pads), accepted_kernels(target));
    }
    return std::nullopt;
  }
  if (op == "MaxPool") {
    auto w = pool2d(ctx, node);
    if (!w || !maxpool_canonical(target, *w)) {
      return fmt::format("only a {0}x{0} MaxPool with stride {1} and no padding is supported", target.max_pool.kernel,
                         target.max_pool.stride);
    }
    return std::nullopt;
  }
  if (op == "Resize" || op == "Upsample") {
    std::string mode = attr::get_string(n, "mode", "nearest");
    if (mode != "nearest") return fmt::format("{} mode '{}' is not supported (nearest only)", op, mode);
    return std::nullopt;
  }
  const HardwareOp* row = find_op(target, op);
  if (row && row->runs) return std::nullopt;
  if (row && row->activation) {
    return fmt::format("the accelerator has no {} activation", op);
  }
  return fmt::format("{} is not an operator the accelerator runs", op);
}

// The audit's view of an entry; the patterns read the entry itself (lattice_target).
class LatticeHardware final : public Hardware {
 public:
  explicit LatticeHardware(LatticeTarget entry) : entry_(std::move(entry)) {}
  const LatticeTarget& entry() const { return entry_; }
  std::optional<std::string> unsupported_reason(const MatchContext& ctx, int node) const override {
    return lattice::unsupported_reason(entry_, ctx, node);
  }

 private:
  LatticeTarget entry_;
};

}  // namespace

Target make_target(LatticeTarget entry) {
  Target target{entry.name, entry.description, entry.conversion, nullptr};
  target.hardware = std::make_shared<const LatticeHardware>(std::move(entry));
  return target;
}

const LatticeTarget& lattice_target(const MatchContext& ctx) {
  return static_cast<const LatticeHardware&>(*ctx.target.hardware).entry();
}

const LatticeTarget* lattice_target(const Target& target) {
  const auto* hardware = dynamic_cast<const LatticeHardware*>(target.hardware.get());
  return hardware ? &hardware->entry() : nullptr;
}

Json hardware_json() {
  Json targets = Json::array();
  for (const Target* t : all_targets()) {
    if (const LatticeTarget* entry = lattice_target(*t)) {
      targets.push(Json::object()
                       .set("name", entry->name)
                       .set("conv_kernels", accepted_kernels(*entry))
                       .set("source", entry->source));
    }
  }
  Json ops = Json::array();
  for (const auto& row : hardware_operators()) {
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
  for (const Target* t : all_targets()) {
    const LatticeTarget* entry = lattice_target(*t);
    if (!entry) continue;
    s += fmt::format("target {}: Conv {} (source: {})\n", entry->name, accepted_kernels(*entry), entry->source);
  }
  s += "\n";
  for (const auto& row : hardware_operators()) {
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
