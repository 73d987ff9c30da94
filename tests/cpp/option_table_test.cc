// The option table (core/option_table.h) against the core it describes: its defaults are the
// core's, its choices are what the parsers take, and what it says the report records is there.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>

#include <fmt/format.h>

#include "core/cli/cli.h"
#include "core/option_table.h"
#include "core/options.h"
#include "core/pattern/registry.h"
#include "memory_host.h"

namespace lattice {
namespace {

const OptionRow& row_of(OptionId id) {
  for (const OptionRow& row : option_rows()) {
    if (row.id == id) return row;
  }
  FAIL("no row for that id");
  return option_rows().front();
}

TEST_CASE("option table: a flag is one row per command, a key one row per API call") {
  std::set<std::pair<std::string_view, unsigned>> flags, keys;
  for (const OptionRow& row : option_rows()) {
    for (unsigned bit = 1; bit <= kRepairCall; bit <<= 1) {
      if (!row.flag.empty() && (row.commands & bit)) CHECK(flags.insert({row.flag, bit}).second);
    }
    // The CLIs have no keys to look up: a key is the Node API's and the page's.
    for (unsigned bit = kApiConvert; bit <= kPage; bit <<= 1) {
      if (!row.key.empty() && (row.shells & bit)) CHECK(keys.insert({row.key, bit}).second);
    }
  }
  CHECK(find_flag("-o", kConvertCommand) == &row_of(OptionId::kOutput));
  CHECK(find_flag("-o", kInspectCommand) == nullptr);
  CHECK(find_flag("--json", kConvertCommand) != find_flag("--json", kInspectCommand));
  CHECK(find_key("resolver", kApiConvert) == &row_of(OptionId::kResolver));
  CHECK(find_key("resolver", kApiConvertFile) == nullptr);
}

TEST_CASE("option table: the defaults are the core's") {
  const Options defaults;
  CHECK(row_of(OptionId::kTarget).default_value == defaults.target);
  CHECK(row_of(OptionId::kTarget).default_value == all_targets().front()->name);
  CHECK(row_of(OptionId::kSnapWeights).default_value == snap_weights_name(defaults.snap_weights));
  CHECK(row_of(OptionId::kDataLayout).default_value == data_layout_name(defaults.layout));
  CHECK(row_of(OptionId::kDryRun).default_value == (defaults.dry_run ? "true" : "false"));
  CHECK(row_of(OptionId::kFixedPoint).default_value.empty());
  CHECK(defaults.fixed_point == FixedPoint::kNone);
}

TEST_CASE("option table: each choice is what the core's parser takes, and no other") {
  const auto& schemes = row_of(OptionId::kFixedPoint).allowed;
  REQUIRE(schemes.size() == 2);
  for (auto scheme : {FixedPoint::kFpq, FixedPoint::kLsq}) {
    CHECK(std::find(schemes.begin(), schemes.end(), fixed_point_name(scheme)) != schemes.end());
    CHECK(parse_fixed_point(fixed_point_name(scheme)).value() == scheme);
  }
  const auto& methods = row_of(OptionId::kSnapWeights).allowed;
  REQUIRE(methods.size() == 2);
  for (auto method : methods) CHECK(snap_weights_name(parse_snap_weights(method).value()) == method);
  const auto& layouts = row_of(OptionId::kDataLayout).allowed;
  REQUIRE(layouts.size() == 3);
  for (auto layout : layouts) CHECK(data_layout_name(parse_data_layout(layout).value()) == layout);
  CHECK_FALSE(parse_data_layout("split"));
}

TEST_CASE("option table: what it says the report's options record is in them") {
  Options options;
  options.fixed_point = FixedPoint::kFpq;  // recorded only when a scheme is asked for
  const std::string json = options.to_json().dump(false);
  for (const OptionRow& row : option_rows()) {
    if (!row.report.starts_with("options.")) continue;
    INFO(row.flag << row.key);
    CHECK(json.find(fmt::format("\"{}\":", row.report.substr(8))) != std::string::npos);
  }
}

TEST_CASE("option table: folding is on unless the scheme is FPQ, and the table says so to the shells") {
  CHECK(default_fold_batch_norm(FixedPoint::kNone));
  CHECK(default_fold_batch_norm(FixedPoint::kLsq));
  CHECK_FALSE(default_fold_batch_norm(FixedPoint::kFpq));
  Options fpq;
  fpq.fixed_point = FixedPoint::kFpq;
  CHECK_FALSE(fpq.folds_batch_norm());
  fpq.fold_batch_norm = true;
  CHECK(fpq.folds_batch_norm());
  CHECK(options_json().dump(false).find(R"("derived":{"fold_batch_norm":{"none":true,"fpq":false,"lsq":true}})") !=
        std::string::npos);
}

TEST_CASE("option table: a help line puts the default in its place") {
  CHECK(option_help(row_of(OptionId::kRtol)) == "relative tolerance (default 1e-4)");
  CHECK(option_help(row_of(OptionId::kTarget)).starts_with(fmt::format("{} (default)", all_targets().front()->name)));
}

TEST_CASE("option table: a check's flag without --check is refused naming the check's flags, from the table") {
  test::MemoryHost host;
  CHECK(run_cli({"convert", "m.onnx", "-o", "o.onnx", "--seed", "1"}, host) == kExitUsage);
  CHECK(host.err_text.substr(0, host.err_text.find('\n')) ==
        "onnx-lattice: --layerwise, --seed, --input-range, --rtol, --atol, --inputs, --labels, --map-threshold, --min-agreement, "
        "--min-accuracy, --image-resize, "
        "--image-scale, --image-order, --check-shape and --simulate are the check's: add --check");
}

TEST_CASE("option table: an image's preprocessing reads --calibration's images without --check") {
  test::MemoryHost alone;
  CHECK(run_cli({"convert", "m.onnx", "-o", "o.onnx", "--image-scale", "-1,1"}, alone) == kExitUsage);
  CHECK(alone.err_text.find("(the --image-* flags also read --calibration's images)") != std::string::npos);
  // With calibration the flags are the repair's: the parse takes them, and the native CLI then
  // says that it has no runtime to repair with (not that they are the check's).
  test::MemoryHost calibrated;
  run_cli({"convert", "m.onnx", "-o", "o.onnx", "--repair", "--calibration", "images", "--image-scale", "-1,1",
           "--image-order", "bgr", "--image-resize", "pad"},
          calibrated);
  CHECK(calibrated.err_text.find("the check's") == std::string::npos);
  CHECK(calibrated.err_text.find("Node CLI") != std::string::npos);
}

}  // namespace
}  // namespace lattice
