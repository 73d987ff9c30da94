#include "core/cli/cli.h"

#include <algorithm>
#include <optional>

#include <fmt/ranges.h>

#include "core/cli/batch.h"
#include "core/cli/check_request.h"
#include "core/cli/convert_file.h"
#include "core/cli/files.h"
#include "core/cli/model_input.h"
#include "core/option_table.h"
#include "core/pattern/registry.h"
#include "core/patterns/lattice/hardware.h"
#include "core/report/summary.h"
#include "core/util/utf8.h"

namespace lattice {
namespace {

// Each command's synopsis, then its flags one per line from the option table (`COMMAND --help`).
constexpr std::string_view kConvertUsage =
    "  onnx-lattice convert IN.onnx [-o OUT.onnx|-] [flags]\n"
    "  onnx-lattice convert - -o OUT.onnx|- [flags]   the model from standard input\n"
    "  onnx-lattice convert IN.onnx|FOLDER ... [-d OUTDIR] [flags]   several models: a line each and a summary\n";
constexpr std::string_view kCheckUsage =
    "  onnx-lattice check ORIGINAL.onnx CANDIDATE.onnx [flags]   run both in onnxruntime and compare (Node CLI only)\n";
constexpr std::string_view kInspectUsage = "  onnx-lattice inspect IN.onnx|- [flags]   plan + audit, writes nothing (- reads standard input)\n";
constexpr std::string_view kPatternsUsage = "  onnx-lattice patterns [--json]          the pattern catalogue\n";
constexpr std::string_view kHardwareUsage =
    "  onnx-lattice hardware [--json]          the hardware table, with the source of each row\n";
// The command's bit in the option table (core/option_table.h); 0 for an unknown command.
unsigned command_bit(std::string_view command) {
  constexpr std::pair<std::string_view, CommandBit> kCommands[] = {{"convert", kConvertCommand},
      {"inspect", kInspectCommand}, {"check", kCheckCommand}, {"patterns", kPatternsCommand}, {"hardware", kHardwareCommand}};
  for (auto [name, bit] : kCommands) {
    if (name == command) return bit;
  }
  return 0;
}

// The command's flags, one line each: "  -o, --output FILE   the converted model; ...".
std::string flag_lines(std::string_view command) {
  std::string out;
  for (const OptionRow& row : option_rows()) {
    if (row.flag.empty() || !(row.commands & command_bit(command))) continue;
    std::string names = row.alias.empty() ? std::string(row.flag) : fmt::format("{}, {}", row.alias, row.flag);
    if (!row.value.empty()) names += fmt::format(" {}", row.value);
    out += fmt::format("  {:<32} {}\n", names, option_help(row));
  }
  return out;
}

// After a usage error: the command's synopsis and where its flags are listed.
std::string short_usage(std::string_view command) {
  std::string_view synopsis = command == "convert"    ? kConvertUsage
                              : command == "inspect"  ? kInspectUsage
                              : command == "patterns" ? kPatternsUsage
                              : command == "hardware" ? kHardwareUsage
                                                      : std::string_view();
  if (command == "check") synopsis = kCheckUsage;
  if (synopsis.empty()) return "run 'onnx-lattice --help' for the commands\n";
  return fmt::format("usage:\n{}run 'onnx-lattice {} --help' for its flags\n", synopsis, command);
}

std::string usage(std::string_view command = "") {
  if (command == "convert") return fmt::format("usage:\n{}\n{}{}", kConvertUsage, flag_lines(command), exit_status_help());
  if (command == "check") {
    return fmt::format("usage:\n{}\n{}{}\nIn the native CLI: {}.\n", kCheckUsage, flag_lines(command),
                       exit_status_help(true), kNoRuntime);
  }
  if (command == "inspect") return fmt::format("usage:\n{}\n{}{}", kInspectUsage, flag_lines(command), exit_status_help());
  if (command == "patterns") return fmt::format("usage:\n{}\n{}", kPatternsUsage, flag_lines(command));
  if (command == "hardware") return fmt::format("usage:\n{}\n{}", kHardwareUsage, flag_lines(command));
  return fmt::format("usage:\n{}{}{}{}{}  onnx-lattice --version | --help\n  onnx-lattice COMMAND --help   that command's flags\n{}",
                     kConvertUsage, kInspectUsage, kCheckUsage, kPatternsUsage, kHardwareUsage, exit_status_help());
}

// A failure as --json prints it: {"error": {code, message, path?, errno?}}, codes as the Node API's.
std::string error_json(const Error& e) {
  Json error = Json::object();
  error.set("code", error_code(e.kind));
  error.set("message", printable(e.message));
  if (!e.path.empty()) error.set("path", e.path);
  if (!e.errno_name.empty()) error.set("errno", e.errno_name);
  return Json::object().set("error", std::move(error)).dump();
}

struct UsageError {
  std::string message;
};

// The parsed command line.
struct Command {
  std::string name;
  bool help = false;
  FileJob job;  // job.input: the first input
  std::vector<std::string> inputs;
  std::string out_dir;
  bool json = false, quiet = false, reports = false, fail_on_unsupported = false;
  CheckFlags check;  // `check ORIGINAL CANDIDATE` (inputs[0], inputs[1]), `convert --check`
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

// The check's own flags, as the table has them: those convert and check both take and only the
// Node CLI runs ("--layerwise, --seed, ... and --simulate").
std::string check_flags() {
  std::vector<std::string_view> flags;
  for (const OptionRow& row : option_rows()) {
    if (!row.flag.empty() && (row.commands & kConvertCommand) && (row.commands & kCheckCommand) &&
        !(row.shells & kNativeCli)) {
      flags.push_back(row.flag);
    }
  }
  return fmt::format("{} and {}", fmt::join(flags.begin(), flags.end() - 1, ", "), flags.back());
}

// What a batch (several inputs, a folder, or -d) cannot take: one output's names, one stdout.
std::optional<UsageError> batch_conflict(const Command& cmd) {
  const char* what = !cmd.job.output.empty() ? "-o" : !cmd.job.report_path.empty() ? "--report" : cmd.json ? "--json" : nullptr;
  if (what == nullptr) return std::nullopt;
  return UsageError{fmt::format("{} names one model's output; for several models (or a folder) give -d OUTDIR, "
                                "and --reports for their reports", what)};
}

std::optional<UsageError> parse(const std::vector<std::string>& args, Command& cmd) {
  if (args.empty()) return UsageError{"no command given"};
  cmd.name = args[0];
  const unsigned command = command_bit(cmd.name);
  if (command == 0) return UsageError{fmt::format("unknown command '{}'", cmd.name)};
  // Which flags each command takes is the option table's; a flag with a value consumes the next
  // argument.
  const bool convert = cmd.name == "convert", inspect = cmd.name == "inspect", check = cmd.name == "check";
  cmd.job.inspect = inspect;
  bool only_files = false;          // after `--`
  std::vector<std::string> given;   // single-valued flags seen, to refuse a second one
  for (size_t i = 1; i < args.size(); ++i) {
    std::string flag = args[i];
    if (!only_files && flag == "--") {
      only_files = true;
      continue;
    }
    if (only_files) flag = "";  // a file name, whatever it looks like
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
    // A second -o, --report or --target would silently win over the first: refused.
    std::string single = flag == "--output" ? "-o" : flag == "--out-dir" ? "-d" : flag;
    if (single == "-o" || single == "-d" || single == "--report" || single == "--target") {
      if (std::find(given.begin(), given.end(), single) != given.end()) {
        return UsageError{fmt::format("{} given twice", single)};
      }
      given.push_back(single);
    }
    std::optional<std::string> v;
    if ((check || convert) && !flag.empty()) {
      auto taken = parse_check_flag(flag, value, cmd.check);
      if (!taken) return UsageError{taken.error().message};
      if (*taken) continue;
    }
    if ((flag == "--help" || flag == "-h") && !inline_value) {
      cmd.help = true;
      return std::nullopt;
    }
    // A switch given a value (--quiet=1) is no option of the command.
    const OptionRow* row = find_flag(flag, command);
    if (row != nullptr && row->value.empty() && inline_value) row = nullptr;
    if (row == nullptr) {
      if (flag.starts_with("-") && flag != "-") {
        return UsageError{fmt::format("'{}' is not an option of '{}'", args[i], cmd.name)};
      }
      if (!(convert || (inspect && cmd.inputs.empty()) || (check && cmd.inputs.size() < 2))) {
        return UsageError{fmt::format("unexpected argument '{}'", args[i])};
      }
      cmd.inputs.push_back(args[i]);
      continue;
    }
    if (!row->value.empty() && !(v = value())) return UsageError{fmt::format("{} needs {}", flag, row->needs)};
    switch (row->id) {
      case OptionId::kOutput: cmd.job.output = *v; break;
      case OptionId::kOutDir: cmd.out_dir = *v; break;
      case OptionId::kReports: cmd.reports = true; break;
      case OptionId::kFailOnUnsupported: cmd.fail_on_unsupported = true; break;
      case OptionId::kReport: cmd.job.report_path = *v; break;
      case OptionId::kTarget: cmd.job.options.target = *v; break;
      case OptionId::kOnly: cmd.job.options.only = split_list(*v); break;
      case OptionId::kSkip: for (auto& p : split_list(*v)) cmd.job.options.skip.push_back(p); break;
      case OptionId::kSkipMatches: for (auto& id : split_list(*v)) cmd.job.options.skip_matches.push_back(id); break;
      case OptionId::kFpqTwin:
        if (v->empty() || *v == "-") return UsageError{fmt::format("{} needs {}", flag, row->needs)};
        cmd.check.fpq_twin = *v;
        break;
      case OptionId::kCheck: cmd.check.requested = true; break;
      case OptionId::kInputShapes: {
        auto pin = parse_input_shape(*v);
        if (!pin) return UsageError{pin.error().message};
        cmd.job.options.input_shapes.push_back(std::move(pin).value());
        break;
      }
      case OptionId::kSnapWeights: {
        auto method = parse_snap_weights(*v);
        if (!method) return UsageError{fmt::format("--snap-weights '{}' is not reinit or transfer", *v)};
        cmd.job.options.snap_weights = *method;
        break;
      }
      case OptionId::kFixedPoint: {
        auto scheme = parse_fixed_point(*v);
        if (!scheme) return UsageError{scheme.error().message};
        cmd.job.options.fixed_point = *scheme;
        break;
      }
      case OptionId::kFoldBatchNorm:
      case OptionId::kNoFoldBatchNorm: {
        bool fold = row->id == OptionId::kFoldBatchNorm;
        if (cmd.job.options.fold_batch_norm && *cmd.job.options.fold_batch_norm != fold) {
          return UsageError{"--fold-bn and --no-fold-bn cannot be used together"};
        }
        cmd.job.options.fold_batch_norm = fold;
        break;
      }
      case OptionId::kDryRun: cmd.job.options.dry_run = true; break;
      case OptionId::kExternalData:
      case OptionId::kInline: {
        auto layout = row->id == OptionId::kInline ? DataLayout::kInline : DataLayout::kExternal;
        if (cmd.job.options.layout != DataLayout::kKeep && cmd.job.options.layout != layout) {
          return UsageError{"--external-data and --inline cannot be used together"};
        }
        cmd.job.options.layout = layout;
        break;
      }
      case OptionId::kQuiet: cmd.quiet = true; break;
      case OptionId::kJson: cmd.json = true; break;
      default:
        // The check's flags were taken above; the Node API's keys have no flag.
        return UsageError{fmt::format("'{}' is not an option of '{}'", args[i], cmd.name)};
    }
  }
  if ((convert || inspect) && cmd.inputs.empty()) return UsageError{"no input model given"};
  if (check && cmd.inputs.size() < 2) return UsageError{"check needs two models: ORIGINAL.onnx CANDIDATE.onnx"};
  if (convert && !cmd.check.requested && cmd.check.any_given()) {
    return UsageError{fmt::format("{} are the check's: add --check{}", check_flags(),
                                  cmd.check.image_resize || cmd.check.image_scale || cmd.check.image_order
                                      ? " (the --image-* flags also read --calibration's images)"
                                      : "")};
  }
  if (check && (cmd.check.repair || !cmd.check.calibration.empty())) return UsageError{"--repair and --calibration are convert's"};
  if (auto gate = gate_conflict(cmd.check); !gate.empty()) return UsageError{gate};
  if (!cmd.check.calibration.empty() && !cmd.check.repair && cmd.job.options.fixed_point != FixedPoint::kFpq) {
    return UsageError{"--calibration is what --repair fits, or what --fixed-point fpq's range fit measures: add one"};
  }
  if (check) cmd.check.requested = true;
  if (cmd.check.runs_models() && convert && (cmd.job.options.dry_run || cmd.job.output == "-" || cmd.inputs.size() > 1 ||
                                         !cmd.out_dir.empty())) {
    return UsageError{fmt::format("{} runs the converted model, so it needs one model and -o FILE (not -, nor --dry-run)",
                                  cmd.check.requested ? "--check" : cmd.check.repair ? "--repair" : "--calibration")};
  }
  if (cmd.check.fpq_twin) {
    // The twin is made from the written output, so there must be exactly one, in a file.
    if (cmd.job.options.dry_run || cmd.job.output == "-" || cmd.inputs.size() > 1 || !cmd.out_dir.empty()) {
      return UsageError{"--fpq-twin is made from the converted model, so it needs one model and -o FILE (not -, nor "
                        "--dry-run)"};
    }
    if (*cmd.check.fpq_twin == cmd.job.output || *cmd.check.fpq_twin == cmd.job.report_path) {
      return UsageError{fmt::format("--fpq-twin '{}' would overwrite the {}", *cmd.check.fpq_twin,
                                    *cmd.check.fpq_twin == cmd.job.output ? "converted model" : "report")};
    }
  }
  const bool reads_stdin = std::find(cmd.inputs.begin(), cmd.inputs.end(), kStandardInput) != cmd.inputs.end();
  if (check && reads_stdin) {
    return UsageError{"check loads both models from their files (onnxruntime reads them by path); '-' (standard "
                      "input) is not one"};
  }
  if (cmd.check.runs_models() && reads_stdin) {
    return UsageError{fmt::format("{} runs the input model too, which standard input cannot give a second time: give it "
                                  "as a file", cmd.check.requested ? "--check" : "--repair")};
  }
  if (!cmd.inputs.empty()) cmd.job.input = cmd.inputs[0];
  if (convert && reads_stdin && (cmd.inputs.size() > 1 || !cmd.out_dir.empty())) {
    // Standard input holds one model, with no name to derive an output's name from.
    return UsageError{"- (standard input) is one model, converted with -o FILE; it cannot be part of several inputs "
                      "or -d"};
  }
  if (convert && (cmd.inputs.size() > 1 || !cmd.out_dir.empty())) {
    if (auto problem = batch_conflict(cmd)) return problem;
  } else if (cmd.reports) {
    return UsageError{"--reports is for several models (or -d); give --report FILE for one"};
  }
  if (cmd.job.output == "-" && cmd.job.report_path == "-") {
    return UsageError{"-o - writes the model to standard output; --report - cannot share it"};
  }
  if (cmd.job.output == "-" && cmd.json) {
    return UsageError{"-o - writes the model to standard output; --json cannot share it"};
  }
  if (auto s = check_options(cmd.job.options); !s) return UsageError{s.error().message};
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
    if (cmd_.check.runs_models() && !host_.has_runtime()) {
      std::string_view why = cmd_.check.repair ? kNoRuntimeToRepair : cmd_.check.requested ? kNoRuntime : kNoRuntimeToFitRanges;
      return fail(options_error("{}", why));
    }
    if (cmd_.check.fpq_twin && !host_.has_runtime()) return fail(options_error("{}", kNoFpqTwin));
    if (cmd_.name == "check") {
      host_.request_check(check_request("check", cmd_.inputs[0], cmd_.inputs[1], cmd_.check, cmd_.job.options, "",
                                        nullptr, cmd_.json).dump(false));
      return kExitOk;
    }
    if (cmd_.name == "convert" && is_batch()) {
      if (auto problem = batch_conflict(cmd_)) return fail(options_error("{}", problem->message));
      return run_batch({cmd_.inputs, cmd_.out_dir, cmd_.job.options, cmd_.reports, cmd_.quiet, cmd_.fail_on_unsupported},
                       host_);
    }
    FileProgress progress;
    if (progress_visible()) {
      progress.stages = [this](std::string_view stage, double fraction) {
        if (stage != "done") show_progress(stage, fraction);
      };
      progress.writing = [this](double share) {
        // "writing" alone as it starts; then each percent once, as the folded weights are computed.
        int percent = static_cast<int>(share * 100);
        if (writing_percent_ >= 0 && percent == writing_percent_) return;
        show_progress("writing", writing_percent_ < 0 ? std::nullopt : std::optional<double>(percent / 100.0));
        writing_percent_ = percent;
      };
    }
    FileJob job = cmd_.job;
    // What the host runs and rewrites is written once it has: until then the files are staged.
    job.staged = cmd_.check.needs_host();
    if (cmd_.check.runs_models()) {
      // The check's sizes and options are the host's to judge, on the input's description, before
      // anything is converted or written.
      job.before_conversion = [this](const Json& description) -> Status {
        Json request = check_request("convert", cmd_.job.input, "", cmd_.check, cmd_.job.options);
        std::string problem = host_.prepare_check(request.set("description", description).dump(false));
        if (!problem.empty()) return options_error("{}", problem);
        return ok_status();
      };
    }
    auto result = convert_file(job, host_, progress);
    clear_progress();
    if (!result) return fail(result.error());
    const int status = cmd_.fail_on_unsupported && !result->report.unsupported.empty() ? kExitUnsupported : kExitOk;
    if (cmd_.job.inspect) {
      host_.out(cmd_.json ? result->report_json : format_summary(result->report, input_name(cmd_.job.input), ""));
      return status;
    }
    if (cmd_.check.needs_host()) {
      // The host repairs, runs the check and writes the FPQ twin, then writes the report out again with the check in it, and prints it.
      Json full = result->report.to_json();
      Json request = check_request("convert", cmd_.job.input, result->output, cmd_.check, cmd_.job.options,
                                   cmd_.job.report_path, &full, cmd_.json);
      // The host runs the staged files, rewrites them, and places them all or none.
      if (const auto& staged = result->staged) {
        auto file = [](const StagedFile& f) {
          return Json::object().set("temporary", f.temporary).set("resolved", f.resolved).set("path", f.path);
        };
        Json files = Json::object().set("model", file(staged->model));
        if (staged->data) files.set("data", file(*staged->data).set("location", staged->data_location));
        if (staged->report) files.set("report", file(*staged->report));
        request.set("staged", std::move(files));
      }
      host_.request_check(request.dump(false));
    }
    if (!cmd_.check.runs_models() && (cmd_.job.report_path == "-" || cmd_.json)) host_.out(result->report_json);
    if (!cmd_.quiet && cmd_.job.report_path != "-" && !cmd_.json) {
      // With the model on standard output, the summary goes to standard error.
      std::string summary = format_summary(result->report, input_name(cmd_.job.input), result->output);
      result->output == "-" ? host_.err(summary) : host_.out(summary);
    }
    return status;
  }

 private:
  // Several inputs, -d, or a folder as the one input.
  bool is_batch() {
    if (cmd_.inputs.size() > 1 || !cmd_.out_dir.empty()) return true;
    if (cmd_.job.input == kStandardInput) return false;
    auto input = resolve(host_, cmd_.job.input);
    return input && input->stat.kind == FileStat::Kind::kDirectory;
  }

  // One line on stderr naming what is wrong (with --json, {"error": ...} on stdout instead), and
  // the exit status of its kind.
  int fail(const Error& e) {
    if (cmd_.json) {
      host_.out(error_json(e));
    } else {
      // A usage error reads as the parser's ("onnx-lattice: ..."), the others as errors.
      host_.err(fmt::format("onnx-lattice: {}{}\n", e.kind == ErrorKind::kOptions ? "" : "error: ", printable(e.message)));
    }
    return exit_status(e.kind);
  }

  // On a terminal, one line on standard error that each stage of the core overwrites, with its
  // percentage, then "writing"; cleared before anything else is printed. Never in a pipe or a
  // log, where a line per stage would only be noise.
  bool progress_visible() { return !cmd_.quiet && host_.err_is_terminal(); }

  void show_progress(std::string_view stage, std::optional<double> fraction) {
    std::string percent = fraction ? fmt::format(" {:.0f}%", *fraction * 100) : "";
    host_.err(fmt::format("\r\033[Konnx-lattice: {}{}", stage, percent));
    progress_shown_ = true;
  }

  void clear_progress() {
    if (progress_shown_) host_.err("\r\033[K");
    progress_shown_ = false;
  }

  static std::string catalogue_text() {
    std::string s;
    for (const Target* t : all_targets()) {
      s += fmt::format("target {}: {}\n", t->name, t->description);
      for (const Pattern* p : t->conversion) s += fmt::format("  {}\n", p->name);
    }
    s += "\n";
    for (const Pattern* p : all_patterns()) {
      std::string scheme = p->scheme == FixedPoint::kNone ? "" : fmt::format(", --fixed-point {}", fixed_point_name(p->scheme));
      s += fmt::format("{} ({}, {}{})\n  matches: {}\n  emits:   {}\n", p->name, phase_name(p->phase),
                       p->numerically_equivalent ? "numerically equivalent" : "output will differ", scheme, p->matches,
                       p->emits);
    }
    return s;
  }

  const Command& cmd_;
  Host& host_;
  bool progress_shown_ = false;
  int writing_percent_ = -1;  // last shown; -1 before writing starts
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
    // --json anywhere before `--` asks for the error as JSON, even when parsing stopped before it.
    auto end = std::find(args.begin(), args.end(), "--");
    if (cmd.json || std::find(args.begin(), end, "--json") != end) {
      host.out(error_json(options_error("{}", problem->message)));
    } else {
      host.err(fmt::format("onnx-lattice: {}\n{}", printable(problem->message), short_usage(cmd.name)));
    }
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
