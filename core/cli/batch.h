#pragma once
// `onnx-lattice convert A.onnx B.onnx FOLDER/ [-d OUTDIR]`: many models in one run, for scripts
// and CI. Each model is converted as a single one would be (convert_file.h); one line per model
// and a summary go to standard output, and the exit status is the worst of the models'.
#include <string>
#include <vector>

#include "core/cli/host.h"
#include "core/options.h"

namespace lattice {

struct Batch {
  std::vector<std::string> inputs;  // model files, and folders searched for *.onnx (recursively)
  std::string out_dir;              // "": each output beside its input
  Options options;
  bool reports = false;             // also <name>.<target>.report.json beside each output
  bool quiet = false;               // no lines, no summary: the exit status only
  bool fail_on_unsupported = false; // exit 4 for a model the target cannot run whole
};

int run_batch(const Batch& batch, Host& host);

}  // namespace lattice
