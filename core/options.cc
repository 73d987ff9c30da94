#include "core/options.h"

#include <algorithm>
#include <charconv>

#include <fmt/ranges.h>

#include "core/pattern/registry.h"

namespace lattice {

std::string_view fixed_point_name(FixedPoint scheme) {
  return scheme == FixedPoint::kFpq ? "fpq" : scheme == FixedPoint::kLsq ? "lsq" : "none";
}

Result<FixedPoint> parse_fixed_point(std::string_view name) {
  for (auto scheme : {FixedPoint::kFpq, FixedPoint::kLsq}) {
    if (name == fixed_point_name(scheme)) return scheme;
  }
  return options_error("unknown fixed-point scheme '{}' (known: fpq, lsq)", name);
}

bool default_fold_batch_norm(FixedPoint scheme) { return scheme != FixedPoint::kFpq; }

std::string_view data_layout_name(DataLayout layout) {
  return layout == DataLayout::kKeep ? "keep" : layout == DataLayout::kExternal ? "external" : "inline";
}

std::optional<DataLayout> parse_data_layout(std::string_view name) {
  for (auto layout : {DataLayout::kKeep, DataLayout::kExternal, DataLayout::kInline}) {
    if (name == data_layout_name(layout)) return layout;
  }
  return std::nullopt;
}

Json Options::to_json() const {
  Json json = Json::object()
      .set("target", target)
      .set("fold_batch_norm", folds_batch_norm())
      .set("only", Json::array_of(only))
      .set("skip", Json::array_of(skip))
      .set("skip_matches", Json::array_of(skip_matches))
      .set("dry_run", dry_run)
      .set("data_layout", data_layout_name(layout))
      .set("snap_weights", std::string(snap_weights_name(snap_weights)));
  // Only when asked for: a report without a scheme stays byte for byte what it was.
  if (fixed_point != FixedPoint::kNone) json.set("fixed_point", fixed_point_name(fixed_point));
  return json;
}

std::optional<SnapWeights> parse_snap_weights(std::string_view text) {
  if (text == "reinit") return SnapWeights::kReinit;
  if (text == "transfer") return SnapWeights::kTransfer;
  return std::nullopt;
}

std::string_view snap_weights_name(SnapWeights method) { return method == SnapWeights::kTransfer ? "transfer" : "reinit"; }

Result<std::pair<std::string, std::vector<int64_t>>> parse_input_shape(const std::string& text, std::string_view flag) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return error("{} '{}' is not NAME:d0,d1,... (for example input:1,3,640,640)", flag, text);
  }
  std::vector<int64_t> dims;
  size_t start = colon + 1;
  while (start <= text.size()) {
    size_t comma = std::min(text.find(',', start), text.size());
    std::string_view item(text.data() + start, comma - start);
    int64_t d = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), d);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || d <= 0) {
      return error("{} '{}': '{}' is not a positive whole number", flag, text, item);
    }
    dims.push_back(d);
    start = comma + 1;
  }
  return std::pair{text.substr(0, colon), std::move(dims)};
}

Status check_options(const Options& options) {
  if (!find_target(options.target)) {
    std::vector<std::string_view> names;
    for (const Target* t : all_targets()) names.push_back(t->name);
    return options_error("unknown target '{}' (known: {})", options.target, fmt::join(names, ", "));
  }
  for (const auto* list : {&options.only, &options.skip}) {
    for (const auto& name : *list) {
      if (!find_pattern(name)) {
        std::vector<std::string_view> names;
        for (const auto* p : all_patterns()) names.push_back(p->name);
        return options_error("unknown pattern '{}' (known: {})", name, fmt::join(names, ", "));
      }
    }
  }
  for (size_t i = 0; i < options.input_shapes.size(); ++i) {
    const auto& [name, dims] = options.input_shapes[i];
    if (name.empty()) return error("an input shape needs the graph input's name");
    if (dims.empty()) return error("the input shape of '{}' has no dimensions", name);
    for (auto d : dims) {
      if (d <= 0) return error("the input shape of '{}' has dimension {}; dimensions are positive numbers", name, d);
    }
    for (size_t j = 0; j < i; ++j) {
      if (options.input_shapes[j].first == name) return error("the input shape of '{}' is given twice", name);
    }
  }
  return ok_status();
}

}  // namespace lattice
