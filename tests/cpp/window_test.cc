// The output size of a pooling or convolution window (core/graph/window.cc), ceil_mode's rule
// above all: round the window count up, but drop a last window that would start past the input
// and its begin padding. Expected sizes are PyTorch's and onnxruntime's for the same window.
#include <catch2/catch.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "core/graph/graph_view.h"
#include "core/graph/shapes.h"
#include "core/graph/window.h"
#include "core/onnx/attributes.h"
#include "support.h"

using namespace lattice;

namespace {

struct Case {
  int64_t kernel, stride, pad_begin, pad_end, in;
  int64_t floor_out, ceil_out;
};

int64_t output_size(const Case& c, bool ceil_mode) {
  onnx::NodeProto pool;
  pool.set_op_type("MaxPool");
  attr::set_ints(pool, "kernel_shape", {c.kernel});
  attr::set_ints(pool, "strides", {c.stride});
  attr::set_ints(pool, "pads", {c.pad_begin, c.pad_end});
  if (ceil_mode) attr::set_int(pool, "ceil_mode", 1);
  Shape input{1, 1, c.in};
  auto w = window_of(pool, &input, nullptr);
  REQUIRE(w);
  return window_output(*w, 0, c.in);
}

}  // namespace

TEST_CASE("ceil_mode rounds the window count up, and drops a last window starting past the input") {
  const Case cases[] = {
      {2, 2, 0, 0, 4, 2, 2},  // exact: nothing to round
      {2, 2, 0, 0, 5, 2, 3},  // the Lattice pool on an odd size: the last column gets its own window
      {3, 1, 0, 0, 5, 3, 3},  // stride 1 never rounds
      {3, 2, 0, 0, 7, 3, 3},  // (7 - 3) / 2 is exact
      {3, 2, 0, 0, 8, 3, 4},
      {3, 3, 0, 0, 5, 1, 2},
      {2, 2, 1, 1, 5, 3, 3},  // the 4th window would start at 6 = input + begin pad: dropped
      {3, 2, 1, 1, 6, 3, 4},  // the 4th window starts at 6 < 6 + 1: kept
      {2, 2, 0, 1, 4, 2, 2},  // the 3rd would start at 4, in the end padding only: dropped
      {1, 2, 0, 0, 1, 1, 1},
  };
  for (const auto& c : cases) {
    CAPTURE(c.kernel, c.stride, c.pad_begin, c.pad_end, c.in);
    CHECK(output_size(c, false) == c.floor_out);
    CHECK(output_size(c, true) == c.ceil_out);
  }
}

TEST_CASE("a symbolic size through a ceil_mode pool is its own symbol, the floor pool's another") {
  auto pooled = [](bool ceil_mode) {
    onnx::ModelProto m = test::tiny_model();
    auto& g = *m.mutable_graph();
    g.mutable_node()->Clear();
    test::set_input_shape(*g.mutable_input(0), "x", {1, 4, 1, 5});
    g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)->set_dim_param("H");
    auto& pool = test::add_node(g, "MaxPool", "pool", {"x"}, {"y"});
    attr::set_ints(pool, "kernel_shape", {2, 2});
    attr::set_ints(pool, "strides", {2, 2});
    if (ceil_mode) attr::set_int(pool, "ceil_mode", 1);
    GraphView view(m.graph());
    Shapes shapes(view, 13);
    REQUIRE(shapes.of("y"));
    return format_shape(*shapes.of("y"), &shapes);
  };
  CHECK(pooled(true) == "[1, 4, ceil(H/2), 3]");
  CHECK(pooled(false) == "[1, 4, floor(H/2), 2]");
}

TEST_CASE("symbolic sizes read as people write them: a chain of strides is one division, a size-keeping window the size") {
  auto through = [](std::vector<std::tuple<int64_t, int64_t, int64_t>> windows) {  // kernel, stride, pads (each side)
    onnx::ModelProto m = test::tiny_model();
    auto& g = *m.mutable_graph();
    g.mutable_node()->Clear();
    test::set_input_shape(*g.mutable_input(0), "x", {1, 4, 1, 5});
    g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)->set_dim_param("H");
    std::string in = "x";
    for (size_t i = 0; i < windows.size(); ++i) {
      auto [k, s, p] = windows[i];
      std::string out = "y" + std::to_string(i);
      auto& pool = test::add_node(g, "MaxPool", "pool" + std::to_string(i), {in}, {out});
      attr::set_ints(pool, "kernel_shape", {k, k});
      attr::set_ints(pool, "strides", {s, s});
      attr::set_ints(pool, "pads", {p, p, p, p});
      in = out;
    }
    GraphView view(m.graph());
    Shapes shapes(view, 13);
    REQUIRE(shapes.of(in));
    return format_shape(*shapes.of(in), &shapes);
  };
  // 3x3 stride 2 pads 1: ceil(H/2); three of them: ceil(H/8).
  CHECK(through({{3, 2, 1}}).starts_with("[1, 4, ceil(H/2), "));
  CHECK(through({{3, 2, 1}, {3, 2, 1}, {3, 2, 1}}).starts_with("[1, 4, ceil(H/8), "));
  // 2x2 stride 2, no pads: floor; floors chain as ceils do, and a mixed chain stays nested.
  CHECK(through({{2, 2, 0}, {2, 2, 0}}).starts_with("[1, 4, floor(H/4), "));
  CHECK(through({{2, 2, 0}, {3, 2, 1}}).starts_with("[1, 4, ceil(floor(H/2)/2), "));
  // A 3x3 stride 1 with pads 1 keeps the size: the same symbol, not a new one.
  CHECK(through({{3, 1, 1}}).starts_with("[1, 4, H, "));
  // Any other offset keeps the general form.
  CHECK(through({{5, 2, 0}}).starts_with("[1, 4, floor((H-3)/2), "));
}
