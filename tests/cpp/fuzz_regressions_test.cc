// What the fuzzer (fuzz/convert_fuzzer.cc) found, each case checked here without sanitizers too,
// and its reproducers in fixtures/fuzz/ converted and described once more.
#include <catch2/catch.hpp>

#include <filesystem>
#include <limits>

#include "core/convert.h"
#include "core/describe.h"
#include "core/graph/graph_view.h"
#include "core/graph/shapes.h"
#include "support.h"

using namespace lattice;

TEST_CASE("a Resize scale that is negative, NaN or too large leaves the dimension unknown") {
  // x[batch, 3, 8, 8] -> Resize(scales) -> y; scale -0.25 once gave -2, the id of symbol `batch`.
  for (float scale : {-0.25f, std::numeric_limits<float>::quiet_NaN(), 1e30f}) {
    auto m = test::tiny_model();
    auto& g = *m.mutable_graph();
    test::set_input_shape(*g.mutable_input(0), "x", {1, 3, 8, 8});
    g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("batch");
    g.clear_node();
    test::add_node(g, "Resize", "resize", {"x", "", "scales"}, {"y"});
    *g.add_initializer() = test::float_tensor("scales", {4}, {1, 1, scale, 2});
    GraphView view(g);
    Shapes shapes(view, 13);
    const Shape* y = shapes.of("y");
    REQUIRE(y);
    CHECK(format_shape(*y, &shapes) == "[batch, 3, ?, 16]");
  }
}

TEST_CASE("the fuzzer's reproducers are refused or converted, and described, without a crash") {
  for (const auto& entry : std::filesystem::directory_iterator(std::string(test::kFixturesDir) + "/fuzz")) {
    if (entry.path().extension() != ".bin") continue;
    std::string input = test::read_file(entry.path().string());
    INFO(entry.path().filename().string());
    auto result = convert(test::bytes(input), Options{});
    if (!result) CHECK_FALSE(result.error().message.empty());
    (void)describe_model(test::bytes(input));
  }
}

TEST_CASE("sizes that would overflow int64 or turn negative are unknown, never a wrapped number") {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  // x[batch, 3, 8, 8] -> Pad -> y, `batch` being the symbol of id -2. Pads whose sum overflows
  // (INT64_MAX + INT64_MAX - 8 wraps to -10) or that take 10 from 8 made the size -2, read as
  // `batch`.
  struct Case {
    int64_t begin, end;
    std::string expected;
  };
  for (const auto& [begin, end, expected] : std::vector<Case>{
           {kMax, kMax - 8, "[batch, 3, 8, ?]"}, {1, -11, "[batch, 3, 8, ?]"}, {-1, -3, "[batch, 3, 8, 4]"}}) {
    auto m = test::tiny_model();
    auto& g = *m.mutable_graph();
    test::set_input_shape(*g.mutable_input(0), "x", {1, 3, 8, 8});
    g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("batch");
    g.clear_node();
    test::add_node(g, "Pad", "pad", {"x", "pads"}, {"y"});
    *g.add_initializer() = test::int64_tensor("pads", {0, 0, 0, begin, 0, 0, 0, end});
    GraphView view(g);
    Shapes shapes(view, 13);
    const Shape* y = shapes.of("y");
    REQUIRE(y);
    INFO("pads " << begin << ", " << end);
    CHECK(format_shape(*y, &shapes) == expected);
  }
  // x[1, 3, 8, 8] -> MaxPool(kernel INT64_MAX) -> y: a window no model has leaves the size unknown.
  auto m = test::tiny_model();
  auto& g = *m.mutable_graph();
  test::set_input_shape(*g.mutable_input(0), "x", {1, 3, 8, 8});
  g.clear_node();
  auto& pool = test::add_node(g, "MaxPool", "pool", {"x"}, {"y"});
  auto* kernel = pool.add_attribute();
  kernel->set_name("kernel_shape");
  kernel->set_type(onnx::AttributeProto::INTS);
  kernel->add_ints(kMax);
  kernel->add_ints(1);
  GraphView view(g);
  Shapes shapes(view, 13);
  CHECK(shapes.of("y") == nullptr);
}

TEST_CASE("an element count past int64 (Reshape's known dims, Flatten's product) is unknown, not a wrapped count") {
  // 3 * 6148914691236517206 is 2^64 + 2: wrapped, it read as 2 elements, and x's 768 elements
  // gave Reshape's -1 the size 384 and Flatten's first dimension 2.
  constexpr int64_t kHuge = 6148914691236517206;
  {
    auto m = test::tiny_model();
    auto& g = *m.mutable_graph();
    test::set_input_shape(*g.mutable_input(0), "x", {4, 3, 8, 8});
    g.clear_node();
    test::add_node(g, "Reshape", "reshape", {"x", "shape"}, {"y"});
    *g.add_initializer() = test::int64_tensor("shape", {3, kHuge, -1});
    GraphView view(g);
    Shapes shapes(view, 13);
    const Shape* y = shapes.of("y");
    REQUIRE(y);
    CHECK(format_shape(*y, &shapes) == "[3, 6148914691236517206, ?]");
  }
  auto m = test::tiny_model();
  auto& g = *m.mutable_graph();
  test::set_input_shape(*g.mutable_input(0), "x", {3, kHuge, 4});
  g.clear_node();
  auto& flatten = test::add_node(g, "Flatten", "flatten", {"x"}, {"y"});
  auto* axis = flatten.add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(2);
  GraphView view(g);
  Shapes shapes(view, 13);
  const Shape* y = shapes.of("y");
  REQUIRE(y);
  CHECK(format_shape(*y, &shapes) == "[?, 4]");
}
