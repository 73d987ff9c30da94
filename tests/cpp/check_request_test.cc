// The check's flags (core/cli/check_request.h): each value rule refuses the first value past it,
// and the request carries what the runtime needs.
#include <catch2/catch.hpp>

#include "core/cli/check_request.h"

namespace lattice {
namespace {

// parse_check_flag on FLAG with the value VALUE (nullopt: the command line ended).
Result<bool> parse(std::string_view flag, std::optional<std::string> value, CheckFlags& check) {
  return parse_check_flag(flag, [&] { return value; }, check);
}

TEST_CASE("check flags: values at and just past each rule's edge") {
  CheckFlags c;
  REQUIRE(parse("--seed", "0", c).value());
  REQUIRE(parse("--seed", "4294967295", c).value());
  CHECK(*c.seed == 4294967295.0);
  CHECK_FALSE(parse("--seed", "4294967296", c));
  CHECK_FALSE(parse("--seed", "-1", c));
  CHECK_FALSE(parse("--seed", "1.5", c));
  CHECK_FALSE(parse("--seed", "7x", c));
  CHECK_FALSE(parse("--seed", std::nullopt, c));
  REQUIRE(parse("--rtol", "0", c).value());
  CHECK(*c.rtol == 0.0);
  CHECK_FALSE(parse("--rtol", "-1e-9", c));
  CHECK_FALSE(parse("--atol", "inf", c));
  CHECK_FALSE(parse("--atol", "nan", c));
  REQUIRE(parse("--input-range", "-1,1", c).value());
  CHECK(c.input_range == std::pair{-1.0, 1.0});
  auto equal = parse("--input-range", "1,1", c);
  REQUIRE_FALSE(equal);
  CHECK(equal.error().message == "--input-range needs LO,HI with LO < HI (e.g. -1,1), not '1,1'");
  CHECK_FALSE(parse("--input-range", "0", c));
  CHECK_FALSE(parse("--input-range", "0,", c));
  REQUIRE(parse("--map-threshold", "0", c).value());
  REQUIRE(parse("--map-threshold", "1", c).value());
  CHECK(*c.map_threshold == 1.0);
  auto above = parse("--map-threshold", "1.0001", c);
  REQUIRE_FALSE(above);
  CHECK(above.error().message == "--map-threshold needs a number from 0 to 1, not '1.0001'");
  CHECK_FALSE(parse("--map-threshold", "-0.1", c));
  CHECK_FALSE(parse("--map-threshold", "x", c));
  CHECK_FALSE(c.layerwise);
  REQUIRE(parse("--layerwise", std::nullopt, c).value());
  CHECK(c.layerwise);
  CHECK(c.any_given());
}

TEST_CASE("check flags: a gate is a share from 0 to 1, judged on samples only") {
  CheckFlags c;
  REQUIRE(parse("--min-agreement", "0", c).value());
  REQUIRE(parse("--min-agreement", "1", c).value());
  CHECK(*c.min_agreement == 1.0);
  auto percent = parse("--min-agreement", "95", c);
  REQUIRE_FALSE(percent);
  CHECK(percent.error().message == "--min-agreement needs a number from 0 to 1 (a share: 0.95 for 95 %), not '95'");
  CHECK_FALSE(parse("--min-accuracy", "-0.01", c));
  REQUIRE(parse("--min-accuracy", "0.9", c).value());
  CHECK(*c.min_accuracy == 0.9);
  CHECK(c.any_given());
  // Random inputs say nothing of a task: samples, or a repair's calibration (its held-out quarter).
  CHECK_THAT(gate_conflict(c), Catch::Matchers::Contains("--min-agreement gates on your samples' figures"));
  c.repair = true;
  c.calibration.push_back("cal.npy");
  CHECK(gate_conflict(c).empty());
  CheckFlags given;
  given.min_accuracy = 0.5;
  given.inputs = "held.npz";
  CHECK(gate_conflict(given).empty());
  CHECK(gate_conflict(CheckFlags{}).empty());
  Json request = check_request("check", "a.onnx", "b.onnx", given, Options{});
  CHECK(request.dump(false).find(R"("minAccuracy":0.5)") != std::string::npos);
}

TEST_CASE("check flags: other flags are left to the command line") {
  CheckFlags c;
  auto taken = parse("--target", "lattice", c);
  REQUIRE(taken);
  CHECK_FALSE(*taken);
  CHECK_FALSE(c.any_given());
}

TEST_CASE("check request: the options the runtime needs, the report when converting") {
  CheckFlags c;
  c.layerwise = true;
  c.seed = 3;
  Options o;
  o.input_shapes.push_back({"images", {1, 3, 64, 64}});
  Json bare = check_request("check", "a.onnx", "b.onnx", c, o, "", nullptr, true);
  CHECK(bare.dump(false) ==
        R"({"command":"check","original":"a.onnx","candidate":"b.onnx","json":true,"check":false,"options":{"inputShapes":{"images":[1,3,64,64]},"layerwise":true,"seed":3}})");
  Json report = Json::object().set("schema", "onnx-lattice-report/1");
  Json converting = check_request("convert", "a.onnx", "b.onnx", CheckFlags{}, Options{}, "r.json", &report);
  CHECK(converting.dump(false) ==
        R"({"command":"convert","original":"a.onnx","candidate":"b.onnx","json":false,"check":false,"options":{"inputShapes":{},"layerwise":false},"report":{"schema":"onnx-lattice-report/1"},"report_path":"r.json"})");
}

TEST_CASE("check flags: samples, labels and an image's preprocessing; the repair and its calibration") {
  CheckFlags c;
  REQUIRE(parse("--inputs", "held/", c).value());
  REQUIRE(parse("--labels", "labels.npy", c).value());
  CHECK_FALSE(parse("--inputs", "", c));
  CHECK_FALSE(parse("--labels", std::nullopt, c));
  REQUIRE(parse("--image-scale", "0,2", c).value());
  REQUIRE(parse("--image-resize", "pad", c).value());
  REQUIRE(parse("--image-order", "bgr", c).value());
  auto word = parse("--image-scale", "0,255", c);
  REQUIRE_FALSE(word);
  CHECK(word.error().message == "--image-scale takes 0,1, 0,2, -1,1, imagenet, not '0,255'");
  CHECK_FALSE(parse("--image-resize", "crop", c));
  CHECK_FALSE(parse("--image-order", "RGB", c));
  CHECK(c.any_given());
  CHECK_FALSE(c.runs_models());
  REQUIRE(parse("--calibration", "a.npz", c).value());
  REQUIRE(parse("--calibration", "b/", c).value());
  CHECK_FALSE(parse("--calibration", std::nullopt, c));
  CHECK(c.runs_models());  // under --fixed-point fpq, FPQ's range fit measures on them
  Options fpq;
  fpq.fixed_point = FixedPoint::kFpq;
  CHECK(check_request("convert", "a.onnx", "b.onnx", c, fpq, "", nullptr).dump(false).ends_with(
      R"("range_fit":{"calibration":["a.npz","b/"]}})"));
  fpq.skip = {"FpqRangeFitPattern"};
  CHECK(check_request("convert", "a.onnx", "b.onnx", c, fpq, "", nullptr).dump(false).find("range_fit") == std::string::npos);
  REQUIRE(parse("--repair", std::nullopt, c).value());
  CHECK(c.runs_models());
  Json request = check_request("convert", "a.onnx", "b.onnx", c, Options{}, "", nullptr);
  CHECK(request.dump(false) ==
        R"({"command":"convert","original":"a.onnx","candidate":"b.onnx","json":false,"check":false,"options":{"inputShapes":{},"layerwise":false,"inputs":"held/","labels":"labels.npy","preprocessing":{"resize":"pad","scale":"0,2","order":"bgr"}},"repair":{"calibration":["a.npz","b/"]}})");
}

}  // namespace
}  // namespace lattice
