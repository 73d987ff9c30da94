#pragma once
// A pattern is a declarative value, in the shape of the seed's Pattern (tree, graft, phase,
// is_numerically_equivalent): a chain of steps to match, and a graft that describes the
// replacement. Patterns never edit the graph; the Rewriter applies what the graft describes.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/graph/graph_view.h"
#include "core/graph/shapes.h"
#include "core/onnx/external_data.h"
#include "core/options.h"
#include "core/report/report.h"
#include "core/util/result.h"
#include "onnx-ml.pb.h"

namespace lattice {

struct Target;
class NameAllocator;

enum class Phase { kConversion, kFusion };

inline std::string_view phase_name(Phase phase) { return phase == Phase::kConversion ? "conversion" : "fusion"; }

// What predicates and grafts may look at: the graph as it is now, its shapes, the target they
// run for (whose layer holds the limits they read) and what the user asked for.
struct MatchContext {
  const GraphView& view;
  const Shapes& shapes;
  int64_t opset;
  const Target& target;
  const Options& options;
  ExternalData* data = nullptr;  // reads tensor data still in its file (with_data)
  // The outputs of the layers a fusion pattern wrote in this run: a layer the user chose to fold
  // keeps the bias the fold gave it, rather than going round a fold/unfold cycle.
  const std::unordered_set<std::string>* fused = nullptr;
};

// One step of a chain: a node of one of `op_types` (default domain) that `accepts` approves.
struct Step {
  std::vector<std::string_view> op_types;
  std::function<bool(const MatchContext&, int node)> accepts;  // may be empty: op type suffices
  bool optional = false;
};

struct Pattern;

struct Match {
  const Pattern* pattern = nullptr;
  std::vector<int> steps;  // node index per step; -1 where an optional step is absent

  std::vector<int> nodes() const;  // the matched nodes, in chain order
  int anchor() const { return nodes().front(); }
  // The node matched at `step`, or -1.
  int at(size_t step) const { return steps[step]; }
};

// What a graft asks the Rewriter to do, atomically: the matched nodes are removed, `nodes` are
// inserted in their place (the last new node normally writes the chain's final output name, so
// consumers and graph outputs keep working), readers of each `rewires` first name read the second
// instead, and `initializers` are added. `warnings` are the user-facing messages.
struct PatternWarning {
  std::string node;  // the node it is about (an SPPF block warns once per MaxPool it replaces)
  std::string message;
};
struct Replacement {
  std::vector<onnx::NodeProto> nodes;
  std::vector<onnx::TensorProto> initializers;
  std::vector<std::pair<std::string, std::string>> rewires;
  std::vector<PatternWarning> warnings;
  // What became of a layer's trained weights whose shape the rewrite changed (matches[].weights).
  std::optional<WeightsNote> weights;
  // This rewrite computes what the matched nodes computed, though its pattern's do not in general
  // (a kernel embedded in a larger one whose pads line up).
  bool exact = false;
};

// An Error from a graft means "matched, but not applied", and its message is the reason.
using Graft = std::function<Result<Replacement>(const MatchContext&, const Match&, NameAllocator&)>;

struct Pattern {
  std::string_view name;
  Phase phase;
  bool numerically_equivalent;
  std::string_view matches;  // one sentence, ONNX terms, for the catalogue
  std::string_view emits;
  std::vector<Step> chain;
  // The seed's rule is that an intermediate output of a chain has exactly one reader and is not
  // a graph output; the SPPF cascade is the exception (its pools also feed the Concat).
  bool intermediates_may_branch = false;
  Graft graft;
  // A fusion pattern that only a fixed-point scheme runs (whether or not BatchNorm folding is on);
  // kNone: one of the folds, which run when folding is on.
  FixedPoint scheme = FixedPoint::kNone;
};

}  // namespace lattice
