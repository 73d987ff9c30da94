#pragma once
// Tensor shapes for the ops the patterns look at (SPEC section 1), seeded from graph inputs,
// initializers, Constant nodes and value_info. An inferred shape wins over a stale value_info;
// dimensions that are symbolic or unknown stay -1.
#include <string>
#include <unordered_map>

#include "core/graph/graph_view.h"
#include "core/graph/window.h"

namespace lattice {

class Shapes {
 public:
  Shapes(const GraphView& view, int64_t opset);

  // nullptr when not even the rank is known.
  const Shape* of(const std::string& name) const;
  // The shape if every dimension is a known number.
  const Shape* concrete(const std::string& name) const;

 private:
  void infer(const onnx::NodeProto& node);
  void set(const std::string& name, Shape shape);

  const GraphView& view_;
  int64_t opset_;
  std::unordered_map<std::string, Shape> shapes_;
};

// "[1, 3, 224, 224]", "?" for an unknown dimension.
std::string format_shape(const Shape& shape);

}  // namespace lattice
