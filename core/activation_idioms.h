#pragma once
// Activation functions written as several nodes (SiLU as x*Sigmoid(x), HardSwish as
// x*HardSigmoid(x) or x*Clip(x+3, 0, 6)/6, HardSigmoid as Clip((x+3)/6), Mish, GELU with Erf)
// or as their own op: recognised as one unit, so the audit names the activation once instead of
// listing its Mul and Div as if they were layers.
#include <string>
#include <vector>

#include "core/graph/graph_view.h"

namespace lattice {

struct ActivationIdiom {
  std::string name;        // "SiLU", "HardSwish", "HardSigmoid", "Mish", "GELU"
  std::string form;        // how it is written: "x*Sigmoid(x)", "HardSwish op", ...
  std::string input;       // the x it is a function of
  std::vector<int> nodes;  // in graph order
};

// Every activation idiom of the graph; a node belongs to at most one.
std::vector<ActivationIdiom> find_activation_idioms(const GraphView& view);

}  // namespace lattice
