// Targets are data: a target is one entry of the Lattice table, the patterns read their limits
// from the entry of the target they run for, and the catalogue is the one list every shell reads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>

#include "converted.h"
#include "core/onnx/attributes.h"
#include "core/pattern/registry.h"
#include "core/patterns/lattice/hardware.h"
#include "core/patterns/lattice/patterns.h"
#include "core/patterns/lattice/targets.h"

using namespace lattice;
using Catch::Matchers::Contains;

namespace {

constexpr int64_t kStride1[] = {1}, kStride1Or2[] = {1, 2}, kFive[] = {5};
constexpr ConvKernel kKernels[] = {{1, kStride1}, {5, kStride1Or2}};

// A target no accelerator has: 5x5 wherever Lattice has 3x3, so every limit read from the entry
// shows in the output.
LatticeTarget five_by_five() {
  return {
      .name = "test-5x5",
      .description = "a test's target: 1x1 stride 1 and 5x5 stride 1/2 convolutions",
      .conversion = lattice_conversion(sppf_maxpool_pattern()),
      .conv_kernels = kKernels,
      .stride2_kernel = 5,
      .max_pool = {2, 2},
      .sppf_kernels = kFive,
      .operators = hardware_operators(),
      .source = "this test",
  };
}

Options for_target(const std::string& target, const std::string& pattern = "") {
  Options o;
  o.target = target;
  if (!pattern.empty()) o.only = {pattern};
  o.fold_batch_norm = false;
  return o;
}

const onnx::NodeProto* node_named(const onnx::ModelProto& model, const std::string& name) {
  for (const auto& n : model.graph().node()) {
    if (n.name() == name) return &n;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("a test-only target registered from one entry is in the catalogue and converts with its own limits") {
  {
    TargetRegistration registered(make_target(five_by_five()));
    REQUIRE(find_target("test-5x5"));
    CHECK(check_options(for_target("test-5x5")).ok());
    CHECK_THAT(catalogue_json().dump(false), Contains("{\"name\":\"test-5x5\",\"description\":\"a test's target"));

    // The stride-2 stem becomes the entry's stride-2 kernel behind a Pad of its half.
    auto stem = test::convert_bytes(test::fixture("resnet_stem.onnx"),
                                    for_target("test-5x5", "LatticeStride2AsymPadConvMaxPoolPattern"));
    REQUIRE(stem.report.warnings.size() >= 1);
    CHECK_THAT(stem.report.warnings[0].message,
               Contains("snapped to Pad((0, 2, 0, 2)) + Conv(kernel_size=(5, 5), stride=(2, 2)"));

    // SPPF's Convs take the entry's kernel set.
    auto sppf = test::convert_bytes(test::fixture("sample.onnx"), for_target("test-5x5", "LatticeSPPFMaxPoolPattern"));
    for (const auto& n : sppf.model.graph().node()) {
      if (n.name().ends_with(".conv")) CHECK(attr::get_ints(n, "kernel_shape") == std::vector<int64_t>{5, 5});
    }

    // A 3x3 Conv is outside the entry's kernels: snapped to 5x5, and the audit says what the target accepts.
    auto odd = test::convert_bytes(test::fixture("odd_convs.onnx"), for_target("test-5x5"));
    const auto* c5 = node_named(odd.model, "/c5/Conv");
    REQUIRE(c5);
    CHECK(attr::get_ints(*c5, "kernel_shape") == std::vector<int64_t>{5, 5});
    CHECK(std::none_of(odd.report.matches.begin(), odd.report.matches.end(),
                       [](const MatchRecord& m) { return m.id == "LatticeConv2dPattern:/c5/Conv"; }));
    for (const auto& m : odd.report.matches) {
      if (m.pattern != "LatticeConv2dPattern" || !m.applied) continue;
      const auto* conv = node_named(odd.model, m.new_nodes.front());
      REQUIRE(conv);
      auto kernel = attr::get_ints(*conv, "kernel_shape");
      CHECK((kernel == std::vector<int64_t>{1, 1} || kernel == std::vector<int64_t>{5, 5}));
    }
    CHECK_THAT(hardware_text(), Contains("target test-5x5: Conv 1x1 stride 1; 5x5 stride 1/2 (source: this test)\n"));
  }
  CHECK_FALSE(find_target("test-5x5"));  // gone with its registration
}

TEST_CASE("a Lattice target's stride-2 kernel is one it accepts at stride 2") {
  for (const Target* target : all_targets()) {
    const LatticeTarget* entry = lattice_target(*target);
    if (!entry || entry->stride2_kernel == 0) continue;
    INFO(target->name);
    CHECK(std::any_of(entry->conv_kernels.begin(), entry->conv_kernels.end(), [&](const ConvKernel& k) {
      return k.size == entry->stride2_kernel && std::find(k.strides.begin(), k.strides.end(), 2) != k.strides.end();
    }));
  }
}

TEST_CASE("the default target is the catalogue's first, which the page's selector shows first") {
  REQUIRE_FALSE(all_targets().empty());
  CHECK(all_targets().front()->name == Options{}.target);
}

TEST_CASE("every operator a target's patterns emit has a row in its hardware table") {
  // A new pattern that emits an operator the table does not list fails here, naming both: the
  // audit would otherwise call the pattern's own output "not an operator the accelerator runs".
  for (const Target* target : all_targets()) {
    const LatticeTarget* entry = lattice_target(*target);
    if (!entry) continue;
    for (const auto& name : test::fixture_names()) {
      auto result = convert(test::bytes(test::fixture(name)), for_target(std::string(target->name)));
      if (!result.ok()) continue;  // the fixtures a model check refuses
      for (const auto& m : result->report.matches) {
        if (!m.applied || m.phase != "conversion") continue;
        for (const auto& op : m.new_node_ops) {
          bool listed = std::any_of(entry->operators.begin(), entry->operators.end(),
                                    [&](const HardwareOp& row) { return row.op == op; });
          INFO("target " << target->name << ": " << m.pattern << " emits " << op
                         << ", which has no row in the target's operator table (core/patterns/lattice/targets.cc)");
          CHECK(listed);
        }
      }
    }
  }
}

TEST_CASE("the catalogue lists each pattern once: every target's conversion in its order, then the fusion phase") {
  std::set<const Pattern*> seen;
  for (const Pattern* p : all_patterns()) CHECK(seen.insert(p).second);
  for (const Target* t : all_targets()) {
    // A target's order is the catalogue's order too.
    std::vector<size_t> at;
    for (const Pattern* p : t->conversion) {
      auto it = std::find(all_patterns().begin(), all_patterns().end(), p);
      REQUIRE(it != all_patterns().end());
      at.push_back(static_cast<size_t>(it - all_patterns().begin()));
    }
    CHECK(std::is_sorted(at.begin(), at.end()));
  }
}
