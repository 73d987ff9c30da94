#pragma once
// Tensor shapes for the ops the patterns look at (SPEC section 1), seeded from graph inputs,
// initializers, Constant nodes and value_info. An inferred shape wins over a stale value_info;
// dimensions that are symbolic or unknown stay -1. After a rewrite the Rewriter re-infers only
// from the replaced nodes downstream, as far as shapes change (ShapeDraft).
#include <optional>
#include <string>
#include <vector>
#include <unordered_map>

#include "core/graph/graph_view.h"
#include "core/graph/window.h"

namespace lattice {

class ShapeDraft;

class Shapes {
 public:
  Shapes(const GraphView& view, int64_t opset);

  // nullptr when not even the rank is known.
  const Shape* of(const std::string& name) const;
  // The shape if every dimension is a known number.
  const Shape* concrete(const std::string& name) const;

  // For the Rewriter, which keeps the shapes current instead of inferring them anew: takes the
  // draft's entries, adds a new initializer's shape, forgets a tensor that no longer exists.
  void commit(const ShapeDraft& draft);
  void add_initializer(const onnx::TensorProto& t);
  void forget(const std::string& name);

 private:
  friend class ShapeDraft;
  // What the graph declares for a node's output before inference: value_info, outputs, inputs.
  const Shape* seed_of(const std::string& name) const;

  const GraphView& view_;
  int64_t opset_;
  std::unordered_map<std::string, Shape> seeds_;   // declared shapes
  std::unordered_map<std::string, Shape> shapes_;  // declared, initializers', then inferred
};

// The shapes a rewrite would give, without touching the Shapes it starts from: the new nodes'
// outputs, and downstream only as far as shapes change (the Rewriter drives the walk).
class ShapeDraft {
 public:
  explicit ShapeDraft(const Shapes& base) : base_(base) {}
  // A new initializer or Constant node: its shape, and its value for the ops that read one.
  void add_initializer(const onnx::TensorProto& t);
  void add_constant_node(const onnx::NodeProto& node);
  // Infers the node's outputs afresh; returns those whose shape differs from the base's.
  std::vector<std::string> infer(const onnx::NodeProto& node);
  const Shape* of(const std::string& name) const;

 private:
  friend class Shapes;
  const Shapes& base_;
  std::unordered_map<std::string, const onnx::TensorProto*> constants_;
  std::unordered_map<std::string, std::optional<Shape>> shapes_;  // nullopt: no shape
};

// "[1, 3, 224, 224]", "?" for an unknown dimension.
std::string format_shape(const Shape& shape);

// Whether two shapes may be the same tensor's: equal rank, and equal wherever both are known.
bool same_shape(const Shape& a, const Shape& b);

// A multi-input node whose inputs no longer fit together (Concat with different non-axis
// dims, elementwise ops that cannot broadcast): the message names it and the shapes.
std::optional<std::string> shape_conflict(const onnx::NodeProto& node, const Shapes& shapes);
std::optional<std::string> shape_conflict(const onnx::NodeProto& node, const ShapeDraft& shapes);

}  // namespace lattice
