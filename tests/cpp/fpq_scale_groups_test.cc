// FpqRangeFitPattern through the graph (core/fixed_point/scale_group.h): one scale per channel
// moves through an SPPF block's pools and Concat, and along a residual stream through its Add to
// every BatchNormalization that writes it; a reading conv's rows shrink to take a large scale; a
// value the scale cannot reach keeps its scale.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/fixed_point/scheme.h"
#include "core/onnx/attributes.h"
#include "converted.h"

using namespace lattice;

namespace {

constexpr int64_t kC = 4;

struct Builder {
  onnx::ModelProto m;
  onnx::GraphProto& g;
  unsigned seed = 1;

  Builder() : g(*m.mutable_graph()) {
    m.set_ir_version(8);
    m.add_opset_import()->set_version(13);
    g.set_name("scale_groups");
    test::set_input_shape(*g.add_input(), "x", {1, kC, 4, 4});
  }

  // Conv 1×1 (in → out channels, weights in [-w, w]) then BatchNormalization, named `name`.
  void conv_bn(const std::string& name, const std::string& in, int64_t in_c, float w, const std::string& out) {
    *g.add_initializer() = test::float_tensor(name + "_w", {kC, in_c, 1, 1}, test::seeded_floats(kC * in_c, -w, w, seed++));
    *g.add_initializer() = test::float_tensor(name + "_gamma", {kC}, test::seeded_floats(kC, 0.5f, 2.0f, seed++));
    *g.add_initializer() = test::float_tensor(name + "_beta", {kC}, test::seeded_floats(kC, 0.5f, 1.5f, seed++));
    *g.add_initializer() = test::float_tensor(name + "_mean", {kC}, test::seeded_floats(kC, -0.5f, 0.5f, seed++));
    *g.add_initializer() = test::float_tensor(name + "_var", {kC}, test::seeded_floats(kC, 0.5f, 2.0f, seed++));
    test::add_node(g, "Conv", name, {in, name + "_w"}, {name + "_y"});
    test::add_node(g, "BatchNormalization", name + "_bn",
                   {name + "_y", name + "_gamma", name + "_beta", name + "_mean", name + "_var"}, {out});
  }

  // A head conv without BatchNormalization: its rows cannot shrink.
  void head(const std::string& in, int64_t in_c, float w) {
    *g.add_initializer() = test::float_tensor("head_w", {kC, in_c, 1, 1}, test::seeded_floats(kC * in_c, -w, w, seed++));
    test::add_node(g, "Conv", "head", {in, "head_w"}, {"y"});
    g.add_output()->set_name("y");
  }
};

Options fpq(std::map<std::string, std::vector<double>> ranges) {
  Options o;
  o.target = "none";
  o.fixed_point = FixedPoint::kFpq;
  o.channel_ranges = std::move(ranges);
  return o;
}

// The scale s the rewrite divided BatchNormalization `name`'s output channel c by (β over s).
double divided_by(const onnx::ModelProto& before, const onnx::ModelProto& after, const std::string& name, int64_t c) {
  return test::initializer_values(before, name + "_beta")[c] /
         test::initializer_values(after, test::node_named(after, name + "_bn").input(2))[c];
}

// What a layer's weights on input channel `in` were multiplied by (the same for every row).
double multiplied_by(const onnx::ModelProto& before, const onnx::ModelProto& after, const std::string& layer,
                     int64_t in, int64_t in_c, int64_t row = 0) {
  auto w0 = test::initializer_values(before, test::node_named(before, layer).input(1));
  auto w1 = test::initializer_values(after, test::node_named(after, layer).input(1));
  return w1[row * in_c + in] / w0[row * in_c + in];
}

void all_weights_fit(const onnx::ModelProto& m) {
  for (const auto& n : m.graph().node()) {
    if (n.op_type() != "Conv") continue;
    for (double w : test::initializer_values(m, n.input(1))) CHECK_FALSE(fixed_point::kFpqWeights.clips(w));
  }
}

}  // namespace

TEST_CASE("FPQ range fit: one scale moves through an SPPF block's pools and Concat to every slice it feeds") {
  Builder b;
  b.conv_bn("cv1", "x", kC, 0.3f, "n");
  test::add_node(b.g, "Relu", "relu", {"n"}, {"r"});
  std::string in = "r";
  for (std::string pool : {"m1", "m2", "m3"}) {
    auto& p = test::add_node(b.g, "MaxPool", pool, {in}, {pool + "_y"});
    attr::set_ints(p, "kernel_shape", {5, 5});
    attr::set_ints(p, "pads", {2, 2, 2, 2});
    in = pool + "_y";
  }
  attr::set_int(test::add_node(b.g, "Concat", "cat", {"r", "m1_y", "m2_y", "m3_y"}, {"cat_y"}), "axis", 1);
  b.head("cat_y", 4 * kC, 0.02f);
  // Activations up to 9, which unsigned 1.7 cannot hold; the pools' are at most the Relu's.
  std::vector<double> relu = {3, 5, 7, 9};
  auto out = test::convert_bytes(b.m.SerializeAsString(), fpq({{"r", relu}, {"m1_y", relu}, {"m2_y", relu}, {"m3_y", relu}}));
  REQUIRE(out.report.matches.size() == 1);
  CHECK(out.report.matches[0].applied);
  CHECK(out.report.matches[0].nodes == std::vector<std::string>{"cv1", "cv1_bn"});
  for (const auto& w : out.report.warnings) FAIL_CHECK(w.message);
  for (int64_t c = 0; c < kC; ++c) {
    const double s = divided_by(b.m, out.model, "cv1", c);
    CHECK(relu[c] / s <= fixed_point::kFpqActivation.max());
    // Every slice of the Concat that carries channel c is taken back by the same s.
    for (int64_t slice = 0; slice < 4; ++slice) CHECK(multiplied_by(b.m, out.model, "head", slice * kC + c, 4 * kC) == Approx(s));
  }
  all_weights_fit(out.model);
}

TEST_CASE("FPQ range fit: a residual stream takes one scale at every BatchNormalization that writes it") {
  // stem → h; block: h → c1 → relu → c2 → n2; Add(n2, h) → Relu → o → head. h, the Add and o are
  // one stream: the stem's and c2's BatchNormalizations divide by one s, c1 and the head multiply.
  Builder b;
  b.conv_bn("stem", "x", kC, 0.3f, "ns");
  test::add_node(b.g, "Relu", "stem_relu", {"ns"}, {"h"});
  b.conv_bn("c1", "h", kC, 0.3f, "n1");
  test::add_node(b.g, "Relu", "c1_relu", {"n1"}, {"r1"});
  b.conv_bn("c2", "r1", kC, 0.3f, "n2");
  test::add_node(b.g, "Add", "add", {"n2", "h"}, {"sum"});
  test::add_node(b.g, "Relu", "out_relu", {"sum"}, {"o"});
  b.head("o", kC, 0.02f);
  std::vector<double> stream = {6, 10, 14, 18};  // s ≥ 9 on the last channel: c1's rows must shrink
  auto out = test::convert_bytes(b.m.SerializeAsString(),
                                 fpq({{"h", stream}, {"sum", stream}, {"o", stream}, {"r1", {1, 1, 1, 1}}}));
  size_t applied = 0;
  for (const auto& m : out.report.matches) applied += m.applied;
  CHECK(applied >= 2);
  for (const auto& w : out.report.warnings) FAIL_CHECK(w.message);
  for (int64_t c = 0; c < kC; ++c) {
    const double s = divided_by(b.m, out.model, "stem", c);
    CHECK(stream[c] / s <= fixed_point::kFpqActivation.max());
    CHECK(divided_by(b.m, out.model, "c2", c) == Approx(s));  // the other branch of the Add
    CHECK(multiplied_by(b.m, out.model, "head", c, kC) == Approx(s));
  }
  // c1 reads the stream: its weights took s, and its rows shrank back into signed 0.7 (its
  // BatchNormalization took that back), so nothing clips.
  all_weights_fit(out.model);
}

TEST_CASE("FPQ range fit: a value the scale cannot reach keeps its scale, and the conv's weights still fit") {
  Builder b;
  b.conv_bn("cv1", "x", kC, 1.5f, "n");
  test::add_node(b.g, "Relu", "relu", {"n"}, {"r"});
  b.head("r", kC, 0.02f);
  b.g.add_output()->set_name("r");  // the Relu's output is read outside the model: it must stay
  auto out = test::convert_bytes(b.m.SerializeAsString(), fpq({{"r", {9, 9, 9, 9}}}));
  REQUIRE(out.report.matches.size() == 1);
  CHECK(out.report.matches[0].applied);  // the conv's weights came into range (t)
  for (int64_t c = 0; c < kC; ++c) CHECK(divided_by(b.m, out.model, "cv1", c) == 1.0);
  all_weights_fit(out.model);
}
