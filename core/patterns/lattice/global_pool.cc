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

bool covers_input(const MatchContext& ctx, int node) {
  const auto& n = ctx.view.node(node);
  const Shape* x = ctx.shapes.of(n.input(0));
  if (!x || x->size() != 4 || (*x)[2] < 0 || (*x)[3] < 0) return false;
  if (n.op_type() == "AveragePool") {
    auto w = pool2d(ctx, node);
    return w && w->kernel[0] == (*x)[2] && w->kernel[1] == (*x)[3] && w->dilations[0] == 1 && w->dilations[1] == 1 &&
           std::all_of(w->pads.begin(), w->pads.end(), [](int64_t p) { return p == 0; });
  }
  // ReduceMean: axes moved from an attribute to an input at opset 18.
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

Result<Replacement> graft(const MatchContext& ctx, const Match& m, NameAllocator&) {
  const auto& n = ctx.view.node(m.at(0));
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
      .chain = {Step{{"AveragePool", "ReduceMean"}, covers_input, false}},
      .graft = graft,
  };
  return pattern;
}

}  // namespace lattice
