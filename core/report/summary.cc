#include "core/report/summary.h"

#include <set>

#include <fmt/ranges.h>

#include "core/util/utf8.h"

namespace lattice {
namespace {

std::string describe_model(const ModelStats& s) {
  return fmt::format("{} bytes, ir_version {}, opset {}, {} nodes", s.bytes, s.ir_version, s.opset, s.nodes);
}

// "Conv 12 → 10, MaxPool 1 → 0": only the op types whose count changed.
std::string op_count_changes(const ModelStats& in, const ModelStats& out) {
  std::set<std::string> ops;
  for (const auto& [op, n] : in.op_counts) ops.insert(op);
  for (const auto& [op, n] : out.op_counts) ops.insert(op);
  std::string text;
  for (const auto& op : ops) {
    auto count = [&](const ModelStats& s) {
      auto it = s.op_counts.find(op);
      return it == s.op_counts.end() ? uint64_t{0} : it->second;
    };
    if (count(in) == count(out)) continue;
    text += fmt::format("{}{} {} -> {}", text.empty() ? "" : ", ", op, count(in), count(out));
  }
  return text.empty() ? "unchanged" : text;
}

}  // namespace

std::string format_summary(const Report& r, const std::string& input_name, const std::string& output_name) {
  std::string s;
  s += fmt::format("{} {}: target {}, BatchNorm folding {}{}\n", kToolName, kToolVersion, r.options.target,
                   r.options.fold_batch_norm ? "on" : "off", r.options.dry_run ? ", dry run" : "");
  s += fmt::format("input   {} ({})\n", input_name, describe_model(r.input));
  if (!output_name.empty()) s += fmt::format("output  {} ({})\n", output_name, describe_model(r.output));
  for (const auto& [name, dims] : r.options.input_shapes) {
    s += fmt::format("pinned  {}: [{}]\n", name, fmt::join(dims, ", "));
  }
  s += fmt::format("ops     {}\n", op_count_changes(r.input, r.output));

  size_t applied = 0;
  for (const auto& m : r.matches) applied += m.applied ? 1 : 0;
  s += fmt::format("\nmatches ({}, {} applied)\n", r.matches.size(), applied);
  for (const auto& m : r.matches) {
    s += fmt::format("  [{}] {}{}\n", m.applied ? "x" : " ", m.id, m.numerically_equivalent ? "" : "  (not equivalent)");
    if (!m.applied && !m.reason.empty()) s += fmt::format("      not applied: {}\n", m.reason);
  }
  s += fmt::format("\nwarnings ({})\n", r.warnings.size());
  for (const auto& w : r.warnings) s += fmt::format("  {}\n", w.message);
  s += fmt::format("\nunsupported on {} ({})\n", r.options.target, r.unsupported.size());
  for (const auto& u : r.unsupported) s += fmt::format("  {} ({}): {}\n", u.node, u.op_type, u.reason);
  return valid_utf8(s);
}

}  // namespace lattice
