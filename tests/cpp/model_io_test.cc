// Loading and saving lose nothing: protobuf round trips and untouched models are byte-identical.
#include <catch2/catch.hpp>

#include "core/convert.h"
#include "core/onnx/model_io.h"
#include "core/onnx/validate.h"
#include "support.h"

using namespace lattice;

TEST_CASE("every fixture parses, validates and serialises back to the same bytes") {
  for (const auto& name : test::fixture_names()) {
    INFO(name);
    std::string original = test::fixture(name);
    auto model = parse_model(test::bytes(original));
    REQUIRE(model.ok());
    REQUIRE(validate_model(*model).ok());
    auto again = serialize_model(*model);
    REQUIRE(again.ok());
    CHECK(*again == original);
  }
}

TEST_CASE("an unknown field from a newer ONNX survives a round trip") {
  std::string original = test::fixture("everything.onnx");
  REQUIRE(original.substr(original.size() - 3) == std::string("\x98\x06\x2a", 3));
  auto model = parse_model(test::bytes(original));
  REQUIRE(model.ok());
  CHECK(model->graph().sparse_initializer_size() == 1);
  CHECK(model->functions_size() == 1);
  CHECK(model->metadata_props_size() == 2);
  auto again = serialize_model(*model);
  REQUIRE(again.ok());
  CHECK(again->substr(again->size() - 3) == std::string("\x98\x06\x2a", 3));
}

TEST_CASE("converting with no pattern and no folding returns the input bytes") {
  Options options;
  options.target = "none";
  options.fold_batch_norm = false;
  for (const auto& name : test::fixture_names()) {
    INFO(name);
    std::string original = test::fixture(name);
    auto result = convert(test::bytes(original), options);
    REQUIRE(result.ok());
    REQUIRE_FALSE(result->converted.has_value());
    REQUIRE(result->output(original).has_value());
    CHECK(*result->output(original) == original);
    CHECK(result->report.input.bytes == original.size());
    CHECK(result->report.output.op_counts == result->report.input.op_counts);
  }
}

TEST_CASE("a dry run returns no model but the report of the input") {
  Options options;
  options.dry_run = true;
  std::string original = test::fixture("sample.onnx");
  auto result = convert(test::bytes(original), options);
  REQUIRE(result.ok());
  CHECK_FALSE(result->output(original).has_value());
  CHECK(result->report.input.nodes > 0);
  CHECK(result->report.input.op_counts.at("MaxPool") == 7);
}

TEST_CASE("the report has the schema of SPEC section 4") {
  std::string original = test::fixture("conv_bn_relu.onnx");
  auto result = convert(test::bytes(original), Options{});
  REQUIRE(result.ok());
  std::string json = result->report.to_json().dump();
  for (const char* key : {"\"schema\": \"onnx-lattice-report/1\"", "\"tool\"", "\"target\": \"lattice\"", "\"options\"",
                          "\"input\"", "\"output\"", "\"op_counts\"", "\"matches\"", "\"warnings\"", "\"unsupported\"",
                          "\"timings_ms\"", "\"ir_version\"", "\"opset\": 13"}) {
    INFO(key);
    CHECK(json.find(key) != std::string::npos);
  }
}

TEST_CASE("a dry run reports the model it would write") {
  std::string original = test::fixture("sample.onnx");
  Options dry;
  dry.dry_run = true;
  auto plan = convert(test::bytes(original), dry);
  auto real = convert(test::bytes(original), Options{});
  REQUIRE(plan.ok());
  REQUIRE(real.ok());
  CHECK(plan->report.output.op_counts == real->report.output.op_counts);
  CHECK(plan->report.output.bytes == real->report.output.bytes);
  CHECK(plan->report.matches.size() == real->report.matches.size());
}
