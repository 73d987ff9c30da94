#include "core/cli/cli.h"

#include <optional>
#include <span>

#include "core/cli/check_request.h"
#include "core/cli/data_files.h"
#include "core/cli/files.h"
#include "core/convert.h"
#include "core/onnx/model_io.h"
#include "core/pattern/registry.h"
#include "core/patterns/lattice/hardware.h"
#include "core/report/summary.h"
#include "core/util/utf8.h"

namespace lattice {
namespace {

constexpr std::string_view kConvertUsage = R"(  onnx-lattice convert IN.onnx -o OUT.onnx|- [--target lattice|lattice-advanced|none]
                       [--no-fold-bn] [--only P1,P2] [--skip P3] [--skip-match ID,...]
                       [--report REPORT.json|-] [--dry-run] [--quiet] [--external-data|--inline]
                       [--input-shape NAME:1,3,640,640 ...]
                       [--check [--layerwise] [--seed N] [--input-range LO,HI] [--rtol R] [--atol A]]
)";
constexpr std::string_view kInspectUsage =
    "  onnx-lattice inspect IN.onnx [--target ...] [--no-fold-bn] [--only ...] [--skip ...] [--input-shape ...] [--json]\n";
constexpr std::string_view kCheckUsage =
    "  onnx-lattice check ORIGINAL.onnx CANDIDATE.onnx [--json] [--layerwise] [--seed N] [--input-range LO,HI]\n"
    "                     [--rtol R] [--atol A] [--input-shape NAME:1,3,640,640 ...]   (Node CLI only)\n";
constexpr std::string_view kPatternsUsage = "  onnx-lattice patterns [--json]\n";
constexpr std::string_view kHardwareUsage =
    "  onnx-lattice hardware [--json]        the hardware table, with the source of each row\n";
constexpr std::string_view kExitStatus =
    "\nexit status: 0 success, 1 the model was rejected (nothing written), 2 usage error\n";

std::string usage(std::string_view command = "") {
  if (command == "convert") return fmt::format("usage:\n{}{}", kConvertUsage, kExitStatus);
  if (command == "inspect") return fmt::format("usage:\n{}{}", kInspectUsage, kExitStatus);
  if (command == "check") {
    return fmt::format("usage:\n{}\nexit status: 0 every comparable output within the tolerance, 1 not (or a model does "
                       "not load or run), 2 usage error\n\nIn the native CLI: {}.\n", kCheckUsage, kNoRuntime);
  }
  if (command == "patterns") return fmt::format("usage:\n{}", kPatternsUsage);
  if (command == "hardware") return fmt::format("usage:\n{}", kHardwareUsage);
  return fmt::format("usage:\n{}{}{}{}{}  onnx-lattice --version | --help\n{}", kConvertUsage, kInspectUsage,
                     kCheckUsage, kPatternsUsage, kHardwareUsage, kExitStatus);
}

struct UsageError {
  std::string message;
};

// The parsed command line.
struct Command {
  std::string name;
  bool help = false;
  std::string input, output, report_path;
  std::string candidate;  // check's second model
  Options options;
  CheckFlags check;
  bool json = false, quiet = false;
};

std::vector<std::string> split_list(const std::string& value) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string::npos) comma = value.size();
    if (comma > start) items.push_back(value.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

std::optional<UsageError> parse(const std::vector<std::string>& args, Command& cmd) {
  if (args.empty()) return UsageError{"no command given"};
  cmd.name = args[0];
  if (cmd.name != "convert" && cmd.name != "inspect" && cmd.name != "check" && cmd.name != "patterns" &&
      cmd.name != "hardware") {
    return UsageError{fmt::format("unknown command '{}'", cmd.name)};
  }
  // Which flags each command takes; a flag listed with a value consumes the next argument.
  const bool convert = cmd.name == "convert", inspect = cmd.name == "inspect", check = cmd.name == "check";
  for (size_t i = 1; i < args.size(); ++i) {
    std::string flag = args[i];
    std::optional<std::string> inline_value;
    if (flag.starts_with("--") && flag.find('=') != std::string::npos) {
      inline_value = flag.substr(flag.find('=') + 1);
      flag = flag.substr(0, flag.find('='));
    }
    auto value = [&]() -> std::optional<std::string> {
      if (inline_value) return inline_value;
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    };
    std::optional<std::string> v;
    if (check || convert) {
      auto taken = parse_check_flag(flag, value, cmd.check);
      if (!taken) return UsageError{taken.error().message};
      if (*taken) continue;
    }
    if ((flag == "--help" || flag == "-h") && !inline_value) {
      cmd.help = true;
      return std::nullopt;
    } else if ((flag == "-o" || flag == "--output") && (convert)) {
      if (!(v = value())) return UsageError{flag + " needs a file name"};
      cmd.output = *v;
    } else if (flag == "--report" && (convert)) {
      if (!(v = value())) return UsageError{"--report needs a file name (or - for stdout)"};
      cmd.report_path = *v;
    } else if (flag == "--target" && (convert || inspect)) {
      if (!(v = value())) return UsageError{"--target needs a name"};
      cmd.options.target = *v;
    } else if (flag == "--only" && (convert || inspect)) {
      if (!(v = value())) return UsageError{"--only needs pattern names"};
      cmd.options.only = split_list(*v);
    } else if (flag == "--skip" && (convert || inspect)) {
      if (!(v = value())) return UsageError{"--skip needs pattern names"};
      for (auto& p : split_list(*v)) cmd.options.skip.push_back(p);
    } else if (flag == "--skip-match" && (convert || inspect)) {
      if (!(v = value())) return UsageError{"--skip-match needs match ids"};
      for (auto& id : split_list(*v)) cmd.options.skip_matches.push_back(id);
    } else if (flag == "--check" && !inline_value && convert) {
      cmd.check.requested = true;
    } else if (flag == "--input-shape" && (convert || inspect || check)) {
      if (!(v = value())) return UsageError{"--input-shape needs NAME:d0,d1,..."};
      auto pin = parse_input_shape(*v);
      if (!pin) return UsageError{pin.error().message};
      cmd.options.input_shapes.push_back(std::move(pin).value());
    } else if (flag == "--no-fold-bn" && !inline_value && (convert || inspect)) {
      cmd.options.fold_batch_norm = false;
    } else if (flag == "--dry-run" && !inline_value && (convert)) {
      cmd.options.dry_run = true;
    } else if ((flag == "--external-data" || flag == "--inline") && !inline_value && (convert)) {
      auto layout = flag == "--inline" ? DataLayout::kInline : DataLayout::kExternal;
      if (cmd.options.layout != DataLayout::kKeep && cmd.options.layout != layout) {
        return UsageError{"--external-data and --inline cannot be used together"};
      }
      cmd.options.layout = layout;
    } else if (flag == "--quiet" && !inline_value && (convert)) {
      cmd.quiet = true;
    } else if (flag == "--json" && !inline_value && (inspect || check || cmd.name == "patterns" || cmd.name == "hardware")) {
      cmd.json = true;
    } else if (flag.starts_with("-") && flag != "-") {
      return UsageError{fmt::format("'{}' is not an option of '{}'", args[i], cmd.name)};
    } else if ((convert || inspect || check) && cmd.input.empty()) {
      cmd.input = args[i];
    } else if (check && cmd.candidate.empty()) {
      cmd.candidate = args[i];
    } else {
      return UsageError{fmt::format("unexpected argument '{}'", args[i])};
    }
  }
  if ((convert || inspect) && cmd.input.empty()) return UsageError{"no input model given"};
  if (check && cmd.candidate.empty()) return UsageError{"check needs two models: ORIGINAL.onnx CANDIDATE.onnx"};
  if (convert && !cmd.check.requested && cmd.check.any_given()) {
    return UsageError{"--layerwise, --seed, --input-range, --rtol and --atol are the check's: add --check"};
  }
  if (check) cmd.check.requested = true;
  if (cmd.check.requested && convert && (cmd.options.dry_run || cmd.output == "-")) {
    return UsageError{"--check runs the converted model, so it needs -o FILE (not -, nor --dry-run)"};
  }
  if (convert && cmd.output.empty() && !cmd.options.dry_run) {
    return UsageError{"convert needs -o OUT.onnx (or --dry-run)"};
  }
  if (cmd.output == "-" && cmd.report_path == "-") {
    return UsageError{"-o - writes the model to standard output; --report - cannot share it"};
  }
  if (auto s = check_options(cmd.options); !s) return UsageError{s.error().message};
  return std::nullopt;
}


class Runner {
 public:
  Runner(const Command& cmd, Host& host) : cmd_(cmd), host_(host) {}

  int run() {
    if (cmd_.name == "patterns") {
      host_.out(cmd_.json ? catalogue_json().dump() : catalogue_text());
      return kExitOk;
    }
    if (cmd_.name == "hardware") {
      host_.out(cmd_.json ? hardware_json().dump() : hardware_text());
      return kExitOk;
    }
    // Said before any work: a conversion the check cannot follow is not worth starting.
    if (cmd_.check.requested && !host_.has_runtime()) return usage_error(std::string(kNoRuntime));
    if (cmd_.name == "check") {
      host_.request_check(check_request("check", cmd_.input, cmd_.candidate, cmd_.check, cmd_.options, "", nullptr,
                                        cmd_.json).dump(false));
      return kExitOk;
    }
    // Where the outputs go is checked before the model is read: a wrong path is a usage error,
    // found before minutes of work, and never a file clobbered.
    auto input = resolve(host_, cmd_.input);
    if (!input) return reject(fmt::format("cannot read {}", input.error().message));
    std::vector<Destination> destinations;
    if (cmd_.name == "convert" && !cmd_.options.dry_run) {
      auto model = destination(host_, "-o", cmd_.output);
      if (!model) return usage_error(model.error().message);
      destinations.push_back(std::move(model).value());
    }
    if (!cmd_.report_path.empty() && cmd_.report_path != "-") {
      auto report = destination(host_, "--report", cmd_.report_path);
      if (!report) return usage_error(report.error().message);
      if (report->target.same_file(*input)) {
        return usage_error(fmt::format("--report '{}' would overwrite the input model", cmd_.report_path));
      }
      if (!destinations.empty() && !destinations[0].to_stdout && report->target.same_file(destinations[0].target)) {
        return usage_error(fmt::format("-o and --report name the same file '{}'", cmd_.report_path));
      }
      destinations.push_back(std::move(report).value());
    }

    if (input->stat.kind == FileStat::Kind::kMissing) {
      return reject(fmt::format("cannot read '{}': No such file or directory", cmd_.input));
    }
    if (input->stat.kind != FileStat::Kind::kRegular) {
      return reject(fmt::format("cannot read '{}': {}", cmd_.input,
                                input->stat.kind == FileStat::Kind::kDirectory ? "Is a directory" : "not a regular file"));
    }
    // A model over the limit is refused before reading gigabytes for nothing. The input is read
    // in ranges, and its tensor data copied by the host as ranges of it; every output is written
    // under a temporary name before any is renamed, so `-o` may name the input itself.
    if (auto s = check_model_size(input->stat.size); !s) return reject(fmt::format("{}: {}", cmd_.input, s.error().message));
    // External data is resolved in the model's folder; the output's data file is named after the
    // model file it belongs to, wherever symlinks put that.
    FolderData data(host_, cmd_.input, input->resolved, input->stat.size);
    std::string data_file = destinations.empty() || destinations[0].to_stdout
                                ? "model.onnx.data"
                                : base_name(destinations[0].target.resolved) + ".data";
    auto result = convert(data, input->stat.size, cmd_.name == "inspect" ? dry(cmd_.options) : cmd_.options,
                          terminal_progress(), &data, data_file);
    clear_progress();
    if (!result) {
      const Error& e = result.error();
      if (e.kind == ErrorKind::kOptions) return usage_error(fmt::format("{}: {}", cmd_.input, e.message));
      return reject(fmt::format("{}: {}", cmd_.input, e.message));
    }
    const Report& report = result->report;
    if (cmd_.name == "inspect") {
      host_.out(cmd_.json ? report.to_json().dump() : format_summary(report, cmd_.input, ""));
      return kExitOk;
    }

    // Nothing applied: the input itself, as one range of it.
    if (!result->converted) result->converted = std::vector<DataSegment>{{"", kInputLocation, 0, input->stat.size, nullptr}};
    auto model = file_pieces(*result->converted, data);
    if (!model) return reject(fmt::format("{}: {}", cmd_.input, model.error().message));
    std::string json = report.to_json().dump();
    std::vector<Output> outputs;
    for (const auto& d : destinations) {
      if (d.flag == "-o") outputs.emplace_back(&d, *model);
      if (d.flag == "--report") outputs.emplace_back(&d, json);
    }
    std::optional<Destination> data_to;
    if (result->data) {
      auto to = data_destination(destinations, *input);
      if (!to) return usage_error(to.error().message);
      data_to = std::move(to).value();
      auto pieces = file_pieces(*result->data, data);
      if (!pieces) return reject(fmt::format("{}: {}", cmd_.input, pieces.error().message));
      outputs.emplace_back(&*data_to, std::move(pieces).value());
    }
    if (!outputs.empty()) show_progress("writing", std::nullopt);
    show_writing_progress(outputs);
    auto written = write_together(host_, outputs);
    clear_progress();
    if (!written) return reject(written.error().message);
    // With a check, the host writes the report out again with the check in it, and prints it.
    if (cmd_.check.requested) {
      Json full = report.to_json();
      host_.request_check(check_request("convert", cmd_.input, cmd_.output, cmd_.check, cmd_.options, cmd_.report_path,
                                        &full).dump(false));
    } else if (cmd_.report_path == "-") {
      host_.out(json);
    }
    if (!cmd_.quiet && cmd_.report_path != "-") {
      // With the model on standard output, the summary goes to standard error.
      std::string summary = format_summary(report, cmd_.input, cmd_.options.dry_run ? "" : cmd_.output);
      cmd_.output == "-" ? host_.err(summary) : host_.out(summary);
    }
    return kExitOk;
  }

 private:
  static std::string base_name(const std::string& path) {
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
  }

  // OUT.onnx.data beside the model's file. Two files cannot go to standard output or a device;
  // found before anything is written.
  Result<Destination> data_destination(const std::vector<Destination>& destinations, const ResolvedPath& input) {
    const Destination& model = destinations[0];
    auto kind = model.target.stat.kind;
    if (model.to_stdout || (kind != FileStat::Kind::kRegular && kind != FileStat::Kind::kMissing)) {
      return error("the converted model keeps its tensor data in a separate file, which -o '{}' cannot hold; give a "
                   "file name, or --inline for one file",
                   cmd_.output);
    }
    auto to = destination(host_, "-o", model.target.resolved + ".data");
    if (!to) return to.error();
    if (to->target.same_file(input)) return error("'{}' would overwrite the input model", to->target.path);
    for (const auto& other : destinations) {
      if (other.flag == "--report" && to->target.same_file(other.target)) {
        return error("--report '{}' names the model's data file", other.target.path);
      }
    }
    return to;
  }

  // A file's segments as pieces the host writes, ranges naming their checked source file.
  static Result<std::vector<Piece>> file_pieces(const std::vector<DataSegment>& segments, FolderData& data) {
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
      auto path = data.path_of(s.location);
      if (!path) return error("cannot read '{}': {}", s.location, path.error().message);
      pieces.push_back({"", std::move(path).value(), s.offset, s.length});
    }
    return pieces;
  }

  static Options dry(Options options) {
    options.dry_run = true;
    return options;
  }

  int reject(const std::string& message) {
    clear_progress();
    host_.err(fmt::format("onnx-lattice: error: {}\n", printable(message)));
    return kExitRejected;
  }

  int usage_error(const std::string& message) {
    clear_progress();
    host_.err(fmt::format("onnx-lattice: {}\n", printable(message)));
    return kExitUsage;
  }

  // On a terminal, one line on standard error that each stage of the core overwrites, with its
  // percentage, then "writing"; cleared before anything else is printed. Never in a pipe or a
  // log, where a line per stage would only be noise.
  bool progress_visible() { return !cmd_.quiet && host_.err_is_terminal(); }

  ProgressFn terminal_progress() {
    if (!progress_visible()) return {};
    return [this](std::string_view stage, double fraction) {
      if (stage != "done") show_progress(stage, fraction);
    };
  }

  void show_progress(std::string_view stage, std::optional<double> fraction) {
    if (!progress_visible()) return;
    std::string percent = fraction ? fmt::format(" {:.0f}%", *fraction * 100) : "";
    host_.err(fmt::format("\r\033[Konnx-lattice: {}{}", stage, percent));
    progress_shown_ = true;
  }

  // Writing computes the folded weights (core/onnx/deferred_data.h), on a large model the longest
  // stage: its percentage is how far into all the files the piece being computed lies. Ranges and
  // new bytes are copied by the host, and counted when the next computed piece starts.
  void show_writing_progress(std::vector<Output>& outputs) {
    if (!progress_visible()) return;
    uint64_t total = 0;
    for (const auto& o : outputs) {
      for (const auto& p : o.pieces) total += p.size();
    }
    uint64_t start = 0;
    for (auto& o : outputs) {
      for (auto& p : o.pieces) {
        uint64_t size = p.size();
        if (p.produce && total > 0) {
          p.produce = [this, inner = std::move(p.produce), start, total](const ByteSink& sink) {
            uint64_t done = start;
            return inner([&](std::string_view bytes) {
              done += bytes.size();
              if (int percent = static_cast<int>(done * 100 / total); percent != writing_percent_) {
                writing_percent_ = percent;
                show_progress("writing", percent / 100.0);
              }
              return sink(bytes);
            });
          };
        }
        start += size;
      }
    }
  }

  void clear_progress() {
    if (progress_shown_) host_.err("\r\033[K");
    progress_shown_ = false;
  }

  static std::string catalogue_text() {
    std::string s;
    for (const Target& t : all_targets()) {
      s += fmt::format("target {}: {}\n", t.name, t.description);
      for (const Pattern* p : t.conversion) s += fmt::format("  {}\n", p->name);
    }
    s += "\n";
    for (const Pattern* p : all_patterns()) {
      s += fmt::format("{} ({}, {})\n  matches: {}\n  emits:   {}\n", p->name, phase_name(p->phase),
                       p->numerically_equivalent ? "numerically equivalent" : "output will differ", p->matches,
                       p->emits);
    }
    return s;
  }

  const Command& cmd_;
  Host& host_;
  bool progress_shown_ = false;
  int writing_percent_ = -1;  // last shown by show_writing_progress
};

}  // namespace

int run_cli(const std::vector<std::string>& args, Host& host) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h" || args[0] == "help")) {
    host.out(usage());
    return kExitOk;
  }
  if (!args.empty() && args[0] == "--version") {
    host.out(fmt::format("{} {}\n", kToolName, kToolVersion));
    return kExitOk;
  }
  Command cmd;
  if (auto problem = parse(args, cmd)) {
    host.err(fmt::format("onnx-lattice: {}\n{}", printable(problem->message), usage(cmd.name)));
    return kExitUsage;
  }
  if (cmd.help) {
    host.out(usage(cmd.name));
    return kExitOk;
  }
  try {
    return Runner(cmd, host).run();
  } catch (const std::bad_alloc&) {
    host.err("onnx-lattice: error: out of memory\n");
    return kExitRejected;
  }
}

}  // namespace lattice
