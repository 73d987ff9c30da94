#include "core/options.h"

#include <fmt/ranges.h>

#include "core/pattern/registry.h"

namespace lattice {

Json Options::to_json() const {
  return Json::object()
      .set("target", target)
      .set("fold_batch_norm", fold_batch_norm)
      .set("only", Json::array_of(only))
      .set("skip", Json::array_of(skip))
      .set("skip_matches", Json::array_of(skip_matches))
      .set("dry_run", dry_run)
      .set("data_layout", std::string(layout == DataLayout::kKeep ? "keep" : layout == DataLayout::kExternal ? "external" : "inline"));
}

Status check_options(const Options& options) {
  if (!find_target(options.target)) {
    std::vector<std::string_view> names;
    for (const auto& t : all_targets()) names.push_back(t.name);
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
  return ok_status();
}

}  // namespace lattice
