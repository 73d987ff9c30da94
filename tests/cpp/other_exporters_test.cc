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
  CHECK_THAT(described->dump(false), Contains("\"shape\":[\"?\",3,16,16]"));

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
