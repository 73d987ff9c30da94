// The Lattice conversion patterns on real exported models: the emitted graph (ops, attributes,
// shapes), the warnings in the seed's words, and the rewrites that must not be applied.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "core/convert.h"
#include "core/graph/shapes.h"
#include "core/onnx/attributes.h"
#include "core/onnx/model_io.h"
#include "core/onnx/validate.h"
#include "core/onnx/domain.h"
#include "core/pattern/registry.h"
#include "core/patterns/lattice/hardware.h"
#include "converted.h"

using namespace lattice;
using Catch::Matchers::Contains;

namespace {

struct Converted : test::Converted {

  // Helpers fail the test case with a message, never crash the run, when what they look for is missing.
  const onnx::NodeProto& node(const std::string& name) const {
    for (const auto& n : model.graph().node()) {
      if (n.name() == name) return n;
    }
    FAIL("no node " << name);
    throw std::logic_error("unreachable");
  }
  // The node writing `tensor`.
  const onnx::NodeProto& producer(const std::string& tensor) const {
    for (const auto& n : model.graph().node()) {
      if (std::find(n.output().begin(), n.output().end(), tensor) != n.output().end()) return n;
    }
    FAIL("nothing writes " << tensor);
    throw std::logic_error("unreachable");
  }
  size_t count(const std::string& op) const {
    return static_cast<size_t>(std::count_if(model.graph().node().begin(), model.graph().node().end(),
                                             [&](const auto& n) { return n.op_type() == op; }));
  }
  std::vector<std::string> warnings_of(const std::string& pattern) const {
    std::vector<std::string> out;
    for (const auto& w : report.warnings) {
      if (w.pattern == pattern) out.push_back(w.message);
    }
    return out;
  }
  std::string first_warning_of(const std::string& pattern) const {
    auto all = warnings_of(pattern);
    if (all.empty()) FAIL("no warning of " << pattern);
    return all.front();
  }
  const MatchRecord* match(const std::string& id) const {
    for (const auto& m : report.matches) {
      if (m.id == id) return &m;
    }
    return nullptr;
  }
  Shape shape(const std::string& tensor) const {
    GraphView view(model.graph());
    Shapes shapes(view, default_opset(model));
    REQUIRE(shapes.of(tensor) != nullptr);
    return *shapes.of(tensor);
  }
};

Converted convert_fixture(const std::string& name, Options options = {}) {
  return {test::convert_bytes(test::fixture(name), options)};
}

Options only(const std::string& pattern, const std::string& target = "lattice") {
  Options o;
  o.target = target;
  o.only = {pattern};
  o.fold_batch_norm = false;
  return o;
}

std::vector<int64_t> ints(const onnx::NodeProto& n, const char* name) {
  auto values = attr::get_ints(n, name);
  if (!values) FAIL("node '" << n.name() << "' (" << n.op_type() << ") has no attribute '" << name << "'");
  return *values;
}

// The weight input of the named node in the fixture as committed.
std::string original_weight(const std::string& fixture, const std::string& node) {
  std::string bytes = test::fixture(fixture);
  auto model = parse_model(test::bytes(bytes));
  for (const auto& n : model->graph().node()) {
    if (n.name() == node) return n.input(1);
  }
  FAIL("no node " << node);
  return "";
}

}  // namespace

TEST_CASE("SPPF: three stride-1 MaxPools become Conv 3x3 -> BatchNormalization -> Relu chains feeding the Concat") {
  auto c = convert_fixture("sample.onnx", only("LatticeSPPFMaxPoolPattern"));
  CHECK(c.count("MaxPool") == 1);  // the pool after the stride-2 conv is not SPPF's
  REQUIRE(c.match("LatticeSPPFMaxPoolPattern:/sppf5/m/MaxPool"));
  CHECK(c.match("LatticeSPPFMaxPoolPattern:/sppf5/m/MaxPool")->nodes ==
        std::vector<std::string>{"/sppf5/m/MaxPool", "/sppf5/m_1/MaxPool", "/sppf5/m_2/MaxPool"});
  // Each pool's output is now written by a Relu fed by BN fed by a 3x3 Conv, cascaded.
  const auto& concat = c.node("/sppf5/Concat");
  REQUIRE(concat.input_size() == 4);
  for (int i = 1; i <= 3; ++i) {
    const auto& relu = c.producer(concat.input(i));
    CHECK(relu.op_type() == "Relu");
    const auto& bn = c.producer(relu.input(0));
    CHECK(bn.op_type() == "BatchNormalization");
    const auto& conv = c.producer(bn.input(0));
    CHECK(conv.op_type() == "Conv");
    CHECK(ints(conv, "kernel_shape") == std::vector<int64_t>{3, 3});
    CHECK(ints(conv, "pads") == std::vector<int64_t>{1, 1, 1, 1});
    CHECK(conv.input_size() == 2);  // no bias
    CHECK(conv.input(0) == concat.input(i - 1));  // the cascade
    CHECK(c.shape(concat.input(i)) == Shape{1, 8, 8, 8});
  }
  auto warnings = c.warnings_of("LatticeSPPFMaxPoolPattern");
  REQUIRE(warnings.size() == 6);
  CHECK(warnings[0] ==
        "/sppf5/m/MaxPool: MaxPool(kernel_size=(5, 5), stride=(1, 1)) replaced with Conv(kernel_size=(3, 3)) + "
        "BatchNormalization + Relu — output will differ; retraining required.");
}

TEST_CASE("SPPF advanced: the Conv kernel matches the pool's (nearest of 3, 5, 7)") {
  auto c = convert_fixture("sample.onnx", only("LatticeSPPFMaxPoolAdvancedPattern", "lattice-advanced"));
  for (const char* concat_name : {"/sppf5/Concat", "/sppf3/Concat"}) {
    const auto& concat = c.node(concat_name);
    REQUIRE(concat.input_size() == 4);
    const auto& conv = c.producer(c.producer(c.producer(concat.input(1)).input(0)).input(0));
    int64_t k = std::string(concat_name) == "/sppf5/Concat" ? 5 : 3;
    CHECK(ints(conv, "kernel_shape") == std::vector<int64_t>{k, k});
    CHECK(ints(conv, "pads") == std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2});
  }
  CHECK_THAT(c.first_warning_of("LatticeSPPFMaxPoolAdvancedPattern"), Contains("Conv(kernel_size=(5, 5))"));
}

TEST_CASE("stride-2 SAME Conv before a MaxPool: an explicit bottom/right Pad and a Conv without pads") {
  auto c = convert_fixture("sample.onnx", only("LatticeStride2AsymPadConvMaxPoolPattern"));
  const auto& conv = c.node("/down/down.0/down.0.0/Conv");
  CHECK(ints(conv, "pads") == std::vector<int64_t>{0, 0, 0, 0});
  CHECK(ints(conv, "strides") == std::vector<int64_t>{2, 2});
  const auto& pad = c.producer(conv.input(0));
  REQUIRE(pad.op_type() == "Pad");
  REQUIRE(pad.input_size() == 2);  // opset 13: pads as an input
  CHECK(c.shape(conv.output(0)) == Shape{1, 16, 16, 16});
  CHECK(c.warnings_of("LatticeStride2AsymPadConvMaxPoolPattern") ==
        std::vector<std::string>{"/down/down.0/down.0.0/Conv: Conv(stride=(2, 2), padding=(1, 1)) replaced with "
                                 "Pad((0, 1, 0, 1)) + Conv(stride=(2, 2), padding=(0, 0)) — output will differ; "
                                 "retraining recommended."});
}

TEST_CASE("a 7x7 stride-2 stem becomes Pad(bottom 1, right 1) + a re-initialised 3x3, with the opset-9 Pad attribute") {
  for (const char* fixture : {"resnet_stem.onnx", "resnet_stem_opset9.onnx"}) {
    INFO(fixture);
    auto c = convert_fixture(fixture, only("LatticeStride2AsymPadConvMaxPoolPattern"));
    const auto& conv = c.node("/stem/stem.0/Conv");
    CHECK(ints(conv, "kernel_shape") == std::vector<int64_t>{3, 3});
    const auto& pad = c.producer(conv.input(0));
    bool opset9 = std::string(fixture).find("opset9") != std::string::npos;
    if (opset9) {
      CHECK(pad.input_size() == 1);
      CHECK(ints(pad, "pads") == std::vector<int64_t>{0, 0, 0, 0, 0, 0, 1, 1});
    } else {
      CHECK(pad.input_size() == 2);
    }
    auto w = c.shape(conv.input(1));
    CHECK(w == Shape{8, 3, 3, 3});
    CHECK_THAT(c.first_warning_of("LatticeStride2AsymPadConvMaxPoolPattern"),
               Contains("Conv(kernel_size=(7, 7), stride=(2, 2), padding=(3, 3)) snapped to Pad((0, 1, 0, 1)) + "
                        "Conv(kernel_size=(3, 3), stride=(2, 2), padding=(0, 0)) — weights reinitialized"));
  }
}

TEST_CASE("re-initialised weights are deterministic: two conversions give the same bytes") {
  std::string bytes = test::fixture("resnet_stem.onnx");
  auto a = convert(test::bytes(bytes), Options{}), b = convert(test::bytes(bytes), Options{});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(*a->output(bytes) == *b->output(bytes));
}

TEST_CASE("stride-2 Conv without a MaxPool after it: stride 1, weights kept, then a 2x2 stride-2 MaxPool") {
  auto c = convert_fixture("mobilenet_blocks.onnx", only("LatticeStride2ConvBnReLUPattern"));
  const auto& dw = c.node("/dw/dw.0/Conv");
  CHECK(ints(dw, "strides") == std::vector<int64_t>{1, 1});
  CHECK(attr::get_int(dw, "group", 1) == 8);
  CHECK(dw.input(1) == original_weight("mobilenet_blocks.onnx", "/dw/dw.0/Conv"));  // the same weight tensor
  // Conv -> BN -> MaxPool(2x2, s2, ceil) -> Clip (ReLU6 is not a Relu step)
  const auto& bn = c.node("/dw/dw.1/BatchNormalization");
  const auto& clip = c.node("/dw/dw.2/Clip");
  const auto& pool = c.producer(clip.input(0));
  CHECK(pool.op_type() == "MaxPool");
  CHECK(pool.input(0) == bn.output(0));
  CHECK(ints(pool, "kernel_shape") == std::vector<int64_t>{2, 2});
  CHECK(attr::get_int(pool, "ceil_mode", 0) == 1);
  // 31 -> 16 -> 8: ceil_mode keeps the sizes of the stride-2 convs on odd inputs.
  CHECK(c.shape(pool.output(0)) == Shape{1, 8, 8, 8});
  CHECK(c.shape(c.model.graph().output(0).name()) == Shape{1, 16, 8, 8});
  REQUIRE(c.warnings_of("LatticeStride2ConvBnReLUPattern").size() >= 2);
  CHECK(c.warnings_of("LatticeStride2ConvBnReLUPattern")[1] ==
        "/dw/dw.0/Conv: Conv(stride=(2, 2)) replaced with Conv(stride=(1, 1)) + MaxPool(kernel_size=2, stride=2) — "
        "output will differ; retraining recommended.");
}

TEST_CASE("under FPQ a stride-2 chain without a Relu warns that its new MaxPool loses the negative values") {
  // mobilenet_blocks: Conv -> BN -> Clip (ReLU6), the Clip zeroing what the pool would lose: no
  // warning. A Conv -> BN chain whose output is the graph's: its negative values matter, and FPQ's
  // MaxPooling2D (unsigned 1.7) drops them; without FPQ there is nothing to say.
  Options fpq = only("LatticeStride2ConvBnReLUPattern");
  fpq.fixed_point = FixedPoint::kFpq;
  const std::string signed_warning = "under FPQ the new MaxPool reads signed values";
  auto has = [&](const Converted& c) {
    auto w = c.warnings_of("LatticeStride2ConvBnReLUPattern");
    return std::any_of(w.begin(), w.end(), [&](const std::string& m) { return m.find(signed_warning) != std::string::npos; });
  };
  auto clipped = convert_fixture("mobilenet_blocks.onnx", fpq);
  CHECK_FALSE(has(clipped));

  auto model = test::conv_bn_model(4, true);
  for (auto& n : *model.mutable_graph()->mutable_node()) {
    if (n.op_type() == "Conv") attr::set_ints(n, "strides", {2, 2});
  }
  const std::string bytes = model.SerializeAsString();
  CHECK(has({test::convert_bytes(bytes, fpq)}));
  CHECK_FALSE(has({test::convert_bytes(bytes, only("LatticeStride2ConvBnReLUPattern"))}));
}

TEST_CASE("under FPQ a 1x1 stride-2 chain without a Relu, reading a Relu, pools its input instead") {
  // x -> Relu -> r -> Conv(1x1, stride 2) -> BN -> y: a residual block's downsample. Under FPQ the
  // MaxPool reads r (unsigned) and the conv the pooled grid; without FPQ, the pool after the chain.
  auto model = test::conv_bn_model(4, true);
  auto& g = *model.mutable_graph();
  g.mutable_input(0)->clear_type();
  test::set_input_shape(*g.mutable_input(0), "x", {1, 4, 5, 5});
  for (auto& n : *g.mutable_node()) {
    if (n.op_type() != "Conv") continue;
    attr::set_ints(n, "strides", {2, 2});
    n.set_input(0, "r");
  }
  test::add_node(g, "Relu", "relu", {"x"}, {"r"});
  // In graph order: the Relu first.
  for (int i = g.node_size() - 1; i > 0; --i) g.mutable_node()->SwapElements(i, i - 1);
  const std::string bytes = model.SerializeAsString();
  Options fpq = only("LatticeStride2ConvBnReLUPattern");
  fpq.fixed_point = FixedPoint::kFpq;
  Converted c{test::convert_bytes(bytes, fpq)};
  const auto& conv = c.node("conv");
  CHECK(ints(conv, "strides") == std::vector<int64_t>{1, 1});
  const auto& pool = c.producer(conv.input(0));
  REQUIRE(pool.op_type() == "MaxPool");
  CHECK(pool.input(0) == "r");
  CHECK(c.producer("y").op_type() == "BatchNormalization");
  // 5 -> 3, as the stride-2 conv gave.
  CHECK(c.shape("y") == Shape{1, 4, 3, 3});
  const auto warnings = c.warnings_of("LatticeStride2ConvBnReLUPattern");
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("conv: Conv(stride=(2, 2)) replaced with MaxPool(kernel_size=2, stride=2) + Conv(stride=(1, 1))") == 0);
  Converted plain{test::convert_bytes(bytes, only("LatticeStride2ConvBnReLUPattern"))};
  CHECK(plain.producer("y").op_type() == "MaxPool");
  CHECK(plain.producer(plain.node("conv").input(0)).op_type() == "Relu");
}

TEST_CASE("MaxPool snapping to 2x2 stride 2, and its warning") {
  auto c = convert_fixture("resnet_stem.onnx", only("LatticeMaxPool2dPattern"));
  const auto& pool = c.node("/stem/stem.3/MaxPool");
  CHECK(ints(pool, "kernel_shape") == std::vector<int64_t>{2, 2});
  CHECK(ints(pool, "strides") == std::vector<int64_t>{2, 2});
  CHECK(ints(pool, "pads") == std::vector<int64_t>{0, 0, 0, 0});
  CHECK(c.first_warning_of("LatticeMaxPool2dPattern") ==
        "/stem/stem.3/MaxPool: MaxPool snapped from kernel_size=(3, 3) stride=(2, 2) padding=(1, 1) to "
        "kernel_size=(2, 2) stride=(2, 2) padding=(0, 0) — output will differ");
}

TEST_CASE("the emitted 2x2 pool has ceil_mode 1 from opset 10, where it exists, and floors before") {
  // x[1, 4, 5, 5] -> MaxPool(3x3, stride 1, pads 1) -> y: snapped to 2x2 stride 2.
  for (int opset : {9, 10}) {
    CAPTURE(opset);
    onnx::ModelProto m = test::tiny_model();
    m.mutable_opset_import(0)->set_version(opset);
    auto& g = *m.mutable_graph();
    g.mutable_node()->Clear();
    g.mutable_input(0)->clear_type();
  test::set_input_shape(*g.mutable_input(0), "x", {1, 4, 5, 5});
    auto& pool = test::add_node(g, "MaxPool", "pool", {"x"}, {"y"});
    attr::set_ints(pool, "kernel_shape", {3, 3});
    attr::set_ints(pool, "pads", {1, 1, 1, 1});
    Converted c{test::convert_bytes(m.SerializeAsString(), only("LatticeMaxPool2dPattern"))};
    const auto& snapped = c.producer("y");
    CHECK(ints(snapped, "kernel_shape") == std::vector<int64_t>{2, 2});
    if (opset < 10) CHECK(attr::find(snapped, "ceil_mode") == nullptr);  // opset 9 has no such attribute
    CHECK(attr::get_int(snapped, "ceil_mode", 0) == (opset >= 10 ? 1 : 0));
    CHECK(c.shape("y") == (opset >= 10 ? Shape{1, 4, 3, 3} : Shape{1, 4, 2, 2}));
  }
}

TEST_CASE("a MaxPool snap that would halve one input of a Concat is not applied, and goes to the audit") {
  auto c = convert_fixture("inception.onnx");
  const auto* m = c.match("LatticeMaxPool2dPattern:/pool/MaxPool");
  REQUIRE(m);
  CHECK_FALSE(m->applied);
  CHECK_THAT(m->reason, Contains("Concat '/Concat' would join inputs of shapes [1, 4, 16, 16], [1, 4, 16, 16], [1, 4, 8, 8]"));
  CHECK(ints(c.node("/pool/MaxPool"), "kernel_shape") == std::vector<int64_t>{3, 3});
  bool audited = std::any_of(c.report.unsupported.begin(), c.report.unsupported.end(),
                             [](const auto& u) { return u.node == "/pool/MaxPool"; });
  CHECK(audited);
}

TEST_CASE("global average pools written as AveragePool or ReduceMean become GlobalAveragePool") {
  auto c = convert_fixture("global_pools.onnx", only("LatticeGlobalAvgPoolPattern"));
  CHECK(c.count("GlobalAveragePool") == 2);
  CHECK(c.count("AveragePool") == 0);
  CHECK(c.count("ReduceMean") == 0);
  CHECK(c.report.warnings.empty());
  REQUIRE(c.match("LatticeGlobalAvgPoolPattern:/ReduceMean"));
  CHECK(c.match("LatticeGlobalAvgPoolPattern:/ReduceMean")->numerically_equivalent);
}

TEST_CASE("Conv snapping: kernel, stride and pads to the nearest accepted, weights re-initialised when they change") {
  auto c = convert_fixture("odd_convs.onnx", only("LatticeConv2dPattern"));
  const auto& c5 = c.node("/c5/Conv");
  CHECK(ints(c5, "kernel_shape") == std::vector<int64_t>{3, 3});
  CHECK(ints(c5, "pads") == std::vector<int64_t>{1, 1, 1, 1});
  CHECK(c.shape(c5.input(1)) == Shape{8, 3, 3, 3});
  CHECK(c.shape(c5.input(2)) == Shape{8});
  const auto& c1s2 = c.node("/c1s2/Conv");  // a 1x1 with stride 2 becomes a 3x3
  CHECK(ints(c1s2, "kernel_shape") == std::vector<int64_t>{3, 3});
  CHECK(ints(c1s2, "strides") == std::vector<int64_t>{2, 2});
  const auto& nopad = c.node("/nopad/Conv");  // same kernel: weights kept, pads fixed
  CHECK(nopad.input(1) == original_weight("odd_convs.onnx", "/nopad/Conv"));
  CHECK(ints(nopad, "pads") == std::vector<int64_t>{1, 1, 1, 1});
  auto warnings = c.warnings_of("LatticeConv2dPattern");
  CHECK(std::find(warnings.begin(), warnings.end(),
                  "/c5/Conv: kernel_size snapped from (5, 5) to (3, 3) — weights reinitialized, output will differ; "
                  "retraining recommended.") != warnings.end());
  CHECK(std::find(warnings.begin(), warnings.end(),
                  "/nopad/Conv: stride/padding snapped from (1, 1)/(0, 0) to (1, 1)/(1, 1) — output will differ; "
                  "retraining recommended.") != warnings.end());
  CHECK(std::find(warnings.begin(), warnings.end(),
                  "/nopad/Conv: graph output 'output' changes shape from [1, 8, 4, 4] to [1, 8, 6, 6]") !=
        warnings.end());
}

TEST_CASE("lattice-advanced keeps 5x5 and 7x7 stride-1 convolutions") {
  auto c = convert_fixture("odd_convs.onnx", only("LatticeConv2dPattern", "lattice-advanced"));
  CHECK(ints(c.node("/c5/Conv"), "kernel_shape") == std::vector<int64_t>{5, 5});
  CHECK(ints(c.node("/c7/Conv"), "kernel_shape") == std::vector<int64_t>{7, 7});
  CHECK_FALSE(c.match("LatticeConv2dPattern:/c5/Conv"));
}

TEST_CASE("the audit names dilation and the activations the accelerator lacks") {
  auto odd = convert_fixture("odd_convs.onnx");
  auto dil = std::find_if(odd.report.unsupported.begin(), odd.report.unsupported.end(),
                          [](const auto& u) { return u.node == "/dil/Conv"; });
  REQUIRE(dil != odd.report.unsupported.end());
  CHECK(dil->reason == "dilation (2, 2) is not supported");
  auto sample = convert_fixture("sample.onnx");
  REQUIRE(sample.report.unsupported.size() == 2);
  CHECK(sample.report.unsupported[0].reason == "part of a SiLU activation (x*Sigmoid(x)), which the accelerator does not run");
}

TEST_CASE("converting any fixture's output again matches nothing, for both Lattice targets") {
  for (const char* target : {"lattice", "lattice-advanced"}) {
    for (const auto& name : test::fixture_names()) {
      INFO(target << " " << name);
      Options options;
      options.target = target;
      std::string bytes = test::fixture(name);
      auto first = convert(test::bytes(bytes), options);
      REQUIRE(first.ok());
      std::string out(*first->output(bytes));
      auto second = convert(test::bytes(out), options);
      REQUIRE(second.ok());
      for (const auto& m : second->report.matches) CHECK_FALSE(m.applied);
      CHECK_FALSE(second->converted.has_value());
    }
  }
}

TEST_CASE("the patterns catalogue lists every pattern in registry order with its targets") {
  auto json = catalogue_json().dump();
  for (const char* name : {"LatticeSPPFMaxPoolPattern", "LatticeSPPFMaxPoolAdvancedPattern",
                           "LatticeStride2AsymPadConvMaxPoolPattern", "LatticeStride2ConvBnReLUPattern",
                           "LatticeMaxPool2dPattern", "LatticeGlobalAvgPoolPattern", "LatticeConv2dPattern",
                           "ConvBatchNormFoldPattern", "ConvScaleShiftFoldPattern"}) {
    CHECK_THAT(json, Contains(name));
  }
  CHECK(json.find("LatticeSPPFMaxPoolPattern") < json.find("LatticeConv2dPattern"));
}

TEST_CASE("the hardware table gives every row a source and drives the audit") {
  const std::set<std::string_view> sources{"seed (Embedl Deploy's Lattice conversions)",
                                           "Embedl Deploy docs (Lattice backend: Conv2d, MaxPool2d, AdaptiveAvgPool2d, LeakyReLU)",
                                           "Lattice sensAI guide FPGA-UG-02228", "assumed"};
  for (const auto& row : hardware_operators()) {
    INFO(row.op);
    CHECK(sources.contains(row.source));
  }
  auto json = hardware_json().dump(false);
  CHECK_THAT(json, Contains("{\"op\":\"Mul\",\"runs\":false,\"condition\":\"\",\"source\":\"Lattice sensAI guide FPGA-UG-02228\""));
  CHECK_THAT(hardware_text(), Contains("Relu                 runs\n"));
  // A row that runs is never in the audit; a row that does not is, in its words.
  auto sample = convert_fixture("odd_convs.onnx");
  for (const auto& u : sample.report.unsupported) CHECK(u.op_type != "Relu");
}
