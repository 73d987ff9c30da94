#pragma once
// What the user asked for: the same options for the CLI flags, the Node API and the page.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/util/json.h"
#include "core/util/result.h"

namespace lattice {

// Where the converted model's tensor data goes: as in the input (a data file if the input has
// one), one data file for every tensor of at least 1 KiB, or all inline in one file.
enum class DataLayout { kKeep, kExternal, kInline };
std::string_view data_layout_name(DataLayout layout);  // "keep", "external", "inline"
std::optional<DataLayout> parse_data_layout(std::string_view name);

// What a snapped Conv kernel's weights become: drawn anew as the seed does (reinit), or carried
// over from the trained kernel (transfer, core/patterns/lattice/weight_transfer.h).
enum class SnapWeights { kReinit, kTransfer };
// Lattice sensAI's fixed-point schemes (core/fixed_point/scheme.h): none (the seed's rules only),
// FPQ (fixed step sizes) or LSQ (learned step sizes).
enum class FixedPoint { kNone, kFpq, kLsq };
std::string_view fixed_point_name(FixedPoint scheme);  // "none", "fpq", "lsq"
// The scheme named `name`, or an options error listing the known ones.
Result<FixedPoint> parse_fixed_point(std::string_view name);
// Whether BatchNormalization is folded when the user did not say: on, except under FPQ, where
// BatchNorm is a 16-bit layer of its own and a folded conv's bias would be refused. The one
// statement of the rule: the shells that offer a scheme ask for it (core/option_table.h, derived).
bool default_fold_batch_norm(FixedPoint scheme);

// What the conversion does: everything here is in the report's `options`, which say how to make
// the same output again. How a call is made (progress, files, what else to return) is a
// ConvertCall (core/convert.h).
struct Options {
  std::string target = "lattice";
  // Unset: the scheme's default (default_fold_batch_norm). Read it through folds_batch_norm().
  std::optional<bool> fold_batch_norm;
  FixedPoint fixed_point = FixedPoint::kNone;
  std::vector<std::string> only;          // pattern names; empty: all of the target's
  std::vector<std::string> skip;          // pattern names
  std::vector<std::string> skip_matches;  // match ids
  bool dry_run = false;
  // Graph input name -> the dims to analyse and write it with (an FPGA runs one input size).
  std::vector<std::pair<std::string, std::vector<int64_t>>> input_shapes;
  DataLayout layout = DataLayout::kKeep;
  SnapWeights snap_weights = SnapWeights::kReinit;
  // Under FPQ, ranges measured on data for FpqRangeFitPattern, by tensor name: per channel, a
  // Relu output's largest value or a Conv output's largest |value|. Empty: the pattern estimates
  // them from the BatchNormalizations' statistics. Data, not a choice: not in the report's options
  // (the Node shells, which measure them, say where they came from).
  std::map<std::string, std::vector<double>> channel_ranges;
  // Beside them, per channel of an activation FPQ holds in unsigned 1.7, its MSE-optimal clip on
  // the same data (wasm/shared/fpq_clip.mjs): where no scale keeps every value of a channel and
  // the next layer's weights in range, the activation is clipped there if that is below where the
  // weights stop the scale.
  std::map<std::string, std::vector<double>> channel_clips;

  bool folds_batch_norm() const { return fold_batch_norm.value_or(default_fold_batch_norm(fixed_point)); }
  Json to_json() const;
};

// "NAME:1,3,640,640" (the name may itself hold ':'; the last one separates the dims).
Result<std::pair<std::string, std::vector<int64_t>>> parse_input_shape(const std::string& text,
                                                                       std::string_view flag = "--input-shape");

// "reinit" | "transfer" as the option's value, or nullopt.
std::optional<SnapWeights> parse_snap_weights(std::string_view text);
std::string_view snap_weights_name(SnapWeights method);

// Unknown target or pattern names are errors that list the known ones.
Status check_options(const Options& options);

}  // namespace lattice
