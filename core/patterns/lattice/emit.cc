#include "core/patterns/lattice/emit.h"

#include <cmath>

#include <fmt/ranges.h>

#include "core/onnx/attributes.h"
#include "core/onnx/tensor_values.h"
#include "core/patterns/lattice/hardware.h"

namespace lattice {

onnx::NodeProto make_node(const std::string& op, const std::string& name, std::vector<std::string> inputs,
                          std::vector<std::string> outputs) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(name);
  for (auto& i : inputs) n.add_input(std::move(i));
  for (auto& o : outputs) n.add_output(std::move(o));
  return n;
}

onnx::NodeProto lattice_maxpool(const MatchContext& ctx, const std::string& name, const std::string& input,
                                const std::string& output) {
  const PoolForm& form = lattice_target(ctx).max_pool;
  auto pool = make_node("MaxPool", name, {input}, {output});
  attr::set_ints(pool, "kernel_shape", {form.kernel, form.kernel});
  attr::set_ints(pool, "strides", {form.stride, form.stride});
  attr::set_ints(pool, "pads", {0, 0, 0, 0});
  if (ctx.opset >= 10) attr::set_int(pool, "ceil_mode", 1);
  return pool;
}

void add_zero_pad(Replacement& r, NameAllocator& names, int64_t opset, const std::string& name,
                  const std::string& input, const std::string& output, const std::vector<int64_t>& pads) {
  auto pad = make_node("Pad", name, {input}, {output});
  if (opset >= 11) {
    onnx::TensorProto t;
    t.set_name(names.fresh(name + ".pads"));
    t.set_data_type(onnx::TensorProto::INT64);
    t.add_dims(static_cast<int64_t>(pads.size()));
    for (auto p : pads) t.add_int64_data(p);
    pad.add_input(t.name());
    r.initializers.push_back(std::move(t));
  } else {
    attr::set_ints(pad, "pads", pads);
  }
  r.nodes.push_back(std::move(pad));
}

namespace {

// SplitMix64: small, fast, and the same on every platform.
class Generator {
 public:
  explicit Generator(const std::string& seed_text) {
    state_ = 1469598103934665603ull;  // FNV-1a of the name
    for (unsigned char c : seed_text) state_ = (state_ ^ c) * 1099511628211ull;
  }
  double uniform() {  // [0, 1)
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
  }

 private:
  uint64_t state_;
};

}  // namespace

onnx::TensorProto kaiming_uniform(const std::string& name, int32_t data_type, const std::vector<int64_t>& dims,
                                  int64_t fan_in) {
  size_t count = 1;
  for (auto d : dims) count *= static_cast<size_t>(d);
  double bound = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(fan_in, 1)));
  Generator gen(name);
  std::vector<double> values(count);
  for (auto& v : values) v = bound * (2.0 * gen.uniform() - 1.0);
  return make_tensor(name, data_type, dims, values);
}

void reinitialise_conv(const MatchContext& ctx, onnx::NodeProto& conv, const std::string& label, int64_t kernel,
                       NameAllocator& names, Replacement& r) {
  const auto* old = ctx.view.constant(conv.input(1));
  int32_t type = old ? old->data_type() : onnx::TensorProto::FLOAT;
  const Shape& w = *ctx.shapes.of(conv.input(1));
  int64_t cout = w[0], cin_per_group = w[1], fan_in = cin_per_group * kernel * kernel;
  auto weight = kaiming_uniform(names.fresh(label + ".weight"), type, {cout, cin_per_group, kernel, kernel}, fan_in);
  conv.set_input(1, weight.name());
  r.initializers.push_back(std::move(weight));
  if (conv.input_size() > 2 && !conv.input(2).empty()) {
    auto bias = kaiming_uniform(names.fresh(label + ".bias"), type, {cout}, fan_in);
    conv.set_input(2, bias.name());
    r.initializers.push_back(std::move(bias));
  }
  attr::set_ints(conv, "kernel_shape", {kernel, kernel});
}

onnx::NodeProto fresh_batch_norm(Replacement& r, NameAllocator& names, int64_t opset, const std::string& name,
                                 const std::string& input, const std::string& output, int64_t channels) {
  auto bn = make_node("BatchNormalization", name, {input}, {output});
  auto c = static_cast<size_t>(channels);
  for (auto [suffix, value] : {std::pair{".weight", 1.0}, {".bias", 0.0}, {".running_mean", 0.0}, {".running_var", 1.0}}) {
    auto t = make_tensor(names.fresh(name + suffix), onnx::TensorProto::FLOAT, {channels}, std::vector<double>(c, value));
    bn.add_input(t.name());
    r.initializers.push_back(std::move(t));
  }
  if (opset < 7) attr::set_int(bn, "is_test", 1);  // before opset 7 the default is training
  return bn;
}

std::string tuple(const std::vector<int64_t>& values) { return fmt::format("({})", fmt::join(values, ", ")); }

}  // namespace lattice
