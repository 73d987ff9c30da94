#pragma once
// The converted model's file name, the same in every shell: the native and Node CLIs' default
// output, the Node API's and the page's downloads. It says how the model was made where that
// differs from the defaults, so variants written side by side do not overwrite each other:
//   <stem>.<target>[.fpq|.lsq][.transfer][.fold|.no-fold][.skip-<hash>].onnx
// Folding is named only where it differs from the scheme's default (default_fold_batch_norm);
// the hash (4 hex digits) names the set of skipped match ids, whatever their order.
#include <span>
#include <string>
#include <string_view>

#include "core/options.h"

namespace lattice {

// A model's name without its folder's trailing ".onnx": "models/yolo.onnx" -> "models/yolo".
std::string output_stem(std::string_view input);

// The output's name for a model named `stem` converted with `options`, `skipped` being the ids of
// the matches the skips left unapplied (the CLI refuses a skip that matches nothing, so its
// skip_matches; the page keeps skips across targets, so only the ids that matched).
std::string output_name(std::string_view stem, const Options& options, std::span<const std::string> skipped);

// The name of the data file beside a model file written as `model_name`.
inline std::string data_file_name(std::string_view model_name) { return std::string(model_name) + ".data"; }

}  // namespace lattice
