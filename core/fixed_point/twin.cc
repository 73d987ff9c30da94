#include "core/fixed_point/twin.h"

#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "core/fixed_point/scheme.h"
#include "core/graph/graph_view.h"
#include "core/graph/names.h"
#include "core/onnx/attributes.h"
#include "core/onnx/domain.h"
#include "core/onnx/external_data.h"
#include "core/onnx/tensor_values.h"

namespace lattice::fixed_point {
namespace {

// Ops that move data without computing (Table 4.1: "as input"), and Dropout, which the
// simulator ignores (and onnxruntime runs as Identity in inference). Pad is among them: it copies
// values or adds zeros, which every representation holds (the Lattice conversion pads stride-2
// convs explicitly).
const std::unordered_set<std::string> kMovesData = {"Concat",   "Flatten", "Reshape", "Transpose", "Slice",
                                                    "Split",    "Squeeze", "Unsqueeze", "Identity", "Dropout",
                                                    "Constant", "Gather",  "Pad"};
// Ops whose first output is not of their first input's type (indices, booleans, shapes).
const std::unordered_set<std::string> kNotFloatOutput = {
    "Shape", "Size", "ArgMax", "ArgMin", "NonZero", "Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual",
    "Not",   "And",  "Or",     "Xor",    "IsNaN",   "IsInf", "NonMaxSuppression"};

bool has_subgraph(const onnx::NodeProto& n) {
  for (const auto& a : n.attribute()) {
    if (a.has_g() || a.graphs_size() > 0) return true;
  }
  return false;
}

std::string qdq_type_name(const Format& f) {
  return fmt::format("{}int{}", f.is_signed ? "" : "u", f.bits());
}

int32_t qdq_type(const Format& f) {
  if (f.bits() == 8) return f.is_signed ? onnx::TensorProto::INT8 : onnx::TensorProto::UINT8;
  return f.is_signed ? onnx::TensorProto::INT16 : onnx::TensorProto::UINT16;
}

class TwinBuilder {
 public:
  TwinBuilder(const onnx::ModelProto& converted, FpqTwin& twin)
      : source_(converted.graph()),
        view_(source_, nullptr, converted.ir_version()),
        names_(source_),
        twin_(twin),
        graph_(*twin.model.mutable_graph()) {}

  Status build() {
    find_floats();
    graph_.clear_node();
    // The graph inputs first: every reader of an input reads it in unsigned 1.7.
    for (const auto& input : source_.input()) {
      if (!view_.is_overridable_input(input.name()) || !floats_.contains(input.name())) continue;
      if (view_.consumers(input.name()).empty()) continue;
      renamed_inputs_[input.name()] = read_as(input.name(), kFpqActivation, "input", "");
      held_as_[input.name()] = &kFpqActivation;
    }
    for (int id = 0; id < view_.size(); ++id) {
      if (auto s = copy_node(id); !s) return s;
    }
    drop_unread();
    return ok_status();
  }

 private:
  // Which tensors hold floats (float32: QuantizeLinear takes no other type below opset 19),
  // followed from the inputs, initializers and Constant nodes through type-keeping ops.
  void find_floats() {
    for (const auto& i : source_.input()) {
      if (i.type().tensor_type().elem_type() == onnx::TensorProto::FLOAT) floats_.insert(i.name());
    }
    for (const auto& t : source_.initializer()) {
      if (t.data_type() == onnx::TensorProto::FLOAT) floats_.insert(t.name());
    }
    for (const auto& n : source_.node()) {
      if (n.output_size() == 0) continue;
      bool is_float = false;
      if (n.op_type() == "Constant") {
        const auto* value = attr::find(n, "value");
        is_float = value && value->t().data_type() == onnx::TensorProto::FLOAT;
      } else if (n.op_type() == "Cast") {
        is_float = attr::get_int(n, "to", 0) == onnx::TensorProto::FLOAT;
      } else if (!kNotFloatOutput.contains(n.op_type()) && n.input_size() > 0) {
        is_float = floats_.contains(n.input(0));
      }
      if (is_float) floats_.insert(n.output(0));
    }
  }

  // A scalar initializer of `data_type` holding `value`, made once per (type, value).
  std::string scalar(int32_t data_type, double value, const std::string& base) {
    auto key = std::make_pair(data_type, value);
    if (auto it = scalars_.find(key); it != scalars_.end()) return it->second;
    std::string name = names_.fresh(base);
    names_.take(name);
    onnx::TensorProto t;
    if (data_type == onnx::TensorProto::FLOAT) {
      t = make_tensor(name, data_type, {}, {value});
    } else {
      t.set_name(name);
      t.set_data_type(data_type);
      t.add_int32_data(static_cast<int32_t>(value));  // where ONNX keeps 8- and 16-bit integers
    }
    *graph_.add_initializer() = std::move(t);
    return scalars_[key] = name;
  }

  onnx::NodeProto& emit(const std::string& op, const std::string& base, std::vector<std::string> inputs,
                        const std::string& output) {
    onnx::NodeProto& n = *graph_.add_node();
    n.set_op_type(op);
    n.set_name(names_.fresh(base));
    names_.take(n.name());
    for (auto& i : inputs) n.add_input(std::move(i));
    n.add_output(output);
    return n;
  }

  // Emits the nodes that compute `out`, the tensor `in` held in `f`; records it; returns `out`.
  std::string hold(const std::string& in, const Format& f, const std::string& role, const std::string& node,
                   const std::string& out) {
    names_.take(out);
    const std::string base = in + "_fpq";
    std::string form;
    if (f.bits() == 8 || twin_.opset >= 21) {
      // QuantizeLinear rounds x / scale to nearest even and saturates to the integer type, whose
      // range is the format's exactly (bits() = sign + integer + fraction).
      std::string scale = scalar(onnx::TensorProto::FLOAT, f.step(), fmt::format("fpq_step_2^-{}", f.fraction - std::ilogb(f.scale)));
      std::string zero = scalar(qdq_type(f), 0, fmt::format("fpq_zero_{}", qdq_type_name(f)));
      std::string q = names_.fresh(base + "_q");
      names_.take(q);
      emit("QuantizeLinear", base + "_quantize", {in, scale, zero}, q);
      emit("DequantizeLinear", base + "_dequantize", {q, scale, zero}, out);
      form = fmt::format("QuantizeLinear/DequantizeLinear ({})", qdq_type_name(f));
    } else {
      // int16 QuantizeLinear needs opset 21: the same arithmetic in float, exact since the step
      // is a power of two (x · 2^k and back lose nothing; Round is ties to even, as Q/DQ's).
      const double steps_min = f.min() / f.step(), steps_max = f.max() / f.step();
      auto fresh = [&](const std::string& what) {
        std::string name = names_.fresh(base + what);
        names_.take(name);
        return name;
      };
      std::string scaled = fresh("_steps"), rounded = fresh("_rounded"), clipped = fresh("_clipped");
      emit("Mul", base + "_to_steps", {in, scalar(onnx::TensorProto::FLOAT, 1.0 / f.step(), "fpq_per_step")}, scaled);
      emit("Round", base + "_round", {scaled}, rounded);
      emit("Clip", base + "_clip",
           {rounded, scalar(onnx::TensorProto::FLOAT, steps_min, "fpq_steps_min"),
            scalar(onnx::TensorProto::FLOAT, steps_max, "fpq_steps_max")},
           clipped);
      emit("Mul", base + "_from_steps", {clipped, scalar(onnx::TensorProto::FLOAT, f.step(), "fpq_step")}, out);
      form = "Mul/Round/Clip/Mul";
    }
    twin_.values.push_back({in, node, role, std::string(f.name), form, f.step(), f.min(), f.max()});
    return out;
  }

  // `name` held in `f` for a node to read: made once per tensor and format (a weight two convs
  // share is quantized once).
  std::string read_as(const std::string& name, const Format& f, const std::string& role, const std::string& node) {
    auto key = std::make_pair(name, f.name);
    if (auto it = held_.find(key); it != held_.end()) return it->second;
    return held_[key] = hold(name, f, role, node, names_.fresh(name + "_fpq"));
  }

  // The node's output 0 computed under a new name, then held in `f` under its own: readers, the
  // graph's outputs and the check's layerwise pairing keep seeing the converted model's names.
  void write_as(onnx::NodeProto copy, const Format& f, const std::string& node) {
    const std::string out = copy.output(0);
    std::string before = names_.fresh(out + "_before_fpq");
    names_.take(before);
    copy.set_output(0, before);
    *graph_.add_node() = std::move(copy);
    hold(before, f, "output", node, out);
    twin_.values.back().tensor = out;
    const auto& readers = view_.consumers(out);
    bool rectified = !readers.empty() && !view_.is_graph_output(out);
    for (int r : readers) rectified = rectified && view_.node(r).op_type() == "Relu";
    twin_.values.back().rectified_next = rectified;
    held_as_[out] = &f;
  }

  // Removes the initializers in unread_, keeping the others' order.
  void drop_unread() {
    auto& inits = *graph_.mutable_initializer();
    int kept = 0;
    for (int i = 0; i < inits.size(); ++i) {
      if (unread_.contains(inits.Get(i).name())) continue;
      if (kept != i) inits.SwapElements(kept, i);
      ++kept;
    }
    while (inits.size() > kept) inits.RemoveLast();
  }

  void gap(int id, std::string reason) {
    twin_.not_simulated.push_back({view_.label(id), view_.node(id).op_type(), std::move(reason)});
  }

  // BatchNormalization as the 16-bit layer computes it: x · scale + offset with both in signed
  // 5.10. Written back as a BatchNormalization with γ = q(scale), β = q(offset), μ = 0, σ² = 1,
  // ε = 0, which every runtime computes as x · γ + β with nothing else rounded.
  bool hold_batch_norm(int id, onnx::NodeProto& copy) {
    const auto& n = view_.node(id);
    if (n.input_size() != 5) return false;
    std::vector<std::vector<double>> params;
    for (int i = 1; i < 5; ++i) {
      const auto* t = view_.constant(n.input(i));
      if (!t || t->data_type() != onnx::TensorProto::FLOAT) return false;
      auto loaded = TensorWithData::of(*t, n.input(i), nullptr);
      if (!loaded) return false;
      auto values = read_values(**loaded, n.input(i));
      if (!values || (!params.empty() && values->size() != params[0].size())) return false;
      params.push_back(std::move(values).value());
    }
    const double eps = attr::get_float(n, "epsilon", 1e-5f);
    const auto& gamma = params[0];
    const auto& beta = params[1];
    const auto& mean = params[2];
    const auto& var = params[3];
    std::vector<double> scale(gamma.size()), offset(gamma.size());
    for (size_t c = 0; c < gamma.size(); ++c) {
      // In float32, as the converted model's BatchNormalization computes them.
      const float s = static_cast<float>(gamma[c]) / std::sqrt(static_cast<float>(var[c]) + static_cast<float>(eps));
      const float o = static_cast<float>(beta[c]) - static_cast<float>(mean[c]) * s;
      scale[c] = kFpqBatchNorm.quantize(s);
      offset[c] = kFpqBatchNorm.quantize(o);
    }
    const int64_t channels = static_cast<int64_t>(gamma.size());
    const std::string label = view_.label(id);
    auto add = [&](const std::string& what, const std::vector<double>& values) {
      std::string name = names_.fresh(label + "_fpq_" + what);
      names_.take(name);
      *graph_.add_initializer() = make_tensor(name, onnx::TensorProto::FLOAT, {channels}, values);
      return name;
    };
    // The float parameters no other node reads go: a runtime would only warn about them.
    for (int i = 1; i < 5; ++i) {
      const std::string& name = n.input(i);
      if (view_.reader_count(name) == 1 && !view_.is_graph_input(name) && !view_.is_graph_output(name)) unread_.insert(name);
    }
    copy.set_input(1, add("scale", scale));
    copy.set_input(2, add("offset", offset));
    copy.set_input(3, add("mean", std::vector<double>(gamma.size(), 0.0)));
    copy.set_input(4, add("var", std::vector<double>(gamma.size(), 1.0)));
    attr::set_float(copy, "epsilon", 0.0f);
    twin_.values.push_back({n.input(1), label, "parameters", std::string(kFpqBatchNorm.name), "constant",
                            kFpqBatchNorm.step(), kFpqBatchNorm.min(), kFpqBatchNorm.max()});
    return true;
  }

  Status copy_node(int id) {
    const auto& n = view_.node(id);
    const std::string label = view_.label(id);
    onnx::NodeProto copy = n;
    for (int i = 0; i < copy.input_size(); ++i) {
      if (auto it = renamed_inputs_.find(copy.input(i)); it != renamed_inputs_.end()) copy.set_input(i, it->second);
    }
    const std::string& op = n.op_type();
    const bool float_out = n.output_size() > 0 && floats_.contains(n.output(0));
    auto is_float = [&](int i) { return i < n.input_size() && !n.input(i).empty() && floats_.contains(n.input(i)); };
    const Format* output = nullptr;
    if (!is_default_domain(n.domain()) || has_subgraph(n)) {
      if (float_out || !is_default_domain(n.domain())) {
        gap(id, has_subgraph(n) ? "its subgraphs are not simulated" : fmt::format("an op of the domain '{}'", n.domain()));
      }
    } else if (op == "Conv" || op == "ConvTranspose") {
      if (is_float(1)) copy.set_input(1, read_as(copy.input(1), kFpqWeights, "weights", label));
      if (is_float(2)) copy.set_input(2, read_as(copy.input(2), kFpqConvOutput, "bias", label));
      if (float_out) output = &kFpqConvOutput;
    } else if (op == "Gemm" || op == "MatMul") {
      if (is_float(1) && view_.constant(n.input(1)) != nullptr) {
        // A dense layer: constant weights.
        copy.set_input(1, read_as(copy.input(1), kFpqWeights, "weights", label));
        if (op == "Gemm" && is_float(2)) copy.set_input(2, read_as(copy.input(2), kFpqConvOutput, "bias", label));
        const auto& readers = view_.consumers(n.output(0));
        bool sigmoid = !readers.empty() && !view_.is_graph_output(n.output(0));
        for (int r : readers) sigmoid = sigmoid && view_.node(r).op_type() == "Sigmoid";
        if (float_out) output = sigmoid ? &kFpqBeforeSigmoid : &kFpqConvOutput;
      } else if (float_out) {
        // A GEMM of two computed operands.
        if (is_float(1)) copy.set_input(1, read_as(copy.input(1), kFpqBatchNorm, "weights", label));
        gap(id, "a GEMM (both operands computed): Table 4.1 gives its output as unsigned 1.7 or signed 0.7 without "
                "saying which, so it stays in float");
      }
    } else if (op == "BatchNormalization") {
      if (float_out) {
        if (!hold_batch_norm(id, copy)) {
          gap(id, "its parameters are not float constants held in the model file, so its scale and offset are not "
                  "simulated (its output is)");
        }
        output = &kFpqConvOutput;
      }
    } else if (op == "Relu" || op == "MaxPool" || op == "Add") {
      if (float_out) output = &kFpqActivation;
    } else if (op == "GlobalAveragePool" || op == "AveragePool" || op == "GlobalMaxPool") {
      auto in = held_as_.find(n.input(0));
      if (in != held_as_.end()) {
        output = in->second;
      } else if (float_out) {
        gap(id, "its input is held in no representation, so its output stays in float");
      }
    } else if (kMovesData.contains(op)) {
      // As its input: what the first input is held in, the output is.
      if (auto in = n.input_size() > 0 ? held_as_.find(n.input(0)) : held_as_.end(); in != held_as_.end() && float_out) {
        held_as_[n.output(0)] = in->second;
      }
    } else if (float_out) {
      gap(id, "Table 4.1 gives it no representation: its output stays in float");
    }
    if (output) {
      write_as(std::move(copy), *output, label);
    } else {
      *graph_.add_node() = std::move(copy);
    }
    return ok_status();
  }

  const onnx::GraphProto& source_;
  GraphView view_;
  NameAllocator names_;
  FpqTwin& twin_;
  onnx::GraphProto& graph_;
  std::unordered_set<std::string> floats_;
  std::map<std::pair<int32_t, double>, std::string> scalars_;
  std::map<std::pair<std::string, std::string_view>, std::string> held_;
  std::unordered_map<std::string, std::string> renamed_inputs_;
  std::unordered_set<std::string> unread_;  // initializers the twin no longer reads
  std::unordered_map<std::string, const Format*> held_as_;  // the representation a tensor is held in
};

}  // namespace

Result<FpqTwin> build_fpq_twin(const onnx::ModelProto& converted, TwinScope scope) {
  FpqTwin twin;
  twin.opset = default_opset(converted);
  if (twin.opset < 11 && scope == TwinScope::model) {
    return error("the FPQ twin needs opset 11 or later (Round, and Clip with its bounds as inputs); the model imports "
                 "opset {}",
                 twin.opset);
  }
  twin.model = converted;
  TwinBuilder builder(converted, twin);
  if (auto s = builder.build(); !s) return s.error();
  if (scope == TwinScope::values) twin.model.Clear();
  return twin;
}

Json FpqTwin::to_json() const {
  Json forms = Json::object();
  std::map<std::pair<std::string, std::string>, int64_t> counts;
  for (const auto& v : values) {
    if (v.form != "constant") forms.set(v.representation, v.form);
    ++counts[{v.representation, v.role}];
  }
  Json grouped = Json::array();
  for (const auto& [key, count] : counts) {
    grouped.push(Json::object().set("representation", key.first).set("role", key.second).set("count", count));
  }
  Json activations = Json::array();
  for (const auto& v : values) {
    if (v.role != "input" && v.role != "output") continue;
    Json a = Json::object().set("tensor", v.tensor).set("role", v.role).set("representation", v.representation)
                 .set("step", v.step).set("min", v.min).set("max", v.max);
    if (v.rectified_next) a.set("rectified_next", true);
    activations.push(std::move(a));
  }
  Json gaps = Json::array();
  for (const auto& g : not_simulated) gaps.push(Json::object().set("node", g.node).set("op", g.op).set("reason", g.reason));
  return Json::object()
      .set("source", kFpqTable)
      .set("opset", opset)
      .set("rounding", "to nearest, ties to even (ONNX's); the FPGA's own rounding is not documented")
      .set("forms", std::move(forms))
      .set("values", std::move(grouped))
      .set("activations", std::move(activations))
      .set("not_simulated", std::move(gaps));
}

}  // namespace lattice::fixed_point
