#include "core/repair/plan.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "core/describe.h"
#include "core/input_shapes.h"

namespace lattice::repair {
namespace {

// A layer a rewrite made may sit behind this elementwise activation while its target is the
// activation's output (the SPPF chains: Conv → Relu writing the pool's output).
constexpr const char* kThrough = "Relu";

// Two dimensions past the samples' axis, of two models: equal numbers, or the same symbol. Each
// model has its own symbols, so they compare by name; an unknown one equals nothing.
bool same_dim(const Shapes& theirs, int64_t a, const Shapes& mine, int64_t b) {
  if (a >= 0 || b >= 0) return a == b;
  const std::string* x = theirs.symbol(a);
  const std::string* y = mine.symbol(b);
  return x && y && *x != "?" && *x == *y;
}

bool same_shape(const Shapes& theirs, const Shape* a, const Shapes& mine, const Shape* b) {
  if (!a || !b || a->size() != b->size()) return false;
  for (size_t i = 1; i < a->size(); ++i) {
    if (!same_dim(theirs, (*a)[i], mine, (*b)[i])) return false;
  }
  return true;
}

bool fixed(const Shape* shape) {
  if (!shape) return false;
  for (int64_t d : *shape) {
    if (d < 0) return false;
  }
  return true;
}

// [fh, fw] when `theirs` is an NCHW tensor of the same channels whose height and width are whole
// multiples (not both 1) of `mine`'s.
std::optional<std::array<int64_t, 2>> coarser(const Shape* theirs, const Shape* mine) {
  if (!theirs || !mine || theirs->size() != 4 || mine->size() != 4) return std::nullopt;
  if ((*mine)[1] < 0 || (*theirs)[1] != (*mine)[1]) return std::nullopt;
  std::array<int64_t, 2> factors{};
  for (size_t axis = 2; axis < 4; ++axis) {
    const int64_t t = (*theirs)[axis], m = (*mine)[axis];
    if (t < 0 || m <= 0 || t % m != 0 || t / m < 1) return std::nullopt;
    factors[axis - 2] = t / m;
  }
  if (factors[0] * factors[1] <= 1) return std::nullopt;
  return factors;
}

// Per sample, the bytes of a tensor of this shape: 4 an element, an unknown dimension counting 1,
// an unknown shape one element.
double bytes_per_sample(const Shape* shape) {
  double elements = 1;
  if (shape) {
    for (size_t i = 1; i < shape->size(); ++i) elements *= (*shape)[i] >= 0 ? static_cast<double>((*shape)[i]) : 1;
  }
  return 4 * elements;
}

// A tensor's bytes per sample in a model: a node's output or a graph input the caller feeds.
double tensor_bytes(const ModelIndex& model, const std::string& name) {
  const GraphView& view = model.view;
  const bool fed = view.is_graph_input(name) && !view.initializer(name);
  return bytes_per_sample(view.producer(name) >= 0 || fed ? model.shapes.of(name) : nullptr);
}

// The node that alone reads `tensor` (once), or -1.
int sole_reader(const GraphView& view, const std::string& tensor) {
  if (tensor.empty()) return -1;
  const auto& readers = view.consumers(tensor);
  if (readers.size() != 1) return -1;
  const auto& inputs = view.node(readers[0]).input();
  return std::count(inputs.begin(), inputs.end(), tensor) == 1 ? readers[0] : -1;
}

const onnx::AttributeProto* attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// One tensor the chain after a layer writes, the ops from the layer to it, and, at the MaxPool that
// now does a stride-2 layer's downsampling, the pool.
struct ChainStep {
  std::string tensor;
  std::vector<std::string> ops;
  std::optional<Unpooled> pool;  // `fine` filled by the caller
};

// The first applied match naming each node among its new nodes: a conversion pattern's, before the
// fold that folded its BatchNormalization into the same node.
class Matches {
 public:
  explicit Matches(const std::optional<std::vector<ConversionMatch>>& matches) : matches_(matches) {
    if (!matches) return;
    for (const auto& m : *matches) {
      if (!m.applied) continue;
      for (const auto& node : m.new_nodes) of_.emplace(node, &m);
    }
  }
  const ConversionMatch* of(const std::string& node) const {
    auto it = of_.find(node);
    return it == of_.end() ? nullptr : it->second;
  }
  // Without the conversion's report no layer is known to be as the original's.
  bool rewritten(const std::string& node) const {
    const ConversionMatch* m = of(node);
    return !matches_ || (m && !m->numerically_equivalent);
  }

 private:
  const std::optional<std::vector<ConversionMatch>>& matches_;
  std::unordered_map<std::string, const ConversionMatch*> of_;
};

// The chain after a layer that a rewrite made it part of, step by step. A BatchNormalization that
// alone reads the layer (under FPQ, or with folding off, the original's trained one, or the fresh
// one a rewrite put after a new Conv) is fitted through: the fit takes the layer and its
// per-channel map as one, and the session takes the map out of the new weights (set_weights.h,
// through_batch_norm). An elementwise activation (kThrough) follows; and a stride-2 layer's rewrite
// ends with the MaxPool that now downsamples, whose output is the original's tensor on the
// original's grid. The BatchNormalization's output comes first: where the original computes it
// (its conv's bias moved into a new BatchNormalization under FPQ, a dense head's too), the fit
// reproduces the values before the activation, as it does a layer's own output (on the SPPF CNN
// exported with BatchNorm folded, fitted to the Relu after it instead, the repaired float model
// was at 65.3 % against 91.3 %).
std::vector<ChainStep> chain_after(const GraphView& view, int layer, const Matches& matches) {
  const ConversionMatch* made_by = matches.of(view.label(layer));
  std::vector<ChainStep> steps;
  std::vector<std::string> ops;
  std::string tensor = view.node(layer).output_size() > 0 ? view.node(layer).output(0) : "";
  int next = sole_reader(view, tensor);
  auto step_to = [&](int reader) {
    ops.push_back(view.node(reader).op_type());
    tensor = view.node(reader).output_size() > 0 ? view.node(reader).output(0) : "";
  };
  if (next >= 0 && view.node(next).op_type() == "BatchNormalization") {
    step_to(next);
    steps.push_back({tensor, ops, std::nullopt});  // its output
    next = sole_reader(view, tensor);
  }
  // What the fit reproduces: the layer's output, or its BatchNormalization's.
  const std::string fitted = tensor;
  if (next >= 0 && view.node(next).op_type() == kThrough) {
    step_to(next);
    steps.push_back({tensor, ops, std::nullopt});
    next = sole_reader(view, tensor);
  }
  if (next >= 0 && view.node(next).op_type() == "MaxPool" && made_by && matches.of(view.label(next)) == made_by) {
    const auto* kernel = attribute(view.node(next), "kernel_shape");
    const auto* strides = attribute(view.node(next), "strides");
    if (kernel && kernel->type() == onnx::AttributeProto::INTS && kernel->ints_size() == 2) {
      Unpooled pool;
      pool.kernel.assign(kernel->ints().begin(), kernel->ints().end());
      pool.strides = strides ? std::vector<int64_t>(strides->ints().begin(), strides->ints().end()) : std::vector<int64_t>{1, 1};
      pool.tensor = fitted;
      step_to(next);
      steps.push_back({tensor, ops, std::move(pool)});
    }
  }
  return steps;
}

std::string joined(const std::vector<std::string>& ops) {
  std::string out;
  for (const auto& op : ops) out += (out.empty() ? "" : " → ") + op;
  return out;
}

// A model's inputs pinned to the samples' sizes while it is planned (a dynamic model's tensors
// then have numbers for shapes), and as they were again after.
class AtSampleSizes {
 public:
  AtSampleSizes(onnx::ModelProto& model, const SampleSizes& sizes) : graph_(*model.mutable_graph()), saved_(graph_.input()) {
    std::unordered_set<std::string> weights;
    for (const auto& init : graph_.initializer()) weights.insert(init.name());
    Options pinned;
    bool dynamic = false;
    for (const auto& input : graph_.input()) {
      if (weights.contains(input.name())) continue;  // a weight, not what the samples feed
      dynamic |= !declared_fixed(input);
      for (const auto& [name, dims] : sizes) {
        if (name == input.name()) pinned.input_shapes.emplace_back(name, dims);
      }
    }
    // A model that cannot be pinned to them is planned on its symbols.
    if (dynamic && !pin_input_shapes(model, pinned)) restore();
  }
  ~AtSampleSizes() { restore(); }
  AtSampleSizes(const AtSampleSizes&) = delete;
  AtSampleSizes& operator=(const AtSampleSizes&) = delete;

 private:
  static bool declared_fixed(const onnx::ValueInfoProto& input) {
    if (!input.type().has_tensor_type() || !input.type().tensor_type().has_shape()) return false;
    for (const auto& d : input.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value() || d.dim_value() < 0) return false;
    }
    return true;
  }
  void restore() { graph_.mutable_input()->CopyFrom(saved_); }

  onnx::GraphProto& graph_;
  const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> saved_;
};

}  // namespace

RepairPlan plan_repair(const ModelIndex& original, const ModelIndex& converted,
                       const std::optional<std::vector<ConversionMatch>>& matches) {
  // The original's tensors by name: what a layer may reproduce.
  std::unordered_map<std::string, const Shape*> theirs;
  for (int i = 0; i < original.view.size(); ++i) {
    for (const auto& name : original.view.node(i).output()) {
      if (!name.empty()) theirs[name] = original.shapes.of(name);
    }
  }
  auto their_shape = [&](const std::string& name) -> const Shape* {
    auto it = theirs.find(name);
    return it == theirs.end() ? nullptr : it->second;
  };
  const Matches made(matches);
  const GraphView& view = converted.view;
  RepairPlan plan;
  for (int i = 0; i < view.size(); ++i) {
    const auto& node = view.node(i);
    if (node.op_type() != "Conv" && node.op_type() != "Gemm") continue;
    PlanEntry entry;
    entry.node = view.label(i);
    entry.op = node.op_type();
    entry.input = node.input_size() > 0 ? node.input(0) : "";
    entry.rewritten = made.rewritten(entry.node);
    if (const ConversionMatch* m = made.of(entry.node)) entry.match_id = m->id;
    const std::string weight = node.input_size() > 1 ? node.input(1) : "";
    const Shape* weight_shape = weight.empty() ? nullptr : converted.shapes.of(weight);
    if (weight.empty() || !view.constant(weight) || !fixed(weight_shape)) {
      plan.left.push_back({std::move(entry), "its weights are not a constant of known shape"});
      continue;
    }
    // The tensor to reproduce: the layer's own output, or what the chain a rewrite made after it
    // writes. The same shape, or (past a pool the conversion made coarser) whole multiples of it
    // in height and width; through a pool, only the same shape, from a layer of known shape.
    const std::string output = node.output_size() > 0 ? node.output(0) : "";
    const Shape* output_shape = converted.shapes.of(output);
    auto chain = chain_after(view, i, made);
    std::vector<ChainStep> steps{{output, {}, std::nullopt}};
    steps.insert(steps.end(), chain.begin(), chain.end());
    PlannedLayer layer;
    for (auto& step : steps) {
      const Shape* wanted = their_shape(step.tensor);
      const Shape* mine = converted.shapes.of(step.tensor);
      const bool same = same_shape(original.shapes, wanted, converted.shapes, mine);
      const auto factors = same ? std::nullopt : coarser(wanted, mine);
      if (!same && !factors) continue;
      if (step.pool && (factors || !fixed(output_shape))) continue;
      layer.target = step.tensor;
      layer.through = joined(step.ops);
      layer.pooled = factors;
      if (step.pool) {
        layer.unpooled = std::move(step.pool);
        layer.unpooled->fine = *output_shape;
      }
      break;
    }
    if (layer.target.empty()) {
      plan.left.push_back(
          {std::move(entry), "the original computes no tensor of the same name and shape at its output, nor does the chain after it"});
      continue;
    }
    // A layer read only by a Relu (after its BatchNormalization, if any): what it computes below
    // zero is cut off anyway.
    layer.rectified = std::any_of(chain.begin(), chain.end(), [](const ChainStep& s) { return s.ops.back() == kThrough; });
    layer.through_batch_norm = layer.through.starts_with("BatchNormalization");
    layer.attributes = node_attributes_json(node);
    layer.weight_shape = *weight_shape;
    layer.has_bias = node.input_size() > 2 && !node.input(2).empty();
    layer.input_bytes = tensor_bytes(converted, entry.input);
    layer.target_bytes = tensor_bytes(converted, layer.target);
    layer.original_target_bytes = tensor_bytes(original, layer.target);
    layer.entry = std::move(entry);
    plan.layers.push_back(std::move(layer));
  }
  plan.original_live_bytes = live_bytes(original);
  plan.converted_live_bytes = live_bytes(converted);
  return plan;
}

RepairPlan plan_repair(onnx::ModelProto& original, onnx::ModelProto& converted, const GraphView::Labels& converted_labels,
                       const std::optional<std::vector<ConversionMatch>>& matches, const SampleSizes& sizes) {
  AtSampleSizes theirs_pinned(original, sizes), mine_pinned(converted, sizes);
  const auto original_labels = GraphView::original_labels(original.graph());
  const ModelIndex theirs(original, original_labels), mine(converted, converted_labels);
  return plan_repair(theirs, mine, matches);
}

double live_bytes(const ModelIndex& model) {
  const GraphView& view = model.view;
  std::unordered_map<std::string, int> last;  // the last node reading each tensor
  for (int i = 0; i < view.size(); ++i) {
    for (const auto& name : view.node(i).input()) {
      if (!name.empty()) last[name] = i;
    }
  }
  std::unordered_map<int, double> ends;  // the bytes no node after this one reads
  double live = 0, peak = 0;
  for (int i = 0; i < view.size(); ++i) {
    for (const auto& name : view.node(i).output()) {
      auto it = name.empty() ? last.end() : last.find(name);
      if (it == last.end() || it->second <= i) continue;
      const double bytes = bytes_per_sample(model.shapes.of(name));
      live += bytes;
      ends[it->second] += bytes;
    }
    peak = std::max(peak, live);
    live -= ends[i];
  }
  return peak;
}

namespace {

Json entry_json(const PlanEntry& entry) {
  Json out = Json::object().set("node", entry.node).set("op", entry.op).set("input", entry.input).set("rewritten", entry.rewritten);
  if (entry.match_id) out.set("match_id", *entry.match_id);
  return out;
}

}  // namespace

Json plan_json(const RepairPlan& plan) {
  Json layers = Json::array(), left = Json::array(), bytes = Json::array();
  for (const auto& layer : plan.layers) {
    Json out = entry_json(layer.entry);
    if (!layer.through.empty()) out.set("through", layer.through);
    if (layer.pooled) out.set("pooled", Json::array_of(*layer.pooled));
    if (const auto& pool = layer.unpooled) {
      out.set("unpooled", Json::object()
                              .set("kernel", Json::array_of(pool->kernel))
                              .set("strides", Json::array_of(pool->strides))
                              .set("fine", Json::array_of(pool->fine))
                              .set("tensor", pool->tensor));
    }
    if (layer.rectified) out.set("rectified", true);
    if (layer.through_batch_norm) out.set("throughBatchNorm", true);
    layers.push(out.set("target", layer.target)
                    .set("attributes", layer.attributes)
                    .set("weightShape", Json::array_of(layer.weight_shape))
                    .set("hasBias", layer.has_bias));
    bytes.push(Json::object()
                   .set("input", layer.input_bytes)
                   .set("target", layer.target_bytes)
                   .set("originalTarget", layer.original_target_bytes));
  }
  for (const auto& l : plan.left) left.push(entry_json(l.entry).set("reason", l.reason));
  return Json::object()
      .set("layers", std::move(layers))
      .set("left", std::move(left))
      .set("bytesPerSample", Json::object()
                                 .set("original", plan.original_live_bytes)
                                 .set("converted", plan.converted_live_bytes)
                                 .set("layers", std::move(bytes)));
}

}  // namespace lattice::repair
