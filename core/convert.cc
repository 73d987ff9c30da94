#include "core/convert.h"

#include <algorithm>
#include <chrono>

#include <fmt/ranges.h>
#include <new>

#include "core/audit.h"
#include "core/input_shapes.h"
#include "core/onnx/model_io.h"
#include "core/onnx/validate.h"
#include "core/pattern/driver.h"

namespace lattice {
namespace {

class Stopwatch {
 public:
  double lap_ms() {
    auto now = std::chrono::steady_clock::now();
    double ms = std::chrono::duration<double, std::milli>(now - start_).count();
    start_ = now;
    return ms;
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// metadata_props saying which tool, target and patterns made this model (SPEC section 5).
void record_provenance(onnx::ModelProto& model, const Report& report) {
  std::vector<std::string> applied;
  for (const auto& m : report.matches) {
    if (m.applied && std::find(applied.begin(), applied.end(), m.pattern) == applied.end()) applied.push_back(m.pattern);
  }
  auto set = [&](const std::string& key, const std::string& value) {
    for (auto& entry : *model.mutable_metadata_props()) {
      if (entry.key() == key) {
        entry.set_value(value);
        return;
      }
    }
    auto* entry = model.add_metadata_props();
    entry->set_key(key);
    entry->set_value(value);
  };
  set("onnx_lattice.version", kToolVersion);
  set("onnx_lattice.target", report.options.target);
  set("onnx_lattice.applied_patterns", fmt::format("{}", fmt::join(applied, ",")));
}

Result<ConvertResult> run(std::span<const uint8_t> bytes, const Options& options) {
  if (auto s = check_options(options); !s) return s.error();
  Stopwatch clock;
  ConvertResult result;
  Report& report = result.report;
  report.options = options;

  auto model = parse_model(bytes);
  if (!model) return model.error();
  if (auto s = validate_model(*model); !s) return s.error();
  report.input = ModelStats::of(*model, bytes.size());
  report.timings_ms.load = clock.lap_ms();

  auto pinned = pin_input_shapes(*model, options);
  if (!pinned) return pinned.error();

  auto labels = GraphView::original_labels(model->graph());
  if (auto s = run_phases(*model, options, labels, report); !s) return s.error();
  audit(*model, options, labels, report);
  if (report.any_applied()) record_provenance(*model, report);
  report.timings_ms.convert = clock.lap_ms();

  // Nothing changed: the output is the input, byte for byte (SPEC section 5). A dry run reports
  // the model it would write, without writing it.
  // Pinned input shapes change the model even when no pattern applies.
  const bool changed = report.any_applied() || *pinned;
  report.output = report.input;
  if (changed && options.dry_run) {
    report.output = ModelStats::of(*model, model->ByteSizeLong());
  } else if (changed) {
    auto out = serialize_model(*model);
    if (!out) return out.error();
    report.output = ModelStats::of(*model, out->size());
    result.converted = std::move(out).value();
  }
  report.timings_ms.save = clock.lap_ms();
  return result;
}

}  // namespace

Result<ConvertResult> convert(std::span<const uint8_t> bytes, const Options& options) {
  // The only exception the core can meet is running out of memory (a huge model in a 4 GB wasm
  // heap): it becomes an error message like any other bad input.
  try {
    return run(bytes, options);
  } catch (const std::bad_alloc&) {
    return error("out of memory while converting a {} byte model", bytes.size());
  }
}

Result<Report> inspect(std::span<const uint8_t> bytes, const Options& options) {
  Options dry = options;
  dry.dry_run = true;
  auto result = convert(bytes, dry);
  if (!result) return result.error();
  return std::move(result->report);
}

}  // namespace lattice
