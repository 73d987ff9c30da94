// Bad input is refused with a message that names what is wrong (SPEC section 6).
#include <catch2/catch.hpp>

#include "core/convert.h"
#include "core/onnx/model_io.h"
#include "core/onnx/validate.h"
#include "core/util/json.h"
#include "core/util/utf8.h"
#include "support.h"

using namespace lattice;
using Catch::Matchers::Contains;

namespace {

std::string rejection(const onnx::ModelProto& model) {
  std::string bytes = model.SerializeAsString();
  auto result = convert(test::bytes(bytes), Options{});
  REQUIRE_FALSE(result.ok());
  return result.error().message;
}

}  // namespace

TEST_CASE("the minimal model is accepted") { CHECK(validate_model(test::tiny_model()).ok()); }

TEST_CASE("empty, garbage and oversized inputs are refused") {
  CHECK_THAT(parse_model({}).error().message, Contains("empty"));
  std::string garbage = "this is not an onnx model at all";
  auto result = convert(test::bytes(garbage), Options{});
  REQUIRE_FALSE(result.ok());
  CHECK_THAT(result.error().message, Contains("not an ONNX model"));
  CHECK_THAT(check_model_size(kMaxModelBytes + 1).error().message, Contains("2 GiB"));
  CHECK(check_model_size(kMaxModelBytes).ok());
}

TEST_CASE("a model without graph, ir_version or opset_import is refused") {
  onnx::ModelProto no_graph = test::tiny_model();
  no_graph.clear_graph();
  CHECK_THAT(rejection(no_graph), Contains("no graph"));
  onnx::ModelProto no_ir = test::tiny_model();
  no_ir.clear_ir_version();
  CHECK_THAT(rejection(no_ir), Contains("ir_version"));
  onnx::ModelProto no_opset = test::tiny_model();
  no_opset.clear_opset_import();
  CHECK_THAT(rejection(no_opset), Contains("opset_import"));
}

TEST_CASE("an input with no producer names the node and the tensor") {
  auto m = test::tiny_model();
  m.mutable_graph()->mutable_node(0)->set_input(0, "ghost");
  CHECK_THAT(rejection(m), Contains("node 'relu' (Relu) reads 'ghost'"));
}

TEST_CASE("a graph output nobody produces is refused") {
  auto m = test::tiny_model();
  m.mutable_graph()->mutable_output(0)->set_name("nowhere");
  CHECK_THAT(rejection(m), Contains("graph output 'nowhere'"));
}

TEST_CASE("two nodes writing the same output are refused") {
  auto m = test::tiny_model();
  *m.mutable_graph()->add_node() = m.graph().node(0);
  m.mutable_graph()->mutable_node(1)->set_name("relu_again");
  CHECK_THAT(rejection(m), Contains("tensor 'y' is defined twice"));
}

TEST_CASE("a cycle is refused and a node on it is named") {
  auto m = test::tiny_model();
  auto* g = m.mutable_graph();
  // a = Add(x, b); b = Relu(a); y = Relu(b)
  g->mutable_node(0)->set_input(0, "b");
  g->mutable_node(0)->set_name("close_loop");
  auto* add = g->add_node();
  add->set_op_type("Add");
  add->set_name("add");
  add->add_input("x");
  add->add_input("y");
  add->add_output("b");
  CHECK_THAT(rejection(m), Contains("cycle through node"));
}

TEST_CASE("an unnamed node is named by op type and index") {
  auto m = test::tiny_model();
  m.mutable_graph()->mutable_node(0)->clear_name();
  m.mutable_graph()->mutable_node(0)->set_input(0, "ghost");
  CHECK_THAT(rejection(m), Contains("node 'Relu_0'"));
}

TEST_CASE("initializer data that disagrees with its dims is refused") {
  auto m = test::tiny_model();
  *m.mutable_graph()->add_initializer() = test::float_tensor("w", {2, 3}, {1, 2, 3, 4, 5});
  CHECK_THAT(rejection(m), Contains("initializer 'w' holds 5 values in float_data, but dims [2, 3] of type float need 6"));

  auto raw = test::tiny_model();
  auto* t = raw.mutable_graph()->add_initializer();
  t->set_name("r");
  t->set_data_type(onnx::TensorProto::FLOAT16);
  t->add_dims(4);
  t->set_raw_data(std::string(7, '\0'));
  CHECK_THAT(rejection(raw), Contains("initializer 'r' holds 7 bytes of raw_data, but dims [4] of type float16 need 8"));
}

TEST_CASE("a Constant node's tensor is checked like an initializer") {
  auto m = test::tiny_model();
  auto* c = m.mutable_graph()->add_node();
  c->set_op_type("Constant");
  c->set_name("const");
  c->add_output("c");
  auto* attr = c->add_attribute();
  attr->set_name("value");
  attr->set_type(onnx::AttributeProto::TENSOR);
  *attr->mutable_t() = test::float_tensor("", {3}, {1, 2});
  CHECK_THAT(rejection(m), Contains("attribute 'value' of node 'const' (Constant)"));
}

TEST_CASE("external data is refused with the file it points to") {
  auto m = test::tiny_model();
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("big");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(1000);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* entry = t->add_external_data();
  entry->set_key("location");
  entry->set_value("weights.bin");
  CHECK_THAT(rejection(m), Contains("initializer 'big' keeps its data in an external file ('weights.bin')"));
}

TEST_CASE("a subgraph reading an undefined name is refused with its path") {
  auto m = test::tiny_model();
  auto* node = m.mutable_graph()->add_node();
  node->set_op_type("If");
  node->set_name("branch");
  node->add_input("x");
  node->add_output("z");
  auto* attr = node->add_attribute();
  attr->set_name("then_branch");
  attr->set_type(onnx::AttributeProto::GRAPH);
  auto* body = attr->mutable_g();
  body->set_name("then");
  auto* inner = body->add_node();
  inner->set_op_type("Identity");
  inner->set_name("inner");
  inner->add_input("nowhere");
  inner->add_output("z_then");
  body->add_output()->set_name("z_then");
  // The If itself reads "nowhere" implicitly, through its body.
  std::string message = rejection(m);
  CHECK_THAT(message, Contains("subgraph 'then' of node 'branch' (If)"));
  CHECK_THAT(message, Contains("reads 'nowhere'"));
}

TEST_CASE("a subgraph may read tensors of the graph around it") {
  std::string bytes = test::fixture("control_flow.onnx");
  auto model = parse_model(test::bytes(bytes));
  REQUIRE(model.ok());
  CHECK(validate_model(*model).ok());
}

TEST_CASE("names that are not valid UTF-8 reach messages and reports as U+FFFD") {
  auto m = test::tiny_model();
  m.mutable_graph()->mutable_node(0)->set_input(0, std::string("bad\xed\xa0\x80name\xff", 11));
  std::string message = rejection(m);
  CHECK_THAT(message, Contains("reads 'bad"));
  CHECK(valid_utf8(message) != message);  // the core keeps the bytes; the shells clean them
  CHECK(valid_utf8("bad\xed\xa0\x80name\xff") == "bad\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdname\xef\xbf\xbd");
  CHECK(valid_utf8("ok \xc3\xa9 \xf0\x9f\x98\x80") == "ok \xc3\xa9 \xf0\x9f\x98\x80");
  CHECK(Json(std::string("x\xc0\xafy")).dump(false) == "\"x\xef\xbf\xbd\xef\xbf\xbdy\"");
}

TEST_CASE("printable text is one line: control characters are escaped, UTF-8 kept or replaced") {
  using namespace std::string_literals;
  CHECK(printable("K\nonnx-lattice: ok") == "K\\nonnx-lattice: ok");
  CHECK(printable("a\0b\r\t\x1b[31m"s) == "a\\0b\\r\\t\\x1b[31m");
  CHECK(printable("del\x7f") == "del\\x7f");
  CHECK(printable("c1 \xc2\x85 ls \xe2\x80\xa8") == "c1 \\u0085 ls \\u2028");
  CHECK(printable("ok \xc3\xa9 \xf0\x9f\x98\x80") == "ok \xc3\xa9 \xf0\x9f\x98\x80");
  CHECK(printable("bad\xff") == "bad\xef\xbf\xbd");
}
