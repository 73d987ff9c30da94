#include "core/graph/shapes.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/onnx/attributes.h"
#include "core/onnx/domain.h"
#include "core/onnx/tensor_values.h"

namespace lattice {
namespace {

bool has_shape(const onnx::ValueInfoProto& info) {
  return info.type().has_tensor_type() && info.type().tensor_type().has_shape();
}

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  if (to == from + 1) return s[from];  // a symbol stays itself
  for (size_t i = from; i < to; ++i) {
    // Not a number, or more elements than int64 counts: unknown.
    if (s[i] < 0 || __builtin_mul_overflow(p, s[i], &p)) return -1;
  }
  return p;
}

// numpy broadcasting; a dim that is not a number against 1 or itself stays as it is, against
// another unknown or symbol it is unknown.
Shape broadcast(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    out[i] = x == 1 ? y : (y == 1 ? x : (x == y ? x : (x < 0 && y < 0 ? -1 : (x < 0 ? y : (y < 0 ? x : -1)))));
  }
  return out;
}

// The node's `axis` attribute for a `rank`-D input, negative counted from the end; nullopt
// outside [0, rank) (or [0, rank] where the op allows the rank itself, as Flatten does).
std::optional<size_t> axis_of(const onnx::NodeProto& node, int64_t fallback, size_t rank, bool rank_allowed = false) {
  auto r = static_cast<int64_t>(rank);
  int64_t axis = attr::get_int(node, "axis", fallback);
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r || (axis == r && !rank_allowed)) return std::nullopt;
  return static_cast<size_t>(axis);
}

// A known size plus `added` (a pad, another input's size): -1 when the sum overflows or is
// negative, which no tensor has, so that no size wraps around into a symbol's id.
int64_t size_sum(int64_t size, int64_t added) {
  int64_t sum = 0;
  return __builtin_add_overflow(size, added, &sum) || sum < 0 ? -1 : sum;
}

// A dimension resized by `scale`: a symbol survives only a scale of 1; a scale that is NaN,
// negative or too large for the result leaves the dimension unknown.
int64_t scaled(int64_t dim, double scale) {
  if (dim < 0) return scale == 1.0 ? dim : -1;
  double out = std::floor(static_cast<double>(dim) * scale);
  if (!(out >= 0 && out < static_cast<double>(std::numeric_limits<int64_t>::max()))) return -1;
  return static_cast<int64_t>(out);
}

const std::unordered_set<std::string>& same_shape_ops() {
  static const std::unordered_set<std::string> ops{
      "Relu", "LeakyRelu", "PRelu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Elu", "Selu", "Celu",
      "Softplus", "Softsign", "Identity", "Dropout", "BatchNormalization", "InstanceNormalization", "Cast",
      "Neg", "Abs", "Exp", "Log", "Sqrt", "Reciprocal", "Floor", "Ceil", "Round", "Erf", "Softmax", "LogSoftmax",
      "LRN", "Mish", "Gelu", "QuantizeLinear", "DequantizeLinear", "Not", "Sign"};
  return ops;
}

const std::unordered_set<std::string>& broadcast_ops() {
  static const std::unordered_set<std::string> ops{"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean",
                                                   "Equal", "Greater", "Less", "And", "Or", "Xor", "Where",
                                                   "GreaterOrEqual", "LessOrEqual", "Mod", "BitShift"};
  return ops;
}

}  // namespace

namespace {

// Where inference reads and writes: the Shapes of a whole graph, or a ShapeDraft over them.
struct ShapeAccess {
  const Shapes& table;  // symbols: named dims are interned here, drafts included
  std::function<const Shape*(const std::string&)> of;
  std::function<const onnx::TensorProto*(const std::string&)> constant;
  std::function<void(const std::string&, Shape)> set;
  std::function<const IntValue*(const std::string&)> value;
  std::function<void(const std::string&, IntValue)> set_value;
};

void infer(const onnx::NodeProto& node, int64_t opset, const ShapeAccess& access);

// The integer values of a constant tensor (int64 or int32), or nullopt.
std::optional<std::vector<int64_t>> constant_ints(const onnx::TensorProto* t, const std::string& name) {
  if (!t) return std::nullopt;
  auto v = read_int_values(*t, name);
  return v ? std::optional(std::move(v).value()) : std::nullopt;
}

}  // namespace

Shape Shapes::from_type(const onnx::TypeProto& type) const {
  Shape shape;
  for (const auto& dim : type.tensor_type().shape().dim()) {
    if (dim.has_dim_value() && dim.dim_value() >= 0) {
      shape.push_back(dim.dim_value());
    } else if (dim.has_dim_param() && !dim.dim_param().empty()) {
      shape.push_back(intern(dim.dim_param()));
    } else {
      shape.push_back(-1);
    }
  }
  return shape;
}

int64_t Shapes::intern(const std::string& name) const {
  auto [it, added] = symbol_ids_.emplace(name, -2 - static_cast<int64_t>(symbols_.size()));
  if (added) symbols_.push_back(name);
  return it->second;
}

namespace {

// `expression` as "fn(inner/divisor)" (fn floor or ceil, the division at its outermost level),
// or nullopt.
std::optional<std::pair<std::string, int64_t>> division(const std::string& expression, std::string_view fn) {
  if (!expression.starts_with(fmt::format("{}(", fn)) || !expression.ends_with(")")) return std::nullopt;
  std::string_view body(expression.data() + fn.size() + 1, expression.size() - fn.size() - 2);
  int depth = 0;
  size_t slash = std::string_view::npos;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] == '(') ++depth;
    if (body[i] == ')' && --depth < 0) return std::nullopt;  // "floor(a)/floor(b)": not one call
    if (body[i] == '/' && depth == 0) slash = i;
  }
  if (slash == std::string_view::npos) return std::nullopt;
  int64_t divisor = 0;
  auto digits = body.substr(slash + 1);
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), divisor);
  if (ec != std::errc() || end != digits.data() + digits.size() || divisor <= 0) return std::nullopt;
  return std::pair{std::string(body.substr(0, slash)), divisor};
}

// `expression` as "base+k" or "base-k" (a Pad's symbolic size), the term at its outermost
// level: {base, k}; else {expression, 0}.
std::pair<std::string, int64_t> offset(const std::string& expression) {
  size_t at = expression.find_last_of("+-");
  if (at == std::string::npos || at == 0 || expression.find_first_of("()", at) != std::string::npos) return {expression, 0};
  int64_t k = 0;
  auto [end, ec] = std::from_chars(expression.data() + at + 1, expression.data() + expression.size(), k);
  if (ec != std::errc() || end != expression.data() + expression.size()) return {expression, 0};
  // The term must stand at depth 0 (not inside a call's parentheses).
  int depth = 0;
  for (size_t i = 0; i < at; ++i) depth += expression[i] == '(' ? 1 : expression[i] == ')' ? -1 : 0;
  if (depth != 0) return {expression, 0};
  return {expression.substr(0, at), expression[at] == '-' ? -k : k};
}

}  // namespace

int64_t Shapes::window_dim(const Window& w, size_t axis, int64_t in) const {
  int64_t out = window_output(w, axis, in);
  const std::string* x = symbol(in);
  if (out != -1 || !x || !w.pads_known) return out;
  // floor((in + pads - extent) / s) + 1, and ceil(y / s) = floor((y + s - 1) / s), as one
  // floor((in + a) / s). (ceil_mode's rule that the last window starts inside is left out.)
  int64_t extent = (w.kernel[axis] - 1) * w.dilations[axis] + 1, s = w.strides[axis];
  int64_t a = w.pads[axis] + w.pads[axis + w.rank()] - extent + s + (w.ceil_mode ? s - 1 : 0);
  // A padded size's offset joins the window's: floor((x+1-1)/2) is floor(x/2).
  auto [base, k] = offset(*x);
  if (k != 0) {
    a += k;
    x = &base;
  }
  if (a == 0 && s == 1) return k != 0 ? intern(base) : in;
  // Said as people read it: floor(x/s) or ceil(x/s) when a is 0 or s - 1, and a chain of them in
  // one, as floor(floor(x/t)/s) = floor(x/(t·s)) and ceil(ceil(x/t)/s) = ceil(x/(t·s)) for sizes:
  // a stride-32 backbone's height is ceil(H/32), not five nested floors.
  if (a == 0 || a == s - 1) {
    std::string_view fn = a == 0 ? "floor" : "ceil";
    int64_t divisor = 0;
    if (auto inner = division(*x, fn); inner && !__builtin_mul_overflow(inner->second, s, &divisor)) {
      return intern(fmt::format("{}({}/{})", fn, inner->first, divisor));
    }
    return intern(fmt::format("{}({}/{})", fn, *x, s));
  }
  return intern(fmt::format("floor(({}{:+})/{})", *x, a, s));
}

const std::string* Shapes::symbol(int64_t dim) const {
  if (dim >= -1) return nullptr;
  auto i = static_cast<size_t>(-2 - dim);
  return i < symbols_.size() ? &symbols_[i] : nullptr;
}

Shapes::Shapes(const GraphView& view, int64_t opset) : view_(view), opset_(opset) {
  const auto& g = view.graph();
  for (const auto& info : g.value_info()) {
    if (has_shape(info)) seeds_[info.name()] = from_type(info.type());
  }
  for (const auto& info : g.output()) {
    if (has_shape(info)) seeds_[info.name()] = from_type(info.type());
  }
  for (const auto& info : g.input()) {
    if (has_shape(info)) seeds_[info.name()] = from_type(info.type());
  }
  shapes_ = seeds_;
  for (const auto& init : g.initializer()) {
    if (!view.is_overridable_input(init.name())) shapes_[init.name()] = Shape(init.dims().begin(), init.dims().end());
  }
  ShapeAccess access{*this, [this](const std::string& name) { return of(name); },
                     [this](const std::string& name) { return view_.constant(name); },
                     [this](const std::string& name, Shape shape) {
                       if (!name.empty()) shapes_[name] = std::move(shape);
                     },
                     [this](const std::string& name) {
                       auto it = values_.find(name);
                       return it == values_.end() ? nullptr : &it->second;
                     },
                     [this](const std::string& name, IntValue value) {
                       if (!name.empty()) values_[name] = std::move(value);
                     }};
  // Node order is topological for every graph this tool writes; a second pass covers inputs
  // that arrive unsorted.
  bool sorted = true;
  for (int n = view.first(); n >= 0; n = view.next(n)) {
    const auto& node = view.node(n);
    for (const auto& in : node.input()) {
      int p = view.producer(in);
      sorted = sorted && (p < 0 || p == n || view.before(p, n));
    }
    infer(node, opset_, access);
  }
  if (sorted) return;
  for (int n = view.first(); n >= 0; n = view.next(n)) infer(view.node(n), opset_, access);
}

const Shape* Shapes::seed_of(const std::string& name) const {
  auto it = seeds_.find(name);
  return it == seeds_.end() ? nullptr : &it->second;
}

const Shape* Shapes::of(const std::string& name) const {
  auto it = shapes_.find(name);
  return it == shapes_.end() ? nullptr : &it->second;
}

const Shape* Shapes::concrete(const std::string& name) const {
  const Shape* s = of(name);
  if (!s) return nullptr;
  for (auto d : *s) {
    if (d < 0) return nullptr;
  }
  return s;
}

bool IntValue::all_known() const {
  return std::all_of(known.begin(), known.end(), [](bool k) { return k; });
}

std::optional<std::vector<int64_t>> Shapes::ints(const std::string& name) const {
  if (auto it = values_.find(name); it != values_.end()) {
    return it->second.all_known() ? std::optional(it->second.data) : std::nullopt;
  }
  return constant_ints(view_.constant(name), name);
}

void Shapes::commit(const ShapeDraft& draft) {
  for (const auto& [name, shape] : draft.shapes_) {
    if (shape) {
      shapes_[name] = *shape;
    } else {
      shapes_.erase(name);
    }
  }
  for (const auto& [name, value] : draft.values_) {
    if (value) {
      values_[name] = *value;
    } else {
      values_.erase(name);
    }
  }
}

void Shapes::add_initializer(const onnx::TensorProto& t) {
  shapes_[t.name()] = Shape(t.dims().begin(), t.dims().end());
}

void Shapes::forget(const std::string& name) {
  seeds_.erase(name);
  shapes_.erase(name);
  values_.erase(name);
}

void ShapeDraft::add_initializer(const onnx::TensorProto& t) {
  constants_[t.name()] = &t;
  shapes_[t.name()] = Shape(t.dims().begin(), t.dims().end());
}

void ShapeDraft::add_constant_node(const onnx::NodeProto& node) {
  if (node.op_type() != "Constant") return;
  for (const auto& a : node.attribute()) {
    if (a.name() == "value" && a.has_t()) constants_[node.output(0)] = &a.t();
  }
}

const Shape* ShapeDraft::of(const std::string& name) const {
  auto it = shapes_.find(name);
  if (it == shapes_.end()) return base_.of(name);
  return it->second ? &*it->second : nullptr;
}

std::optional<std::vector<int64_t>> ShapeDraft::ints(const std::string& name) const {
  if (auto it = values_.find(name); it != values_.end()) {
    return it->second && it->second->all_known() ? std::optional(it->second->data) : std::nullopt;
  }
  if (auto it = constants_.find(name); it != constants_.end()) return constant_ints(it->second, name);
  return base_.ints(name);
}

std::vector<std::string> ShapeDraft::infer(const onnx::NodeProto& node) {
  // As in a whole-graph inference: what the graph declares, unless inference says otherwise.
  for (const auto& o : node.output()) {
    if (o.empty()) continue;
    const Shape* declared = base_.seed_of(o);
    shapes_[o] = declared ? std::optional<Shape>(*declared) : std::nullopt;
    values_[o] = std::nullopt;
  }
  ShapeAccess access{base_, [this](const std::string& name) { return of(name); },
                     [this](const std::string& name) {
                       auto it = constants_.find(name);
                       return it != constants_.end() ? it->second : base_.view_.constant(name);
                     },
                     [this](const std::string& name, Shape shape) {
                       if (!name.empty()) shapes_[name] = std::move(shape);
                     },
                     [this](const std::string& name) -> const IntValue* {
                       auto it = values_.find(name);
                       if (it != values_.end()) return it->second ? &*it->second : nullptr;
                       auto base = base_.values_.find(name);
                       return base == base_.values_.end() ? nullptr : &base->second;
                     },
                     [this](const std::string& name, IntValue value) {
                       if (!name.empty()) values_[name] = std::move(value);
                     }};
  lattice::infer(node, base_.opset_, access);
  std::vector<std::string> changed;
  for (const auto& o : node.output()) {
    if (o.empty()) continue;
    const Shape *before = base_.of(o), *now = of(o);
    auto was = base_.values_.find(o);
    const IntValue* value_before = was == base_.values_.end() ? nullptr : &was->second;
    const IntValue* value_now = values_[o] ? &*values_[o] : nullptr;
    if ((before == nullptr) != (now == nullptr) || (before && *before != *now) ||
        (value_before == nullptr) != (value_now == nullptr) || (value_before && *value_before != *value_now)) {
      changed.push_back(o);
    }
  }
  return changed;
}

namespace {

// A Slice's starts, ends, axes and steps: attributes before opset 10, inputs from it (read by
// `ints`, constant or evaluated); nullopt when one is not known or their lengths differ.
struct SliceParams {
  std::vector<int64_t> starts, ends;
  std::optional<std::vector<int64_t>> axes, steps;
};
using IntsOf = std::function<std::optional<std::vector<int64_t>>(int)>;
std::optional<SliceParams> slice_params(const onnx::NodeProto& node, int64_t opset, const IntsOf& ints) {
  std::optional<std::vector<int64_t>> starts, ends, axes, steps;
  if (opset < 10) {
    starts = attr::get_ints(node, "starts");
    ends = attr::get_ints(node, "ends");
    axes = attr::get_ints(node, "axes");
  } else {
    starts = ints(1);
    ends = ints(2);
    if (node.input_size() > 3 && !node.input(3).empty() && !(axes = ints(3))) return std::nullopt;
    if (node.input_size() > 4 && !node.input(4).empty() && !(steps = ints(4))) return std::nullopt;
  }
  if (!starts || !ends || starts->size() != ends->size() || (axes && axes->size() != starts->size()) ||
      (steps && steps->size() != starts->size())) {
    return std::nullopt;
  }
  return SliceParams{std::move(*starts), std::move(*ends), std::move(axes), std::move(steps)};
}

// ONNX's clamping of a Slice's start and end along an axis of `n` elements, for a nonzero step:
// {the first index taken, the bound it runs to (exclusive)}.
std::pair<int64_t, int64_t> clamped_slice(int64_t n, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += n;
  if (end < 0) end += n;
  if (step > 0) return {std::clamp<int64_t>(start, 0, n), std::clamp<int64_t>(end, 0, n)};
  return {std::clamp<int64_t>(start, 0, n - 1), std::clamp<int64_t>(end, -1, n - 1)};
}

void infer_shape(const onnx::NodeProto& node, int64_t opset_, const ShapeAccess& access) {
  if (!is_default_domain(node.domain())) return;
  const std::string& op = node.op_type();
  auto input = [&](int i) -> const Shape* { return i < node.input_size() ? access.of(node.input(i)) : nullptr; };
  auto ints_of = [&](int i) -> std::optional<std::vector<int64_t>> {
    if (i >= node.input_size() || node.input(i).empty()) return std::nullopt;
    if (const auto* t = access.constant(node.input(i))) return constant_ints(t, node.input(i));
    const IntValue* v = access.value(node.input(i));
    return v && v->all_known() ? std::optional(v->data) : std::nullopt;
  };
  // Sizes (a Resize's, a Reshape's target): a constant's, or evaluated, where an element taken
  // from a dimension that is not a known number is that dimension. Each with whether it is a
  // number as written (a Reshape's -1 and 0 are read only then).
  auto sizes_of = [&](int i) -> std::optional<std::pair<Shape, std::vector<bool>>> {
    if (i >= node.input_size() || node.input(i).empty()) return std::nullopt;
    if (const auto* t = access.constant(node.input(i))) {
      auto v = constant_ints(t, node.input(i));
      if (!v) return std::nullopt;
      std::vector<bool> known(v->size(), true);
      return std::pair{std::move(*v), std::move(known)};
    }
    const IntValue* v = access.value(node.input(i));
    return v ? std::optional(std::pair{v->data, v->known}) : std::nullopt;
  };
  auto floats_of = [&](int i) -> std::optional<std::vector<double>> {
    if (i >= node.input_size() || node.input(i).empty()) return std::nullopt;
    const auto* t = access.constant(node.input(i));
    if (!t) return std::nullopt;
    auto v = read_values(*t, node.input(i));
    return v ? std::optional(std::move(v).value()) : std::nullopt;
  };
  if (node.output_size() == 0) return;
  const std::string& out = node.output(0);
  const Shape* x = input(0);

  if (op == "Constant") {
    for (const auto& a : node.attribute()) {
      if (a.name() == "value" && a.has_t()) access.set(out, Shape(a.t().dims().begin(), a.t().dims().end()));
    }
  } else if (same_shape_ops().contains(op)) {
    if (x) access.set(out, *x);
  } else if (broadcast_ops().contains(op)) {
    std::optional<Shape> s;
    for (int i = 0; i < node.input_size(); ++i) {
      const Shape* in = input(i);
      if (!in) return;
      s = s ? broadcast(*s, *in) : *in;
    }
    if (s) access.set(out, *s);
  } else if (op == "Conv" || op == "ConvTranspose" || op == "MaxPool" || op == "AveragePool" || op == "LpPool") {
    if (!x || x->size() < 3) return;
    const Shape* w = input(1);
    auto win = window_of(node, x, (op == "Conv" || op == "ConvTranspose") ? w : nullptr);
    if (!win || win->rank() + 2 != x->size()) return;
    Shape s = {(*x)[0], (*x)[1]};
    if (op == "Conv") s[1] = w && !w->empty() ? (*w)[0] : -1;
    if (op == "ConvTranspose") {
      int64_t group = attr::get_int(node, "group", 1);
      int64_t channels = -1;
      if (w && w->size() > 1 && (*w)[1] >= 0 && __builtin_mul_overflow((*w)[1], group, &channels)) channels = -1;
      s[1] = channels < 0 ? -1 : channels;
      auto output_shape = attr::get_ints(node, "output_shape");
      auto output_padding = attr::get_ints(node, "output_padding").value_or(std::vector<int64_t>(win->rank(), 0));
      for (size_t i = 0; i < win->rank(); ++i) {
        int64_t in = (*x)[i + 2];
        if (output_shape && output_shape->size() == win->rank()) {
          s.push_back((*output_shape)[i]);
        } else if (in < 1 || output_padding.size() != win->rank()) {
          s.push_back(-1);
        } else {
          // stride·(in − 1) + output_padding + extent − pads; the window's attributes are
          // bounded (window_of), the input's size and output_padding are not.
          int64_t strided = 0;
          bool overflow = __builtin_mul_overflow(win->strides[i], in - 1, &strided);
          int64_t size = overflow ? -1 : size_sum(strided, output_padding[i]);
          size = size < 0 ? -1
                          : size_sum(size, (win->kernel[i] - 1) * win->dilations[i] + 1 - win->pads[i] -
                                               win->pads[i + win->rank()]);
          s.push_back(size);
        }
      }
    } else {
      for (size_t i = 0; i < win->rank(); ++i) s.push_back(access.table.window_dim(*win, i, (*x)[i + 2]));
    }
    access.set(out, s);
    if (op == "MaxPool" && node.output_size() > 1) access.set(node.output(1), s);
  } else if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    if (!x || x->size() < 3) return;
    Shape s(x->begin(), x->begin() + 2);
    s.resize(x->size(), 1);
    access.set(out, s);
  } else if (op == "ReduceMean" || op == "ReduceMax" || op == "ReduceSum" || op == "ReduceMin") {
    if (!x) return;
    bool keep = attr::get_int(node, "keepdims", 1) != 0;
    // Axes moved from an attribute to an input: ReduceSum at opset 13, the others at 18.
    auto axes = (op == "ReduceSum" ? opset_ >= 13 : opset_ >= 18) ? ints_of(1) : attr::get_ints(node, "axes");
    std::vector<bool> reduced(x->size(), !axes || axes->empty());
    if (axes) {
      for (auto a : *axes) {
        int64_t axis = a < 0 ? a + static_cast<int64_t>(x->size()) : a;
        if (axis < 0 || axis >= static_cast<int64_t>(x->size())) return;
        reduced[static_cast<size_t>(axis)] = true;
      }
    }
    Shape s;
    for (size_t i = 0; i < x->size(); ++i) {
      if (!reduced[i]) {
        s.push_back((*x)[i]);
      } else if (keep) {
        s.push_back(1);
      }
    }
    access.set(out, s);
  } else if (op == "Pad") {
    if (!x) return;
    auto pads = opset_ >= 11 ? ints_of(1) : attr::get_ints(node, "pads");
    if (!pads || pads->size() != 2 * x->size()) return;
    Shape s = *x;
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t added = 0;
      if (__builtin_add_overflow((*pads)[i], (*pads)[i + s.size()], &added)) {
        s[i] = -1;
        continue;
      }
      const std::string* symbol_name = access.table.symbol(s[i]);
      if (s[i] >= 0) {
        s[i] = size_sum(s[i], added);
      } else if (added != 0) {
        s[i] = symbol_name ? access.table.intern(fmt::format("{}{:+}", *symbol_name, added)) : -1;
      }
    }
    access.set(out, s);
  } else if (op == "Concat") {
    auto axis = x ? axis_of(node, 1, x->size()) : std::nullopt;
    if (!axis) return;
    Shape s = *x;
    size_t a = *axis;
    for (int i = 1; i < node.input_size(); ++i) {
      const Shape* in = input(i);
      if (!in || in->size() != s.size()) return;
      s[a] = (s[a] < 0 || (*in)[a] < 0) ? -1 : size_sum(s[a], (*in)[a]);
    }
    access.set(out, s);
  } else if (op == "Flatten") {
    auto axis = x ? axis_of(node, 1, x->size(), true) : std::nullopt;
    if (!axis) return;
    access.set(out, {product(*x, 0, *axis), product(*x, *axis, x->size())});
  } else if (op == "Gemm") {
    const Shape* b = input(1);
    if (!x || !b || x->size() != 2 || b->size() != 2) return;
    bool ta = attr::get_int(node, "transA", 0) != 0, tb = attr::get_int(node, "transB", 0) != 0;
    access.set(out, {ta ? (*x)[1] : (*x)[0], tb ? (*b)[0] : (*b)[1]});
  } else if (op == "MatMul") {
    const Shape* b = input(1);
    if (!x || !b || x->empty() || b->empty()) return;
    Shape a2 = *x, b2 = *b;
    if (a2.size() == 1) a2.insert(a2.begin(), 1);
    if (b2.size() == 1) b2.push_back(1);
    Shape batch = broadcast(Shape(a2.begin(), a2.end() - 2), Shape(b2.begin(), b2.end() - 2));
    if (x->size() > 1) batch.push_back(a2[a2.size() - 2]);
    if (b->size() > 1) batch.push_back(b2.back());
    access.set(out, batch);
  } else if (op == "Reshape") {
    auto sizes = sizes_of(1);
    if (!sizes) return;
    const Shape* target = &sizes->first;
    const std::vector<bool>& number = sizes->second;
    Shape s = *target;
    bool allow_zero = attr::get_int(node, "allowzero", 0) != 0;
    int64_t known = 1, infer_at = -1;
    for (size_t i = 0; i < s.size(); ++i) {
      if (number[i] && s[i] == 0 && !allow_zero) s[i] = x && i < x->size() ? (*x)[i] : -1;
      if (number[i] && s[i] == -1 && (*target)[i] == -1) {
        infer_at = static_cast<int64_t>(i);
      } else if (s[i] < 0) {
        known = -1;
      } else if (known >= 0 && __builtin_mul_overflow(known, s[i], &known)) {
        known = -1;  // more elements than int64 counts: the inferred size is unknown
      }
    }
    if (infer_at >= 0) {
      int64_t total = x ? product(*x, 0, x->size()) : -1;
      s[static_cast<size_t>(infer_at)] = (total >= 0 && known > 0) ? total / known : -1;
    }
    access.set(out, s);
  } else if (op == "Resize" || op == "Upsample") {
    if (!x) return;
    // Upsample(X, scales); Resize-10(X, scales); Resize-11+(X, roi, scales, sizes).
    int scales_at = (op == "Upsample" || opset_ < 11) ? 1 : 2;
    if (op == "Upsample" && opset_ < 9) {
      if (const auto* a = attr::find(node, "scales")) {
        Shape s = *x;
        for (int i = 0; i < a->floats_size() && i < static_cast<int>(s.size()); ++i) s[i] = scaled(s[i], a->floats(i));
        access.set(out, s);
      }
      return;
    }
    if (auto sizes = sizes_of(3); sizes && sizes->first.size() == x->size()) {
      access.set(out, sizes->first);
      return;
    }
    auto scales = floats_of(scales_at);
    if (!scales || scales->size() != x->size()) return;
    Shape s = *x;
    for (size_t i = 0; i < s.size(); ++i) s[i] = scaled(s[i], (*scales)[i]);
    access.set(out, s);
  } else if (op == "Split") {
    auto axis = x ? axis_of(node, 0, x->size()) : std::nullopt;
    if (!axis) return;
    size_t a = *axis;
    // Sizes from the `split` input (opset 13) or attribute; else equal parts, the last one
    // smaller when they do not divide evenly (opset 18's num_outputs).
    auto sizes = opset_ >= 13 ? ints_of(1) : attr::get_ints(node, "split");
    auto n = static_cast<int64_t>(node.output_size());
    if (!sizes) {
      int64_t d = (*x)[a];
      int64_t chunk = d >= 0 ? (d + n - 1) / n : -1;
      sizes = std::vector<int64_t>(static_cast<size_t>(n), chunk);
      if (d >= 0) sizes->back() = d - chunk * (n - 1);
    }
    if (static_cast<int64_t>(sizes->size()) != n) return;
    for (int i = 0; i < node.output_size(); ++i) {
      Shape part = *x;
      part[a] = (*sizes)[static_cast<size_t>(i)];
      access.set(node.output(i), part);
    }
  } else if (op == "Slice") {
    if (!x) return;
    auto p = slice_params(node, opset_, ints_of);
    if (!p) return;
    Shape s = *x;
    auto rank = static_cast<int64_t>(s.size());
    for (size_t i = 0; i < p->starts.size(); ++i) {
      int64_t axis = p->axes ? (*p->axes)[i] : static_cast<int64_t>(i);
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank) return;
      int64_t step = p->steps ? (*p->steps)[i] : 1;
      if (step == 0) return;
      int64_t& d = s[static_cast<size_t>(axis)];
      if (d < 0) {
        // A size not known as a number stays itself only under a slice that takes all of it.
        if (!(step == 1 && p->starts[i] == 0 && p->ends[i] == std::numeric_limits<int64_t>::max())) d = -1;
        continue;
      }
      auto [start, end] = clamped_slice(d, p->starts[i], p->ends[i], step);
      if (step > 0) {
        d = end > start ? 1 + (end - start - 1) / step : 0;
      } else {
        // -step would overflow at INT64_MIN; any step below -d takes one element.
        d = start > end ? (step < -d ? 1 : 1 + (start - end - 1) / -step) : 0;
      }
    }
    access.set(out, s);
  } else if (op == "Transpose") {
    if (!x) return;
    auto perm = attr::get_ints(node, "perm");
    Shape s(x->size());
    for (size_t i = 0; i < s.size(); ++i) {
      size_t from = perm ? static_cast<size_t>((*perm)[i]) : s.size() - 1 - i;
      if (from >= x->size()) return;
      s[i] = (*x)[from];
    }
    access.set(out, s);
  }
}

// An integer input as an IntValue: a constant's (of rank 0 or 1, at most kMaxValues values) or
// an evaluated one.
std::optional<IntValue> int_input(const onnx::NodeProto& node, int i, const ShapeAccess& access) {
  if (i >= node.input_size() || node.input(i).empty()) return std::nullopt;
  const std::string& name = node.input(i);
  if (const auto* t = access.constant(name)) {
    if (t->dims_size() > 1) return std::nullopt;
    auto v = constant_ints(t, name);
    if (!v || v->size() > kMaxValues) return std::nullopt;
    Shape dims(t->dims().begin(), t->dims().end());
    if ((dims.empty() ? 1 : static_cast<size_t>(dims[0])) != v->size()) return std::nullopt;
    std::vector<bool> known(v->size(), true);
    return IntValue{std::move(dims), std::move(*v), std::move(known)};
  }
  const IntValue* v = access.value(name);
  return v ? std::optional(*v) : std::nullopt;
}

// The numbers of an integer input, every element known; else nullopt.
std::optional<std::vector<int64_t>> known_ints(const onnx::NodeProto& node, int i, const ShapeAccess& access) {
  auto v = int_input(node, i, access);
  return v && v->dims.size() <= 1 && v->all_known() ? std::optional(std::move(v->data)) : std::nullopt;
}

// The indices of the elements a 1-D Slice takes (ONNX's clamping of starts and ends, any
// nonzero step).
std::optional<std::vector<size_t>> slice_1d(size_t size, int64_t start, int64_t end, int64_t step) {
  if (step == 0) return std::nullopt;
  std::tie(start, end) = clamped_slice(static_cast<int64_t>(size), start, end, step);
  std::vector<size_t> out;
  for (int64_t i = start; step > 0 ? i < end : i > end;) {
    out.push_back(static_cast<size_t>(i));
    if (__builtin_add_overflow(i, step, &i)) break;
  }
  return out;
}

// The elements of `v` at `indices`, as a vector.
IntValue pick(const IntValue& v, const std::vector<size_t>& indices) {
  IntValue out{{static_cast<int64_t>(indices.size())}, {}, {}};
  for (size_t i : indices) {
    out.data.push_back(v.data[i]);
    out.known.push_back(v.known[i]);
  }
  return out;
}

// The values of the small integer tensors an exporter computes from constants and known shapes:
// Shape, Size, Gather, Slice, Concat, Split, Cast, Squeeze, Unsqueeze, Identity and integer
// Add, Sub, Mul, Div, on scalars and vectors. Anything else, or a value it cannot be sure of,
// is not evaluated.
void evaluate(const onnx::NodeProto& node, int64_t opset, const ShapeAccess& access) {
  const std::string& op = node.op_type();
  if (node.output_size() == 0 || node.output(0).empty()) return;
  auto put = [&](const std::string& name, IntValue v) {
    if (name.empty() || v.dims.size() > 1 || v.data.size() > kMaxValues || v.known.size() != v.data.size()) return;
    if (!access.of(name)) access.set(name, v.dims);
    access.set_value(name, std::move(v));
  };
  auto axis0 = [&](int64_t rank) {
    int64_t axis = attr::get_int(node, "axis", 0);
    return axis == 0 || axis == -rank;
  };
  const std::string& out = node.output(0);
  if (op == "Shape" || op == "Size") {
    const Shape* x = node.input_size() > 0 ? access.of(node.input(0)) : nullptr;
    if (!x) return;
    auto rank = static_cast<int64_t>(x->size());
    int64_t start = op == "Shape" && opset >= 15 ? attr::get_int(node, "start", 0) : 0;
    int64_t end = op == "Shape" && opset >= 15 ? attr::get_int(node, "end", rank) : rank;
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, start, rank);
    IntValue v{{end - start},
               std::vector<int64_t>(x->begin() + static_cast<std::ptrdiff_t>(start), x->begin() + static_cast<std::ptrdiff_t>(end)),
               {}};
    for (auto d : v.data) v.known.push_back(d >= 0);
    if (op == "Shape") return put(out, std::move(v));
    if (!v.all_known()) return;
    int64_t size = 1;
    for (auto d : v.data) {
      if (__builtin_mul_overflow(size, d, &size)) return;
    }
    return put(out, IntValue{{}, {size}, {true}});
  }
  if (op == "Identity") {
    if (auto v = int_input(node, 0, access)) put(out, std::move(*v));
  } else if (op == "Cast") {
    auto to = attr::get_int(node, "to", 0);
    auto v = int_input(node, 0, access);
    if (!v || (to != onnx::TensorProto::INT64 && to != onnx::TensorProto::INT32)) return;
    for (size_t i = 0; i < v->data.size(); ++i) {
      int64_t d = v->data[i];
      if (to == onnx::TensorProto::INT32 && v->known[i] &&
          (d < std::numeric_limits<int32_t>::min() || d > std::numeric_limits<int32_t>::max())) {
        return;
      }
    }
    put(out, std::move(*v));
  } else if (op == "Unsqueeze" || op == "Squeeze") {
    auto v = int_input(node, 0, access);
    if (!v) return;
    if (op == "Unsqueeze" && v->dims.empty()) put(out, IntValue{{1}, v->data, v->known});
    if (op == "Squeeze" && v->dims == Shape{1}) put(out, IntValue{{}, v->data, v->known});
  } else if (op == "Concat") {
    IntValue joined{{0}, {}, {}};
    for (int i = 0; i < node.input_size(); ++i) {
      auto v = int_input(node, i, access);
      if (!v || v->dims.size() != 1) return;
      joined.data.insert(joined.data.end(), v->data.begin(), v->data.end());
      joined.known.insert(joined.known.end(), v->known.begin(), v->known.end());
    }
    if (!axis0(1)) return;
    joined.dims[0] = static_cast<int64_t>(joined.data.size());
    put(out, std::move(joined));
  } else if (op == "Split") {
    auto v = int_input(node, 0, access);
    if (!v || v->dims.size() != 1 || !axis0(1)) return;
    auto n = static_cast<int64_t>(v->data.size());
    auto parts = static_cast<int64_t>(node.output_size());
    std::optional<std::vector<int64_t>> sizes;
    if (opset >= 13) {
      if (node.input_size() > 1 && !node.input(1).empty() && !(sizes = known_ints(node, 1, access))) return;
    } else {
      sizes = attr::get_ints(node, "split");
    }
    if (!sizes) {
      if (opset < 18 && n % parts != 0) return;  // equal parts only, before num_outputs
      int64_t chunk = (n + parts - 1) / parts;
      sizes = std::vector<int64_t>(static_cast<size_t>(parts), chunk);
      sizes->back() = n - chunk * (parts - 1);
    }
    if (static_cast<int64_t>(sizes->size()) != parts) return;
    int64_t at = 0;
    for (auto size : *sizes) {
      if (size < 0 || size > n - at) return;
      at += size;
    }
    if (at != n) return;
    at = 0;
    for (int i = 0; i < node.output_size(); ++i) {
      std::vector<size_t> indices;
      for (int64_t k = 0; k < (*sizes)[static_cast<size_t>(i)]; ++k) indices.push_back(static_cast<size_t>(at + k));
      at += (*sizes)[static_cast<size_t>(i)];
      put(node.output(i), pick(*v, indices));
    }
  } else if (op == "Slice") {
    auto v = int_input(node, 0, access);
    if (!v || v->dims.size() != 1) return;
    auto p = slice_params(node, opset, [&](int i) { return known_ints(node, i, access); });
    if (!p || p->starts.size() != 1) return;
    if ((p->axes && (*p->axes)[0] != 0 && (*p->axes)[0] != -1)) return;
    if (auto indices = slice_1d(v->data.size(), p->starts[0], p->ends[0], p->steps ? (*p->steps)[0] : 1)) {
      put(out, pick(*v, *indices));
    }
  } else if (op == "Gather") {
    auto v = int_input(node, 0, access);
    auto indices = int_input(node, 1, access);
    if (!v || !indices || v->dims.size() != 1 || !indices->all_known() || !axis0(1)) return;
    auto n = static_cast<int64_t>(v->data.size());
    std::vector<size_t> at;
    for (auto i : indices->data) {
      if (i < -n || i >= n) return;
      at.push_back(static_cast<size_t>(i < 0 ? i + n : i));
    }
    IntValue picked = pick(*v, at);
    picked.dims = indices->dims;
    put(out, std::move(picked));
  } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    auto a = int_input(node, 0, access), b = int_input(node, 1, access);
    if (!a || !b) return;
    // Equal shapes, or one side a single value.
    bool a_one = a->data.size() == 1, b_one = b->data.size() == 1;
    if (a->dims != b->dims && !a_one && !b_one) return;
    size_t n = std::max(a->data.size(), b->data.size());
    IntValue result{a->dims.size() >= b->dims.size() ? a->dims : b->dims, {}, {}};
    for (size_t i = 0; i < n; ++i) {
      size_t ia = a_one ? 0 : i, ib = b_one ? 0 : i;
      int64_t x = a->data[ia], y = b->data[ib], r = 0;
      bool known = a->known[ia] && b->known[ib];  // computed from a dimension not known: unknown
      if (known && op == "Add" && __builtin_add_overflow(x, y, &r)) return;
      if (known && op == "Sub" && __builtin_sub_overflow(x, y, &r)) return;
      if (known && op == "Mul" && __builtin_mul_overflow(x, y, &r)) return;
      if (known && op == "Div") {
        if (y == 0 || (x == std::numeric_limits<int64_t>::min() && y == -1)) return;
        r = x / y;  // truncated, as onnxruntime divides integers
      }
      result.data.push_back(known ? r : -1);
      result.known.push_back(known);
    }
    if (!result.dims.empty()) result.dims[0] = static_cast<int64_t>(n);
    put(out, std::move(result));
  }
}

void infer(const onnx::NodeProto& node, int64_t opset, const ShapeAccess& access) {
  if (!is_default_domain(node.domain())) return;
  infer_shape(node, opset, access);
  evaluate(node, opset, access);
}

}  // namespace

bool same_shape(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] >= 0 && b[i] >= 0 && a[i] != b[i]) return false;
  }
  return true;
}

namespace {

// A Reshape whose target shape (a constant, or evaluated) cannot hold its input's elements, both
// known numbers: onnxruntime refuses to run it.
template <typename ShapeTable>
std::optional<std::string> reshape_conflict(const onnx::NodeProto& node, const ShapeTable& shapes, const Shapes& symbols_of,
                                            bool symbols) {
  if (node.input_size() < 2 || !is_default_domain(node.domain())) return std::nullopt;
  const Shape* x = shapes.of(node.input(0));
  auto target = shapes.ints(node.input(1));
  if (!x || !target) return std::nullopt;
  bool allow_zero = attr::get_int(node, "allowzero", 0) != 0;
  int64_t known = 1, inferred = 0;
  for (size_t i = 0; i < target->size(); ++i) {
    int64_t d = (*target)[i];
    if (d == 0 && !allow_zero) {
      if (i >= x->size()) return std::nullopt;  // invalid as written: not this check's to say
      d = (*x)[i];
    }
    if (d == -1) {
      ++inferred;
      continue;
    }
    if (d < 0 || __builtin_mul_overflow(known, d, &known)) return std::nullopt;
  }
  if (inferred > 1) return std::nullopt;
  int64_t elements = product(*x, 0, x->size());
  bool fits = inferred == 0 ? known == elements : (known == 0 ? elements == 0 : elements > 0 && elements % known == 0);
  if (elements < 0) {
    // Asked for symbols: an input with a symbolic size and no unknown one, reshaped to a fixed
    // count of elements, fits only at the sizes that give that count.
    bool symbolic = std::any_of(x->begin(), x->end(), [](int64_t d) { return d < -1; });
    bool unknown = std::any_of(x->begin(), x->end(), [](int64_t d) { return d == -1; });
    if (!symbols || inferred != 0 || !symbolic || unknown) return std::nullopt;
    fits = false;
  }
  if (fits) return std::nullopt;
  if (elements < 0) {
    return fmt::format("Reshape '{}' would reshape an input of shape {} to [{}]", node.name(),
                       format_shape(*x, &symbols_of), fmt::join(*target, ", "));
  }
  return fmt::format("Reshape '{}' would reshape an input of shape {} ({} elements) to [{}]", node.name(),
                     format_shape(*x, &symbols_of), elements, fmt::join(*target, ", "));
}

template <typename ShapeTable>
std::optional<std::string> conflict_in(const onnx::NodeProto& node, const ShapeTable& shapes, const Shapes& symbols_of,
                                       bool symbols) {
  // Two sizes that cannot be the same: different numbers, or (asked for) different symbols, or a
  // symbol and a number (which the graph makes equal at the sizes it runs at, if at all).
  auto differ = [&](int64_t a, int64_t b) {
    return a != b && ((a >= 0 && b >= 0) || (symbols && a != -1 && b != -1 && (a < -1 || b < -1)));
  };
  const std::string& op = node.op_type();
  if (op == "Reshape") return reshape_conflict(node, shapes, symbols_of, symbols);
  bool concat = op == "Concat";
  if (!concat && !broadcast_ops().contains(op)) return std::nullopt;
  std::vector<const Shape*> inputs;
  for (const auto& in : node.input()) {
    if (!in.empty()) inputs.push_back(shapes.of(in));
  }
  auto describe = [&] {
    std::string s;
    for (size_t i = 0; i < inputs.size(); ++i) {
      s += (i ? ", " : "") + (inputs[i] ? format_shape(*inputs[i], &symbols_of) : std::string("?"));
    }
    return s;
  };
  const Shape* first = inputs.empty() ? nullptr : inputs[0];
  for (const Shape* s : inputs) {
    if (!s || !first) continue;
    if (concat) {
      if (s->size() != first->size()) return fmt::format("{} '{}' would join inputs of shapes {}", op, node.name(), describe());
      int64_t axis = attr::get_int(node, "axis", 1);
      if (axis < 0) axis += static_cast<int64_t>(s->size());
      for (size_t d = 0; d < s->size(); ++d) {
        if (static_cast<int64_t>(d) != axis && differ((*s)[d], (*first)[d])) {
          return fmt::format("{} '{}' would join inputs of shapes {}", op, node.name(), describe());
        }
      }
    } else {
      for (size_t d = 1; d <= std::min(s->size(), first->size()); ++d) {
        int64_t x = (*s)[s->size() - d], y = (*first)[first->size() - d];
        if (differ(x, y) && x != 1 && y != 1) {
          return fmt::format("{} '{}' would combine inputs of shapes {}", op, node.name(), describe());
        }
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> shape_conflict(const onnx::NodeProto& node, const Shapes& shapes, bool symbols) {
  return conflict_in(node, shapes, shapes, symbols);
}

std::optional<std::string> shape_conflict(const onnx::NodeProto& node, const ShapeDraft& shapes, bool symbols) {
  return conflict_in(node, shapes, shapes.base(), symbols);
}

std::string format_dim(int64_t dim, const Shapes* shapes) {
  if (dim >= 0) return fmt::format("{}", dim);
  const std::string* name = shapes ? shapes->symbol(dim) : nullptr;
  return name ? *name : "?";
}

std::string format_shape(const Shape& shape, const Shapes* shapes) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += format_dim(shape[i], shapes);
  }
  return s + "]";
}

}  // namespace lattice
