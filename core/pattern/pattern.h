#pragma once
// A pattern is a declarative value: what it is called, when it runs, whether it preserves the
// model's outputs, and what it matches and emits (for the catalogue and the README).
#include <string_view>

namespace lattice {

enum class Phase { kConversion, kFusion };

inline std::string_view phase_name(Phase phase) { return phase == Phase::kConversion ? "conversion" : "fusion"; }

struct Pattern {
  std::string_view name;
  Phase phase;
  bool numerically_equivalent;
  std::string_view matches;  // one sentence, ONNX terms
  std::string_view emits;
};

}  // namespace lattice
