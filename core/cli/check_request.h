#pragma once
// The check's flags on the command line (`check ORIGINAL CANDIDATE`, `convert --check`): parsed
// here like every other flag, so both CLIs take and refuse the same words, and handed to the
// host as one JSON request. Only a host with a runtime (the Node CLI: onnxruntime-node) runs it;
// the native CLI has none and says so before doing anything.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/options.h"
#include "core/util/json.h"
#include "core/util/result.h"

namespace lattice {

struct CheckFlags {
  bool requested = false;  // `check`, or `convert --check`
  bool layerwise = false;
  std::optional<double> seed, rtol, atol;
  // --map-threshold T: a probability map's pixels above T are marked (the check's task figures).
  std::optional<double> map_threshold;
  // --min-agreement P, --min-accuracy P: the gate (exit 6 below it), judged on samples only.
  std::optional<double> min_agreement, min_accuracy;
  std::optional<std::pair<double, double>> input_range;
  // The user's samples instead of random inputs (a .npy, a .npz, an image, or a folder of
  // them), their labels, and how images become tensors: read by the host
  // (wasm/node/samples_node.mjs).
  std::optional<std::string> inputs, labels;
  std::optional<std::string> image_resize, image_scale, image_order;
  // `convert --repair`: the host refits the rewritten layers on the calibration samples (none:
  // seeded random inputs) before it checks; also a request for a host with a runtime. Under
  // --fixed-point fpq the host also measures FPQ's range fit on them (wasm/shared/range_fit.mjs).
  bool repair = false;
  std::vector<std::string> calibration;
  // --check-shape NAME:d0,...: the size the check feeds an input, leaving the converted model's
  // declared shape alone (--input-shape pins the model itself).
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
  // --simulate fpq: the check also runs the output's FPQ twin against it (check.fpq).
  std::optional<std::string> simulate;
  // `convert --fpq-twin FILE`: the host also writes the output's FPQ twin there.
  std::optional<std::string> fpq_twin;

  bool runs_models() const { return requested || repair || !calibration.empty(); }
  // What only a host with the FPQ twin's module (the Node CLI) can do after a conversion.
  bool needs_host() const { return runs_models() || fpq_twin.has_value(); }

  // Whether a flag only the check reads was given. An image's preprocessing (--image-*) is the
  // calibration's too: the repair and the range fit read their images with it.
  bool any_given() const {
    const bool preprocessing = image_resize || image_scale || image_order;
    return layerwise || seed || rtol || atol || map_threshold || min_agreement || min_accuracy || input_range || inputs ||
           labels ||
           (preprocessing && calibration.empty()) ||
           !shapes.empty() || simulate;
  }
};

// The flag and its value (nullopt when the command line ends) if it is one of the check's or the
// repair's (their rows in core/option_table.cc): true when taken, or a usage error naming what is
// wrong with the value.
using FlagValue = std::optional<std::string>;
Result<bool> parse_check_flag(std::string_view flag, const std::function<FlagValue()>& value, CheckFlags& check);

// What a gate given without samples to judge it on lacks ("" when nothing): random inputs say
// nothing of a task. (Labels may come inside the samples' .npz or folder: the host says when
// there are none.)
std::string gate_conflict(const CheckFlags& check);

// {command, original, candidate, check, repair?: {calibration}, report_path, report, options: {seed,
// inputRange, rtol, atol, mapThreshold, minAgreement, minAccuracy, inputShapes, layerwise, inputs, labels, preprocessing: {resize, scale, order}}}: what the host's runtime is asked to do. `report` is the
// conversion's report (convert --check), which the host writes out with the check added.
Json check_request(std::string_view command, const std::string& original, const std::string& candidate,
                   const CheckFlags& check, const Options& options, const std::string& report_path = "",
                   const Json* report = nullptr, bool json = false);

inline constexpr std::string_view kNoRuntime =
    "the check runs both models in onnxruntime, which this native CLI does not have: use the Node CLI "
    "(node wasm/cli.mjs, or npx onnx-lattice) with the same arguments";
inline constexpr std::string_view kNoFpqTwin =
    "--fpq-twin is written by the Node CLI (node wasm/cli.mjs, or npx onnx-lattice), which carries the FPQ twin's "
    "builder: use it with the same arguments";
inline constexpr std::string_view kNoRuntimeToFitRanges =
    "--calibration under --fixed-point fpq runs the model in onnxruntime to measure FPQ's ranges, which this native "
    "CLI does not have: use the Node CLI (node wasm/cli.mjs, or npx onnx-lattice) with the same arguments, or leave "
    "--calibration out (the range fit then estimates them from BatchNormalization)";
inline constexpr std::string_view kNoRuntimeToRepair =
    "--repair runs both models in onnxruntime to fit the rewritten layers, which this native CLI does not have: use "
    "the Node CLI (node wasm/cli.mjs, or npx onnx-lattice) with the same arguments";

}  // namespace lattice
