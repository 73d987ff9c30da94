#include "core/pattern/registry.h"

#include <array>

#include "core/patterns/fold/conv_bn.h"

namespace lattice {

std::span<const Pattern* const> all_patterns() {
  static const std::vector<const Pattern*> patterns{&conv_batch_norm_fold_pattern()};
  return patterns;
}

std::span<const Target> all_targets() {
  static const std::array<Target, 3> targets{{
      {"lattice", "Lattice CNN accelerator (Compact/Optimized): 1x1 s1 and 3x3 s1/s2 convolutions", {}},
      {"lattice-advanced", "Lattice CNN accelerator (Extended): also 5x5 and 7x7 stride-1 convolutions", {}},
      {"none", "no conversion; Conv+BatchNorm folding only", {}},
  }};
  return targets;
}

const Pattern* find_pattern(std::string_view name) {
  for (const Pattern* p : all_patterns()) {
    if (p->name == name) return p;
  }
  return nullptr;
}

const Target* find_target(std::string_view name) {
  for (const Target& t : all_targets()) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

Json catalogue_json() {
  Json patterns = Json::array();
  for (const Pattern* p : all_patterns()) {
    Json targets = Json::array();
    for (const Target& t : all_targets()) {
      bool used = p->phase == Phase::kFusion;
      for (const Pattern* c : t.conversion) used = used || c == p;
      if (used) targets.push(t.name);
    }
    patterns.push(Json::object()
                      .set("name", p->name)
                      .set("phase", phase_name(p->phase))
                      .set("numerically_equivalent", p->numerically_equivalent)
                      .set("targets", std::move(targets))
                      .set("matches", p->matches)
                      .set("emits", p->emits));
  }
  Json targets = Json::array();
  for (const Target& t : all_targets()) {
    Json names = Json::array();
    for (const Pattern* c : t.conversion) names.push(c->name);
    targets.push(Json::object().set("name", t.name).set("description", t.description).set("conversion", std::move(names)));
  }
  return Json::object().set("patterns", std::move(patterns)).set("targets", std::move(targets));
}

}  // namespace lattice
