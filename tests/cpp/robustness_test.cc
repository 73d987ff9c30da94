// Truncated and bit-flipped models never crash or hang: each is either refused with a message
// or converted; a model converted with nothing applied comes back byte for byte.
#include <catch2/catch.hpp>

#include "core/convert.h"
#include "support.h"

using namespace lattice;

namespace {

void check_outcome(const std::string& input) {
  auto result = convert(test::bytes(input), Options{});
  if (!result.ok()) {
    CHECK_FALSE(result.error().message.empty());
    return;
  }
  if (!result->report.any_applied()) {
    REQUIRE(result->output(input).has_value());
    CHECK(*result->output(input) == input);
  }
}

}  // namespace

TEST_CASE("every truncation of a model is refused or converted, never a crash") {
  for (const char* name : {"conv_bn_relu.onnx", "control_flow.onnx", "everything.onnx"}) {
    std::string model = test::fixture(name);
    for (size_t length = 0; length < model.size(); ++length) check_outcome(model.substr(0, length));
  }
}

TEST_CASE("truncating a real model anywhere inside its graph is refused") {
  std::string model = test::fixture("sample.onnx");
  size_t refused = 0, tried = 0;
  for (size_t length = 1; length < model.size(); length += 97) {
    ++tried;
    auto result = convert(test::bytes(model.substr(0, length)), Options{});
    refused += result.ok() ? 0 : 1;
  }
  CHECK(refused == tried);
}

TEST_CASE("every single-bit flip of a model is refused or converted, never a crash") {
  for (const char* name : {"conv_bn_relu.onnx", "control_flow.onnx", "everything.onnx"}) {
    std::string model = test::fixture(name);
    for (size_t i = 0; i < model.size(); ++i) {
      std::string flipped = model;
      flipped[i] = static_cast<char>(flipped[i] ^ (1 << (i % 8)));
      check_outcome(flipped);
    }
  }
}
