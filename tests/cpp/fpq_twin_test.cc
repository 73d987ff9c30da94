// The FPQ twin's structure: which value is held in which representation, in which form at which
// opset, what stays in float and why. Its numbers are checked against numpy in
// tests/node/fpq_twin.test.mjs.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/fixed_point/scheme.h"
#include "core/fixed_point/twin.h"
#include "core/onnx/attributes.h"
#include "core/onnx/tensor_values.h"
#include "support.h"

using namespace lattice;
using namespace lattice::fixed_point;
using Catch::Matchers::Contains;

namespace {

// x -> Conv(w, b) -> BatchNormalization -> Relu -> MaxPool -> y
onnx::ModelProto cnn(int opset) {
  auto m = test::conv_bn_model(2, true, opset);
  auto& g = *m.mutable_graph();
  g.mutable_node(1)->set_output(0, "bn_out");
  test::add_node(g, "Relu", "relu", {"bn_out"}, {"r"});
  auto& pool = test::add_node(g, "MaxPool", "pool", {"r"}, {"y"});
  attr::set_ints(pool, "kernel_shape", {1, 1});
  return m;
}

const onnx::NodeProto& producer(const onnx::ModelProto& m, const std::string& tensor) {
  for (const auto& n : m.graph().node()) {
    for (const auto& o : n.output()) {
      if (o == tensor) return n;
    }
  }
  FAIL("nothing computes " << tensor);
  throw std::logic_error("unreachable");
}

using test::node_named;

using test::initializer;

double scalar_of(const onnx::ModelProto& m, const std::string& name) {
  const auto& t = initializer(m, name);
  if (t.data_type() == onnx::TensorProto::FLOAT) return read_values(t, name).value().at(0);
  return t.int32_data(0);
}

// The representation the twin records for `tensor` in `role`.
const TwinValue& value_of(const FpqTwin& twin, const std::string& tensor, const std::string& role) {
  for (const auto& v : twin.values) {
    if (v.tensor == tensor && v.role == role) return v;
  }
  FAIL("no " << role << " value " << tensor);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("FPQ twin: each value of a conv, BatchNorm, ReLU, pool chain in Table 4.1's representation (opset 13)") {
  auto twin = build_fpq_twin(cnn(13));
  REQUIRE(twin.ok());
  const auto& m = twin->model;
  CHECK(value_of(*twin, "x", "input").representation == "unsigned 1.7");
  CHECK(value_of(*twin, "w", "weights").representation == "signed 0.7 with scale 0.5");
  CHECK(value_of(*twin, "b", "bias").representation == "signed 5.10");
  CHECK(value_of(*twin, "c", "output").representation == "signed 5.10");
  CHECK(value_of(*twin, "gamma", "parameters").representation == "signed 5.10");
  CHECK(value_of(*twin, "bn_out", "output").representation == "signed 5.10");
  CHECK(value_of(*twin, "r", "output").representation == "unsigned 1.7");
  CHECK(value_of(*twin, "y", "output").representation == "unsigned 1.7");
  CHECK(twin->not_simulated.empty());

  // The input: uint8 Q/DQ with step 1/128; the conv reads the dequantized copy.
  const auto& conv = node_named(m, "conv");
  const auto& input_dq = producer(m, conv.input(0));
  CHECK(input_dq.op_type() == "DequantizeLinear");
  const auto& input_q = producer(m, input_dq.input(0));
  CHECK(input_q.op_type() == "QuantizeLinear");
  CHECK(input_q.input(0) == "x");
  CHECK(scalar_of(m, input_q.input(1)) == 1.0 / 128);
  CHECK(initializer(m, input_q.input(2)).data_type() == onnx::TensorProto::UINT8);
  // The weights: int8 with step 1/256 (signed 0.7 times 0.5).
  const auto& w_dq = producer(m, conv.input(1));
  CHECK(w_dq.op_type() == "DequantizeLinear");
  CHECK(scalar_of(m, w_dq.input(1)) == 1.0 / 256);
  CHECK(initializer(m, w_dq.input(2)).data_type() == onnx::TensorProto::INT8);
  // 16-bit below opset 21: Mul, Round, Clip to [-32768, 32767] steps, Mul back; the converted
  // model's tensor name ends the chain, so readers and the graph output keep theirs.
  const auto& c_back = producer(m, "c");
  CHECK(c_back.op_type() == "Mul");
  CHECK(scalar_of(m, c_back.input(1)) == 1.0 / 1024);
  const auto& clip = producer(m, c_back.input(0));
  CHECK(clip.op_type() == "Clip");
  CHECK(scalar_of(m, clip.input(1)) == -32768);
  CHECK(scalar_of(m, clip.input(2)) == 32767);
  CHECK(producer(m, clip.input(0)).op_type() == "Round");
  CHECK(producer(m, "y").op_type() == "DequantizeLinear");
  CHECK(m.graph().output(0).name() == "y");
  CHECK(value_of(*twin, "c", "output").form == "Mul/Round/Clip/Mul");
  CHECK(value_of(*twin, "r", "output").form == "QuantizeLinear/DequantizeLinear (uint8)");

  // BatchNormalization: scale and offset in signed 5.10, mean 0, variance 1, epsilon 0.
  const auto& bn = node_named(m, "bn");
  CHECK(attr::get_float(bn, "epsilon", -1) == 0.0f);
  auto scale = read_values(initializer(m, bn.input(1)), "scale").value();
  auto offset = read_values(initializer(m, bn.input(2)), "offset").value();
  REQUIRE(scale.size() == 2);
  for (size_t ch = 0; ch < 2; ++ch) {
    const float s = (1.0f + 0.5f * ch) / std::sqrt(0.5f + ch + 1e-5f);
    CHECK(scale[ch] == kFpqBatchNorm.quantize(s));
    CHECK(offset[ch] == kFpqBatchNorm.quantize(-0.25f * ch - 0.3f * ch * s));
    CHECK(std::fmod(scale[ch] * 1024, 1.0) == 0);
  }
  CHECK(read_values(initializer(m, bn.input(3)), "mean").value() == std::vector<double>{0, 0});
  CHECK(read_values(initializer(m, bn.input(4)), "var").value() == std::vector<double>{1, 1});
  // The float parameters it no longer reads are gone; the conv's weight stays (its Q/DQ reads it).
  for (const auto& t : m.graph().initializer()) CHECK(t.name() != "gamma");
  CHECK(initializer(m, "w").data_type() == onnx::TensorProto::FLOAT);
  // The nodes stay in topological order: each reads only what came before it.
  std::set<std::string> known{"x"};
  for (const auto& t : m.graph().initializer()) known.insert(t.name());
  for (const auto& n : m.graph().node()) {
    for (const auto& i : n.input()) CHECK(known.contains(i));
    for (const auto& o : n.output()) known.insert(o);
  }
}

TEST_CASE("FPQ twin: from opset 21 the 16-bit representations are int16 QuantizeLinear/DequantizeLinear") {
  auto twin = build_fpq_twin(cnn(21));
  REQUIRE(twin.ok());
  const auto& c_dq = producer(twin->model, "c");
  CHECK(c_dq.op_type() == "DequantizeLinear");
  CHECK(scalar_of(twin->model, c_dq.input(1)) == 1.0 / 1024);
  CHECK(initializer(twin->model, c_dq.input(2)).data_type() == onnx::TensorProto::INT16);
  CHECK(value_of(*twin, "c", "output").form == "QuantizeLinear/DequantizeLinear (int16)");
  CHECK_THAT(twin->to_json().dump(false), Contains("\"signed 5.10\":\"QuantizeLinear/DequantizeLinear (int16)\""));
}

TEST_CASE("FPQ twin: below opset 11 the model is refused, naming the opset; what it holds is given") {
  auto twin = build_fpq_twin(cnn(10));
  REQUIRE_FALSE(twin.ok());
  CHECK_THAT(twin.error().message, Contains("opset 11 or later") && Contains("opset 10"));
  // What is held in which representation needs no operator: given at any opset, without a model.
  auto values = build_fpq_twin(cnn(10), TwinScope::values);
  REQUIRE(values.ok());
  CHECK(values->model.graph().node_size() == 0);
  CHECK(value_of(*values, "c", "output").representation == "signed 5.10");
  auto at13 = build_fpq_twin(cnn(13), TwinScope::values);
  REQUIRE(values->values.size() == at13->values.size());
  for (size_t i = 0; i < values->values.size(); ++i) {
    CHECK(values->values[i].tensor == at13->values[i].tensor);
    CHECK(values->values[i].representation == at13->values[i].representation);
  }
}

TEST_CASE("FPQ twin: dense layers, GEMMs and ops the table does not cover") {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto& g = *m.mutable_graph();
  test::set_input_shape(*g.add_input(), "x", {1, 4});
  g.add_output()->set_name("p");
  g.add_output()->set_name("s");
  *g.add_initializer() = test::float_tensor("w", {4, 4}, std::vector<float>(16, 0.1f));
  test::add_node(g, "MatMul", "dense", {"x", "w"}, {"d"});
  test::add_node(g, "Sigmoid", "sigmoid", {"d"}, {"p"});
  test::add_node(g, "MatMul", "gemm", {"x", "p"}, {"e"});
  test::add_node(g, "Softmax", "softmax", {"e"}, {"s"});
  auto twin = build_fpq_twin(m);
  REQUIRE(twin.ok());
  CHECK(value_of(*twin, "w", "weights").representation == "signed 0.7 with scale 0.5");
  // Before a sigmoid, a dense layer's output is signed 2.13.
  CHECK(value_of(*twin, "d", "output").representation == "signed 2.13");
  CHECK(value_of(*twin, "p", "weights").representation == "signed 5.10");
  REQUIRE(twin->not_simulated.size() == 3);
  CHECK(twin->not_simulated[0].op == "Sigmoid");
  CHECK(twin->not_simulated[1].node == "gemm");
  CHECK_THAT(twin->not_simulated[1].reason, Contains("GEMM"));
  CHECK(twin->not_simulated[2].op == "Softmax");
  CHECK_THAT(twin->not_simulated[2].reason, Contains("no representation"));
}

TEST_CASE("FPQ twin: integer arithmetic (shape computations) is left alone") {
  auto m = test::tiny_model();
  auto& g = *m.mutable_graph();
  test::set_input_shape(*g.mutable_input(0), "x", {1, 2});
  g.mutable_node(0)->set_output(0, "r");
  test::add_node(g, "Shape", "shape", {"r"}, {"sh"});
  test::add_node(g, "Add", "add", {"sh", "sh"}, {"y"});
  auto twin = build_fpq_twin(m);
  REQUIRE(twin.ok());
  CHECK(producer(twin->model, "y").op_type() == "Add");
  CHECK(value_of(*twin, "r", "output").representation == "unsigned 1.7");
  CHECK(twin->not_simulated.empty());
}

TEST_CASE("FPQ twin: a pool's average or maximum is held in its input's representation, an Add before a Relu says so") {
  auto m = test::tiny_model();
  auto& g = *m.mutable_graph();
  test::set_input_shape(*g.mutable_input(0), "x", {1, 2, 2, 2});
  g.mutable_node(0)->set_output(0, "r");                                   // Relu: unsigned 1.7
  test::add_node(g, "GlobalAveragePool", "gap", {"r"}, {"g"});            // held as its input
  test::add_node(g, "Sigmoid", "sigmoid", {"x"}, {"sg"});                 // no representation
  test::add_node(g, "GlobalMaxPool", "gmp", {"sg"}, {"h"});               // so neither is this
  test::add_node(g, "Add", "add", {"g", "g"}, {"a"});
  test::add_node(g, "Relu", "relu2", {"a"}, {"y2"});
  g.add_output()->set_name("h");
  g.add_output()->set_name("y2");
  auto twin = build_fpq_twin(m);
  REQUIRE(twin.ok());
  CHECK(value_of(*twin, "g", "output").representation == "unsigned 1.7");
  CHECK(value_of(*twin, "a", "output").rectified_next);
  CHECK_FALSE(value_of(*twin, "r", "output").rectified_next);
  REQUIRE(twin->not_simulated.size() == 2);
  CHECK(twin->not_simulated[0].op == "Sigmoid");
  CHECK(twin->not_simulated[1].op == "GlobalMaxPool");
}
