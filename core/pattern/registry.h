#pragma once
// Every pattern the tool knows, and the targets: the catalogue the driver, the options' checks and
// every shell read (`onnx-lattice patterns --json`, the binding's catalogue()). Declared here, for
// the engine; defined beside the patterns and targets it lists (core/patterns/registry.cc), so
// this floor of the tree never includes the concrete patterns.
#include <memory>
#include <span>
#include <string_view>

#include "core/pattern/pattern.h"
#include "core/pattern/target.h"
#include "core/util/json.h"

namespace lattice {

// The conversion patterns of every target (each in the first place a target's order gives it),
// then the fusion patterns in the order they run.
std::span<const Pattern* const> all_patterns();
// The targets, the default (Options' target) first.
std::span<const Target* const> all_targets();
const Pattern* find_pattern(std::string_view name);
const Target* find_target(std::string_view name);

// A target added to the catalogue for as long as this lives: a test's own target, made from one
// entry (core/patterns/lattice/targets.h). Its patterns are the catalogue's.
class TargetRegistration {
 public:
  explicit TargetRegistration(Target target);
  ~TargetRegistration();
  TargetRegistration(const TargetRegistration&) = delete;
  TargetRegistration& operator=(const TargetRegistration&) = delete;

 private:
  std::unique_ptr<const Target> target_;
};

// The catalogue as printed by `onnx-lattice patterns --json`.
Json catalogue_json();

}  // namespace lattice
