// The model card's facts (core/describe.h).
#include <catch2/catch.hpp>

#include "core/describe.h"
#include "support.h"

using namespace lattice;
using Catch::Matchers::Contains;

TEST_CASE("the parameter count includes the tensors of Constant nodes, as it does initializers") {
  auto m = test::tiny_model();
  auto& g = *m.mutable_graph();
  *g.add_initializer() = test::float_tensor("b", {4}, {1, 2, 3, 4});
  auto& constant = test::add_node(g, "Constant", "w", {}, {"w_out"});
  auto* a = constant.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = test::float_tensor("", {2, 3}, {1, 2, 3, 4, 5, 6});
  auto described = describe_model(test::bytes(m.SerializeAsString()));
  REQUIRE(described.ok());
  CHECK_THAT(described->dump(false), Contains("\"parameters\":10"));
}

TEST_CASE("a dynamic model described at given input sizes has its shapes as numbers") {
  const std::string bytes = test::fixture("detector_dynamic_hw.onnx");
  auto symbolic = describe_model(test::bytes(bytes));
  REQUIRE(symbolic.ok());
  CHECK_THAT(symbolic->dump(false), Contains("\"H\""));
  auto pinned = describe_model(test::bytes(bytes), {{"input", {1, 3, 64, 96}}});
  REQUIRE(pinned.ok());
  const std::string text = pinned->dump(false);
  // Every tensor the nodes compute (the graph's declared outputs stay as the model declares them).
  CHECK_THAT(text, Contains("/down.0.0/Conv_output_0\",\"shape\":[1,8,32,48]"));
  CHECK_THAT(symbolic->dump(false), !Contains("/down.0.0/Conv_output_0\",\"shape\":[1,8,32,48]"));
  // A size the model fixes otherwise is refused, naming it.
  auto wrong = describe_model(test::bytes(bytes), {{"input", {1, 4, 64, 96}}});
  REQUIRE_FALSE(wrong.ok());
  CHECK_THAT(wrong.error().message, Contains("'input'"));
}
