#include "core/audit.h"

#include <algorithm>

#include "core/activation_idioms.h"
#include "core/graph/graph_view.h"
#include "core/graph/shapes.h"
#include "core/onnx/domain.h"
#include "core/pattern/registry.h"
#include "core/quantization.h"

namespace lattice {
namespace {

bool folds_into(const std::string& op) { return op == "Conv" || op == "ConvTranspose" || op == "Gemm"; }

std::string unfolded_batch_norm_reason(const GraphView& view, int bn, const Options& options, const Report& report) {
  // Said in the option's terms, not one shell's flag: the CLI, the Node API and the page name it
  // differently.
  if (!options.folds_batch_norm()) {
    return options.fold_batch_norm ? "BatchNorm folding is off, as asked" : "BatchNorm folding is off, as under FPQ by default";
  }
  const auto& node = view.node(bn);
  int p = node.input_size() > 0 ? view.producer(node.input(0)) : -1;
  if (p < 0) return fmt::format("not folded: its input '{}' is not produced by a Conv, ConvTranspose or Gemm", node.input(0));
  const auto& layer = view.node(p);
  if (!folds_into(layer.op_type())) {
    return fmt::format("not folded: it follows {} '{}', not a Conv, ConvTranspose or Gemm", layer.op_type(), view.label(p));
  }
  for (const auto& m : report.matches) {
    if (!m.applied && m.pattern == "ConvBatchNormFoldPattern" && !m.nodes.empty() && m.nodes.back() == view.label(bn)) {
      return "not folded: " + m.reason;
    }
  }
  if (view.reader_count(layer.output(0)) > 1) {
    return fmt::format("not folded: the output of {} '{}' is also read elsewhere", layer.op_type(), view.label(p));
  }
  return "not folded";
}

}  // namespace

void audit(const ModelIndex& converted, const Options& options, Report& report) {
  const GraphView& view = converted.view;
  const Shapes& shapes = converted.shapes;
  int64_t opset = converted.opset;
  const Target& target = *find_target(options.target);
  MatchContext ctx{view, shapes, opset, target, options};
  const Hardware* hardware = target.hardware.get();

  // An activation written as several nodes is reported whole, under its name, when any of its
  // nodes is one the target cannot run.
  std::vector<const ActivationIdiom*> idiom_of(static_cast<size_t>(view.size()), nullptr);
  auto idioms = hardware ? find_activation_idioms(view) : std::vector<ActivationIdiom>{};
  for (const auto& idiom : idioms) {
    bool runs = std::none_of(idiom.nodes.begin(), idiom.nodes.end(),
                             [&](int n) { return hardware->unsupported_reason(ctx, n); });
    if (runs) continue;
    for (int n : idiom.nodes) idiom_of[static_cast<size_t>(n)] = &idiom;
  }
  for (int i = 0; i < view.size(); ++i) {
    const auto& node = view.node(i);
    if (node.op_type() == "BatchNormalization") {
      // Both sensAI schemes run BatchNormalization as a 16-bit layer of its own (FPGA-UG-02228
      // Tables 4.1 and 4.2); only the seed's targets fold it away.
      if (options.fixed_point != FixedPoint::kNone) continue;
      report.unsupported.push_back(
          {view.label(i), node.op_type(), unfolded_batch_norm_reason(view, i, options, report), node.op_type(), {}});
    } else if (const ActivationIdiom* idiom = idiom_of[static_cast<size_t>(i)]) {
      std::vector<std::string> unit;
      for (int n : idiom->nodes) unit.push_back(view.label(n));
      std::string reason = idiom->nodes.size() == 1
                               ? fmt::format("the accelerator has no {} activation", idiom->name)
                               : fmt::format("part of a {} activation ({}), which the accelerator does not run",
                                             idiom->name, idiom->form);
      report.unsupported.push_back({view.label(i), node.op_type(), std::move(reason), idiom->name, std::move(unit)});
    } else if (hardware && !is_quantization_op(node)) {  // described in `quantization` instead
      if (auto reason = hardware->unsupported_reason(ctx, i)) {
        report.unsupported.push_back({view.label(i), node.op_type(), *reason, node.op_type(), {}});
      }
    }
  }
}

}  // namespace lattice
