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
