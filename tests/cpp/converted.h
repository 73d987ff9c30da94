#pragma once
// Converting in a test: the output model (checked to parse and validate) and the report.
#include <catch2/catch.hpp>

#include "core/convert.h"
#include "core/onnx/model_io.h"
#include "core/onnx/validate.h"
#include "support.h"

namespace test {

struct Converted {
  onnx::ModelProto model;
  lattice::Report report;
};

inline Converted convert_bytes(const std::string& bytes, const lattice::Options& options) {
  auto result = lattice::convert(test::bytes(bytes), options);
  INFO((result.ok() ? std::string() : result.error().message));
  REQUIRE(result.ok());
  auto out = result->output(bytes);
  REQUIRE(out.has_value());
  auto model = lattice::parse_model({reinterpret_cast<const uint8_t*>(out->data()), out->size()});
  REQUIRE(model.ok());
  REQUIRE(lattice::validate_model(*model).ok());
  return {std::move(model).value(), std::move(result->report)};
}

}  // namespace test
