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

#include "core/options.h"
#include "core/util/json.h"
#include "core/util/result.h"

namespace lattice {

struct CheckFlags {
  bool requested = false;  // `check`, or `convert --check`
  bool layerwise = false;
  std::optional<double> seed, rtol, atol;
  std::optional<std::pair<double, double>> input_range;

  bool any_given() const { return layerwise || seed || rtol || atol || input_range; }
};

// The flag and its value (nullopt when the command line ends) if it is one of the check's
// (--layerwise, --seed N, --input-range LO,HI, --rtol R, --atol A): true when taken, or a usage
// error naming what is wrong with the value.
using FlagValue = std::optional<std::string>;
Result<bool> parse_check_flag(std::string_view flag, const std::function<FlagValue()>& value, CheckFlags& check);

// {command, original, candidate, twin, report_path, report, options: {seed, inputRange, rtol,
// atol, inputShapes, layerwise}}: what the host's runtime is asked to do. `report` is the
// conversion's report (convert --check), which the host writes out with the check added.
Json check_request(std::string_view command, const std::string& original, const std::string& candidate,
                   const CheckFlags& check, const Options& options, const std::string& report_path = "",
                   const Json* report = nullptr, bool json = false);

inline constexpr std::string_view kNoRuntime =
    "the check runs both models in onnxruntime, which this native CLI does not have: use the Node CLI "
    "(node wasm/cli.mjs, or npx onnx-lattice) with the same arguments";

}  // namespace lattice
