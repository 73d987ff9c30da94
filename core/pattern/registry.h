#pragma once
// Every pattern the tool knows, and the targets: which patterns each runs, in registry order.
#include <span>
#include <string_view>
#include <vector>

#include "core/pattern/pattern.h"
#include "core/patterns/lattice/hardware.h"
#include "core/util/json.h"

namespace lattice {

struct Target {
  std::string_view name;
  std::string_view description;
  std::vector<const Pattern*> conversion;  // in registry order
  std::vector<ConvKernel> conv_kernels;    // the hardware limits; empty: no hardware (no audit)
};

std::span<const Pattern* const> all_patterns();
std::span<const Target> all_targets();
const Pattern* find_pattern(std::string_view name);
const Target* find_target(std::string_view name);

// The catalogue as printed by `onnx-lattice patterns --json`.
Json catalogue_json();

}  // namespace lattice
