#include "core/convert.h"

#include <algorithm>
#include <chrono>

#include <fmt/ranges.h>
#include <new>

#include "core/audit.h"
#include "core/describe.h"
#include "core/fixed_point/fit.h"
#include "core/graph/model_index.h"
#include "core/input_shapes.h"
#include "core/onnx/model_io.h"
#include "core/onnx/skeleton.h"
#include "core/onnx/validate.h"
#include "core/pattern/driver.h"
#include "core/quantization.h"

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

// A mistyped id in skip_matches would silently apply the match the user meant to skip.
Status check_skipped_ids(const Report& report, const Options& options, const ConvertCall& call) {
  constexpr size_t kListed = 20;
  if (call.ignore_unknown_skips) return ok_status();
  for (const auto& id : options.skip_matches) {
    if (report.has_match(id)) continue;
    std::vector<std::string_view> ids;
    for (const auto& m : report.matches) {
      if (ids.size() < kListed) ids.push_back(m.id);
    }
    std::string more = report.matches.size() > kListed ? fmt::format(", and {} more", report.matches.size() - kListed) : "";
    return options_error("no match has the id '{}' (this model's matches: {}{})", id,
                         ids.empty() ? "none" : fmt::format("{}", fmt::join(ids, ", ")), more);
  }
  return ok_status();
}

// The model file: protobuf's serialisation with what the skeleton left in the input spliced back in
// as ranges of it.
Result<std::vector<DataSegment>> serialized_segments(onnx::ModelProto& model, ModelSource& source) {
  source.set_aside_produced(model);
  auto serialized = serialize_model(model);
  if (!serialized) return serialized.error();
  return splice_skeleton(std::move(serialized).value());
}

// Tensors kept in data files beside the model (the skeleton's references to the input aside).
bool uses_data_files(onnx::ModelProto& model) {
  bool found = false;
  for_each_tensor(model, [&](onnx::TensorProto& t, const TensorPlace&) {
    found = found || (is_external(t) && !is_reserved_location(stored_ref(t).location));
  });
  return found;
}

// The converted model where options.layout puts its data: the model file's segments, and the data
// file's in `result`; nullopt when the input can be written as it is (nothing `changed`, and no
// tensor to move).
Result<std::optional<std::vector<DataSegment>>> place_data(onnx::ModelProto& model, const Options& options,
                                                           bool changed, bool external_input, ModelSource& source,
                                                           const std::string& data_file, ConvertResult& result) {
  bool external_output =
      options.layout == DataLayout::kExternal || (options.layout == DataLayout::kKeep && external_input);
  if (external_output) {
    if (data_file.empty()) return options_error("the converted model keeps its tensor data in a separate file, which needs a name: give "
                                              "dataFile, the name it will have beside the model (e.g. 'out.onnx.data')");
    // Small tensors the skeleton left in the model file were inline there, and stay inline, as
    // do small ones the conversion produced.
    auto small = [](const ExternalRef& ref) { return is_reserved_location(ref.location) && ref.length < kExternalThreshold; };
    if (auto s = read_back(model, source, small); !s) return s.error();
    auto segments = lay_out_external(model, data_file, kExternalThreshold);
    // No tensor big enough to move: one file, as if the layout had been kept.
    if (segments.empty() && !changed) return std::optional<std::vector<DataSegment>>();
    if (!segments.empty()) {
      auto resolved = source.resolve_produced(std::move(segments));
      if (!resolved) return resolved.error();
      result.data = std::move(resolved).value();
    }
  } else if (external_input) {
    if (auto s = inline_external(model, source); !s) return s.error();
  } else if (!changed) {
    return std::optional<std::vector<DataSegment>>();
  }
  auto segments = serialized_segments(model, source);
  if (!segments) return segments.error();
  auto resolved = source.resolve_produced(std::move(segments).value());
  if (!resolved) return resolved.error();
  return std::optional(std::move(resolved).value());
}

// Where each stage starts on the 0..1 scale: on large models parsing and serialising take most
// of the time, the passes less (a rough split; the bar only has to move honestly).
constexpr double kPassesStart = 0.35, kPassesEnd = 0.75, kSaveStart = 0.8;

void report_progress(const ConvertCall& call, std::string_view stage, double fraction) {
  if (call.progress) call.progress(stage, fraction);
}

}  // namespace

// Everything the analysis decided that writing needs. `input` and the call's data files are the
// caller's and outlive it; the model and the source reading them move with the Conversion.
struct Conversion::State {
  State(ExternalData& input, uint64_t input_size, const Options& options, const ConvertCall& how)
      : size(input_size), call(how), source(input, how.data_files, how.limits.keep_in_file) {
    result.report.options = options;
  }
  uint64_t size;
  ConvertCall call;
  ModelSource source;
  Stopwatch clock;
  ConvertResult result;
  onnx::ModelProto model;
  GraphView::Labels labels;
  std::unique_ptr<ModelIndex> converted;
  bool external_input = false;
  bool changed = false;
};

Conversion::Conversion(std::unique_ptr<State> state) : state_(std::move(state)) {}
Conversion::Conversion(Conversion&&) noexcept = default;
Conversion& Conversion::operator=(Conversion&&) noexcept = default;
Conversion::~Conversion() = default;

const Report& Conversion::report() const { return state_->result.report; }

std::vector<std::string> Conversion::skipped_ids() const {
  std::vector<std::string> ids;
  const Report& report = state_->result.report;
  for (const auto& id : report.options.skip_matches) {
    if (report.has_match(id)) ids.push_back(id);
  }
  return ids;
}

namespace {

Result<Conversion> analyse_model(ExternalData& input, uint64_t size, const Options& options, const ConvertCall& call) {
  if (auto s = check_options(options); !s) return s.error();
  auto state = std::make_unique<Conversion::State>(input, size, options, call);
  ConvertResult& result = state->result;
  Report& report = result.report;
  ModelSource& source = state->source;

  report_progress(call, "parse", 0);
  auto skeleton = split_skeleton(input, size, call.limits.keep_in_file);
  if (!skeleton) return skeleton.error();
  auto parsed = parse_model(as_span(skeleton->bytes), size);
  if (!parsed) return parsed.error();
  onnx::ModelProto& model = state->model;
  model = std::move(parsed).value();
  if (auto s = check_reserved_locations(model, *skeleton); !s) return s.error();
  skeleton->bytes = {};
  report_progress(call, "validate", 0.3);
  if (auto s = validate_model(model, &source); !s) return s.error();
  state->external_input = uses_data_files(model);
  if (auto s = load_needed_values(model, source, call.limits.read_always); !s) return s.error();
  report.input = ModelStats::of(model, size);
  auto& labels = state->labels;
  labels = GraphView::original_labels(model.graph());
  if (call.describe && !options.dry_run) result.input_description = describe_graph(model, labels, size);
  // Pinned input shapes are what the analysis sees, the operator rules included.
  auto pinned = pin_input_shapes(model, options);
  if (!pinned) return pinned.error();
  if (call.before_conversion) {
    if (auto s = call.before_conversion(describe_graph(model, labels, size)); !s) return s.error();
  }
  report.timings_ms.load = state->clock.lap_ms();

  ProgressFn passes;
  if (call.progress) {
    passes = [&](std::string_view stage, double f) { call.progress(stage, kPassesStart + f * (kPassesEnd - kPassesStart)); };
  }
  if (auto s = run_phases(model, options, labels, report, passes, &source); !s) return s.error();
  if (auto s = check_skipped_ids(report, options, call); !s) return s.error();
  report_progress(call, "audit", kPassesEnd);
  // The passes after the rewrites read one index of the graph as written. Laying out its data
  // changes tensors in place, never which nodes and tensors there are, so the description of the
  // output reads it too.
  state->converted = std::make_unique<ModelIndex>(model, labels);
  const ModelIndex& converted = *state->converted;
  audit(converted, options, report);
  report.quantization = describe_quantization(converted.view, options, &source);
  if (auto s = analyse_fixed_point(converted.view, options, &source, report); !s) return s.error();
  if (report.any_applied()) record_provenance(model, report);
  report.timings_ms.convert = state->clock.lap_ms();
  // Nothing changed: the output is the input, byte for byte (SPEC section 5), unless its data
  // moves. Pinned input shapes change the model even when no pattern applies.
  state->changed = report.any_applied() || *pinned;
  return Conversion(std::move(state));
}

// The only exception the core can meet is running out of memory (a huge model in a 4 GB wasm
// heap): it becomes an error message like any other bad input.
template <typename Step>
auto within_memory(uint64_t size, Step step) -> decltype(step()) {
  try {
    return step();
  } catch (const std::bad_alloc&) {
    return Error{fmt::format("out of memory while converting a {} byte model", size), ErrorKind::kMemory};
  }
}

}  // namespace

Result<Conversion> analyse(ExternalData& input, uint64_t size, const Options& options, const ConvertCall& call) {
  return within_memory(size, [&] { return analyse_model(input, size, options, call); });
}

Result<ConvertResult> Conversion::write(const std::string& data_file) && {
  return within_memory(state_->size, [&] { return write_model(data_file); });
}

Result<ConvertResult> Conversion::write_model(const std::string& data_file) {
  State& state = *state_;
  const ConvertCall& call = state.call;
  ConvertResult& result = state.result;
  Report& report = result.report;
  const Options& options = report.options;
  onnx::ModelProto& model = state.model;
  report.output = report.input;
  report_progress(call, "save", kSaveStart);
  if (options.dry_run) {
    // The model it would write, measured without reading or writing any tensor data.
    if (state.changed) {
      auto segments = serialized_segments(model, state.source);
      if (!segments) return segments.error();
      report.output = ModelStats::of(model, size_of(*segments));
    }
  } else {
    auto segments = place_data(model, options, state.changed, state.external_input, state.source, data_file, result);
    if (!segments) return segments.error();
    if (*segments) {
      report.output = ModelStats::of(model, size_of(**segments));
      result.converted = std::move(*segments).value();
    }
  }
  if (call.describe && !options.dry_run) result.description = describe_graph(model, *state.converted, report.output.bytes);
  report.timings_ms.save = state.clock.lap_ms();
  report_progress(call, "done", 1);
  return std::move(result);
}

Result<ConvertResult> convert(ExternalData& input, uint64_t size, const Options& options, const ConvertCall& call) {
  auto conversion = analyse(input, size, options, call);
  if (!conversion) return conversion.error();
  return std::move(*conversion).write(call.data_file);
}

Result<ConvertResult> convert(std::span<const uint8_t> bytes, const Options& options, const ConvertCall& call) {
  SpanData input(bytes);
  return convert(input, bytes.size(), options, call);
}

std::optional<std::string> ConvertResult::output(std::string_view input, ExternalData* data_files) const {
  if (report.options.dry_run) return std::nullopt;
  if (!converted) return std::string(input);
  SpanData model({reinterpret_cast<const uint8_t*>(input.data()), input.size()});
  ModelSource source(model, data_files);
  auto bytes = assemble(*converted, source);
  return bytes ? std::optional(std::move(bytes).value()) : std::nullopt;
}

Result<Report> inspect(std::span<const uint8_t> bytes, const Options& options, ExternalData* data) {
  Options dry = options;
  dry.dry_run = true;
  auto result = convert(bytes, dry, ConvertCall::with_files(data));
  if (!result) return result.error();
  return std::move(result->report);
}

}  // namespace lattice
