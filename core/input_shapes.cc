#include "core/input_shapes.h"

#include <fmt/ranges.h>

namespace lattice {
namespace {

std::string declared(const onnx::TensorShapeProto& shape) {
  std::vector<std::string> dims;
  for (const auto& d : shape.dim()) {
    dims.push_back(d.has_dim_value() && d.dim_value() >= 0 ? fmt::format("{}", d.dim_value())
                   : d.has_dim_param() && !d.dim_param().empty() ? d.dim_param()
                                                                 : "?");
  }
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

}  // namespace

Result<bool> pin_input_shapes(onnx::ModelProto& model, const Options& options) {
  auto& graph = *model.mutable_graph();
  bool changed = false;
  for (const auto& [name, dims] : options.input_shapes) {
    // Said without the flag or the API's key: the CLI and the API both reach here.
    const std::string pin = fmt::format("the shape [{}] pinned for '{}'", fmt::join(dims, ", "), name);
    onnx::ValueInfoProto* input = nullptr;
    for (auto& candidate : *graph.mutable_input()) {
      if (candidate.name() == name) input = &candidate;
    }
    if (!input) {
      std::vector<std::string> names;
      for (const auto& i : graph.input()) names.push_back(i.name());
      return options_error("{}: the model has no graph input '{}' (its inputs: {})", pin, name, fmt::join(names, ", "));
    }
    for (const auto& init : graph.initializer()) {
      if (init.name() == name) return options_error("{}: graph input '{}' is an initializer, its shape is its data's", pin, name);
    }
    if (!input->type().has_tensor_type()) return options_error("{}: graph input '{}' is not a tensor", pin, name);
    auto* shape = input->mutable_type()->mutable_tensor_type()->mutable_shape();
    if (input->type().tensor_type().has_shape()) {
      if (static_cast<size_t>(shape->dim_size()) != dims.size()) {
        return options_error("{} has {} dimensions, but graph input '{}' has {}: {}", pin, dims.size(), name, shape->dim_size(),
                     declared(*shape));
      }
      for (int i = 0; i < shape->dim_size(); ++i) {
        const auto& d = shape->dim(i);
        // A negative dim_value (paddle2onnx writes -1) is a dynamic dimension, as ONNX's own tools read it.
        if (d.has_dim_value() && d.dim_value() >= 0 && d.dim_value() != dims[static_cast<size_t>(i)]) {
          return options_error("{} contradicts graph input '{}' {}: its dimension {} is fixed at {}", pin, name,
                       declared(*shape), i, d.dim_value());
        }
      }
    }
    onnx::TensorShapeProto pinned;
    for (auto d : dims) pinned.add_dim()->set_dim_value(d);
    if (pinned.SerializeAsString() != shape->SerializeAsString()) {
      *shape = std::move(pinned);
      changed = true;
    }
  }
  return changed;
}

}  // namespace lattice
