#include "core/repair/part.h"

#include <algorithm>

#include "core/onnx/model_io.h"
#include "core/onnx/subgraph.h"
#include "core/util/utf8.h"

namespace lattice::repair {
namespace {

// The model's fields but its graph: every part carries them (IR version, opsets, functions,
// metadata, and fields a newer ONNX added, which parse as unknown ones).
onnx::ModelProto model_around(const onnx::ModelProto& model) {
  onnx::ModelProto out;
  out.set_ir_version(model.ir_version());
  *out.mutable_opset_import() = model.opset_import();
  out.set_producer_name(model.producer_name());
  out.set_producer_version(model.producer_version());
  out.set_domain(model.domain());
  out.set_model_version(model.model_version());
  out.set_doc_string(model.doc_string());
  *out.mutable_metadata_props() = model.metadata_props();
  *out.mutable_training_info() = model.training_info();
  *out.mutable_functions() = model.functions();
  *out.mutable_unknown_fields() = model.unknown_fields();
  return out;
}

// A graph input for a given tensor: its type and rank, its first dimension named `n`.
onnx::ValueInfoProto given_input(const std::string& name, const GivenTensor& given) {
  onnx::ValueInfoProto input;
  input.set_name(name);
  auto* tensor = input.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(given.element_type);
  auto* shape = tensor->mutable_shape();
  for (size_t i = 0; i < given.dims.size(); ++i) {
    if (i == 0) {
      shape->add_dim()->set_dim_param("n");
    } else {
      shape->add_dim()->set_dim_value(given.dims[i]);
    }
  }
  return input;
}

}  // namespace

ModelParts::ModelParts(const onnx::ModelProto& model) : model_(model), view_(model.graph(), nullptr, model.ir_version()) {
  const auto& graph = model.graph();
  reads_.resize(static_cast<size_t>(graph.node_size()));
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    auto& reads = reads_[static_cast<size_t>(i)];
    for (const auto& input : node.input()) {
      if (!input.empty()) reads.push_back(input);
    }
    auto inner = implicit_inputs(node);
    std::vector<std::string> sorted(inner.begin(), inner.end());
    std::sort(sorted.begin(), sorted.end());
    reads.insert(reads.end(), sorted.begin(), sorted.end());
  }
  for (const auto& sparse : graph.sparse_initializer()) sparse_.emplace(sparse.values().name(), &sparse);
}

std::vector<int> ModelParts::nodes_for(const std::function<bool(const std::string&)>& given,
                                       const std::vector<std::string>& wanted) const {
  std::unordered_set<std::string> needed(wanted.begin(), wanted.end());
  std::vector<int> kept;
  const auto& graph = model_.graph();
  for (int i = graph.node_size() - 1; i >= 0; --i) {
    const auto& outputs = graph.node(i).output();
    if (std::none_of(outputs.begin(), outputs.end(),
                     [&](const std::string& o) { return !o.empty() && needed.contains(o) && !given(o); })) {
      continue;
    }
    kept.push_back(i);
    for (const auto& name : reads(i)) needed.insert(name);
  }
  std::reverse(kept.begin(), kept.end());
  return kept;
}

Result<Part> ModelParts::cut(const GivenTensors& given, const std::vector<std::string>& outputs) const {
  Part part;
  part.nodes = nodes_for([&](const std::string& name) { return given.contains(name); }, outputs);
  const auto& graph = model_.graph();
  std::unordered_set<std::string> written;
  for (int i : part.nodes) {
    for (const auto& o : graph.node(i).output()) {
      if (!o.empty()) written.insert(o);
    }
  }
  std::unordered_set<std::string> taken;  // inputs and initializers listed already
  std::vector<std::string> initializers;
  for (int i : part.nodes) {
    const auto& node = graph.node(i);
    for (const auto& name : reads(i)) {
      if (written.contains(name) || taken.contains(name)) continue;
      if (given.contains(name)) {
        part.inputs.push_back(name);
        taken.insert(name);
      } else if (view_.initializer(name) || sparse_.contains(name)) {
        initializers.push_back(name);
        taken.insert(name);
      } else if (view_.is_graph_input(name) ||
                 std::find(node.input().begin(), node.input().end(), name) != node.input().end()) {
        return options_error("a part of the model needs '{}', which it was not given", printable(name));
      }
    }
  }
  for (const auto& name : outputs) {
    if (!written.contains(name)) return options_error("no node of the model computes '{}' from what was given", printable(name));
  }

  onnx::ModelProto out = model_around(model_);
  auto* g = out.mutable_graph();
  g->set_name(graph.name());
  for (int i : part.nodes) *g->add_node() = graph.node(i);
  for (const auto& name : initializers) {
    if (const auto* init = view_.initializer(name)) {
      *g->add_initializer() = *init;
    } else {
      *g->add_sparse_initializer() = *sparse_.at(name);
    }
  }
  for (const auto& name : part.inputs) *g->add_input() = given_input(name, given.at(name));
  for (const auto& name : outputs) g->add_output()->set_name(name);
  auto bytes = serialize_model(out);
  if (!bytes) return bytes.error();
  part.bytes = std::move(bytes).value();
  return part;
}

}  // namespace lattice::repair
