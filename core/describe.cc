#include "core/describe.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/graph/shapes.h"
#include "core/input_shapes.h"
#include "core/onnx/domain.h"
#include "core/onnx/model_io.h"
#include "core/onnx/tensor_type.h"

namespace lattice {
namespace {

// A dimension as a number, or the name of a symbolic one (a graph input's "N", or the expression
// of a size derived from it, "floor((H+1)/2)"), or "?".
Json shape_json(const Shape& shape, const Shapes& shapes) {
  Json out = Json::array();
  for (int64_t d : shape) {
    const std::string* symbol = d >= 0 ? nullptr : shapes.symbol(d);
    out.push(d >= 0 ? Json(d) : symbol ? Json(*symbol) : Json("?"));
  }
  return out;
}

// A declared value (graph input or output): element type and shape, symbolic dims by name.
Json value_json(const onnx::ValueInfoProto& value) {
  Json out = Json::object().set("name", value.name());
  if (!value.type().has_tensor_type()) return out.set("type", "non-tensor");
  const auto& tensor = value.type().tensor_type();
  out.set("type", onnx_types::element_name(tensor.elem_type()));
  if (!tensor.has_shape()) return out.set("shape", nullptr);
  Json dims = Json::array();
  for (const auto& d : tensor.shape().dim()) {
    if (d.has_dim_value() && d.dim_value() >= 0) {  // a negative dim_value is dynamic
      dims.push(d.dim_value());
    } else {
      dims.push(d.has_dim_param() && !d.dim_param().empty() ? Json(d.dim_param()) : Json("?"));
    }
  }
  return out.set("shape", std::move(dims));
}

Json tensor_summary(const onnx::TensorProto& t) {
  return fmt::format("tensor {} [{}]", onnx_types::element_name(t.data_type()), fmt::join(t.dims(), ", "));
}

Json attribute_json(const onnx::AttributeProto& a) {
  using A = onnx::AttributeProto;
  switch (a.type()) {
    case A::INT: return a.i();
    case A::FLOAT: return static_cast<double>(a.f());
    case A::STRING: return a.s();
    case A::INTS: return Json::array_of(a.ints());
    case A::FLOATS: {
      Json out = Json::array();
      for (float f : a.floats()) out.push(static_cast<double>(f));
      return out;
    }
    case A::STRINGS: return Json::array_of(a.strings());
    case A::TENSOR: return tensor_summary(a.t());
    case A::GRAPH: return fmt::format("subgraph ({} nodes)", a.g().node_size());
    default: return fmt::format("attribute of type {}", static_cast<int>(a.type()));
  }
}

uint64_t element_count(const onnx::TensorProto& t) {
  uint64_t n = 1;
  for (int64_t d : t.dims()) n *= static_cast<uint64_t>(d < 0 ? 0 : d);
  return n;
}

}  // namespace

Json node_attributes_json(const onnx::NodeProto& node) {
  Json attributes = Json::object();
  for (const auto& a : node.attribute()) attributes.set(a.name(), attribute_json(a));
  return attributes;
}

Result<Json> describe_model(std::span<const uint8_t> bytes,
                            const std::vector<std::pair<std::string, std::vector<int64_t>>>& input_shapes) {
  auto model = parse_model(bytes);
  if (!model) return model.error();
  if (!input_shapes.empty()) {
    Options pinned;
    pinned.input_shapes = input_shapes;
    if (auto changed = pin_input_shapes(*model, pinned); !changed) return changed.error();
  }
  return describe_graph(*model, GraphView::original_labels(model->graph()), bytes.size());
}

Json describe_graph(const onnx::ModelProto& model, const GraphView::Labels& labels, uint64_t bytes) {
  return describe_graph(model, ModelIndex(model, labels), bytes);
}

Json describe_graph(const onnx::ModelProto& model, const ModelIndex& index, uint64_t bytes) {
  const onnx::GraphProto& graph = model.graph();
  const GraphView& view = index.view;
  const Shapes& shapes = index.shapes;

  uint64_t parameters = 0;
  for (const auto& init : graph.initializer()) parameters += element_count(init);
  // Tensors held in Constant nodes count the same way: some exporters (PaddleOCR's) keep every
  // weight there, and the folds and the fit analysis read them as weights (GraphView::constant).
  for (int i = 0; i < view.size(); ++i) {
    const auto& node = view.node(i);
    if (node.op_type() != "Constant" || !is_default_domain(node.domain()) || node.output_size() == 0) continue;
    if (const auto* t = view.constant(node.output(0))) parameters += element_count(*t);
  }

  auto tensor = [&](const std::string& name) {
    Json out = Json::object().set("name", name);
    if (name.empty()) return out;  // an omitted optional input
    if (view.constant(name) != nullptr) out.set("constant", true);
    const Shape* shape = shapes.of(name);
    return out.set("shape", shape ? shape_json(*shape, shapes) : Json(nullptr));
  };
  Json nodes = Json::array();
  for (int i = 0; i < view.size(); ++i) {
    const auto& node = view.node(i);
    Json inputs = Json::array(), outputs = Json::array();
    for (const auto& name : node.input()) inputs.push(tensor(name));
    for (const auto& name : node.output()) outputs.push(tensor(name));
    Json entry = Json::object().set("name", view.label(i)).set("op", node.op_type());
    if (!is_default_domain(node.domain())) entry.set("domain", node.domain());
    if (node.name().empty()) entry.set("unnamed", true);
    nodes.push(entry.set("inputs", std::move(inputs)).set("outputs", std::move(outputs))
                   .set("attributes", node_attributes_json(node)));
  }

  Json inputs = Json::array(), outputs = Json::array();
  for (const auto& value : graph.input()) {
    if (view.initializer(value.name())) continue;  // a weight (or its overridable default): not what a user feeds
    inputs.push(value_json(value));
  }
  for (const auto& value : graph.output()) outputs.push(value_json(value));
  std::string producer = model.producer_name();
  if (!model.producer_version().empty()) producer += " " + model.producer_version();
  return Json::object()
      .set("bytes", bytes)
      .set("ir_version", model.ir_version())
      .set("opset", default_opset(model))
      .set("producer", producer)
      .set("parameters", parameters)
      .set("inputs", std::move(inputs))
      .set("outputs", std::move(outputs))
      .set("nodes", std::move(nodes));
}

}  // namespace lattice
