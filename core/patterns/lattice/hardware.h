#pragma once
// What the Lattice CNN accelerator runs, as this project models it: the one table of hardware
// limits. A target is an entry of conv kernels; the operator set is shared.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/graph/graph_view.h"
#include "core/graph/shapes.h"
#include "core/graph/window.h"
#include "core/util/json.h"
#include "core/util/result.h"

namespace lattice {

struct Target;
struct MatchContext;

// The canonical Lattice max-pool: 2x2, stride 2, no padding (ceil_mode 1 when emitted).
inline constexpr int64_t kPoolKernel = 2, kPoolStride = 2;

// A 2-D Conv (4-D input and weight) and its window, or nullopt.
struct Conv2d {
  Window window;
  int64_t group;
  Shape weight;  // [Cout, Cin/g, kh, kw]
};
std::optional<Conv2d> conv2d(const MatchContext& ctx, int node);

// A 2-D MaxPool or AveragePool and its window, or nullopt.
std::optional<Window> pool2d(const MatchContext& ctx, int node);

// Kernel, stride and pads of a Conv the target accepts: a square accepted kernel with an
// accepted stride and pads k/2, or a 3x3 stride-2 Conv without pads whose input a Pad writes
// (the pair LatticeStride2AsymPadConvMaxPoolPattern emits).
bool conv_accepted(const MatchContext& ctx, int node, const Conv2d& conv);

// The accepted (kernel, stride) nearest to a Conv's: the stride first (ties to the smaller),
// then the kernel among those accepting it (ties to the smaller) - so a 1x1 with stride 2
// becomes a 3x3.
struct SnappedConv {
  int64_t kernel, stride;
};
SnappedConv snap_conv(const Target& target, int64_t kernel, int64_t stride);

// A MaxPool that is 2x2, stride 2, no padding, no dilation.
bool maxpool_canonical(const Window& w);

// Dimension `axis` of `tensor` when it is a known number; otherwise the reason a graft gives:
// "needs the channel count of 'x', which is unknown (shape [N, ?, H, W])".
Result<int64_t> needed_dim(const MatchContext& ctx, const std::string& tensor, size_t axis, std::string_view what);

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
std::span<const HardwareOp> hardware_operators();

// The table for `onnx-lattice hardware` (text) and `hardware --json`.
std::string hardware_text();
Json hardware_json();

// The refusal of a graft that needs a window's pads, when auto_pad SAME at stride 2 leaves them
// to the input's unknown height or width; ok when they are known.
Status pads_resolved(const MatchContext& ctx, const std::string& input, const Window& w);

// Why the target cannot run this node, or nullopt if it can.
std::optional<std::string> unsupported_reason(const MatchContext& ctx, int node);

}  // namespace lattice
