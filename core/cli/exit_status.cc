#include "core/cli/exit_status.h"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

namespace lattice {
namespace {

constexpr ExitStatus kStatuses[] = {
    {kExitOk, "ok", "success", true, "every comparable output within the tolerance (with a gate: at or above it)"},
    {kExitRejected, "failed", "the model was rejected (nothing written), or its check failed", true,
     "not (or a model does not load or run)"},
    {kExitUsage, "usage", "usage error", true, ""},
    {kExitIO, "io", "a file could not be read or written", false, ""},
    {kExitUnsupported, "unsupported", "--fail-on-unsupported and the target cannot run some node", false, ""},
    {kExitInconclusive, "inconclusive", "the check was inconclusive (its outputs could not have shown a change at the sizes fed)", true, ""},
    {kExitBelowGate, "below_gate", "the check was below its gate (--min-agreement, --min-accuracy)", true, ""},
};

std::string_view check_meaning(const ExitStatus& s) { return !s.check ? "" : s.check_words.empty() ? s.meaning : s.check_words; }

// A batch's statuses, worst first: an I/O error, which may hide any model, then a usage error,
// then a rejected model, then one the target cannot run whole.
constexpr int kBatchWorstFirst[] = {kExitIO, kExitUsage, kExitRejected, kExitUnsupported};

}  // namespace

std::span<const ExitStatus> exit_statuses() { return kStatuses; }

int batch_rank(int status) {
  if (status == kExitOk) return 0;
  const int* it = std::find(std::begin(kBatchWorstFirst), std::end(kBatchWorstFirst), status);
  // A status a batch never gives ranks worst, so that it is not hidden.
  if (it == std::end(kBatchWorstFirst)) return static_cast<int>(std::size(kBatchWorstFirst)) + 1;
  return static_cast<int>(std::end(kBatchWorstFirst) - it);
}

std::string exit_status_help(bool check) {
  std::string out = "\nexit status:\n";
  for (const ExitStatus& s : kStatuses) {
    std::string_view meaning = check ? check_meaning(s) : s.meaning;
    if (!meaning.empty()) out += fmt::format("  {}  {}\n", s.number, meaning);
  }
  if (check) return out;
  out += "  several models: the worst of theirs (";
  for (int status : kBatchWorstFirst) out += (status == kBatchWorstFirst[0] ? "" : ", then ") + std::to_string(status);
  return out + ")\n";
}

Json exit_statuses_json() {
  Json rows = Json::array();
  for (const ExitStatus& s : kStatuses) {
    Json row = Json::object().set("number", s.number).set("name", s.name).set("meaning", s.meaning);
    if (s.check) row.set("check_meaning", check_meaning(s));
    rows.push(std::move(row));
  }
  return rows;
}

}  // namespace lattice
