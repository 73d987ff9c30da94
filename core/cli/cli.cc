#include "core/cli/cli.h"

#include <optional>
#include <span>

#include "core/convert.h"
#include "core/onnx/model_io.h"
#include "core/pattern/registry.h"
#include "core/patterns/lattice/hardware.h"
#include "core/report/summary.h"
#include "core/util/utf8.h"

namespace lattice {
namespace {

constexpr const char* kUsage = R"(usage:
  onnx-lattice convert IN.onnx -o OUT.onnx [--target lattice|lattice-advanced|none]
                       [--no-fold-bn] [--only P1,P2] [--skip P3] [--skip-match ID,...]
                       [--report REPORT.json|-] [--dry-run] [--quiet]
                       [--input-shape NAME:1,3,640,640 ...]
  onnx-lattice inspect IN.onnx [--target ...] [--no-fold-bn] [--only ...] [--skip ...] [--json]
  onnx-lattice patterns [--json]
  onnx-lattice hardware [--json]        the hardware table, with the source of each row
  onnx-lattice --version | --help

exit status: 0 success, 1 the model was rejected (nothing written), 2 usage error
)";

struct UsageError {
  std::string message;
};

// The parsed command line.
struct Command {
  std::string name;
  std::string input, output, report_path;
  Options options;
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
  if (cmd.name != "convert" && cmd.name != "inspect" && cmd.name != "patterns" && cmd.name != "hardware") {
    return UsageError{fmt::format("unknown command '{}'", cmd.name)};
  }
  // Which flags each command takes; a flag listed with a value consumes the next argument.
  const bool convert = cmd.name == "convert", inspect = cmd.name == "inspect";
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
    if ((flag == "-o" || flag == "--output") && (convert)) {
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
    } else if (flag == "--input-shape" && (convert || inspect)) {
      if (!(v = value())) return UsageError{"--input-shape needs NAME:d0,d1,..."};
      auto pin = parse_input_shape(*v);
      if (!pin) return UsageError{pin.error().message};
      cmd.options.input_shapes.push_back(std::move(pin).value());
    } else if (flag == "--no-fold-bn" && !inline_value && (convert || inspect)) {
      cmd.options.fold_batch_norm = false;
    } else if (flag == "--dry-run" && !inline_value && (convert)) {
      cmd.options.dry_run = true;
    } else if (flag == "--quiet" && !inline_value && (convert)) {
      cmd.quiet = true;
    } else if (flag == "--json" && !inline_value && (inspect || cmd.name == "patterns" || cmd.name == "hardware")) {
      cmd.json = true;
    } else if (flag.starts_with("-") && flag != "-") {
      return UsageError{fmt::format("'{}' is not an option of '{}'", args[i], cmd.name)};
    } else if ((convert || inspect) && cmd.input.empty()) {
      cmd.input = args[i];
    } else {
      return UsageError{fmt::format("unexpected argument '{}'", args[i])};
    }
  }
  if ((convert || inspect) && cmd.input.empty()) return UsageError{"no input model given"};
  if (convert && cmd.output.empty() && !cmd.options.dry_run) {
    return UsageError{"convert needs -o OUT.onnx (or --dry-run)"};
  }
  if (auto s = check_options(cmd.options); !s) return UsageError{s.error().message};
  return std::nullopt;
}

std::span<const uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
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
    progress("reading");
    // A model over the limit is refused before reading gigabytes for nothing.
    auto size = host_.file_size(cmd_.input);
    if (!size) return reject(size.error().message);
    if (auto s = check_model_size(*size); !s) return reject(fmt::format("{}: {}", cmd_.input, s.error().message));
    auto bytes = host_.read_file(cmd_.input);
    if (!bytes) return reject(bytes.error().message);
    progress("converting");
    auto result = convert(as_bytes(*bytes), cmd_.name == "inspect" ? dry(cmd_.options) : cmd_.options);
    if (!result) return reject(fmt::format("{}: {}", cmd_.input, result.error().message));
    const Report& report = result->report;
    if (cmd_.name == "inspect") {
      host_.out(cmd_.json ? report.to_json().dump() : format_summary(report, cmd_.input, ""));
      return kExitOk;
    }
    auto model = result->output(*bytes);
    if (model) {
      progress("writing");
      if (auto s = host_.write_file(cmd_.output, *model); !s) return reject(s.error().message);
    }
    std::string json = report.to_json().dump();
    if (cmd_.report_path == "-") {
      host_.out(json);
    } else if (!cmd_.report_path.empty()) {
      if (auto s = host_.write_file(cmd_.report_path, json); !s) return reject(s.error().message);
    }
    if (!cmd_.quiet && cmd_.report_path != "-") {
      host_.out(format_summary(report, cmd_.input, model ? cmd_.output : ""));
    }
    return kExitOk;
  }

 private:
  static Options dry(Options options) {
    options.dry_run = true;
    return options;
  }

  int reject(const std::string& message) {
    host_.err(fmt::format("onnx-lattice: error: {}\n", valid_utf8(message)));
    return kExitRejected;
  }

  void progress(std::string_view stage) {
    if (!cmd_.quiet && host_.err_is_terminal()) host_.err(fmt::format("onnx-lattice: {}...\n", stage));
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
};

}  // namespace

int run_cli(const std::vector<std::string>& args, Host& host) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h" || args[0] == "help")) {
    host.out(kUsage);
    return kExitOk;
  }
  if (!args.empty() && args[0] == "--version") {
    host.out(fmt::format("{} {}\n", kToolName, kToolVersion));
    return kExitOk;
  }
  Command cmd;
  if (auto usage = parse(args, cmd)) {
    host.err(fmt::format("onnx-lattice: {}\n{}", usage->message, kUsage));
    return kExitUsage;
  }
  try {
    return Runner(cmd, host).run();
  } catch (const std::bad_alloc&) {
    host.err("onnx-lattice: error: out of memory\n");
    return kExitRejected;
  }
}

}  // namespace lattice
