#include "core/cli/check_request.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

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
  if (flag == "--layerwise") {
    check.layerwise = true;
    return true;
  }
  std::optional<double>* target = flag == "--seed" ? &check.seed : flag == "--rtol" ? &check.rtol
                                : flag == "--atol" ? &check.atol : nullptr;
  if (target == nullptr && flag != "--input-range") return false;
  FlagValue v = value();
  if (!v) return error("{} needs a value", flag);
  if (flag == "--input-range") {
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
  if (flag != "--seed" && *n < 0) return error("{} needs a number >= 0, not '{}'", flag, *v);
  *target = *n;
  return true;
}

Json check_request(std::string_view command, const std::string& original, const std::string& candidate,
                   const CheckFlags& check, const Options& options, const std::string& report_path, const Json* report,
                   bool json) {
  Json shapes = Json::object();
  for (const auto& [name, dims] : options.input_shapes) shapes.set(name, Json::array_of(dims));
  Json o = Json::object().set("inputShapes", std::move(shapes)).set("layerwise", check.layerwise);
  if (check.seed) o.set("seed", static_cast<int64_t>(*check.seed));
  if (check.input_range) o.set("inputRange", Json::array_of(std::vector<double>{check.input_range->first, check.input_range->second}));
  if (check.rtol) o.set("rtol", *check.rtol);
  if (check.atol) o.set("atol", *check.atol);
  Json request = Json::object().set("command", command).set("original", original).set("candidate", candidate)
                     .set("json", json).set("options", std::move(o));
  if (report != nullptr) request.set("report", *report).set("report_path", report_path);
  return request;
}

}  // namespace lattice
