// A global average pool written another way - an AveragePool whose kernel covers the whole
// input, or ReduceMean over H and W keeping dims - becomes GlobalAveragePool. Equivalent.
#include <algorithm>

#include "core/onnx/attributes.h"
#include "core/onnx/tensor_values.h"
#include "core/patterns/lattice/emit.h"
#include "core/patterns/lattice/hardware.h"
#include "core/patterns/lattice/patterns.h"

namespace lattice {
namespace {

// ReduceMean over {2, 3} keeping dims, as an attribute or (opset 18) a constant input.
bool reduces_spatial(const MatchContext& ctx, const onnx::NodeProto& n) {
  if (attr::get_int(n, "keepdims", 1) != 1) return false;
  std::optional<std::vector<int64_t>> axes;
  if (ctx.opset >= 18) {
    const auto* t = n.input_size() > 1 ? ctx.view.constant(n.input(1)) : nullptr;
    if (!t) return false;
    auto v = read_int_values(*t, n.input(1));
    if (!v) return false;
    axes = *v;
  } else {
    axes = attr::get_ints(n, "axes");
  }
  if (!axes || axes->size() != 2) return false;
  std::vector<int64_t> normalised;
  for (auto a : *axes) normalised.push_back(a < 0 ? a + 4 : a);
  std::sort(normalised.begin(), normalised.end());
  return normalised == std::vector<int64_t>{2, 3};
}

// The structure of a global pool; whether the window covers the input is the graft's to check,
// so that an unknown size is reported rather than passed over.
bool may_be_global(const MatchContext& ctx, int node) {
  const auto& n = ctx.view.node(node);
  const Shape* x = ctx.shapes.of(n.input(0));
  if (x && x->size() != 4) return false;
  if (n.op_type() == "ReduceMean") return reduces_spatial(ctx, n);
  auto w = pool2d(ctx, node);
  if (!w || w->dilations[0] != 1 || w->dilations[1] != 1 ||
      !std::all_of(w->pads.begin(), w->pads.end(), [](int64_t p) { return p == 0; })) {
    return false;
  }
  // A known size the kernel does not cover is an ordinary pool, not a refused global one.
  return !x || (((*x)[2] < 0 || (*x)[2] == w->kernel[0]) && ((*x)[3] < 0 || (*x)[3] == w->kernel[1]));
}

Result<Replacement> graft(const MatchContext& ctx, const Match& m, NameAllocator&) {
  const auto& n = ctx.view.node(m.at(0));
  // ReduceMean over {2, 3} needs only the rank; an AveragePool needs the height and width its
  // kernel must cover.
  if (!ctx.shapes.of(n.input(0))) return error("needs the rank of '{}', which is unknown", n.input(0));
  if (n.op_type() == "AveragePool") {
    for (size_t axis : {2, 3}) {
      auto d = needed_dim(ctx, n.input(0), axis, axis == 2 ? "height" : "width");
      if (!d) return d.error();
    }
  }
  Replacement r;
  r.nodes.push_back(make_node("GlobalAveragePool", n.name(), {n.input(0)}, {n.output(0)}));
  return r;
}

}  // namespace

const Pattern& global_avg_pool_pattern() {
  static const Pattern pattern{
      .name = "LatticeGlobalAvgPoolPattern",
      .phase = Phase::kConversion,
      .numerically_equivalent = true,
      .matches = "AveragePool whose kernel covers the whole spatial input with zero pads, or ReduceMean over axes "
                 "{2, 3} with keepdims 1 on a 4-D input",
      .emits = "GlobalAveragePool",
      .chain = {Step{{"AveragePool", "ReduceMean"}, may_be_global, false}},
      .graft = graft,
  };
  return pattern;
}

}  // namespace lattice
