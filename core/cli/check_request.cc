#include "core/cli/check_request.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/option_table.h"

namespace lattice {
namespace {

// A whole word as a finite number (strtod: std::from_chars for doubles is not in emscripten's
// libc++).
std::optional<double> number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

Result<bool> parse_check_flag(std::string_view flag, const std::function<FlagValue()>& value, CheckFlags& check) {
  const OptionRow* row = find_flag(flag, kConvertCommand | kCheckCommand);
  if (row == nullptr) return false;
  using enum OptionId;
  std::optional<std::string>* text = row->id == kInputs ? &check.inputs : row->id == kLabels ? &check.labels
                                     : row->id == kImageResize ? &check.image_resize
                                     : row->id == kImageScale ? &check.image_scale
                                     : row->id == kImageOrder ? &check.image_order
                                     : row->id == kSimulate ? &check.simulate : nullptr;
  std::optional<double>* number_field = row->id == kSeed ? &check.seed : row->id == kRtol ? &check.rtol
                                        : row->id == kAtol ? &check.atol
                                        : row->id == kMapThreshold ? &check.map_threshold
                                        : row->id == kMinAgreement ? &check.min_agreement
                                        : row->id == kMinAccuracy ? &check.min_accuracy : nullptr;
  const bool taken = text || number_field || row->id == kLayerwise || row->id == kRepair || row->id == kCheckShape ||
                     row->id == kCalibration || row->id == kInputRange;
  if (!taken) return false;
  if (row->value.empty()) {
    (row->id == kRepair ? check.repair : check.layerwise) = true;
    return true;
  }
  FlagValue v = value();
  // A path or a word cannot be empty; a number or a shape says why an empty one is wrong.
  if (!v || ((text || row->id == kCalibration) && v->empty())) return error("{} needs {}", flag, row->needs);
  if (row->id == kCheckShape) {
    auto shape = parse_input_shape(*v, "--check-shape");
    if (!shape) return shape.error();
    for (const auto& [name, dims] : check.shapes) {
      if (name == shape->first) return error("--check-shape gives the size of '{}' twice", name);
    }
    check.shapes.push_back(std::move(shape).value());
    return true;
  }
  if (row->id == kCalibration) {
    check.calibration.push_back(*v);
    return true;
  }
  // Paths are the host's to read; the words of an image's preprocessing are checked here, so
  // both CLIs refuse the same ones before any work.
  if (text) {
    if (!row->allowed.empty() && std::find(row->allowed.begin(), row->allowed.end(), *v) == row->allowed.end()) {
      return error("{} takes {}, not '{}'", flag, fmt::join(row->allowed, ", "), *v);
    }
    *text = *v;
    return true;
  }
  if (row->id == kInputRange) {
    size_t comma = v->find(',');
    auto lo = number(v->substr(0, comma)), hi = comma == std::string::npos ? std::nullopt : number(v->substr(comma + 1));
    if (!lo || !hi || !(*lo < *hi)) return error("--input-range needs LO,HI with LO < HI (e.g. -1,1), not '{}'", *v);
    check.input_range = std::pair{*lo, *hi};
    return true;
  }
  auto n = number(*v);
  if (!n) return error("{} needs a number, not '{}'", flag, *v);
  if (flag == "--seed" && (*n < 0 || *n > 4294967295.0 || *n != std::floor(*n))) {
    return error("--seed needs an integer from 0 to 4294967295, not '{}'", *v);
  }
  if ((row->id == kMapThreshold || row->id == kMinAgreement || row->id == kMinAccuracy) && (*n < 0 || *n > 1)) {
    return error("{} needs a number from 0 to 1{}, not '{}'", flag, row->id == kMapThreshold ? "" : " (a share: 0.95 for 95 %)",
                 *v);
  }
  if (flag != "--seed" && *n < 0) return error("{} needs a number >= 0, not '{}'", flag, *v);
  *number_field = *n;
  return true;
}

std::string gate_conflict(const CheckFlags& check) {
  if (!check.min_agreement && !check.min_accuracy) return "";
  const char* flag = check.min_agreement ? "--min-agreement" : "--min-accuracy";
  // --repair --calibration without --inputs checks on the calibration's held-out quarter.
  if (!check.inputs && !(check.repair && !check.calibration.empty())) {
    return fmt::format("{} gates on your samples' figures, and random inputs say nothing of a task: give --inputs (or "
                       "--repair --calibration, whose held-out quarter the check takes)", flag);
  }
  return "";
}

Json check_request(std::string_view command, const std::string& original, const std::string& candidate,
                   const CheckFlags& check, const Options& options, const std::string& report_path, const Json* report,
                   bool json) {
  // The model's pinned shapes, and over them the check's own sizes.
  Json shapes = Json::object();
  for (const auto& [name, dims] : options.input_shapes) shapes.set(name, Json::array_of(dims));
  for (const auto& [name, dims] : check.shapes) shapes.set(name, Json::array_of(dims));
  Json o = Json::object().set("inputShapes", std::move(shapes)).set("layerwise", check.layerwise);
  if (check.seed) o.set("seed", static_cast<int64_t>(*check.seed));
  if (check.input_range) o.set("inputRange", Json::array_of(std::vector<double>{check.input_range->first, check.input_range->second}));
  if (check.rtol) o.set("rtol", *check.rtol);
  if (check.atol) o.set("atol", *check.atol);
  if (check.map_threshold) o.set("mapThreshold", *check.map_threshold);
  if (check.min_agreement) o.set("minAgreement", *check.min_agreement);
  if (check.min_accuracy) o.set("minAccuracy", *check.min_accuracy);
  if (check.inputs) o.set("inputs", *check.inputs);
  if (check.labels) o.set("labels", *check.labels);
  Json preprocessing = Json::object();
  if (check.image_resize) preprocessing.set("resize", *check.image_resize);
  if (check.image_scale) preprocessing.set("scale", *check.image_scale);
  if (check.image_order) preprocessing.set("order", *check.image_order);
  if (check.image_resize || check.image_scale || check.image_order) o.set("preprocessing", std::move(preprocessing));
  if (check.simulate) o.set("simulate", *check.simulate);
  Json request = Json::object().set("command", command).set("original", original).set("candidate", candidate)
                     .set("json", json).set("check", check.requested).set("options", std::move(o));
  if (check.repair) request.set("repair", Json::object().set("calibration", Json::array_of(check.calibration)));
  // Under FPQ, whenever the host runs the converted model, it measures the ranges the range fit
  // needs (on the calibration samples, or seeded random inputs) and fits them, unless skipped.
  bool fits = options.fixed_point == FixedPoint::kFpq && command == "convert" &&
              std::find(options.skip.begin(), options.skip.end(), "FpqRangeFitPattern") == options.skip.end() &&
              (options.only.empty() || std::find(options.only.begin(), options.only.end(), "FpqRangeFitPattern") != options.only.end());
  if (fits && check.runs_models()) {
    request.set("range_fit", Json::object().set("calibration", Json::array_of(check.calibration)));
  }
  if (check.fpq_twin) request.set("fpq_twin", *check.fpq_twin);
  if (report != nullptr) request.set("report", *report).set("report_path", report_path);
  return request;
}

}  // namespace lattice
