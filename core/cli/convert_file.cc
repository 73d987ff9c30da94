#include "core/cli/convert_file.h"

#include <optional>

#include "core/cli/data_files.h"
#include "core/cli/files.h"
#include "core/cli/model_input.h"
#include "core/convert.h"
#include "core/onnx/model_io.h"
#include "core/output_name.h"

namespace lattice {
namespace {

std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// OUT.onnx.data beside the model's file. Two files cannot go to standard output or a device;
// found before anything is written.
Result<Destination> data_destination(Host& host, const std::vector<Destination>& destinations,
                                     const ModelInput& input, const std::string& output) {
  const Destination& model = destinations[0];
  auto kind = model.target.stat.kind;
  if (model.to_stdout || (kind != FileStat::Kind::kRegular && kind != FileStat::Kind::kMissing)) {
    return options_error("the converted model keeps its tensor data in a separate file, which -o '{}' cannot hold; "
                         "give a file name, or --inline for one file",
                         output);
  }
  auto to = destination(host, "-o", data_file_name(model.target.resolved));
  if (!to) return to.error();
  if (!input.from_stdin() && to->target.same_file(input.file)) {
    return options_error("'{}' would overwrite the input model", to->target.path);
  }
  for (const auto& other : destinations) {
    if (other.flag == "--report" && to->target.same_file(other.target)) {
      return options_error("--report '{}' names the model's data file", other.target.path);
    }
  }
  return to;
}

// A file's segments as pieces the host writes, ranges naming their checked source file.
Result<std::vector<Piece>> file_pieces(const std::vector<DataSegment>& segments, FolderData& data) {
  std::vector<Piece> pieces;
  for (const auto& s : segments) {
    if (s.deferred) {
      auto produce = [deferred = s.deferred, &data](const ByteSink& sink) {
        auto written = deferred->write(data, sink);
        if (!written) return Status(cannot_compute(written.error()));
        return written;
      };
      pieces.push_back({"", "", 0, s.deferred->length(), std::move(produce)});
      continue;
    }
    if (s.location.empty()) {
      pieces.push_back({s.bytes, "", 0, 0});
      continue;
    }
    if (auto held = data.held(s.location)) {
      pieces.push_back({held->substr(static_cast<size_t>(s.offset), static_cast<size_t>(s.length)), "", 0, 0});
      continue;
    }
    auto path = data.path_of(s.location);
    if (!path) return error("cannot read '{}': {}", s.location, path.error().message);
    pieces.push_back({"", std::move(path).value(), s.offset, s.length});
  }
  return pieces;
}

// Writing computes the folded weights (core/onnx/deferred_data.h), on a large model the longest
// stage: `writing` hears how far into all the files the piece being computed lies. Ranges and new
// bytes are copied by the host, and counted when the next computed piece starts.
void track_writing(std::vector<Output>& outputs, const WritingFn& writing) {
  if (!writing) return;
  uint64_t total = 0;
  for (const auto& o : outputs) {
    for (const auto& p : o.pieces) total += p.size();
  }
  writing(0);
  if (total == 0) return;
  uint64_t start = 0;
  for (auto& o : outputs) {
    for (auto& p : o.pieces) {
      uint64_t size = p.size();
      if (p.produce) {
        p.produce = [writing, inner = std::move(p.produce), start, total](const ByteSink& sink) {
          uint64_t done = start;
          return inner([&](std::string_view bytes) {
            done += bytes.size();
            writing(static_cast<double>(done) / static_cast<double>(total));
            return sink(bytes);
          });
        };
      }
      start += size;
    }
  }
}

// An error of the conversion, prefixed with the input's name.
Error about_input(const std::string& input, const Error& e) {
  Error out = e;
  out.message = fmt::format("{}: {}", input, e.message);
  return out;
}

}  // namespace

std::string default_output(const std::string& input, const Options& options) {
  return output_name(output_stem(input), options, options.skip_matches);
}

Result<FileResult> convert_file(const FileJob& job, Host& host, const FileProgress& progress) {
  FileResult out;
  Options options = job.options;
  if (job.inspect) options.dry_run = true;
  const bool writes_model = !options.dry_run;
  const bool from_stdin = job.input == kStandardInput;
  if (writes_model && job.output.empty() && from_stdin) {
    return options_error("a model read from standard input has no name to put the output beside: give -o FILE "
                         "(or -o - for standard output)");
  }
  if (writes_model) out.output = job.output.empty() ? default_output(job.input, options) : job.output;
  if (out.output == "-" && host.out_is_terminal()) {
    return options_error("-o - writes the model (binary) to standard output, which is a terminal; redirect it to a "
                         "file or a pipe, or give -o FILE");
  }

  // Where the outputs go is checked before the model is read: a wrong path is a usage error,
  // found before minutes of work, and never a file clobbered. Standard input is read whole
  // before anything is written, so an output may name the file it came from.
  std::optional<ResolvedPath> resolved;  // the input file, which no output may replace unasked
  if (!from_stdin) {
    if (auto file = resolve(host, job.input)) resolved = std::move(file).value();
  }
  std::vector<Destination> destinations;
  if (writes_model) {
    auto model = destination(host, "-o", out.output);
    if (!model) return model.error();
    if (resolved && model->target.same_file(*resolved) && job.output.empty()) {
      return options_error("the default output '{}' is the input itself; give -o", out.output);
    }
    destinations.push_back(std::move(model).value());
  }
  if (!job.report_path.empty() && job.report_path != "-") {
    auto report = destination(host, "--report", job.report_path);
    if (!report) return report.error();
    if (resolved && report->target.same_file(*resolved)) {
      return options_error("--report '{}' would overwrite the input model", job.report_path);
    }
    if (!destinations.empty() && !destinations[0].to_stdout && report->target.same_file(destinations[0].target)) {
      return options_error("-o and --report name the same file '{}'", job.report_path);
    }
    destinations.push_back(std::move(report).value());
  }
  for (const auto& d : destinations) {
    if (job.staged && !d.stages()) {
      return options_error("{} '{}' is written only once the converted model has run, so it must be a file", d.flag,
                           d.target.path);
    }
  }

  // A file is read in ranges, and its tensor data copied by the host as ranges of it; every
  // output is written under a temporary name before any is renamed, so `-o` may name the input
  // itself.
  auto input = open_input(host, job.input);
  if (!input) return input.error();
  // External data is resolved in the model's folder; the output's data file is named after the
  // model file it belongs to, wherever symlinks put that.
  FolderData data(host, *input);
  ConvertCall call;
  call.progress = progress.stages;
  call.data_files = &data;
  call.data_file = destinations.empty() || destinations[0].to_stdout ? "model.onnx.data"
                                                                     : data_file_name(base_name(destinations[0].target.resolved));
  call.ignore_unknown_skips = job.ignore_unknown_skips;
  call.before_conversion = job.before_conversion;
  auto result = convert(data, input->size, options, call);
  if (!result) return about_input(input->name, result.error());
  out.report_json = result->report.to_json().dump();
  if (!writes_model) {
    out.report = std::move(result->report);
    return out;
  }

  // Nothing applied: the input itself, as one range of it.
  if (!result->converted) result->converted = std::vector<DataSegment>{{"", kInputLocation, 0, input->size, nullptr}};
  auto model = file_pieces(*result->converted, data);
  if (!model) return about_input(input->name, model.error());
  std::vector<Output> outputs;
  outputs.emplace_back(&destinations[0], std::move(model).value());
  std::optional<Destination> data_to;
  if (result->data) {
    auto to = data_destination(host, destinations, *input, out.output);
    if (!to) return to.error();
    data_to = std::move(to).value();
    auto pieces = file_pieces(*result->data, data);
    if (!pieces) return about_input(input->name, pieces.error());
    outputs.emplace_back(&*data_to, std::move(pieces).value());
  }
  if (destinations.size() > 1) outputs.emplace_back(&destinations[1], out.report_json);
  track_writing(outputs, progress.writing);
  out.report = std::move(result->report);
  if (job.staged) {
    auto staged = stage_together(host, outputs);
    if (!staged) return staged.error();
    // In the order of `outputs`: the model, its data file, the report.
    auto next = staged->begin();
    FileResult::Staged files{*next++, std::nullopt, "", std::nullopt};
    if (data_to) {
      files.data = *next++;
      files.data_location = call.data_file;
    }
    if (destinations.size() > 1) files.report = *next++;
    out.staged = std::move(files);
    return out;
  }
  if (auto written = write_together(host, outputs); !written) return written.error();
  for (const auto& o : outputs) {
    if (!o.to->to_stdout) out.files.push_back(o.to->target.path);
  }
  return out;
}

}  // namespace lattice
