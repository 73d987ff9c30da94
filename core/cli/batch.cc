#include "core/cli/batch.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/cli/cli.h"
#include "core/cli/convert_file.h"
#include "core/cli/files.h"
#include "core/pattern/registry.h"
#include "core/util/utf8.h"

namespace lattice {
namespace {

constexpr int kMaxDepth = 64;  // folders inside folders: a symlink loop ends here, not in a hang

std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A file named as this tool names its outputs (`x.lattice.onnx`): an earlier run's output, which
// converting a folder again must not convert once more.
bool is_output_name(const std::string& name) {
  return std::any_of(all_targets().begin(), all_targets().end(),
                     [&](const Target* t) { return name.ends_with(fmt::format(".{}.onnx", t->name)); });
}

struct Model {
  std::string input;
  std::optional<Error> unreadable;  // the input (or a folder on the way) could not be listed
};

// The models `path` names: itself, or the *.onnx files below it, sorted, outputs of earlier runs
// left out.
void collect(Host& host, const std::string& path, int depth, std::vector<Model>& out) {
  auto resolved = resolve(host, path);
  if (!resolved || resolved->stat.kind != FileStat::Kind::kDirectory) {
    out.push_back({path, std::nullopt});  // convert_file says what is wrong with it
    return;
  }
  auto names = depth < kMaxDepth ? host.list_dir(resolved->resolved)
                                 : Result<std::vector<std::string>>(error("too many nested folders"));
  if (!names) {
    out.push_back({path, file_error(fmt::format("cannot read '{}': {}", path, names.error().message), path, names.error())});
    return;
  }
  std::sort(names->begin(), names->end());
  std::string folder = path.ends_with("/") ? path : path + "/";
  for (const auto& name : *names) {
    auto entry = resolve(host, folder + name);
    if (entry && entry->stat.kind == FileStat::Kind::kDirectory) {
      collect(host, folder + name, depth + 1, out);
    } else if (name.ends_with(".onnx") && !is_output_name(name)) {
      out.push_back({folder + name, std::nullopt});
    }
  }
}

std::string report_name(const std::string& output) {
  return output.substr(0, output.size() - std::string_view(".onnx").size()) + ".report.json";
}

}  // namespace

int run_batch(const Batch& batch, Host& host) {
  auto say = [&](const std::string& line) {
    if (!batch.quiet) host.out(line + "\n");
  };
  if (!batch.out_dir.empty()) {
    // A folder that does not exist is made, with its parents, as babel and tsc do; a file there
    // is the user's to move. A dry run writes nothing, and makes nothing.
    auto dir = resolve(host, batch.out_dir);
    auto absent = [&] { return !dir || dir->stat.kind == FileStat::Kind::kMissing; };
    if (absent() && !batch.options.dry_run) {
      if (auto made = host.make_dirs(batch.out_dir); !made) {
        host.err(fmt::format("onnx-lattice: cannot make the folder -d '{}': {}\n", printable(batch.out_dir),
                             made.error().message));
        return kExitIO;
      }
      dir = resolve(host, batch.out_dir);
    }
    if (!absent() && dir->stat.kind != FileStat::Kind::kDirectory) {
      host.err(fmt::format("onnx-lattice: -d '{}' is not a folder\n", printable(batch.out_dir)));
      return kExitUsage;
    }
  }
  std::vector<Model> models;
  for (const auto& input : batch.inputs) collect(host, input, 0, models);
  // Where each goes, checked before any work: two models must not write one file.
  std::map<std::string, std::string> taken;  // output -> input
  std::vector<std::string> outputs;
  for (const auto& m : models) {
    std::string output = default_output(m.input, batch.options);
    if (!batch.out_dir.empty()) {
      output = (batch.out_dir.ends_with("/") ? batch.out_dir : batch.out_dir + "/") + base_name(output);
    }
    if (auto [it, fresh] = taken.emplace(output, m.input); !fresh) {
      host.err(fmt::format("onnx-lattice: '{}' and '{}' would both be written to '{}'; convert them in two runs\n",
                           printable(it->second), printable(m.input), printable(output)));
      return kExitUsage;
    }
    outputs.push_back(output);
  }
  if (models.empty()) {
    host.err("onnx-lattice: no .onnx models in the folders given\n");
    return kExitUsage;
  }

  int worst = kExitOk;
  size_t converted = 0, unsupported_nodes = 0, unsupported_models = 0;
  for (size_t i = 0; i < models.size(); ++i) {
    const Model& m = models[i];
    Result<FileResult> result = m.unreadable ? Result<FileResult>(*m.unreadable)
                                             : convert_file({m.input, outputs[i], batch.reports ? report_name(outputs[i]) : "",
                                                             batch.options, false},
                                                            host);
    int status = kExitOk;
    if (!result) {
      status = exit_status(result.error().kind);
      say(fmt::format("failed   {}", printable(result.error().message)));
    } else {
      ++converted;
      size_t applied = std::count_if(result->report.matches.begin(), result->report.matches.end(),
                                     [](const auto& match) { return match.applied; });
      size_t cannot_run = result->report.unsupported.size();
      unsupported_nodes += cannot_run;
      unsupported_models += cannot_run > 0;
      if (cannot_run > 0 && batch.fail_on_unsupported) status = kExitUnsupported;
      say(fmt::format("{} {} -> {} ({} applied, {} the target cannot run)", cannot_run > 0 ? "partial " : "ok      ",
                      printable(m.input), printable(result->output), applied, cannot_run));
    }
    if (batch_rank(status) > batch_rank(worst)) worst = status;
  }
  auto models_word = [](size_t n) { return n == 1 ? "model" : "models"; };
  say(fmt::format("{} {}: {} converted, {} failed; {} nodes the target cannot run, in {} {}", models.size(),
                  models_word(models.size()), converted, models.size() - converted, unsupported_nodes,
                  unsupported_models, models_word(unsupported_models)));
  return worst;
}

}  // namespace lattice
