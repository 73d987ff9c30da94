#pragma once
// One model file converted or inspected through a Host: where the outputs go checked before any
// work, external data read from the model's folder, every file written together or not at all.
// The CLIs' `convert` and `inspect` and the Node API's convertFile all run this; it prints
// nothing, and its errors carry their kind (ErrorKind::kIO with the file and errno for a file
// that cannot be read or written) for each caller to show in its own way.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/cli/files.h"
#include "core/cli/host.h"
#include "core/options.h"
#include "core/progress.h"
#include "core/report/report.h"

namespace lattice {

struct FileJob {
  std::string input;
  std::string output;       // "": default_output(); "-": standard output; ignored by a dry run
  std::string report_path;  // "": none; "-": none written (the caller prints FileResult::report_json)
  Options options;
  bool inspect = false;  // a dry run whatever options.dry_run says
  bool ignore_unknown_skips = false;  // ConvertCall's: the Node API passes it on
  std::function<Status(const Json&)> before_conversion = nullptr;  // ConvertCall's: the CLI's check is prepared there
  // The files left under temporary names (FileResult::staged) for the caller to place once it has
  // run them: the Node CLI's repair and check, so that what it refuses leaves every file as it
  // was. Every output must then be a file.
  bool staged = false;
};

struct FileProgress {
  ProgressFn stages;  // the core's stages, "done" included
  WritingFn writing;  // 0 as writing starts, then as far as the computed pieces have come
};

struct FileResult {
  Report report;
  std::string report_json;
  std::string output;              // the model's path as given or defaulted; "" for a dry run
  std::vector<std::string> files;  // the files written, the model first (none for "-" or a dry run)
  // With FileJob::staged, in place of `files`: each file under its temporary name, to be placed in
  // this order.
  struct Staged {
    StagedFile model;
    std::optional<StagedFile> data;  // named `data_location` in the model
    std::string data_location;
    std::optional<StagedFile> report;
  };
  std::optional<Staged> staged;
};

// Beside the input, named as every shell names a converted model (core/output_name.h), the
// skips counted as given (the CLI refuses one that matches nothing): never the input itself.
std::string default_output(const std::string& input, const Options& options);

Result<FileResult> convert_file(const FileJob& job, Host& host, const FileProgress& progress = {});

}  // namespace lattice
