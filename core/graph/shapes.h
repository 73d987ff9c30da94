#pragma once
// Tensor shapes for the ops the patterns look at (SPEC section 1), seeded from graph inputs,
// initializers, Constant nodes and value_info. An inferred shape wins over a stale value_info.
// A symbolic dimension (dim_param) stays that symbol where the op keeps it (a batch through
// every layer, a height through a size-keeping Conv), so equal symbols compare equal; what
// cannot be known is -1. After a rewrite the Rewriter re-infers only from the replaced nodes
// downstream, as far as shapes change (ShapeDraft).
//
// Small integer tensors that an exporter computes at run time from constants and known shapes
// (a Pad's pads as Concat(Split(constant)), a Resize's sizes as Concat(Slice(Shape(x)), constant))
// are evaluated too, for inference only: the graph keeps them as they are, and inference reads
// them where it reads a constant, so the sizes they give are known.
#include <optional>
#include <string>
#include <vector>
#include <unordered_map>

#include "core/graph/graph_view.h"
#include "core/graph/window.h"

namespace lattice {

class ShapeDraft;

// An evaluated integer tensor: a scalar or a vector (rank 0 or 1) of at most kMaxValues values.
// An element taken from a dimension that is not a known number (Shape of [N, 3, H, W]) is that
// dimension (a symbol's id, or -1), with `known` false; an element computed from one is -1.
constexpr size_t kMaxValues = 64;
struct IntValue {
  Shape dims;
  std::vector<int64_t> data;
  std::vector<bool> known;  // per element: data holds the number
  bool all_known() const;
  bool operator==(const IntValue&) const = default;
};

class Shapes {
 public:
  Shapes(const GraphView& view, int64_t opset);

  // nullptr when not even the rank is known.
  const Shape* of(const std::string& name) const;
  // The shape if every dimension is a known number.
  const Shape* concrete(const std::string& name) const;
  // The integer values of `name`: a constant's (int64 or int32), or evaluated; nullopt if neither.
  std::optional<std::vector<int64_t>> ints(const std::string& name) const;
  // The dim_param a symbolic dimension stands for; nullptr for numbers and -1.
  const std::string* symbol(int64_t dim) const;
  // The id of the symbol `name`, added to the table if new.
  int64_t intern(const std::string& name) const;
  // A window's output size; from a symbolic input, a symbol named by the size's expression
  // ("floor((H+1)/2)"), so that two ways to the same size compare equal and a rewrite that
  // changes it is seen.
  int64_t window_dim(const Window& w, size_t axis, int64_t in) const;

  // For the Rewriter, which keeps the shapes current instead of inferring them anew: takes the
  // draft's entries, adds a new initializer's shape, forgets a tensor that no longer exists.
  void commit(const ShapeDraft& draft);
  void add_initializer(const onnx::TensorProto& t);
  void forget(const std::string& name);

 private:
  friend class ShapeDraft;
  // What the graph declares for a node's output before inference: value_info, outputs, inputs.
  const Shape* seed_of(const std::string& name) const;
  Shape from_type(const onnx::TypeProto& type) const;

  const GraphView& view_;
  int64_t opset_;
  std::unordered_map<std::string, Shape> seeds_;   // declared shapes
  std::unordered_map<std::string, Shape> shapes_;  // declared, initializers', then inferred
  std::unordered_map<std::string, IntValue> values_;  // evaluated integer tensors
  // Symbol -2 - i is symbols_[i]. Interning a name changes no shape, so drafts intern here too.
  mutable std::vector<std::string> symbols_;
  mutable std::unordered_map<std::string, int64_t> symbol_ids_;
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
  std::optional<std::vector<int64_t>> ints(const std::string& name) const;
  const Shapes& base() const { return base_; }

 private:
  friend class Shapes;
  const Shapes& base_;
  std::unordered_map<std::string, const onnx::TensorProto*> constants_;
  std::unordered_map<std::string, std::optional<Shape>> shapes_;  // nullopt: no shape
  std::unordered_map<std::string, std::optional<IntValue>> values_;  // nullopt: not evaluated
};

// "[batch, 3, 224, 224]": a symbol by its name when `shapes` is given, "?" for an unknown dimension.
std::string format_shape(const Shape& shape, const Shapes* shapes = nullptr);
// "batch", "3" or "?": one dimension as format_shape writes it.
std::string format_dim(int64_t dim, const Shapes* shapes = nullptr);

// Whether two shapes may be the same tensor's: equal rank, and equal wherever both are numbers.
bool same_shape(const Shape& a, const Shape& b);

// A node whose inputs no longer fit together (Concat with different non-axis dims, elementwise
// ops that cannot broadcast, a Reshape whose input's element count its target shape cannot hold):
// the message names it and the shapes.
// With `symbols`, two different symbols where the sizes must agree count as a conflict too.
std::optional<std::string> shape_conflict(const onnx::NodeProto& node, const Shapes& shapes, bool symbols = false);
std::optional<std::string> shape_conflict(const onnx::NodeProto& node, const ShapeDraft& shapes, bool symbols = false);

}  // namespace lattice
