#pragma once
// The one entry point: model bytes + options in, converted bytes + report out. The native CLI,
// the wasm module and the tests are thin shells over these two functions.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/onnx/external_data.h"
#include "core/options.h"
#include "core/progress.h"
#include "core/report/report.h"
#include "core/util/result.h"

namespace lattice {

struct ConvertResult {
  Report report;
  // The serialised model when at least one rewrite was applied, or its data layout changed.
  std::optional<std::string> converted;
  // The output's data file (named `data_file` in `convert`), when the output keeps its data
  // outside the model; ranges of the input's data files are copied by whoever writes it.
  std::optional<std::vector<DataSegment>> data;
  // The converted model for a viewer (core/describe.h), when options.describe asks for it.
  std::optional<Json> description;

  // The bytes to write: the converted model, or the input itself when nothing was applied
  // (byte-identical, and no copy of a large model); nullopt for a dry run.
  std::optional<std::string_view> output(std::string_view input) const {
    if (report.options.dry_run) return std::nullopt;
    if (converted) return std::string_view(*converted);
    return input;
  }
};

// `progress` hears of each stage as it starts: parse, validate, the conversion and fusion passes,
// audit, save, then "done" with fraction 1 (only on success). `data` reads the input's external
// tensors (none: such a model is refused); `data_file` is the name the output's data file will
// have beside it (the `location` written into the model).
Result<ConvertResult> convert(std::span<const uint8_t> bytes, const Options& options, const ProgressFn& progress = {},
                              ExternalData* data = nullptr, const std::string& data_file = "");

// The plan and the audit without converting: `convert` with dry_run set.
Result<Report> inspect(std::span<const uint8_t> bytes, const Options& options, ExternalData* data = nullptr);

}  // namespace lattice
