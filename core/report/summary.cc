#include "core/report/summary.h"

#include <map>
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

// "a, b, c and 4 more": enough names to find the nodes without a wall of them.
std::string some_of(const std::vector<std::string>& items) {
  constexpr size_t kShown = 4;
  std::string text;
  for (size_t i = 0; i < items.size() && i < kShown; ++i) text += (i ? "; " : "") + items[i];
  if (items.size() > kShown) text += fmt::format(" and {} more", items.size() - kShown);
  return text;
}

// The audit grouped by what the user would change: one line per group (activation idiom or op)
// and reason, with counts, then a few of its nodes (an idiom's as whole units).
std::string audit_by_group(const std::vector<Unsupported>& unsupported) {
  struct Group {
    size_t nodes = 0;
    std::vector<std::string> items;  // node names, or one "a + b" per activation unit
  };
  std::vector<std::pair<std::string, std::string>> order;  // (group, reason), first seen first
  std::map<std::pair<std::string, std::string>, Group> groups;
  for (const auto& u : unsupported) {
    auto key = std::make_pair(u.group, u.reason);
    auto [it, added] = groups.try_emplace(key);
    if (added) order.push_back(key);
    ++it->second.nodes;
    if (u.unit.empty()) {
      it->second.items.push_back(u.node);
    } else if (u.unit.front() == u.node) {
      it->second.items.push_back(fmt::format("{}", fmt::join(u.unit, " + ")));
    }
  }
  std::string s;
  for (const auto& key : order) {
    const Group& g = groups.at(key);
    bool units = g.items.size() != g.nodes;
    std::string count = units ? fmt::format("{} x {} ({} nodes)", key.first, g.items.size(), g.nodes)
                              : fmt::format("{} x {}", key.first, g.nodes);
    s += fmt::format("  {}: {}\n      {}\n", printable(count), printable(key.second), printable(some_of(g.items)));
  }
  return s;
}

// "fixed point fpq: 12 of 53 layers clip, 3 over the error threshold; 2 of 40 BatchNorms out of
// range", then the findings, one line each.
std::string fixed_point_summary(const FixedPointFit& fit) {
  std::string s = fmt::format("\nfixed point {} ({} finding{})\n", fit.scheme, fit.findings.size(),
                              fit.findings.size() == 1 ? "" : "s");
  if (fit.scheme == "fpq") {
    size_t clip = 0, error = 0, norms = 0;
    for (const auto& l : fit.layers) {
      clip += l.clipped > 0 ? 1 : 0;
      error += l.clipped == 0 && !l.fits ? 1 : 0;
    }
    for (const auto& b : fit.batch_norms) norms += b.fits ? 0 : 1;
    s += fmt::format("  {} of {} layers clip, {} more over the {:.0f} % error threshold; {} of {} BatchNorms out of "
                     "range\n",
                     clip, fit.layers.size(), error, 100 * fit.error_threshold, norms, fit.batch_norms.size());
  }
  for (const auto& f : fit.findings) s += fmt::format("  {}  ({})\n", printable(f.message), f.source);
  return s;
}

}  // namespace

// Every name and message goes through printable(): one line each, whatever the model holds.
std::string format_summary(const Report& r, const std::string& input_name, const std::string& output_name) {
  const auto p = printable;
  std::string s;
  std::string scheme = r.options.fixed_point == FixedPoint::kNone
                           ? ""
                           : fmt::format(", fixed point {}", fixed_point_name(r.options.fixed_point));
  s += fmt::format("{} {}: target {}{}, BatchNorm folding {}{}\n", kToolName, kToolVersion, r.options.target, scheme,
                   r.options.folds_batch_norm() ? "on" : "off", r.options.dry_run ? ", dry run" : "");
  s += fmt::format("input   {} ({})\n", p(input_name), describe_model(r.input));
  if (!output_name.empty()) s += fmt::format("output  {} ({})\n", p(output_name), describe_model(r.output));
  for (const auto& [name, dims] : r.options.input_shapes) {
    s += fmt::format("pinned  {}: [{}]\n", p(name), fmt::join(dims, ", "));
  }
  s += fmt::format("ops     {}\n", p(op_count_changes(r.input, r.output)));

  size_t applied = 0;
  for (const auto& m : r.matches) applied += m.applied ? 1 : 0;
  s += fmt::format("\nmatches ({}, {} applied)\n", r.matches.size(), applied);
  for (const auto& m : r.matches) {
    s += fmt::format("  [{}] {}{}\n", m.applied ? "x" : " ", p(m.id), m.numerically_equivalent ? "" : "  (not equivalent)");
    if (!m.applied && !m.reason.empty()) s += fmt::format("      not applied: {}\n", p(m.reason));
  }
  s += fmt::format("\nwarnings ({})\n", r.warnings.size());
  for (const auto& w : r.warnings) s += fmt::format("  {}\n", p(w.message));
  s += fmt::format("\nunsupported on {} ({} node{})\n", r.options.target, r.unsupported.size(),
                   r.unsupported.size() == 1 ? "" : "s");
  s += audit_by_group(r.unsupported);
  if (r.quantization) {
    s += fmt::format("\nquantization ({}, {} node{})\n  {}\n", r.quantization->form, r.quantization->nodes.size(),
                     r.quantization->nodes.size() == 1 ? "" : "s", printable(r.quantization->message));
  }
  if (r.fixed_point) s += fixed_point_summary(*r.fixed_point);
  return s;
}

}  // namespace lattice
