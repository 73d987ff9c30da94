#include "core/pattern/driver.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include <fmt/ranges.h>

#include "core/graph/names.h"
#include "core/graph/rewriter.h"
#include "core/onnx/domain.h"
#include "core/pattern/matcher.h"
#include "core/pattern/registry.h"

namespace lattice {

namespace {

bool selected(const Pattern& p, const Options& o) {
  auto listed = [&](const std::vector<std::string>& names) {
    return std::find(names.begin(), names.end(), p.name) != names.end();
  };
  return (o.only.empty() || listed(o.only)) && !listed(o.skip);
}

class Driver {
 public:
  Driver(onnx::ModelProto& model, const Options& options, GraphView::Labels& labels, Report& report,
         const ProgressFn& progress)
      : graph_(*model.mutable_graph()),
        opset_(default_opset(model)),
        ir_version_(model.ir_version()),
        options_(options),
        report_(report),
        target_(*find_target(options.target)),
        labels_(labels),
        progress_(progress) {}

  Status run() {
    std::vector<const Pattern*> conversion, fusion;
    for (const Pattern* p : target_.conversion) {
      if (selected(*p, options_)) conversion.push_back(p);
    }
    for (const Pattern* p : all_patterns()) {
      if (p->phase == Phase::kFusion && options_.fold_batch_norm && selected(*p, options_)) fusion.push_back(p);
    }
    std::vector<std::string_view> still_matching;
    for (int iteration = 0; iteration < kMaxConversionIterations; ++iteration) {
      // Most models settle in one or two passes: each pass takes half of what is left of the
      // conversion phase's share (0.8), so the bar moves without knowing the pass count.
      report_progress(fmt::format("conversion pass {}", iteration + 1), 0.8 * (1.0 - std::ldexp(1.0, -iteration)));
      still_matching = run_pass(conversion);
      if (still_matching.empty()) break;
      if (iteration + 1 == kMaxConversionIterations) {
        return error("the conversion did not settle after {} iterations; still matching: {}",
                     kMaxConversionIterations, fmt::join(still_matching, ", "));
      }
    }
    report_progress("fusion pass", 0.8);
    run_pass(fusion);
    if (!report_.matches.empty()) {
      refresh();
      update_declared_shapes(graph_, *shapes_);
    }
    return ok_status();
  }

 private:
  // One pass: each pattern in order, each of its matches once. Returns the patterns that applied.
  std::vector<std::string_view> run_pass(const std::vector<const Pattern*>& patterns) {
    std::vector<std::string_view> applied_patterns;
    std::unordered_set<std::string> handled;
    for (const Pattern* pattern : patterns) {
      while (auto match = next_match(*pattern, handled)) {
        if (handle(*match) && (applied_patterns.empty() || applied_patterns.back() != pattern->name)) {
          applied_patterns.push_back(pattern->name);
        }
      }
    }
    return applied_patterns;
  }

  // The first match of `pattern` not handled yet in this pass; marks it handled.
  std::optional<Match> next_match(const Pattern& pattern, std::unordered_set<std::string>& handled) {
    refresh();
    for (auto& m : find_matches(pattern, *ctx_)) {
      if (handled.insert(match_id(m)).second) return std::move(m);
    }
    return std::nullopt;
  }

  std::string match_id(const Match& m) const { return fmt::format("{}:{}", m.pattern->name, view_->label(m.anchor())); }

  // Applies the match if it can; records it either way. True if the graph changed.
  bool handle(const Match& m) {
    MatchRecord record;
    record.id = match_id(m);
    record.pattern = std::string(m.pattern->name);
    record.phase = std::string(phase_name(m.pattern->phase));
    record.numerically_equivalent = m.pattern->numerically_equivalent;
    for (int n : m.nodes()) {
      record.nodes.push_back(view_->label(n));
      record.node_ops.push_back(view_->node(n).op_type());
    }
    std::string anchor = view_->label(m.anchor());

    if (std::find(options_.skip_matches.begin(), options_.skip_matches.end(), record.id) != options_.skip_matches.end()) {
      return refuse(std::move(record), "skipped on request (--skip-match)");
    }
    NameAllocator names(graph_);
    auto replacement = m.pattern->graft(*ctx_, m, names);
    if (!replacement) return refuse(std::move(record), replacement.error().message);
    std::vector<std::string> warnings = replacement->warnings;
    // A new node is labelled as the matched node whose name it keeps (which may be `name#2`), an
    // unnamed one as the anchor.
    std::vector<std::pair<std::string, std::string>> new_labels;  // first output, label
    for (const auto& n : replacement->nodes) {
      std::string label = n.name().empty() ? anchor : n.name();
      for (int old : m.nodes()) {
        if (!n.name().empty() && view_->node(old).name() == n.name()) label = view_->label(old);
      }
      record.new_nodes.push_back(label);
      record.new_node_ops.push_back(n.op_type());
      if (n.output_size() > 0) new_labels.emplace_back(n.output(0), std::move(label));
    }
    auto shape_changes = apply_replacement(graph_, *ctx_, m, std::move(replacement).value(), ir_version_);
    if (!shape_changes) return refuse(std::move(record), shape_changes.error().message);
    ctx_.reset();
    for (auto& [output, label] : new_labels) labels_[output] = std::move(label);
    for (const auto& change : *shape_changes) warnings.push_back(fmt::format("{}: {}", anchor, change));
    record.applied = true;
    for (auto& message : warnings) {
      report_.warnings.push_back({record.id, record.pattern, anchor, std::move(message)});
    }
    report_.matches.push_back(std::move(record));
    return true;
  }

  void report_progress(std::string_view stage, double fraction) const {
    if (progress_) progress_(stage, fraction);
  }

  // A match that stays unapplied is reported once, however many passes meet it.
  bool refuse(MatchRecord record, std::string reason) {
    if (refused_.insert(record.id).second) {
      record.reason = std::move(reason);
      report_.matches.push_back(std::move(record));
    }
    return false;
  }

  // The view and shapes of the graph as it is now, rebuilt after every change.
  void refresh() {
    if (ctx_) return;
    view_ = std::make_unique<GraphView>(graph_, &labels_, ir_version_);
    shapes_ = std::make_unique<Shapes>(*view_, opset_);
    ctx_.emplace(MatchContext{*view_, *shapes_, opset_, target_});
  }

  onnx::GraphProto& graph_;
  int64_t opset_;
  int64_t ir_version_;
  const Options& options_;
  Report& report_;
  const Target& target_;
  GraphView::Labels& labels_;
  const ProgressFn& progress_;
  std::unique_ptr<GraphView> view_;
  std::unique_ptr<Shapes> shapes_;
  std::optional<MatchContext> ctx_;
  std::unordered_set<std::string> refused_;
};

}  // namespace

Status run_phases(onnx::ModelProto& model, const Options& options, GraphView::Labels& labels, Report& report,
                  const ProgressFn& progress) {
  return Driver(model, options, labels, report, progress).run();
}

}  // namespace lattice
