// Writes the synthetic model scripts/bench.sh measures the engine's growth on: N blocks of
// Conv(3x3, 16->16, pad 1) -> BatchNormalization -> Relu [-> MaxPool(3x3, stride 1, pad 1)],
// opset 13, input 1x16x32x32. With the default target every block folds, and with --maxpool
// every pool also snaps: one or two matches per block. Weights are deterministic.
//   onnx_lattice_chain_model N [--maxpool] OUT.onnx
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "onnx-ml.pb.h"

namespace {

constexpr int64_t kChannels = 16;

onnx::TensorProto floats(const std::string& name, std::vector<int64_t> dims, uint64_t& state, float offset) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  int64_t count = 1;
  for (auto d : dims) {
    t.add_dims(d);
    count *= d;
  }
  std::string raw(static_cast<size_t>(count) * sizeof(float), '\0');
  for (int64_t i = 0; i < count; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;  // a PCG step: fixed bytes per N
    float v = offset + static_cast<float>(state >> 40) / static_cast<float>(1 << 24) * 0.1f;
    std::memcpy(raw.data() + i * sizeof(float), &v, sizeof(float));
  }
  t.set_raw_data(std::move(raw));
  return t;
}

onnx::NodeProto* node(onnx::GraphProto& g, const char* op, const std::string& name, std::vector<std::string> inputs,
                      const std::string& output) {
  auto* n = g.add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& in : inputs) n->add_input(in);
  n->add_output(output);
  return n;
}

void ints(onnx::NodeProto& n, const char* name, std::vector<int64_t> values) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (auto v : values) a->add_ints(v);
}

void value(onnx::ValueInfoProto& info, const std::string& name) {
  info.set_name(name);
  auto* t = info.mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {int64_t{1}, kChannels, int64_t{32}, int64_t{32}}) t->mutable_shape()->add_dim()->set_dim_value(d);
}

}  // namespace

int main(int argc, char** argv) {
  bool maxpool = argc == 4 && std::string(argv[2]) == "--maxpool";
  if (argc != (maxpool ? 4 : 3) || std::atoi(argv[1]) <= 0) {
    std::fprintf(stderr, "usage: onnx_lattice_chain_model N [--maxpool] OUT.onnx\n");
    return 2;
  }
  int blocks = std::atoi(argv[1]);
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("onnx_lattice_chain_model");
  model.add_opset_import()->set_version(13);
  auto& g = *model.mutable_graph();
  g.set_name("chain");
  value(*g.add_input(), "x");
  uint64_t state = 42;
  std::string x = "x";
  for (int b = 0; b < blocks; ++b) {
    std::string p = "block" + std::to_string(b);
    *g.add_initializer() = floats(p + ".conv.weight", {kChannels, kChannels, 3, 3}, state, -0.05f);
    *g.add_initializer() = floats(p + ".conv.bias", {kChannels}, state, -0.05f);
    auto& conv = *node(g, "Conv", p + ".conv", {x, p + ".conv.weight", p + ".conv.bias"}, p + ".conv_out");
    ints(conv, "kernel_shape", {3, 3});
    ints(conv, "pads", {1, 1, 1, 1});
    for (const char* param : {"scale", "bias", "mean", "var"}) {
      *g.add_initializer() = floats(p + ".bn." + param, {kChannels}, state, std::string(param) == "var" ? 0.5f : 0.0f);
    }
    node(g, "BatchNormalization", p + ".bn",
         {p + ".conv_out", p + ".bn.scale", p + ".bn.bias", p + ".bn.mean", p + ".bn.var"}, p + ".bn_out");
    x = p + (maxpool ? ".relu_out" : ".out");
    node(g, "Relu", p + ".relu", {p + ".bn_out"}, x);
    if (maxpool) {
      auto& pool = *node(g, "MaxPool", p + ".pool", {x}, p + ".out");
      ints(pool, "kernel_shape", {3, 3});
      ints(pool, "pads", {1, 1, 1, 1});
      x = p + ".out";
    }
  }
  value(*g.add_output(), x);
  std::ofstream out(argv[argc - 1], std::ios::binary);
  if (!model.SerializeToOstream(&out)) {
    std::fprintf(stderr, "cannot write %s\n", argv[argc - 1]);
    return 1;
  }
}
