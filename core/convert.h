#pragma once
// The one entry point: model bytes + options in, converted bytes + report out. The native CLI,
// the wasm module and the tests are thin shells over these two functions.
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "core/options.h"
#include "core/progress.h"
#include "core/report/report.h"
#include "core/util/result.h"

namespace lattice {

struct ConvertResult {
  Report report;
  // The serialised model when at least one rewrite was applied.
  std::optional<std::string> converted;

  // The bytes to write: the converted model, or the input itself when nothing was applied
  // (byte-identical, and no copy of a large model); nullopt for a dry run.
  std::optional<std::string_view> output(std::string_view input) const {
    if (report.options.dry_run) return std::nullopt;
    if (converted) return std::string_view(*converted);
    return input;
  }
};

// `progress` hears of each stage as it starts: parse, validate, the conversion and fusion passes,
// audit, save, then "done" with fraction 1 (only on success).
Result<ConvertResult> convert(std::span<const uint8_t> bytes, const Options& options, const ProgressFn& progress = {});

// The plan and the audit without converting: `convert` with dry_run set.
Result<Report> inspect(std::span<const uint8_t> bytes, const Options& options);

}  // namespace lattice
