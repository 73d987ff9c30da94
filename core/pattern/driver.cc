#include "core/pattern/driver.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include <fmt/ranges.h>

#include "core/graph/operator_rules.h"
#include "core/graph/rewriter.h"
#include "core/onnx/domain.h"
#include "core/pattern/matcher.h"
#include "core/pattern/registry.h"
#include "core/pattern/worklist.h"

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
         const ProgressFn& progress, Rewriter::Mode mode, ExternalData* data = nullptr)
      : opset_(default_opset(model)),
        data_(data),
        options_(options),
        report_(report),
        target_(*find_target(options.target)),
        labels_(labels),
        progress_(progress),
        rewriter_(*model.mutable_graph(), opset_, model.ir_version(), &labels, mode) {}

  Status run() {
    // Checked on the index and shapes the engine keeps anyway: no second pass over the model.
    if (auto s = check_operator_rules(rewriter_.view(), rewriter_.shapes()); !s) return s;
    std::vector<const Pattern*> conversion, fusion;
    for (const Pattern* p : target_.conversion) {
      if (selected(*p, options_)) conversion.push_back(p);
    }
    for (const Pattern* p : all_patterns()) {
      bool runs = p->scheme == FixedPoint::kNone ? options_.folds_batch_norm() : p->scheme == options_.fixed_point;
      if (p->phase == Phase::kFusion && runs && selected(*p, options_)) fusion.push_back(p);
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
    rewriter_.finish(!report_.matches.empty());
    return ok_status();
  }

 private:
  // One pass: each pattern in order, each of its matches once, always the first match in graph
  // order not handled yet in this pass. Returns the patterns that applied.
  std::vector<std::string_view> run_pass(const std::vector<const Pattern*>& patterns) {
    std::vector<std::string_view> applied_patterns;
    std::unordered_set<std::string> handled;
    for (const Pattern* pattern : patterns) {
      Worklist candidates(rewriter_.view());
      for (int anchor; (anchor = candidates.next(rewriter_.view())) >= 0;) {
        auto match = match_at(*pattern, context(), anchor);
        if (!match || !handled.insert(match_id(*match)).second) continue;
        int generation = rewriter_.generation();
        auto touched = handle(*match);
        if (rewriter_.generation() != generation) {
          candidates.restart(rewriter_.view());
        } else if (touched) {
          candidates.revisit_around(rewriter_.view(), *touched);
        }
        if (touched && (applied_patterns.empty() || applied_patterns.back() != pattern->name)) {
          applied_patterns.push_back(pattern->name);
        }
      }
    }
    return applied_patterns;
  }

  MatchContext context() const {
    return {rewriter_.view(), rewriter_.shapes(), opset_, target_, options_, data_, &fused_};
  }

  std::string match_id(const Match& m) const {
    return fmt::format("{}:{}", m.pattern->name, rewriter_.view().label(m.anchor()));
  }

  // Applies the match if it can; records it either way. The nodes around the change if the graph
  // changed, nothing otherwise.
  std::optional<std::vector<int>> handle(const Match& m) {
    const GraphView& view = rewriter_.view();
    MatchRecord record;
    record.id = match_id(m);
    record.pattern = std::string(m.pattern->name);
    record.phase = std::string(phase_name(m.pattern->phase));
    record.numerically_equivalent = m.pattern->numerically_equivalent;
    for (int n : m.nodes()) {
      record.nodes.push_back(view.label(n));
      record.node_ops.push_back(view.node(n).op_type());
    }
    std::string anchor = view.label(m.anchor());

    if (std::find(options_.skip_matches.begin(), options_.skip_matches.end(), record.id) != options_.skip_matches.end()) {
      return refuse(std::move(record), "skipped on request: its id is among those to skip");
    }
    auto replacement = m.pattern->graft(context(), m, rewriter_.names_for_match());
    if (!replacement) return refuse(std::move(record), replacement.error().message);
    std::vector<PatternWarning> warnings = replacement->warnings;
    record.numerically_equivalent = record.numerically_equivalent || replacement->exact;
    record.weights = replacement->weights;
    // A new node is labelled as the matched node whose name it keeps (which may be `name#2`), an
    // unnamed one as the anchor.
    std::vector<std::pair<std::string, std::string>> new_labels;  // first output, label
    for (const auto& n : replacement->nodes) {
      std::string label = n.name().empty() ? anchor : n.name();
      for (int old : m.nodes()) {
        if (!n.name().empty() && view.node(old).name() == n.name()) label = view.label(old);
      }
      record.new_nodes.push_back(label);
      record.new_node_ops.push_back(n.op_type());
      if (n.output_size() > 0) new_labels.emplace_back(n.output(0), std::move(label));
    }
    auto applied = rewriter_.apply(m, std::move(replacement).value());
    if (!applied) return refuse(std::move(record), applied.error().message);
    for (auto& [output, label] : new_labels) {
      if (m.pattern->phase == Phase::kFusion) fused_.insert(output);
      labels_[output] = std::move(label);
    }
    for (const auto& change : applied->shape_changes) warnings.push_back({anchor, fmt::format("{}: {}", anchor, change)});
    record.applied = true;
    for (auto& w : warnings) {
      report_.warnings.push_back({record.id, record.pattern, std::move(w.node), std::move(w.message)});
    }
    report_.matches.push_back(std::move(record));
    return std::move(applied->touched);
  }

  void report_progress(std::string_view stage, double fraction) const {
    if (progress_) progress_(stage, fraction);
  }

  // A match that stays unapplied is reported once, however many passes meet it.
  std::nullopt_t refuse(MatchRecord record, std::string reason) {
    if (refused_.insert(record.id).second) {
      record.reason = std::move(reason);
      report_.matches.push_back(std::move(record));
    }
    return std::nullopt;
  }

  int64_t opset_;
  ExternalData* data_;
  const Options& options_;
  Report& report_;
  const Target& target_;
  GraphView::Labels& labels_;
  const ProgressFn& progress_;
  Rewriter rewriter_;
  std::unordered_set<std::string> refused_;
  std::unordered_set<std::string> fused_;  // MatchContext::fused
};

}  // namespace

Status run_phases(onnx::ModelProto& model, const Options& options, GraphView::Labels& labels, Report& report,
                  const ProgressFn& progress, ExternalData* data) {
  return Driver(model, options, labels, report, progress, Rewriter::Mode::kIncremental, data).run();
}

Status run_phases_rebuilding(onnx::ModelProto& model, const Options& options, GraphView::Labels& labels,
                             Report& report) {
  return Driver(model, options, labels, report, ProgressFn{}, Rewriter::Mode::kFullRebuild).run();
}

}  // namespace lattice
