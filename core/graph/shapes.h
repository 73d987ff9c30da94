#pragma once
// Tensor shapes for the ops the patterns look at (SPEC section 1), seeded from graph inputs,
// initializers, Constant nodes and value_info. An inferred shape wins over a stale value_info.
// A symbolic dimension (dim_param) stays that symbol where the op keeps it (a batch through
// every layer, a height through a size-keeping Conv), so equal symbols compare equal; what
// cannot be known is -1.
#include <optional>
#include <string>
#include <vector>
#include <unordered_map>

#include "core/graph/graph_view.h"
#include "core/graph/window.h"

namespace lattice {

class Shapes {
 public:
  Shapes(const GraphView& view, int64_t opset);
  // The shapes the graph would have with `nodes` (in order) instead of its own, and with
  // `extra_initializers` added: what the Rewriter checks a replacement against.
  Shapes(const GraphView& view, int64_t opset, const std::vector<const onnx::NodeProto*>& nodes,
         const std::vector<onnx::TensorProto>& extra_initializers);

  // nullptr when not even the rank is known.
  const Shape* of(const std::string& name) const;
  // The shape if every dimension is a known number.
  const Shape* concrete(const std::string& name) const;
  // The dim_param a symbolic dimension stands for; nullptr for numbers and -1.
  const std::string* symbol(int64_t dim) const;

 private:
  void seed();
  void infer(const onnx::NodeProto& node);
  void set(const std::string& name, Shape shape);
  Shape from_type(const onnx::TypeProto& type);
  // The id of the symbol `name`, added to the table if new.
  int64_t intern(const std::string& name);
  // A window's output size; from a symbolic input, a symbol named by the size's expression
  // ("floor((H+1)/2)"), so that two ways to the same size compare equal and a rewrite that
  // changes it is seen.
  int64_t window_dim(const Window& w, size_t axis, int64_t in);
  const onnx::TensorProto* constant(const std::string& name) const;

  const GraphView& view_;
  std::unordered_map<std::string, const onnx::TensorProto*> extra_constants_;
  int64_t opset_;
  std::unordered_map<std::string, Shape> shapes_;
  // Symbol -2 - i is symbols_[i]; ids follow the graph's declarations, so every Shapes of one
  // graph agrees on them.
  std::vector<std::string> symbols_;
  std::unordered_map<std::string, int64_t> symbol_ids_;
};

// "[batch, 3, 224, 224]": a symbol by its name when `shapes` is given, "?" for an unknown dimension.
std::string format_shape(const Shape& shape, const Shapes* shapes = nullptr);
// "batch", "3" or "?": one dimension as format_shape writes it.
std::string format_dim(int64_t dim, const Shapes* shapes = nullptr);

// Whether two shapes may be the same tensor's: equal rank, and equal wherever both are numbers.
bool same_shape(const Shape& a, const Shape& b);

// A multi-input node whose inputs no longer fit together (Concat with different non-axis
// dims, elementwise ops that cannot broadcast): the message names it and the shapes.
// With `symbols`, two different symbols where the sizes must agree count as a conflict too.
std::optional<std::string> shape_conflict(const onnx::NodeProto& node, const Shapes& shapes, bool symbols = false);

}  // namespace lattice
