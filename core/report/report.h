#pragma once
// The report of one conversion (SPEC section 4, schema "onnx-lattice-report/1").
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/options.h"
#include "core/util/json.h"
#include "onnx-ml.pb.h"

namespace lattice {

inline constexpr const char* kReportSchema = "onnx-lattice-report/1";
inline constexpr const char* kToolName = "onnx-lattice";
inline constexpr const char* kToolVersion = ONNX_LATTICE_VERSION;

struct ModelStats {
  uint64_t bytes = 0;
  int64_t ir_version = 0;
  int64_t opset = 0;  // of the default (ai.onnx) domain
  uint64_t nodes = 0;  // main graph
  std::map<std::string, uint64_t> op_counts;  // main graph, by op_type

  static ModelStats of(const onnx::ModelProto& model, uint64_t bytes);
};

// What a rewrite did with a layer's trained weights when it changed their shape (a snapped Conv
// kernel): `method` "reinit" or "transfer", `kept_energy` |W_new|^2 / |W_old|^2 of the trained
// kernel (0 for reinit: nothing of it is kept).
struct WeightsNote {
  std::string method;
  double kept_energy = 0;
};

struct MatchRecord {
  std::string id;  // pattern name + ":" + anchor node label; stable across runs
  std::string pattern;
  std::string phase;
  bool numerically_equivalent = false;
  bool applied = false;
  std::string reason;  // why it was not applied; empty when applied
  std::vector<std::string> nodes;
  std::vector<std::string> new_nodes;
  // Op types parallel to nodes and new_nodes, so a reader (the page's drawing) can show the
  // rewrite without the model.
  std::vector<std::string> node_ops;
  std::vector<std::string> new_node_ops;
  std::optional<WeightsNote> weights;
};

struct Warning {
  std::string match_id;
  std::string pattern;
  std::string node;
  std::string message;
};

struct Unsupported {
  std::string node;
  std::string op_type;
  std::string reason;
  // The activation idiom the node is part of ("SiLU"), else its op type: what the summary and
  // the page group by.
  std::string group;
  // For an idiom's nodes: all the nodes of that one activation, in graph order.
  std::vector<std::string> unit;
};

// The fit of the converted model in a Lattice sensAI fixed-point scheme (core/fixed_point/fit.h).
struct FixedPointLayer {
  std::string node, op;
  double weight_min = 0, weight_max = 0;
  double clipped = 0;             // share of the weights that clip at the scheme's range
  double vanished = 0;            // share of the weights, not zero, that round to zero
  double quantization_error = 0;  // ||w - q(w)|| / ||w||
  bool fits = true;
};
struct FixedPointBatchNorm {
  std::string node;
  double scale_min = 0, scale_max = 0, offset_min = 0, offset_max = 0;  // gamma / sqrt(var + eps), beta - mean * scale
  bool fits = true;
};
struct FixedPointFinding {
  std::string node;  // "" for the whole model
  std::string rule, message, source;
};
struct FixedPointFit {
  std::string scheme, source;
  double error_threshold = 0;
  std::vector<FixedPointLayer> layers;
  std::vector<FixedPointBatchNorm> batch_norms;
  std::vector<FixedPointFinding> findings;

  Json to_json() const;
};

// A quantized input (core/quantization.h).
struct Quantization {
  std::vector<std::string> nodes;  // the quantization ops, in graph order
  std::string form;                // "qdq", "qoperator" or "dynamic"
  bool per_channel = false;
  std::optional<double> scale_min, scale_max;  // over the constant scales
  std::optional<bool> power_of_two;            // every scale a power of two; FPQ only
  std::string message;

  Json to_json() const;
};

struct Timings {
  double load = 0, convert = 0, save = 0;
};

struct Report {
  Options options;
  ModelStats input, output;
  std::vector<MatchRecord> matches;
  std::vector<Warning> warnings;
  std::vector<Unsupported> unsupported;
  std::optional<Quantization> quantization;  // for quantized models only
  std::optional<FixedPointFit> fixed_point;  // with --fixed-point only
  Timings timings_ms;

  bool any_applied() const;
  // Whether some match (applied or not) has the id `id`.
  bool has_match(std::string_view id) const;
  Json to_json() const;
};

}  // namespace lattice
