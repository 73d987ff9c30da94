// Models as exporters other than torch write them (tf2onnx, paddle2onnx): sizes computed at run
// time from constants, a dynamic dimension written as dim_value -1, convolutions that halve the
// height only. A converted model keeps every size that the rest of its graph relies on.
#include <catch2/catch.hpp>

#include "converted.h"
#include "core/describe.h"
#include "core/graph/graph_view.h"
#include "core/graph/shapes.h"
#include "core/onnx/attributes.h"
#include "core/pattern/registry.h"
#include "core/patterns/lattice/hardware.h"

using namespace lattice;
using Catch::Matchers::Contains;

namespace {

const MatchRecord& match(const Report& report, const std::string& id) {
  for (const auto& m : report.matches) {
    if (m.id == id) return m;
  }
  FAIL("no match " << id);
  throw std::logic_error("unreachable");
}

int64_t opset_of(const onnx::ModelProto& m) {
  for (const auto& o : m.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  }
  return 0;
}

// The shape inference finds no node whose inputs do not fit together.
void check_fits(const onnx::ModelProto& m) {
  GraphView view(m.graph());
  Shapes shapes(view, opset_of(m));
  for (const auto& n : m.graph().node()) {
    INFO(n.name());
    CHECK_FALSE(shape_conflict(n, shapes).has_value());
  }
}

}  // namespace

TEST_CASE("pads and sizes computed from constants are evaluated, so shape inference knows the sizes") {
  auto parsed = parse_model(test::bytes(test::fixture("computed_pads.onnx")));
  REQUIRE(parsed.ok());
  GraphView view(parsed->graph());
  Shapes shapes(view, 11);
  // Pad(pads = Concat(Split(constant)) reordered): bottom and right 1.
  CHECK(shapes.ints("pads") == std::vector<int64_t>{0, 0, 0, 0, 0, 0, 1, 1});
  REQUIRE(shapes.of("padded"));
  CHECK(*shapes.of("padded") == Shape{1, 8, 33, 33});
  // Resize(sizes = Concat(Slice(Shape(x), 0, 2), [16, 16])).
  CHECK(shapes.ints("up_sizes") == std::vector<int64_t>{1, 8, 16, 16});
  REQUIRE(shapes.of("up"));
  CHECK(*shapes.of("up") == Shape{1, 8, 16, 16});
  // A 4-D Slice of constant starts and ends.
  REQUIRE(shapes.of("scores"));
  CHECK(*shapes.of("scores") == Shape{1, 16, 16, 1});
}

// The fixture with an Identity between its Pad and the depthwise stride-2 Conv: no longer the
// Pad -> Conv pair the target runs, so the stride-2 rewrite and the pads' snap reach that Conv.
std::string with_identity_after_pad() {
  auto parsed = parse_model(test::bytes(test::fixture("computed_pads.onnx")));
  REQUIRE(parsed.ok());
  auto* g = parsed->mutable_graph();
  for (auto& n : *g->mutable_node()) {
    if (n.name() == "down") n.set_input(0, "padded_copy");
  }
  test::add_node(*g, "Identity", "pad_copy", {"padded"}, {"padded_copy"});
  return parsed->SerializeAsString();
}

TEST_CASE("a Pad -> Conv(3x3, stride 2, pads 0) pair, as tf2onnx writes TensorFlow's SAME, is left as the target runs it") {
  for (const char* target : {"lattice", "lattice-advanced"}) {
    INFO(target);
    Options options;
    options.target = target;
    auto [out, report] = test::convert_bytes(test::fixture("computed_pads.onnx"), options);
    for (const auto& m : report.matches) CHECK(m.id.find(":down") == std::string::npos);
    const auto& down = test::node_named(out, "down");
    CHECK(attr::get_ints(down, "strides") == std::vector<int64_t>{2, 2});
    CHECK(down.input(0) == "padded");
    // The other stride-2 Conv, with pads 1, is rewritten.
    CHECK(match(report, "LatticeStride2ConvBnReLUPattern:deep").applied);
    check_fits(out);
  }
}

TEST_CASE("a rewrite that would change a size a later Concat or Reshape relies on is refused, with the reason") {
  std::string model = with_identity_after_pad();
  for (const char* target : {"lattice", "lattice-advanced"}) {
    INFO(target);
    Options options;
    options.target = target;
    auto [out, report] = test::convert_bytes(model, options);
    // Pads k/2 on the stride-1 Conv after the Pad would give 17 x 17 next to the Resize's 16 x 16.
    const auto& pads = match(report, "LatticeConv2dPattern:down");
    CHECK_FALSE(pads.applied);
    CHECK_THAT(pads.reason, Contains("the result would not be valid: Concat 'join' would join inputs of shapes "
                                     "[1, 8, 17, 17], [1, 8, 16, 16]"));
    // A 2x2 stride-2 pool would leave a quarter of the elements the Reshape needs.
    const auto& pool = match(report, "LatticeMaxPool2dPattern:peaks");
    CHECK_FALSE(pool.applied);
    CHECK_THAT(pool.reason, Contains("the result would not be valid: Reshape 'peaks_nhwc' would reshape an input of "
                                     "shape [1, 1, 8, 8] (64 elements) to [1, 16, 16, 1]"));
    // The stride-2 Convs keep their sizes and are converted.
    CHECK(match(report, "LatticeStride2ConvBnReLUPattern:down").applied);
    CHECK(match(report, "LatticeStride2ConvBnReLUPattern:deep").applied);
    check_fits(out);
    // Evaluated for inference only: the computed pads stay as the graph computes them.
    CHECK(test::node_named(out, "block_pad").input(1) == "pads");
    CHECK(test::node_named(out, "concat_pads").op_type() == "Concat");
  }
}

TEST_CASE("with a symbolic height and width, a rewrite that changes a size joined with a fixed one is refused") {
  auto parsed = parse_model(test::bytes(with_identity_after_pad()));
  REQUIRE(parsed.ok());
  auto* dims = parsed->mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->mutable_dim(2)->set_dim_param("H");
  dims->mutable_dim(3)->set_dim_param("W");
  {
    // A symbol joined with a number is a conflict where symbols are compared: the graph runs only
    // at the sizes that make them equal.
    GraphView view(parsed->graph());
    Shapes shapes(view, 11);
    const auto& join = test::node_named(*parsed, "join");
    CHECK_FALSE(shape_conflict(join, shapes).has_value());
    CHECK_THAT(shape_conflict(join, shapes, true).value_or(""),
               Contains("Concat 'join' would join inputs of shapes [1, 8, floor(H/2), floor(W/2)], [1, 8, 16, 16]"));
  }
  auto [out, report] = test::convert_bytes(parsed->SerializeAsString(), Options{});
  for (const auto& m : report.matches) {
    if (m.id == "LatticeStride2ConvBnReLUPattern:deep") continue;  // read only through Shape's batch and channels
    INFO(m.id);
    CHECK_FALSE(m.applied);
    CHECK_THAT(m.reason, Contains("the result would not be valid"));
  }
  CHECK_THAT(match(report, "LatticeMaxPool2dPattern:peaks").reason,
             Contains("Reshape 'peaks_nhwc' would reshape an input of shape [1, 1, "));
}

TEST_CASE("a negative dim_value is a dynamic dimension: pinned, inferred and described as one") {
  std::string bytes = test::fixture("minus_one_batch.onnx");
  auto parsed = parse_model(test::bytes(bytes));
  REQUIRE(parsed.ok());
  REQUIRE(parsed->graph().input(0).type().tensor_type().shape().dim(0).dim_value() == -1);
  GraphView view(parsed->graph());
  Shapes shapes(view, 13);
  REQUIRE(shapes.of("input"));
  CHECK((*shapes.of("input"))[0] == -1);  // unknown, not a symbol's id
  CHECK(format_shape(*shapes.of("input"), &shapes) == "[?, 3, 16, 16]");
  {
    // Any negative value, not only -1 (which would read as a symbol's id otherwise).
    onnx::ModelProto m = *parsed;
    m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(-7);
    GraphView v(m.graph());
    Shapes s(v, 13);
    REQUIRE(s.of("input"));
    CHECK((*s.of("input"))[0] == -1);
  }

  auto described = describe_model(test::bytes(bytes));
  REQUIRE(described.ok());
  // The graph input as declared (which the check's size proposal reads), and as inferred.
  CHECK_THAT(described->dump(false), Contains("\"inputs\":[{\"name\":\"input\",\"type\":\"float\",\"shape\":[\"?\",3,16,16]}]"));
  CHECK_THAT(described->dump(false), Contains("\"inputs\":[{\"name\":\"input\",\"shape\":[\"?\",3,16,16]}"));

  Options options;
  options.input_shapes = {{"input", {1, 3, 16, 16}}};
  auto [out, report] = test::convert_bytes(bytes, options);
  const auto& pinned = out.graph().input(0).type().tensor_type().shape();
  REQUIRE(pinned.dim_size() == 4);
  CHECK(pinned.dim(0).dim_value() == 1);
  CHECK(report.to_json().dump(false).find("\"input_shapes\":{\"input\":[1,3,16,16]}") != std::string::npos);
  // The other dimensions are still held to the declared ones.
  options.input_shapes = {{"input", {1, 3, 32, 16}}};
  auto bad = convert(test::bytes(bytes), options);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Contains("contradicts graph input 'input' [?, 3, 16, 16]: its dimension 2 is fixed at 16"));
}

TEST_CASE("a Conv at stride (2, 1) keeps its strides, so every size stays the original's") {
  const LatticeTarget* lattice = lattice_target(*find_target("lattice"));
  const LatticeTarget* advanced = lattice_target(*find_target("lattice-advanced"));
  REQUIRE(lattice);
  REQUIRE(advanced);
  for (const LatticeTarget* t : {lattice, advanced}) {
    auto s = snap_conv(*t, 5, {2, 1});
    CHECK(s.kernel == 3);
    CHECK(s.strides == std::array<int64_t, 2>{2, 1});
    s = snap_conv(*t, 1, {1, 2});
    CHECK(s.kernel == 3);
    CHECK(s.strides == std::array<int64_t, 2>{1, 2});
    s = snap_conv(*t, 7, {1, 1});
    CHECK(s.kernel == (t == advanced ? 7 : 3));
    s = snap_conv(*t, 3, {4, 4});
    CHECK(s.strides == std::array<int64_t, 2>{2, 2});
  }

  std::string bytes = test::fixture("anisotropic_strides.onnx");
  auto parsed = parse_model(test::bytes(bytes));
  REQUIRE(parsed.ok());
  GraphView before_view(parsed->graph());
  Shapes before(before_view, 13);
  for (const char* target : {"lattice", "lattice-advanced"}) {
    INFO(target);
    Options options;
    options.target = target;
    auto [out, report] = test::convert_bytes(bytes, options);
    GraphView after_view(out.graph());
    Shapes after(after_view, 13);
    int convs = 0;
    for (const auto& n : out.graph().node()) {
      if (n.op_type() != "Conv") continue;
      ++convs;
      INFO(n.name());
      CHECK(attr::get_ints(n, "strides") == std::vector<int64_t>{2, 1});
      CHECK(attr::get_ints(n, "kernel_shape") == std::vector<int64_t>{3, 3});
      REQUIRE(before.of(n.output(0)));
      REQUIRE(after.of(n.output(0)));
      CHECK(*after.of(n.output(0)) == *before.of(n.output(0)));
    }
    CHECK(convs == 3);
    REQUIRE(after.of("output"));
    CHECK(*after.of("output") == Shape{1, 4});
    check_fits(out);
    // The 3x3 at stride (2, 1) with pads 1 was accepted as it is: not matched, not in the audit.
    for (const auto& m : report.matches) CHECK(m.id != "LatticeConv2dPattern:/c3/c3.0/Conv");
    for (const auto& u : report.unsupported) CHECK(u.op_type != "Conv");
  }
}
