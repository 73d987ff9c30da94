#include "core/pattern/registry.h"

#include <array>

#include "core/patterns/fixed_point/conv_bias_into_batch_norm.h"
#include "core/patterns/fold/conv_bn.h"
#include "core/patterns/fold/conv_scale_shift.h"
#include "core/patterns/lattice/patterns.h"

namespace lattice {

std::span<const Pattern* const> all_patterns() {
  static const std::vector<const Pattern*> patterns{
      &sppf_maxpool_pattern(), &sppf_maxpool_advanced_pattern(), &stride2_asym_pad_conv_maxpool_pattern(),
      &stride2_conv_bn_relu_pattern(), &maxpool2d_pattern(), &global_avg_pool_pattern(), &conv2d_pattern(),
      &conv_batch_norm_fold_pattern(), &conv_scale_shift_fold_pattern(), &fpq_conv_bias_into_batch_norm_pattern()};
  return patterns;
}

std::span<const Target> all_targets() {
  // Registry order: SPPF before MaxPool snapping (its pools must not be snapped), the stride-2
  // max-pool chains before the other stride-2 chains, Conv snapping last.
  auto lattice_patterns = [](const Pattern& sppf) {
    return std::vector<const Pattern*>{&sppf, &stride2_asym_pad_conv_maxpool_pattern(), &stride2_conv_bn_relu_pattern(),
                                       &maxpool2d_pattern(), &global_avg_pool_pattern(), &conv2d_pattern()};
  };
  static const std::array<Target, 3> targets{{
      {"lattice", "Lattice CNN accelerator (Compact/Optimized): 1x1 stride 1 and 3x3 stride 1/2 convolutions",
       lattice_patterns(sppf_maxpool_pattern()), {{1, {1}}, {3, {1, 2}}}},
      {"lattice-advanced", "Lattice CNN accelerator (Extended): also 5x5 and 7x7 stride-1 convolutions",
       lattice_patterns(sppf_maxpool_advanced_pattern()), {{1, {1}}, {3, {1, 2}}, {5, {1}}, {7, {1}}}},
      {"none", "no conversion; Conv+BatchNorm folding only", {}, {}},
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
    Json row = Json::object()
                   .set("name", p->name)
                   .set("phase", phase_name(p->phase))
                   .set("numerically_equivalent", p->numerically_equivalent)
                   .set("targets", std::move(targets))
                   .set("matches", p->matches)
                   .set("emits", p->emits);
    if (p->scheme != FixedPoint::kNone) row.set("fixed_point", fixed_point_name(p->scheme));
    patterns.push(std::move(row));
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
