#pragma once
// Helpers shared by the Catch2 tests (native and wasm): fixtures and small model builders.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <stdexcept>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/onnx/external_data.h"
#include "core/onnx/tensor_values.h"
#include "onnx-ml.pb.h"

namespace test {

// The committed fixtures' folder (tests/cpp/fixtures_dir.cc).
extern const char* const kFixturesDir;

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::string fixture(const std::string& name) { return read_file(std::string(kFixturesDir) + "/" + name); }

// Every committed fixture model, sorted.
inline const std::vector<std::string>& fixture_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& entry : std::filesystem::directory_iterator(kFixturesDir)) {
      if (entry.path().extension() == ".onnx") out.push_back(entry.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }();
  return names;
}

inline std::span<const uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// A model's initializer, or node, by name; throws (a test failure) when there is none.
inline const onnx::TensorProto& initializer(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer()) {
    if (t.name() == name) return t;
  }
  throw std::runtime_error("no initializer " + name);
}

// An initializer's values, widened to double.
inline std::vector<double> initializer_values(const onnx::ModelProto& m, const std::string& name) {
  auto values = lattice::read_values(initializer(m, name), name);
  if (!values) throw std::runtime_error(values.error().message);
  return *values;
}

inline bool has_node(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& n : m.graph().node()) {
    if (n.name() == name) return true;
  }
  return false;
}

inline const onnx::NodeProto& node_named(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& n : m.graph().node()) {
    if (n.name() == name) return n;
  }
  throw std::runtime_error("no node " + name);
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

// n floats drawn uniformly from [lo, hi), seeded: the same values on every run.
inline std::vector<float> seeded_floats(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

inline onnx::TensorProto float_tensor(const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (auto d : dims) t.add_dims(d);
  for (auto v : values) t.add_float_data(v);
  return t;
}

// A 1-D int64 tensor: a shape, pads, axes.
inline onnx::TensorProto int64_tensor(const std::string& name, std::vector<int64_t> values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(static_cast<int64_t>(values.size()));
  for (auto v : values) t.add_int64_data(v);
  return t;
}

}  // namespace test

namespace test {

inline onnx::NodeProto& add_node(onnx::GraphProto& g, const std::string& op, const std::string& name,
                                 std::vector<std::string> inputs, std::vector<std::string> outputs) {
  auto* n = g.add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& i : inputs) n->add_input(i);
  for (auto& o : outputs) n->add_output(o);
  return *n;
}

inline void set_input_shape(onnx::ValueInfoProto& v, const std::string& name, std::vector<int64_t> dims) {
  v.set_name(name);
  auto* t = v.mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (auto d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}

// x[1,C,1,1] -> Conv 1x1 (w, optional b) -> BatchNormalization -> y; parameters as initializers.
// Values are small distinct numbers so any mix-up of channels shows.
inline onnx::ModelProto conv_bn_model(int64_t channels, bool with_bias, int opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  auto& g = *m.mutable_graph();
  g.set_name("conv_bn");
  set_input_shape(*g.add_input(), "x", {1, channels, 1, 1});
  g.add_output()->set_name("y");
  std::vector<float> w, b, gamma, beta, mean, var;
  for (int64_t o = 0; o < channels; ++o) {
    for (int64_t i = 0; i < channels; ++i) w.push_back(0.5f + 0.25f * static_cast<float>(o) - 0.125f * static_cast<float>(i));
    b.push_back(0.1f * static_cast<float>(o + 1));
    gamma.push_back(1.0f + 0.5f * static_cast<float>(o));
    beta.push_back(-0.25f * static_cast<float>(o));
    mean.push_back(0.3f * static_cast<float>(o));
    var.push_back(0.5f + static_cast<float>(o));
  }
  *g.add_initializer() = float_tensor("w", {channels, channels, 1, 1}, w);
  std::vector<std::string> conv_inputs{"x", "w"};
  if (with_bias) {
    *g.add_initializer() = float_tensor("b", {channels}, b);
    conv_inputs.push_back("b");
  }
  *g.add_initializer() = float_tensor("gamma", {channels}, gamma);
  *g.add_initializer() = float_tensor("beta", {channels}, beta);
  *g.add_initializer() = float_tensor("mean", {channels}, mean);
  *g.add_initializer() = float_tensor("var", {channels}, var);
  add_node(g, "Conv", "conv", conv_inputs, {"c"});
  add_node(g, "BatchNormalization", "bn", {"c", "gamma", "beta", "mean", "var"}, {"y"});
  return m;
}

// Data files by location; counts the bytes read, to show what is and is not read.
class MemoryData final : public lattice::ExternalData {
 public:
  std::map<std::string, std::string> files;
  uint64_t bytes_read = 0;
  int reads = 0;

  lattice::Result<uint64_t> size(const std::string& location) override {
    auto it = files.find(location);
    if (it == files.end()) return lattice::error("No such file or directory");
    return static_cast<uint64_t>(it->second.size());
  }
  lattice::Result<std::string> read(const std::string& location, uint64_t offset, uint64_t length) override {
    ++reads;
    bytes_read += length;
    auto it = files.find(location);
    if (it == files.end()) return lattice::error("No such file or directory");
    return it->second.substr(static_cast<size_t>(offset), static_cast<size_t>(length));
  }
};

}  // namespace test
