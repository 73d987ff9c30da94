#pragma once
// Helpers shared by the Catch2 tests (native and wasm): fixtures and small model builders.
#include <cstdint>
#include <fstream>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "onnx-ml.pb.h"

namespace test {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::string fixture(const std::string& name) { return read_file(std::string(FIXTURES_DIR) + "/" + name); }

inline const std::vector<std::string>& fixture_names() {
  static const std::vector<std::string> names{
      "sample.onnx",        "conv_bn_relu.onnx",   "resnet_stem.onnx",  "resnet_stem_opset9.onnx",
      "linear_bn.onnx",     "grouped_decoder.onnx", "shared_weight.onnx", "control_flow.onnx",
      "everything.onnx",
  };
  return names;
}

inline std::span<const uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// x -> Relu -> y, a minimal valid model to break in one place at a time.
inline onnx::ModelProto tiny_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("tiny");
  g->add_input()->set_name("x");
  g->add_output()->set_name("y");
  auto* n = g->add_node();
  n->set_op_type("Relu");
  n->set_name("relu");
  n->add_input("x");
  n->add_output("y");
  return m;
}

inline onnx::TensorProto float_tensor(const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (auto d : dims) t.add_dims(d);
  for (auto v : values) t.add_float_data(v);
  return t;
}

}  // namespace test
