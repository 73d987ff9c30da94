#include "core/repair/set_weights.h"

#include <cmath>
#include <new>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "core/graph/rewriter.h"
#include "core/onnx/attributes.h"
#include "core/onnx/domain.h"
#include "core/onnx/external_data.h"
#include "core/onnx/model_io.h"
#include "core/onnx/tensor_data.h"
#include "core/onnx/tensor_type.h"
#include "core/onnx/tensor_values.h"
#include "core/onnx/validate.h"
#include "core/patterns/fold/channel_affine.h"
#include "core/util/utf8.h"

namespace lattice::repair {
namespace {

// What one layer's rewrite writes, checked before any rewrite is made, so a bad entry anywhere in
// the list leaves nothing half done.
struct Plan {
  const LayerWeights* layer;
  std::vector<float> weights, bias;  // as the node takes them
  std::string weight_name;  // the initializer the node reads now
  int32_t weight_type;
  std::vector<int64_t> weight_dims;
  std::optional<std::string> bias_name;  // none: the node has no bias yet
  int32_t bias_type;
  std::vector<int64_t> bias_dims;
  // The weight / bias initializer only this node reads: the new one takes its name.
  bool weight_in_place = false, bias_in_place = false;
};

std::unordered_map<std::string, int> nodes_by_label(const GraphView& view) {
  std::unordered_map<std::string, int> out;
  for (int n = view.first(); n >= 0; n = view.next(n)) out.emplace(view.label(n), n);
  return out;
}

// An initializer of the graph (not a Constant node, not read through an Identity) that `node`
// alone reads, once: replacing it under its own name changes nothing else.
bool read_only_by(const GraphView& view, const std::string& name, int node) {
  if (!view.initializer(name) || view.reader_count(name) != 1) return false;
  const auto& consumers = view.consumers(name);
  if (consumers.size() != 1 || consumers[0] != node) return false;
  int reads = 0;
  for (const auto& in : view.node(node).input()) reads += in == name ? 1 : 0;
  return reads == 1;
}

Status check_values(const std::vector<float>& values, int32_t type, std::string_view what, const std::string& label) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!fits_type(values[i], type)) {
      return options_error("the new {} of '{}' holds {} at index {}, which {} cannot hold", what, label, values[i], i,
                           onnx_types::element_name(type));
    }
  }
  return ok_status();
}

// The BatchNormalization that alone reads `node`'s output, its map taken out of the layer's new
// weights and bias.
Status take_out_batch_norm(const GraphView& view, int64_t opset, int id, const onnx::TensorProto& weight, Plan& plan) {
  const auto& node = view.node(id);
  const std::string& out = node.output(0);
  const auto& readers = view.consumers(out);
  if (view.reader_count(out) != 1 || readers.size() != 1 || view.node(readers[0]).op_type() != "BatchNormalization" ||
      view.is_graph_output(out)) {
    return options_error("'{}' was fitted through a BatchNormalization, and its output is not read by one alone",
                         plan.layer->node);
  }
  auto affine = batch_norm_affine(view, opset, nullptr, readers[0]);
  if (!affine) return options_error("'{}' cannot take new weights through the BatchNormalization after it: {}", plan.layer->node, affine.error().message);
  return unfold_channel_affine(node, weight, *affine, plan.weights, plan.bias);
}

Result<Plan> plan_layer(const GraphView& view, int64_t opset, int id, const LayerWeights& layer) {
  const auto& node = view.node(id);
  const std::string& label = layer.node;
  Plan plan{&layer, layer.weights, layer.bias, "", 0, {}, std::nullopt, 0, {}, false, false};
  if (!is_default_domain(node.domain()) || (node.op_type() != "Conv" && node.op_type() != "Gemm")) {
    return options_error("node '{}' is a {}, not a Conv or Gemm: only those take new weights", label, node.op_type());
  }
  const bool gemm = node.op_type() == "Gemm";
  if (gemm && (attr::get_float(node, "alpha", 1.0f) != 1.0f || attr::get_float(node, "beta", 1.0f) != 1.0f)) {
    return options_error("Gemm '{}' has alpha {} and beta {}: new weights are written for alpha = beta = 1 only", label,
                         attr::get_float(node, "alpha", 1.0f), attr::get_float(node, "beta", 1.0f));
  }
  if (node.input_size() < 2 || node.input(1).empty()) return options_error("node '{}' has no weight input", label);
  plan.weight_name = node.input(1);
  const auto* w = view.constant(plan.weight_name);
  if (!w) {
    return options_error("the weight '{}' of '{}' is not a constant: it is the {}", plan.weight_name, label,
                         view.describe(plan.weight_name));
  }
  if (!is_float_type(w->data_type())) {
    return options_error("the weight '{}' of '{}' is {}, not float, double or float16", plan.weight_name, label,
                         onnx_types::element_name(w->data_type()));
  }
  auto count = element_count(*w, fmt::format("the weight '{}'", plan.weight_name));
  if (!count) return count.error();
  if (layer.weights.size() != *count) {
    return options_error("'{}' has a weight of {} values ({}), and {} new values were given", label, *count,
                         format_dims(*w), layer.weights.size());
  }
  plan.weight_type = w->data_type();
  plan.weight_dims.assign(w->dims().begin(), w->dims().end());
  size_t rank = plan.weight_dims.size();
  if ((gemm && rank != 2) || (!gemm && rank < 3)) {
    return options_error("the weight '{}' {} of '{}' is not a {} weight", plan.weight_name, format_dims(*w), label,
                         node.op_type());
  }
  const bool trans_b = attr::get_int(node, "transB", 0) != 0;
  int64_t channels = gemm && !trans_b ? plan.weight_dims[1] : plan.weight_dims[0];
  if (layer.bias.size() != static_cast<size_t>(channels)) {
    return options_error("'{}' has {} output channels, and a new bias of {} values was given", label, channels,
                         layer.bias.size());
  }
  plan.bias_type = plan.weight_type;
  plan.bias_dims = {channels};
  if (node.input_size() > 2 && !node.input(2).empty()) {
    const std::string& name = node.input(2);
    const auto* b = view.constant(name);
    if (!b) return options_error("the bias '{}' of '{}' is not a constant: it is the {}", name, label, view.describe(name));
    if (!is_float_type(b->data_type())) {
      return options_error("the bias '{}' of '{}' is {}, not float, double or float16", name, label,
                           onnx_types::element_name(b->data_type()));
    }
    plan.bias_name = name;
    plan.bias_type = b->data_type();
    // A per-channel bias keeps its shape (Gemm's [1, M]); a broadcast one becomes [M].
    auto b_count = element_count(*b, fmt::format("the bias '{}'", name));
    if (!b_count) return b_count.error();
    if (*b_count == static_cast<uint64_t>(channels)) plan.bias_dims.assign(b->dims().begin(), b->dims().end());
    plan.bias_in_place = read_only_by(view, name, id);
  }
  plan.weight_in_place = read_only_by(view, plan.weight_name, id);
  if (layer.through_batch_norm) {
    if (auto s = take_out_batch_norm(view, opset, id, *w, plan); !s) return s.error();
  }
  if (auto s = check_values(plan.weights, plan.weight_type, "weights", label); !s) return s.error();
  if (auto s = check_values(plan.bias, plan.bias_type, "bias", label); !s) return s.error();
  return plan;
}

std::vector<double> widened(const std::vector<float>& values) { return {values.begin(), values.end()}; }

// The node at `id` reading `weight` and `bias` (new initializers, or the names it reads already).
Status rewrite_node(Rewriter& rewriter, int id, const std::string& label, std::vector<onnx::TensorProto> initializers,
                    const std::string& weight, const std::string& bias) {
  Replacement r;
  onnx::NodeProto node = rewriter.view().node(id);
  node.set_input(1, weight);
  if (node.input_size() > 2) {
    node.set_input(2, bias);
  } else {
    node.add_input(bias);
  }
  r.nodes.push_back(std::move(node));
  r.initializers = std::move(initializers);
  Match match;
  match.steps = {id};
  auto applied = rewriter.apply(match, std::move(r));
  if (!applied) return error("'{}' cannot read its new weights: {}", label, applied.error().message);
  return ok_status();
}

// The model's first tensor that keeps its data in an external file, if any.
std::optional<std::string> external_tensor(onnx::ModelProto& model) {
  std::optional<std::string> external;
  for_each_tensor(model, [&](onnx::TensorProto& t, const TensorPlace& place) {
    if (!external && is_external(t)) external = place.what;
  });
  return external;
}

Status write(onnx::ModelProto& model, const GraphView::Labels& given_labels, const std::vector<LayerWeights>& layers) {
  if (auto external = external_tensor(model)) {
    return options_error("{} keeps its data in an external file: new weights are written into a model that holds "
                         "all its data (convert with dataLayout 'inline' first)",
                         printable(*external));
  }
  if (auto s = validate_model(model); !s) return s.error();
  auto labels = given_labels;
  Rewriter rewriter(*model.mutable_graph(), default_opset(model), model.ir_version(), &labels,
                    Rewriter::Mode::kIncremental);
  std::vector<Plan> plans;
  {
    auto ids = nodes_by_label(rewriter.view());
    std::unordered_set<std::string> seen;
    for (const auto& layer : layers) {
      auto it = ids.find(layer.node);
      if (it == ids.end()) return options_error("no node is labelled '{}' in this model", printable(layer.node));
      if (!seen.insert(layer.node).second) return options_error("node '{}' is listed twice", printable(layer.node));
      auto plan = plan_layer(rewriter.view(), default_opset(model), it->second, layer);
      if (!plan) return plan.error();
      plans.push_back(std::move(plan).value());
    }
  }

  // First every node reads fresh tensors (the old ones only it read are dropped as it stops
  // reading them); then the in-place ones take their old names, free again by then. The Rewriter
  // never holds two initializers of one name, so this takes two rewrites rather than one.
  std::vector<std::pair<std::string, std::string>> fresh(plans.size());  // weight, bias names
  for (size_t i = 0; i < plans.size(); ++i) {
    const Plan& plan = plans[i];
    const std::string& label = plan.layer->node;
    NameAllocator& names = rewriter.names_for_match();
    fresh[i].first = names.fresh(plan.weight_name + "_repaired");
    fresh[i].second = names.fresh(plan.bias_name ? *plan.bias_name + "_repaired" : label + ".bias");
    std::vector<onnx::TensorProto> initializers;
    initializers.push_back(make_tensor(fresh[i].first, plan.weight_type, plan.weight_dims, widened(plan.weights)));
    initializers.push_back(make_tensor(fresh[i].second, plan.bias_type, plan.bias_dims, widened(plan.bias)));
    int id = nodes_by_label(rewriter.view()).at(label);
    if (auto s = rewrite_node(rewriter, id, label, std::move(initializers), fresh[i].first, fresh[i].second); !s) {
      return s.error();
    }
  }
  for (size_t i = 0; i < plans.size(); ++i) {
    const Plan& plan = plans[i];
    if (!plan.weight_in_place && !plan.bias_in_place) continue;
    NameAllocator& names = rewriter.names_for_match();
    std::vector<onnx::TensorProto> initializers;
    auto rename = [&](bool in_place, const std::string& old_name, const std::string& current) {
      if (!in_place || names.fresh(old_name) != old_name) return current;
      onnx::TensorProto t = *rewriter.view().initializer(current);
      t.set_name(old_name);
      initializers.push_back(std::move(t));
      return old_name;
    };
    std::string weight = rename(plan.weight_in_place, plan.weight_name, fresh[i].first);
    std::string bias = rename(plan.bias_in_place, plan.bias_name.value_or(""), fresh[i].second);
    if (initializers.empty()) continue;
    int id = nodes_by_label(rewriter.view()).at(plan.layer->node);
    if (auto s = rewrite_node(rewriter, id, plan.layer->node, std::move(initializers), weight, bias); !s) return s.error();
  }
  rewriter.finish(false);
  if (auto s = validate_model(model); !s) return error("the model with new weights is not valid: {}", s.error().message);
  return ok_status();
}

Result<std::string> run(std::span<const uint8_t> bytes, const std::vector<LayerWeights>& layers) {
  if (auto s = check_model_size(bytes.size()); !s) return s.error();
  auto model = parse_model(bytes);
  if (!model) return model.error();
  if (auto s = write(*model, GraphView::original_labels(model->graph()), layers); !s) return s.error();
  return serialize_model(*model);
}

Error out_of_memory(uint64_t bytes) {
  return Error{fmt::format("out of memory while writing new weights into a {} byte model", bytes), ErrorKind::kMemory};
}

}  // namespace

Result<std::string> set_layer_weights(std::span<const uint8_t> model, const std::vector<LayerWeights>& layers) {
  try {
    return run(model, layers);
  } catch (const std::bad_alloc&) {
    return out_of_memory(model.size());
  }
}

Status write_layer_weights(onnx::ModelProto& model, const GraphView::Labels& labels,
                           const std::vector<LayerWeights>& layers) {
  try {
    return write(model, labels, layers);
  } catch (const std::bad_alloc&) {
    return out_of_memory(model.ByteSizeLong());
  }
}

}  // namespace lattice::repair
