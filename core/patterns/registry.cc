#include "core/pattern/registry.h"

#include <algorithm>

#include "core/patterns/fixed_point/conv_bias_into_batch_norm.h"
#include "core/patterns/fixed_point/range_fit.h"
#include "core/patterns/fold/conv_bn.h"
#include "core/patterns/fold/conv_scale_shift.h"
#include "core/patterns/lattice/targets.h"

namespace lattice {
namespace {

// The fusion phase, in the order it runs: every target's, whatever its hardware.
std::vector<const Pattern*> fusion_patterns() {
  // FPQ's range fit runs last: on the BatchNormalizations the bias move left or made.
  return {&conv_batch_norm_fold_pattern(), &conv_scale_shift_fold_pattern(), &fpq_conv_bias_into_batch_norm_pattern(),
          &fpq_dense_bias_into_batch_norm_pattern(), &fpq_range_fit_pattern()};
}

const std::vector<Target>& built_in_targets() {
  static const std::vector<Target> targets = [] {
    std::vector<Target> all = lattice_targets();
    all.push_back({"none", "no conversion; Conv+BatchNorm folding only", {}, nullptr});
    return all;
  }();
  return targets;
}

// The built-in targets, then those registered (TargetRegistration), as stable pointers.
std::vector<const Target*>& target_list() {
  static std::vector<const Target*> list = [] {
    std::vector<const Target*> pointers;
    for (const Target& t : built_in_targets()) pointers.push_back(&t);
    return pointers;
  }();
  return list;
}

// The conversion patterns of the built-in targets, each target's in its own order: a pattern no
// earlier target runs goes just before the first of its successors already listed, so the SPPF
// variants sit side by side.
std::vector<const Pattern*> conversion_patterns() {
  std::vector<const Pattern*> merged;
  for (const Target& t : built_in_targets()) {
    const auto& order = t.conversion;
    for (size_t i = 0; i < order.size(); ++i) {
      if (std::find(merged.begin(), merged.end(), order[i]) != merged.end()) continue;
      auto at = merged.end();
      for (size_t j = i + 1; j < order.size() && at == merged.end(); ++j) {
        at = std::find(merged.begin(), merged.end(), order[j]);
      }
      merged.insert(at, order[i]);
    }
  }
  return merged;
}

}  // namespace

std::span<const Pattern* const> all_patterns() {
  static const std::vector<const Pattern*> patterns = [] {
    std::vector<const Pattern*> all = conversion_patterns();
    for (const Pattern* p : fusion_patterns()) all.push_back(p);
    return all;
  }();
  return patterns;
}

std::span<const Target* const> all_targets() { return target_list(); }

const Pattern* find_pattern(std::string_view name) {
  for (const Pattern* p : all_patterns()) {
    if (p->name == name) return p;
  }
  return nullptr;
}

const Target* find_target(std::string_view name) {
  for (const Target* t : all_targets()) {
    if (t->name == name) return t;
  }
  return nullptr;
}

TargetRegistration::TargetRegistration(Target target) : target_(std::make_unique<const Target>(std::move(target))) {
  target_list().push_back(target_.get());
}

TargetRegistration::~TargetRegistration() {
  auto& list = target_list();
  list.erase(std::find(list.begin(), list.end(), target_.get()));
}

Json catalogue_json() {
  Json patterns = Json::array();
  for (const Pattern* p : all_patterns()) {
    Json targets = Json::array();
    for (const Target* t : all_targets()) {
      bool used = p->phase == Phase::kFusion;
      for (const Pattern* c : t->conversion) used = used || c == p;
      if (used) targets.push(t->name);
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
  for (const Target* t : all_targets()) {
    Json names = Json::array();
    for (const Pattern* c : t->conversion) names.push(c->name);
    targets.push(
        Json::object().set("name", t->name).set("description", t->description).set("conversion", std::move(names)));
  }
  return Json::object().set("patterns", std::move(patterns)).set("targets", std::move(targets));
}

}  // namespace lattice
