// The ONNX operator rules checked before any pattern runs (core/graph/operator_rules.cc): each
// attribute at its limit is accepted and one step past it is refused, naming the node and the
// attribute.
#include <catch2/catch.hpp>

#include "core/convert.h"
#include "core/onnx/attributes.h"
#include "support.h"

using namespace lattice;

namespace {

// x[1, 4, 8, 8] -> Conv (weight [4, 4/group, 3, 3]) -> y, kernel_shape [3, 3], pads [1, 1, 1, 1].
onnx::ModelProto conv_model(int64_t group = 1) {
  onnx::ModelProto m = test::tiny_model();
  auto& g = *m.mutable_graph();
  g.mutable_node()->Clear();
  test::set_input_shape(*g.mutable_input(0), "x", {1, 4, 8, 8});
  *g.add_initializer() = test::float_tensor("w", {4, 4 / group, 3, 3}, std::vector<float>(static_cast<size_t>(4 * 4 / group * 9), 0.5f));
  auto& conv = test::add_node(g, "Conv", "conv", {"x", "w"}, {"y"});
  attr::set_ints(conv, "kernel_shape", {3, 3});
  attr::set_ints(conv, "pads", {1, 1, 1, 1});
  if (group != 1) attr::set_int(conv, "group", group);
  return m;
}

// x[1, 4, 8, 8] -> MaxPool(kernel_shape [2, 2]) -> y.
onnx::ModelProto pool_model() {
  onnx::ModelProto m = test::tiny_model();
  auto& g = *m.mutable_graph();
  g.mutable_node()->Clear();
  test::set_input_shape(*g.mutable_input(0), "x", {1, 4, 8, 8});
  attr::set_ints(test::add_node(g, "MaxPool", "pool", {"x"}, {"y"}), "kernel_shape", {2, 2});
  return m;
}

// The model's refusal, or "" when it converts.
std::string refusal(const onnx::ModelProto& m) {
  std::string bytes = m.SerializeAsString();
  Options options;
  options.target = "none";
  auto result = convert(test::bytes(bytes), options);
  return result ? "" : result.error().message;
}

std::string with_ints(onnx::ModelProto m, const char* name, std::vector<int64_t> values) {
  attr::set_ints(*m.mutable_graph()->mutable_node(0), name, values);
  return refusal(m);
}

}  // namespace

TEST_CASE("the models the rule tests break are accepted as they are") {
  CHECK(refusal(conv_model()) == "");
  CHECK(refusal(conv_model(2)) == "");
  CHECK(refusal(conv_model(4)) == "");
  CHECK(refusal(pool_model()) == "");
}

TEST_CASE("kernel_shape, strides and dilations are at least 1") {
  for (const char* name : {"kernel_shape", "strides", "dilations"}) {
    CAPTURE(name);
    auto m = name == std::string("kernel_shape") ? pool_model() : conv_model();
    const char* node = name == std::string("kernel_shape") ? "node 'pool' (MaxPool): " : "node 'conv' (Conv): ";
    CHECK(with_ints(m, name, {1, 1}) == "");
    CHECK(with_ints(m, name, {1, 0}) ==
          std::string(node) + "attribute '" + name + "' is [1, 0]; every value must be at least 1");
  }
}

TEST_CASE("pads are non-negative") {
  CHECK(with_ints(conv_model(), "pads", {0, 0, 0, 0}) == "");
  CHECK(with_ints(conv_model(), "pads", {0, -1, 0, 0}) ==
        "node 'conv' (Conv): attribute 'pads' is [0, -1, 0, 0]; every value must be at least 0");
}

TEST_CASE("strides, dilations and pads have the window's rank, pads twice it") {
  CHECK(with_ints(conv_model(), "strides", {1, 1, 1}) ==
        "node 'conv' (Conv): attribute 'strides' has 3 values [1, 1, 1], the window has rank 2 (needs 2)");
  CHECK(with_ints(conv_model(), "dilations", {1}) ==
        "node 'conv' (Conv): attribute 'dilations' has 1 values [1], the window has rank 2 (needs 2)");
  CHECK(with_ints(conv_model(), "pads", {1, 1}) ==
        "node 'conv' (Conv): attribute 'pads' has 2 values [1, 1], the window has rank 2 (needs 4)");
  CHECK(with_ints(conv_model(), "pads", {1, 1, 1, 1, 1}) ==
        "node 'conv' (Conv): attribute 'pads' has 5 values [1, 1, 1, 1, 1], the window has rank 2 (needs 4)");
}

TEST_CASE("a pool needs kernel_shape, non-empty and of its input's rank") {
  auto missing = pool_model();
  attr::remove(*missing.mutable_graph()->mutable_node(0), "kernel_shape");
  CHECK(refusal(missing) == "node 'pool' (MaxPool): attribute 'kernel_shape' is missing (required)");
  CHECK(with_ints(pool_model(), "kernel_shape", {}) == "node 'pool' (MaxPool): attribute 'kernel_shape' is empty");
  CHECK(with_ints(pool_model(), "kernel_shape", {2}) ==
        "node 'pool' (MaxPool): input 'x' has shape [1, 4, 8, 8], but the window has rank 1");
}

TEST_CASE("a Conv's kernel_shape is its weight's spatial shape") {
  CHECK(with_ints(conv_model(), "kernel_shape", {3, 2}) ==
        "node 'conv' (Conv): attribute 'kernel_shape' is [3, 2], but weight 'w' has shape [4, 4, 3, 3]");
  // Of another rank than the weight's (the input's shape unknown, so the weight is what disagrees).
  auto m = conv_model();
  m.mutable_graph()->mutable_input(0)->clear_type();
  attr::remove(*m.mutable_graph()->mutable_node(0), "pads");
  CHECK(with_ints(m, "kernel_shape", {3, 3, 3}) ==
        "node 'conv' (Conv): weight 'w' has shape [4, 4, 3, 3]; kernel_shape [3, 3, 3] needs a weight of rank 5");
}

TEST_CASE("group is at least 1, divides the weight's output channels and matches the input's") {
  auto with_group = [](int64_t group, int64_t weight_group) {
    auto m = conv_model(weight_group);
    attr::set_int(*m.mutable_graph()->mutable_node(0), "group", group);
    return refusal(m);
  };
  CHECK(with_group(1, 1) == "");
  CHECK(with_group(0, 1) == "node 'conv' (Conv): attribute 'group' is 0; it must be at least 1");
  CHECK(with_group(3, 1) ==
        "node 'conv' (Conv): attribute 'group' is 3, which does not divide the output channels of weight 'w' [4, 4, 3, 3]");
  CHECK(with_group(2, 1) ==
        "node 'conv' (Conv): input 'x' has 4 channels, but weight 'w' [4, 4, 3, 3] with group 2 takes 8");
  CHECK(with_group(1, 2) ==
        "node 'conv' (Conv): input 'x' has 4 channels, but weight 'w' [4, 2, 3, 3] with group 1 takes 2");
}

TEST_CASE("BatchNormalization parameters are one value per channel") {
  auto bn = [](int64_t scale_count, std::vector<int64_t> var_dims) {
    onnx::ModelProto m = test::tiny_model();
    auto& g = *m.mutable_graph();
    g.mutable_node()->Clear();
    test::set_input_shape(*g.mutable_input(0), "x", {1, 3, 4, 4});
    *g.add_initializer() = test::float_tensor("scale", {scale_count}, std::vector<float>(static_cast<size_t>(scale_count), 1.0f));
    int64_t var_count = 1;
    for (auto d : var_dims) var_count *= d;
    *g.add_initializer() = test::float_tensor("var", var_dims, std::vector<float>(static_cast<size_t>(var_count), 1.0f));
    for (const char* name : {"B", "mean"}) *g.add_initializer() = test::float_tensor(name, {3}, {0, 0, 0});
    test::add_node(g, "BatchNormalization", "bn", {"x", "scale", "B", "mean", "var"}, {"y"});
    return refusal(m);
  };
  CHECK(bn(3, {3}) == "");
  CHECK(bn(4, {3}) == "node 'bn' (BatchNormalization): scale 'scale' has 4 values, but the input has 3 channels");
  CHECK(bn(3, {2}) == "node 'bn' (BatchNormalization): var 'var' has 2 values, but the input has 3 channels");
  CHECK(bn(3, {1, 3}) == "node 'bn' (BatchNormalization): var 'var' has shape [1, 3]; it must be one value per channel");
}
