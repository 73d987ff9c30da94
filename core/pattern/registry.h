#pragma once
// Every pattern the tool knows, and the targets: which patterns each runs, in registry order.
// Declared here, for the driver; defined beside the patterns it lists (core/patterns/registry.cc),
// so this floor of the tree never includes the concrete patterns.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/pattern/pattern.h"
#include "core/util/json.h"

namespace lattice {

// A Conv the target's hardware accepts (core/patterns/lattice/hardware.h holds the rest).
struct ConvKernel {
  int64_t size;                  // square kernels only
  std::vector<int64_t> strides;  // accepted strides (equal on both axes)
};

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
