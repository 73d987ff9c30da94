// ConvScaleShiftFoldPattern: Conv -> [Mul] -> [Add] by per-channel constants folded into the Conv,
// with the broadcast checked exactly.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "converted.h"
#include "core/onnx/tensor_values.h"

using namespace lattice;
using Catch::Matchers::Contains;

namespace {

test::Converted fold_only(const std::string& bytes) {
  Options options;
  options.target = "none";
  return test::convert_bytes(bytes, options);
}

// x[1,2,1,1] -> Conv 1x1 (w, b) -> Mul(scale) -> Add(shift) -> y, constants of the given dims.
onnx::ModelProto chain(std::vector<int64_t> scale_dims, std::vector<float> scale) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto& g = *m.mutable_graph();
  test::set_input_shape(*g.add_input(), "x", {1, 2, 1, 1});
  g.add_output()->set_name("y");
  *g.add_initializer() = test::float_tensor("w", {2, 2, 1, 1}, {1, 2, 3, 4});
  *g.add_initializer() = test::float_tensor("b", {2}, {0.5f, -0.5f});
  *g.add_initializer() = test::float_tensor("s", scale_dims, scale);
  *g.add_initializer() = test::float_tensor("t", {2, 1, 1}, {10, 20});
  test::add_node(g, "Conv", "conv", {"x", "w", "b"}, {"c"});
  test::add_node(g, "Mul", "scale", {"c", "s"}, {"m"});
  test::add_node(g, "Add", "shift", {"m", "t"}, {"y"});
  return m;
}

}  // namespace

TEST_CASE("Conv -> Mul -> Add by per-channel constants becomes one Conv: W*s, b*s + t") {
  auto [out, report] = fold_only(chain({1, 2, 1, 1}, {2, 3}).SerializeAsString());
  REQUIRE(report.matches.size() == 1);
  CHECK(report.matches[0].applied);
  CHECK(report.matches[0].nodes == std::vector<std::string>{"conv", "scale", "shift"});
  REQUIRE(out.graph().node_size() == 1);
  const auto& conv = out.graph().node(0);
  CHECK(conv.output(0) == "y");
  CHECK(test::initializer_values(out, conv.input(1)) == std::vector<double>{2, 4, 9, 12});
  CHECK(test::initializer_values(out, conv.input(2)) == std::vector<double>{0.5 * 2 + 10, -0.5 * 3 + 20});
}

TEST_CASE("a scalar scale folds into every channel") {
  auto [out, report] = fold_only(chain({}, {2}).SerializeAsString());
  REQUIRE(report.matches.size() == 1);
  CHECK(report.matches[0].applied);
  CHECK(test::initializer_values(out, out.graph().node(0).input(1)) == std::vector<double>{2, 4, 6, 8});
}

TEST_CASE("a scale that is not finite refuses the fold, naming the value it would give") {
  // Each weight is finite and small, so only the scale can tell: NaN in one channel (the folded
  // bias is NaN too), infinity in the other (its weights and bias infinite).
  for (auto [scale, value] : {std::pair{std::vector<float>{1, std::nanf("")}, "nan"},
                              std::pair{std::vector<float>{std::numeric_limits<float>::infinity(), 1}, "inf"}}) {
    auto [out, report] = fold_only(chain({1, 2, 1, 1}, scale).SerializeAsString());
    REQUIRE(report.matches.size() == 1);
    CHECK_FALSE(report.matches[0].applied);
    CHECK_THAT(report.matches[0].reason, Contains(std::string("would give the value ") + value));
    CHECK(out.graph().node_size() == 3);
  }
}

TEST_CASE("a constant broadcasting along another axis than the channels is not matched") {
  // [2] lies on the width axis; [2, 1] on the height axis: not per channel.
  for (auto dims : {std::vector<int64_t>{2}, std::vector<int64_t>{2, 1}}) {
    auto m = chain(dims, {2, 3});
    auto result = convert(test::bytes(m.SerializeAsString()), Options{.target = "none"});
    REQUIRE(result.ok());
    // The Add alone is not reached either: the Mul sits between it and the Conv.
    CHECK(result->report.matches.empty());
  }
}

TEST_CASE("the fixture's three chains fold and the width-wise Mul stays") {
  auto [out, report] = fold_only(test::fixture("scale_shift.onnx"));
  std::vector<std::string> ids;
  for (const auto& m : report.matches) {
    CHECK(m.applied);
    ids.push_back(m.id);
  }
  CHECK(ids == std::vector<std::string>{"ConvScaleShiftFoldPattern:conv1", "ConvScaleShiftFoldPattern:conv2",
                                        "ConvScaleShiftFoldPattern:conv3"});
  int muls = 0;
  for (const auto& n : out.graph().node()) muls += n.op_type() == "Mul" ? 1 : 0;
  CHECK(muls == 1);
}

TEST_CASE("--no-fold-bn also leaves scale and shift alone") {
  auto result = convert(test::bytes(test::fixture("scale_shift.onnx")), Options{.target = "none", .fold_batch_norm = false});
  REQUIRE(result.ok());
  CHECK(result->report.matches.empty());
}
