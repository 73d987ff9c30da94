#pragma once
// What a Lattice target's accelerator runs, and how the patterns and the audit read it: an entry
// of the targets' table (core/patterns/lattice/targets.cc holds the values and their sources).
#include <array>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/graph/graph_view.h"
#include "core/graph/shapes.h"
#include "core/graph/window.h"
#include "core/pattern/target.h"
#include "core/util/json.h"
#include "core/util/result.h"

namespace lattice {

struct MatchContext;

// One row of the operator table: whether the accelerator runs `op`, under which condition, and
// where that fact comes from (the seed, Embedl Deploy's docs, Lattice's sensAI guide, or assumed).
struct HardwareOp {
  std::string_view op;
  bool runs;
  std::string_view condition;
  std::string_view source;
  std::string_view note;  // what the source says, or where the sources disagree
  bool activation;        // reported as "the accelerator has no X activation"
};

// A square Conv kernel the accelerator runs, with its strides (equal on both axes).
struct ConvKernel {
  int64_t size;
  std::span<const int64_t> strides;
};

// A square MaxPool window without padding (emitted with ceil_mode 1).
struct PoolForm {
  int64_t kernel, stride;
};

// One Lattice target: all that differs between targets, as one entry of the table.
struct LatticeTarget {
  std::string_view name;
  std::string_view description;
  std::vector<const Pattern*> conversion;  // in the order they run
  // The tables are spans over constant arrays: the page's module builds no vectors for them.
  std::span<const ConvKernel> conv_kernels;  // with pads k/2
  // The kernel a stride-2 Conv runs with behind a bottom/right Pad of k/2 (no pads of its own),
  // which a larger one becomes; 0: none (the stride-2 Pad pattern does not match).
  int64_t stride2_kernel;
  PoolForm max_pool;                       // the one MaxPool the accelerator runs
  std::span<const int64_t> sppf_kernels;   // an SPPF pool becomes a Conv of the nearest (ties to the smaller)
  std::span<const HardwareOp> operators;   // the rest of what it runs and does not, each with its source
  std::string_view source;                 // where conv_kernels and max_pool come from
};

// The engine's Target for an entry: its audit asks the entry, its patterns read it (lattice_target).
Target make_target(LatticeTarget entry);

// The entry of the target the patterns run for: the Lattice patterns run only in Lattice targets.
const LatticeTarget& lattice_target(const MatchContext& ctx);
// The entry of `target`, or null when it has no Lattice hardware (none).
const LatticeTarget* lattice_target(const Target& target);

// A 2-D Conv (4-D input and weight) and its window, or nullopt.
struct Conv2d {
  Window window;
  int64_t group;
  Shape weight;  // [Cout, Cin/g, kh, kw]
};
std::optional<Conv2d> conv2d(const MatchContext& ctx, int node);

// A 2-D MaxPool or AveragePool and its window, or nullopt.
std::optional<Window> pool2d(const MatchContext& ctx, int node);

// Kernel, stride and pads of a Conv the target accepts: a square accepted kernel whose stride
// along each axis is one the kernel accepts (a 3x3 at stride (2, 1) included), with pads k/2, or
// the target's asymmetric stride-2 form (asymmetric_stride2_conv).
bool conv_accepted(const MatchContext& ctx, int node, const Conv2d& conv);

// Whether a Conv is the target's stride-2 form, padded at the bottom and right only: a
// Pad -> Conv(stride2_kernel, stride 2, pads 0) pair (what LatticeStride2AsymPadConvMaxPoolPattern
// emits, and tf2onnx writes for TensorFlow's SAME padding), or the Conv padded so by its own pads
// [0, 0, k/2, k/2] (tf2onnx's SAME at stride 2 on an even size). The target runs it as it is.
bool asymmetric_stride2_conv(const MatchContext& ctx, int node, const Conv2d& conv);

// The accepted kernel and per-axis strides nearest to a Conv's: each axis's stride first (ties to
// the smaller), then the kernel among those accepting the strides of both axes (ties to the
// smaller) - so a 1x1 with stride 2 becomes a 3x3, and a stride (2, 1) stays (2, 1), which keeps
// the output's height and width.
struct SnappedConv {
  int64_t kernel;
  std::array<int64_t, 2> strides;
};
SnappedConv snap_conv(const LatticeTarget& target, int64_t kernel, std::array<int64_t, 2> strides);

// A MaxPool of the target's form: its kernel and stride, no padding, no dilation.
bool maxpool_canonical(const LatticeTarget& target, const Window& w);

// Dimension `axis` of `tensor` when it is a known number; otherwise the reason a graft gives:
// "needs the channel count of 'x', which is unknown (shape [N, ?, H, W])".
Result<int64_t> needed_dim(const MatchContext& ctx, const std::string& tensor, size_t axis, std::string_view what);

// The operator rows the built-in targets share (targets.cc).
std::span<const HardwareOp> hardware_operators();

// The table for `onnx-lattice hardware` (text) and `hardware --json`.
std::string hardware_text();
Json hardware_json();

// The refusal of a graft that needs a window's pads, when auto_pad SAME at stride 2 leaves them
// to the input's unknown height or width; ok when they are known.
Status pads_resolved(const MatchContext& ctx, const std::string& input, const Window& w);

}  // namespace lattice
