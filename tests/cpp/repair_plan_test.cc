// The repair's plan (core/repair/plan.h): which layers of a converted model are refitted and what
// each reproduces of the original, which are left and why, and the activations' bytes the memory
// estimate reads. That the repair then fits what the plan says is run by tests/node/repair*.test.mjs.
#include <catch2/catch.hpp>

#include "core/onnx/model_io.h"
#include "core/repair/plan.h"
#include "core/repair/session.h"
#include "support.h"

using namespace lattice;
using namespace lattice::repair;
using Catch::Matchers::Contains;
using Matches = std::optional<std::vector<ConversionMatch>>;

namespace {

void ints(onnx::NodeProto& node, const std::string& name, std::vector<int64_t> values) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (auto v : values) a->add_ints(v);
}

onnx::ModelProto empty_model(const std::string& name, std::vector<int64_t> input) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto& g = *m.mutable_graph();
  g.set_name(name);
  test::set_input_shape(*g.add_input(), "x", std::move(input));
  return m;
}

// A 3×3 Conv `c` reading `input` with 8 output channels, pads 1, at `stride`.
onnx::NodeProto& conv(onnx::GraphProto& g, const std::string& input, const std::string& output, int64_t stride, int64_t in = 3) {
  *g.add_initializer() = test::float_tensor("c.w", {8, in, 3, 3}, std::vector<float>(static_cast<size_t>(8 * in * 9), 0.5f));
  auto& node = test::add_node(g, "Conv", "c", {input, "c.w"}, {output});
  ints(node, "kernel_shape", {3, 3});
  ints(node, "pads", {1, 1, 1, 1});
  ints(node, "strides", {stride, stride});
  return node;
}

void batch_norm(onnx::GraphProto& g, const std::string& input, const std::string& output) {
  for (const char* p : {"bn.scale", "bn.bias", "bn.mean", "bn.var"}) *g.add_initializer() = test::float_tensor(p, {8}, std::vector<float>(8, 1));
  test::add_node(g, "BatchNormalization", "bn", {input, "bn.scale", "bn.bias", "bn.mean", "bn.var"}, {output});
}

void max_pool(onnx::GraphProto& g, const std::string& name, const std::string& input, const std::string& output,
              std::vector<int64_t> kernel, std::vector<int64_t> strides) {
  auto& node = test::add_node(g, "MaxPool", name, {input}, {output});
  ints(node, "kernel_shape", std::move(kernel));
  ints(node, "strides", std::move(strides));
}

// The original: x[1, 3, 16, 16] -> c (stride 2) -> c_out [1, 8, 8, 8] -> (bn -> b_out) -> r (Relu) -> y.
// Its stride-2 rewrite (`rewritten`): c at stride 1 writes a grid twice as fine, its Relu a new
// tensor, and the pool the original's.
onnx::ModelProto stride2_model(bool rewritten, bool with_bn) {
  auto m = empty_model(rewritten ? "converted" : "original", {1, 3, 16, 16});
  auto& g = *m.mutable_graph();
  conv(g, "x", "c_out", rewritten ? 1 : 2);
  if (with_bn) batch_norm(g, "c_out", "b_out");
  test::add_node(g, "Relu", "r", {with_bn ? "b_out" : "c_out"}, {rewritten ? "y.stride1" : "y"});
  if (rewritten) max_pool(g, "c.pool", "y.stride1", "y", {2, 2}, {2, 2});
  g.add_output()->set_name("y");
  return m;
}
onnx::ModelProto stride2_original(bool with_bn) { return stride2_model(false, with_bn); }
onnx::ModelProto stride2_converted(bool with_bn) { return stride2_model(true, with_bn); }

ConversionMatch stride2_match() {
  return {"LatticeStride2ConvBnReLUPattern:c", true, false, {"c", "r", "c.pool"}};
}

RepairPlan plan_of(const onnx::ModelProto& original, const onnx::ModelProto& converted, const Matches& matches) {
  const auto theirs_labels = GraphView::original_labels(original.graph());
  const auto mine_labels = GraphView::original_labels(converted.graph());
  const ModelIndex theirs(original, theirs_labels), mine(converted, mine_labels);
  return plan_repair(theirs, mine, matches);
}

// x[1, 3, 16, 16] -> c (stride 1) -> c_out [1, 8, 16, 16] -> r (Relu) -> y: the same in both
// models but for what a conversion did to c.
onnx::ModelProto same_grid_model() {
  auto m = empty_model("same_grid", {1, 3, 16, 16});
  auto& g = *m.mutable_graph();
  conv(g, "x", "c_out", 1);
  test::add_node(g, "Relu", "r", {"c_out"}, {"y"});
  g.add_output()->set_name("y");
  return m;
}

}  // namespace

TEST_CASE("a stride-2 layer the rewrite put before a MaxPool reproduces the original's tensor through the pool", "[repair][plan]") {
  auto plan = plan_of(stride2_original(false), stride2_converted(false), Matches{{stride2_match()}});
  REQUIRE(plan.left.empty());
  REQUIRE(plan.layers.size() == 1);
  const auto& layer = plan.layers[0];
  REQUIRE(layer.entry.node == "c");
  REQUIRE(layer.entry.rewritten);
  REQUIRE(layer.entry.match_id == "LatticeStride2ConvBnReLUPattern:c");
  REQUIRE(layer.target == "y");
  REQUIRE(layer.through == "Relu → MaxPool");
  REQUIRE_FALSE(layer.pooled);
  REQUIRE(layer.unpooled);
  REQUIRE(layer.unpooled->kernel == std::vector<int64_t>{2, 2});
  REQUIRE(layer.unpooled->strides == std::vector<int64_t>{2, 2});
  REQUIRE(layer.unpooled->fine == Shape{1, 8, 16, 16});
  REQUIRE(layer.unpooled->tensor == "c_out");
  REQUIRE(layer.rectified);
  REQUIRE_FALSE(layer.through_batch_norm);
  REQUIRE(layer.weight_shape == Shape{8, 3, 3, 3});
  REQUIRE_FALSE(layer.has_bias);
  // As the JavaScript that drives the repair reads it.
  REQUIRE(plan_json(plan).dump(false) ==
          R"({"layers":[{"node":"c","op":"Conv","input":"x","rewritten":true,"match_id":"LatticeStride2ConvBnReLUPattern:c",)"
          R"("through":"Relu → MaxPool","unpooled":{"kernel":[2,2],"strides":[2,2],"fine":[1,8,16,16],"tensor":"c_out"},)"
          R"("rectified":true,"target":"y","attributes":{"kernel_shape":[3,3],"pads":[1,1,1,1],"strides":[1,1]},)"
          R"("weightShape":[8,3,3,3],"hasBias":false}],"left":[],)"
          R"("bytesPerSample":{"original":2048,"converted":16384,"layers":[{"input":3072,"target":2048,"originalTarget":2048}]}})");
}

TEST_CASE("a pool without strides downsamples by one; a pool another match made is not the layer's", "[repair][plan]") {
  auto converted = stride2_converted(false);
  auto& pool = *converted.mutable_graph()->mutable_node(2);
  pool.clear_attribute();
  ints(pool, "kernel_shape", {9, 9});  // [1, 8, 8, 8] at stride 1
  auto plan = plan_of(stride2_original(false), converted, Matches{{stride2_match()}});
  REQUIRE(plan.layers.size() == 1);
  REQUIRE(plan.layers[0].unpooled->kernel == std::vector<int64_t>{9, 9});
  REQUIRE(plan.layers[0].unpooled->strides == std::vector<int64_t>{1, 1});

  auto other = plan_of(stride2_original(false), stride2_converted(false),
                       Matches{{{"LatticeMaxPool2dPattern:p", true, false, {"c.pool"}}, stride2_match()}});
  REQUIRE(other.layers.empty());
  REQUIRE(other.left.size() == 1);
  REQUIRE(other.left[0].entry.node == "c");
  REQUIRE(other.left[0].reason ==
          "the original computes no tensor of the same name and shape at its output, nor does the chain after it");
  // Nor is a pool of no match, nor one after a layer no match made.
  REQUIRE(plan_of(stride2_original(false), stride2_converted(false), Matches{{{"m:c", true, false, {"c", "r"}}}}).layers.empty());
  REQUIRE(plan_of(stride2_original(false), stride2_converted(false), Matches{{{"m:p", true, false, {"r", "c.pool"}}}}).layers.empty());
}

TEST_CASE("through a pool, only from a layer whose output has a known shape", "[repair][plan]") {
  // A dynamic batch: the pool's output matches the original's past the samples' axis, but the
  // pool's windows are laid on the layer's output only at known sizes.
  auto batch = [](onnx::ModelProto m) {
    m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("N");
    return m;
  };
  auto plan = plan_of(batch(stride2_original(false)), batch(stride2_converted(false)), Matches{{stride2_match()}});
  REQUIRE(plan.layers.empty());
  REQUIRE(plan.left.size() == 1);
  // Given the samples' sizes, it is.
  auto original = batch(stride2_original(false)), converted = batch(stride2_converted(false));
  const auto labels = GraphView::original_labels(converted.graph());
  auto sized = plan_repair(original, converted, labels, Matches{{stride2_match()}}, {{"x", {1, 3, 16, 16}}});
  REQUIRE(sized.layers.size() == 1);
  REQUIRE(sized.layers[0].unpooled->fine == Shape{1, 8, 16, 16});
}

TEST_CASE("a stride-2 layer with no activation before its pool is fitted through the pool alone, not rectified", "[repair][plan]") {
  auto original = stride2_original(false), converted = stride2_converted(false);
  original.mutable_graph()->mutable_node(1)->set_op_type("Sigmoid");
  auto& g = *converted.mutable_graph();
  g.mutable_node(1)->set_op_type("Sigmoid");
  g.mutable_node(1)->set_input(0, "pooled");
  g.mutable_node(1)->set_output(0, "y");
  g.mutable_node(2)->set_input(0, "c_out");
  g.mutable_node(2)->set_output(0, "pooled");
  g.mutable_node()->SwapElements(1, 2);
  // x -> c -> c_out -> c.pool -> pooled -> Sigmoid -> y; the original's c_out is the pool's.
  original.mutable_graph()->mutable_node(0)->set_output(0, "pooled");
  original.mutable_graph()->mutable_node(1)->set_input(0, "pooled");
  auto plan = plan_of(original, converted, Matches{{stride2_match()}});
  REQUIRE(plan.layers.size() == 1);
  REQUIRE(plan.layers[0].target == "pooled");
  REQUIRE(plan.layers[0].through == "MaxPool");
  REQUIRE(plan.layers[0].unpooled->tensor == "c_out");
  REQUIRE_FALSE(plan.layers[0].rectified);
}

TEST_CASE("a layer the rewrite kept before its BatchNormalization is fitted through it", "[repair][plan]") {
  auto original = stride2_original(true);
  auto plan = plan_of(original, stride2_converted(true), Matches{{stride2_match()}});
  REQUIRE(plan.left.empty());
  REQUIRE(plan.layers.size() == 1);
  const auto& layer = plan.layers[0];
  REQUIRE(layer.target == "y");
  REQUIRE(layer.through == "BatchNormalization → Relu → MaxPool");
  REQUIRE(layer.unpooled->tensor == "b_out");
  REQUIRE(layer.through_batch_norm);
  REQUIRE(layer.rectified);

  // The original computes the BatchNormalization's output on the layer's grid: fitted to it.
  auto same = empty_model("same", {1, 3, 16, 16});
  auto& g = *same.mutable_graph();
  conv(g, "x", "c_out", 1);
  batch_norm(g, "c_out", "b_out");
  test::add_node(g, "Relu", "r", {"b_out"}, {"y"});
  g.add_output()->set_name("y");
  auto direct = plan_of(same, same, Matches{{{"m:c", true, false, {"c"}}}});
  REQUIRE(direct.layers.size() == 1);
  REQUIRE(direct.layers[0].target == "c_out");
  REQUIRE(direct.layers[0].through.empty());
  REQUIRE_FALSE(direct.layers[0].through_batch_norm);
  REQUIRE(direct.layers[0].rectified);
}

TEST_CASE("a layer whose new BatchNormalization writes the original's tensor is fitted through it, before its Relu", "[repair][plan]") {
  // The original: x -> c -> pre -> Relu -> y. Converted (FPQ moves a rewritten layer's bias into a
  // new BatchNormalization): x -> c -> c_out -> bn -> pre -> Relu -> y, c's own output a new tensor.
  auto original = empty_model("original", {1, 3, 16, 16});
  conv(*original.mutable_graph(), "x", "pre", 1);
  test::add_node(*original.mutable_graph(), "Relu", "r", {"pre"}, {"y"});
  original.mutable_graph()->add_output()->set_name("y");
  auto converted = empty_model("converted", {1, 3, 16, 16});
  auto& g = *converted.mutable_graph();
  conv(g, "x", "c_out", 1);
  batch_norm(g, "c_out", "pre");
  test::add_node(g, "Relu", "r", {"pre"}, {"y"});
  g.add_output()->set_name("y");
  auto plan = plan_of(original, converted, Matches{{{"m:c", true, false, {"c", "bn"}}}});
  REQUIRE(plan.left.empty());
  REQUIRE(plan.layers.size() == 1);
  // The values before the Relu, as for a layer whose own output is the original's.
  CHECK(plan.layers[0].target == "pre");
  CHECK(plan.layers[0].through == "BatchNormalization");
  CHECK(plan.layers[0].through_batch_norm);
  CHECK(plan.layers[0].rectified);
  // Where the original computes the layer's own output, that stays the target.
  auto own = plan_of(converted, converted, Matches{{{"m:c", true, false, {"c"}}}});
  REQUIRE(own.layers.size() == 1);
  CHECK(own.layers[0].target == "c_out");
  CHECK_FALSE(own.layers[0].through_batch_norm);
  CHECK(own.layers[0].rectified);
}

TEST_CASE("a layer read by a Relu alone is rectified; a Relu sharing its input with another reader is not", "[repair][plan]") {
  auto m = same_grid_model();
  auto plan = plan_of(m, m, std::nullopt);
  REQUIRE(plan.layers.size() == 1);
  REQUIRE(plan.layers[0].target == "c_out");
  REQUIRE(plan.layers[0].through.empty());
  REQUIRE(plan.layers[0].rectified);

  auto shared = same_grid_model();
  test::add_node(*shared.mutable_graph(), "Identity", "copy", {"c_out"}, {"z"});
  REQUIRE_FALSE(plan_of(shared, shared, std::nullopt).layers[0].rectified);
  // One node reading the tensor twice is two reads.
  auto relu_twice = same_grid_model();
  relu_twice.mutable_graph()->mutable_node(1)->add_input("c_out");
  REQUIRE_FALSE(plan_of(relu_twice, relu_twice, std::nullopt).layers[0].rectified);
}

TEST_CASE("a rewritten layer whose own tensor is the original's keeps it as the target", "[repair][plan]") {
  // The Relu after it writes the original's tensor too: the layer's own comes first.
  auto m = same_grid_model();
  auto plan = plan_of(m, m, Matches{{{"m:c", true, false, {"c", "r"}}}});
  REQUIRE(plan.layers[0].target == "c_out");
  // A layer a rewrite created, its output a new tensor: the Relu's output is the original's.
  auto converted = same_grid_model();
  converted.mutable_graph()->mutable_node(0)->set_output(0, "c_new");
  converted.mutable_graph()->mutable_node(1)->set_input(0, "c_new");
  auto made = plan_of(m, converted, Matches{{{"m:c", true, false, {"c", "r"}}}});
  REQUIRE(made.layers.size() == 1);
  REQUIRE(made.layers[0].target == "y");
  REQUIRE(made.layers[0].through == "Relu");
  REQUIRE_FALSE(made.layers[0].unpooled);
  REQUIRE(made.layers[0].rectified);
}

TEST_CASE("past a pool the conversion made coarser, the target is the original's tensor at whole multiples of the grid", "[repair][plan]") {
  // The original: x -> p (MaxPool 3×3, stride 1, pads 1) [1, 3, 16, 16] -> c (stride 1) -> c_out.
  // Converted: p snapped to 2×1 stride (2, 1), so c_out is [1, 8, 8, 16].
  auto original = empty_model("original", {1, 3, 16, 16});
  auto& g = *original.mutable_graph();
  auto& p = test::add_node(g, "MaxPool", "p", {"x"}, {"p_out"});
  ints(p, "kernel_shape", {3, 3});
  ints(p, "pads", {1, 1, 1, 1});
  conv(g, "p_out", "c_out", 1);
  g.add_output()->set_name("c_out");
  auto converted = empty_model("converted", {1, 3, 16, 16});
  auto& h = *converted.mutable_graph();
  max_pool(h, "p", "x", "p_out", {2, 1}, {2, 1});
  conv(h, "p_out", "c_out", 1);
  h.add_output()->set_name("c_out");

  auto plan = plan_of(original, converted, Matches{{{"LatticeMaxPool2dPattern:p", true, false, {"p"}}}});
  REQUIRE(plan.left.empty());
  REQUIRE(plan.layers.size() == 1);
  REQUIRE(plan.layers[0].target == "c_out");
  REQUIRE(plan.layers[0].pooled == std::array<int64_t, 2>{2, 1});
  REQUIRE_FALSE(plan.layers[0].entry.rewritten);  // no match made c: as the original's
  REQUIRE_FALSE(plan.layers[0].entry.match_id);
  REQUIRE_THAT(plan_json(plan).dump(false), Contains(R"("pooled":[2,1],"target":"c_out")"));
  // The bytes of its target in the converted model and in the original, per sample.
  REQUIRE(plan.layers[0].target_bytes == 4 * 8 * 8 * 16);
  REQUIRE(plan.layers[0].original_target_bytes == 4 * 8 * 16 * 16);
  REQUIRE(plan.layers[0].input_bytes == 4 * 3 * 8 * 16);

  // Other channels, or a grid that is no whole multiple, or finer: nothing to fit to.
  for (auto [kernel, strides] : {std::pair<std::vector<int64_t>, std::vector<int64_t>>{{3, 3}, {3, 3}}, {{1, 1}, {1, 1}}}) {
    auto odd = converted;
    auto& pool = *odd.mutable_graph()->mutable_node(0);
    pool.clear_attribute();
    ints(pool, "kernel_shape", kernel);
    ints(pool, "strides", strides);
    auto left = plan_of(original, odd, std::nullopt);
    INFO(kernel[0]);
    if (kernel[0] == 1) {
      REQUIRE(left.layers.size() == 1);  // the same grid
      REQUIRE_FALSE(left.layers[0].pooled);
    } else {
      REQUIRE(left.layers.empty());  // 16 / 5 is no whole multiple
    }
  }
  // Other channels on the coarser grid.
  auto narrower = converted;
  auto& weights = *narrower.mutable_graph()->mutable_initializer(0);
  weights.set_dims(0, 4);
  weights.mutable_float_data()->Truncate(4 * 3 * 9);
  REQUIRE(plan_of(original, narrower, std::nullopt).layers.empty());
  auto finer = plan_of(converted, original, std::nullopt);  // the original's grid is half the layer's
  REQUIRE(finer.layers.empty());
}

TEST_CASE("layers with nothing of the original's to fit them to are left, with the reason", "[repair][plan]") {
  auto original = same_grid_model();
  // The weights a graph input the caller may feed: no constant.
  auto fed = same_grid_model();
  test::set_input_shape(*fed.mutable_graph()->add_input(), "c.w", {8, 3, 3, 3});
  // No tensor of the original's name.
  auto renamed = same_grid_model();
  renamed.mutable_graph()->mutable_node(0)->set_output(0, "mine");
  renamed.mutable_graph()->mutable_node(1)->set_input(0, "mine");
  renamed.mutable_graph()->mutable_node(1)->set_output(0, "mine2");
  renamed.mutable_graph()->mutable_output(0)->set_name("mine2");
  // The same name, another number of channels.
  auto wider = empty_model("wider", {1, 3, 16, 16});
  auto& g = *wider.mutable_graph();
  *g.add_initializer() = test::float_tensor("c.w", {4, 3, 1, 1}, std::vector<float>(12, 1));
  test::add_node(g, "Conv", "c", {"x", "c.w"}, {"c_out"});
  g.add_output()->set_name("c_out");

  for (const auto* converted : {&fed, &renamed, &wider}) {
    auto plan = plan_of(original, *converted, Matches{{{"m:c", true, false, {"c"}}}});
    REQUIRE(plan.layers.empty());
    REQUIRE(plan.left.size() == 1);
    REQUIRE(plan.left[0].entry.node == "c");
    REQUIRE(plan.left[0].entry.op == "Conv");
    REQUIRE(plan.left[0].entry.input == "x");
    REQUIRE(plan.left[0].entry.match_id == "m:c");
    const bool weights = converted == &fed;
    REQUIRE(plan.left[0].reason == (weights ? "its weights are not a constant of known shape"
                                            : "the original computes no tensor of the same name and shape at its output, nor does the chain after it"));
    REQUIRE_THAT(plan_json(plan).dump(false),
                 Contains(R"("left":[{"node":"c","op":"Conv","input":"x","rewritten":true,"match_id":"m:c","reason":)"));
  }
}

TEST_CASE("without the conversion's report every layer counts as rewritten; a numerically equivalent match does not", "[repair][plan]") {
  auto m = same_grid_model();
  // A Gemm after it: every Conv and Gemm is a layer.
  auto& g = *m.mutable_graph();
  *g.add_initializer() = test::int64_tensor("shape", {1, -1});
  test::add_node(g, "Reshape", "flat", {"y", "shape"}, {"f"});
  *g.add_initializer() = test::float_tensor("fc.w", {2048, 10}, std::vector<float>(20480, 0.1f));
  *g.add_initializer() = test::float_tensor("fc.b", {10}, std::vector<float>(10, 0));
  test::add_node(g, "Gemm", "fc", {"f", "fc.w", "fc.b"}, {"logits"});
  g.mutable_output(0)->set_name("logits");

  auto none = plan_of(m, m, std::nullopt);
  REQUIRE(none.layers.size() == 2);
  REQUIRE(none.layers[0].entry.rewritten);
  REQUIRE(none.layers[1].entry.rewritten);
  REQUIRE(none.layers[1].entry.op == "Gemm");
  REQUIRE(none.layers[1].has_bias);
  REQUIRE(none.layers[1].weight_shape == Shape{2048, 10});

  // The first applied match naming a node is its: here the fold's (exact) before the rewrite's.
  auto report = plan_of(m, m, Matches{{{"Skipped:c", false, false, {"c"}}, {"ConvBnFold:c", true, true, {"c"}},
                                       {"Rewrite:c", true, false, {"c"}}, {"Rewrite:fc", true, false, {"fc"}}}});
  REQUIRE_FALSE(report.layers[0].entry.rewritten);
  REQUIRE(report.layers[0].entry.match_id == "ConvBnFold:c");
  REQUIRE(report.layers[1].entry.rewritten);
  REQUIRE(report.layers[1].entry.match_id == "Rewrite:fc");
  // A report whose matches name neither: both as the original's.
  auto empty = plan_of(m, m, Matches{std::vector<ConversionMatch>{}});
  REQUIRE_FALSE(empty.layers[0].entry.rewritten);
  REQUIRE_FALSE(empty.layers[1].entry.rewritten);
  REQUIRE_THAT(plan_json(empty).dump(false), Contains(R"("hasBias":true)"));
}

TEST_CASE("the activations in flight at once: the most bytes per sample that later nodes still read", "[repair][plan]") {
  // x -> c -> c_out -> r -> y -> r2 -> y2, then add(y2, c_out) -> z, each [8, 16, 16] a sample
  // (8192 bytes): at r2, c_out, y and y2 are in flight; the graph's output is read by nothing, the
  // input counts with the caller's.
  constexpr double kTensor = 4 * 8 * 16 * 16;
  auto m = same_grid_model();
  auto& g = *m.mutable_graph();
  test::add_node(g, "Relu", "r2", {"y"}, {"y2"});
  test::add_node(g, "Add", "add", {"y2", "c_out"}, {"z"});
  g.mutable_output(0)->set_name("z");
  const auto labels = GraphView::original_labels(m.graph());
  REQUIRE(live_bytes(ModelIndex(m, labels)) == 3 * kTensor);
  // A tensor is let go after its last reader: a chain holds a node's input and output.
  auto chain = same_grid_model();
  test::add_node(*chain.mutable_graph(), "Relu", "r2", {"y"}, {"y2"});
  test::add_node(*chain.mutable_graph(), "Relu", "r3", {"y2"}, {"z"});
  chain.mutable_graph()->mutable_output(0)->set_name("z");
  const auto chain_labels = GraphView::original_labels(chain.graph());
  REQUIRE(live_bytes(ModelIndex(chain, chain_labels)) == 2 * kTensor);
  // The samples' axis does not count.
  auto two = chain;
  two.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(2);
  const auto two_labels = GraphView::original_labels(two.graph());
  const ModelIndex two_index(two, two_labels);
  REQUIRE(live_bytes(two_index) == 2 * kTensor);
  REQUIRE(plan_repair(two_index, two_index, std::nullopt).layers[0].target_bytes == kTensor);
  // An unknown dimension counts as 1, the samples' axis not at all.
  auto dynamic = chain;
  auto* dims = dynamic.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->mutable_dim(0)->set_dim_param("N");
  dims->mutable_dim(3)->set_dim_param("W");
  const auto dynamic_labels = GraphView::original_labels(dynamic.graph());
  const ModelIndex at_symbols(dynamic, dynamic_labels);
  REQUIRE(live_bytes(at_symbols) == 2 * 4 * 8 * 16);
  auto plan = plan_repair(at_symbols, at_symbols, std::nullopt);
  REQUIRE(plan.layers[0].input_bytes == 4 * 3 * 16);
  REQUIRE(plan.layers[0].target_bytes == 4 * 8 * 16);
  REQUIRE(plan.converted_live_bytes == 2 * 4 * 8 * 16);
  REQUIRE(plan.original_live_bytes == 2 * 4 * 8 * 16);
}

TEST_CASE("a dynamic model is planned at the samples' sizes, and held as it was", "[repair][plan]") {
  // The original with a dynamic height and width; its conversion pinned to 16×16.
  auto original = same_grid_model();
  auto* dims = original.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->mutable_dim(0)->set_dim_param("N");
  dims->mutable_dim(2)->set_dim_param("H");
  dims->mutable_dim(3)->set_dim_param("W");
  auto converted = same_grid_model();
  const std::string theirs = original.SerializeAsString(), mine = converted.SerializeAsString();
  auto session = RepairSession::open(test::bytes(theirs), test::bytes(mine));
  REQUIRE(session.ok());

  auto pinned = (*session)->plan(std::nullopt, {{"x", {1, 3, 16, 16}}});
  REQUIRE(pinned.ok());
  REQUIRE(pinned->layers.size() == 1);
  REQUIRE(pinned->layers[0].target == "c_out");
  REQUIRE(pinned->layers[0].original_target_bytes == 4 * 8 * 16 * 16);
  REQUIRE(pinned->original_live_bytes == 4 * 8 * 16 * 16);
  // The converted model held as it was.
  auto held = (*session)->converted_bytes();
  REQUIRE(held.ok());
  REQUIRE(*held == mine);
  auto again = (*session)->plan(std::nullopt, {});
  REQUIRE(again.ok());
  // Unpinned, the original's [N, 8, H, W] is not the converted [1, 8, 16, 16]: left, with the reason.
  REQUIRE(again->layers.empty());
  REQUIRE(again->left.size() == 1);
  // Sizes the model cannot take: planned on its symbols.
  auto refused = (*session)->plan(std::nullopt, {{"x", {1, 3, 16}}});
  REQUIRE(refused.ok());
  REQUIRE(refused->layers.empty());
  REQUIRE(refused->original_live_bytes == 4 * 8);

  // Both models as they were, bit for bit, after a plan that pinned them.
  auto dynamic_converted = converted;
  dynamic_converted.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("N");
  const std::string converted_before = dynamic_converted.SerializeAsString();
  const auto labels = GraphView::original_labels(dynamic_converted.graph());
  auto planned = plan_repair(original, dynamic_converted, labels, std::nullopt, {{"x", {1, 3, 16, 16}}, {"other", {1}}});
  REQUIRE(planned.layers.size() == 1);
  REQUIRE(original.SerializeAsString() == theirs);
  REQUIRE(dynamic_converted.SerializeAsString() == converted_before);
}

TEST_CASE("symbols compare by name across the two models", "[repair][plan]") {
  auto dynamic = [](const char* height) {
    auto m = same_grid_model();
    auto* dims = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
    dims->mutable_dim(2)->set_dim_param(height);
    return m;
  };
  // The converted model's symbol table starts with another symbol: its ids differ, its names not.
  auto converted = dynamic("H");
  auto* extra = converted.mutable_graph()->add_input();
  extra->set_name("other");
  extra->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  extra->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param("K");
  auto& inputs = *converted.mutable_graph()->mutable_input();
  inputs.SwapElements(0, 1);
  REQUIRE(plan_of(dynamic("H"), converted, std::nullopt).layers.size() == 1);
  // The samples' axis is not compared: a dynamic batch matches a fixed one.
  auto batch = same_grid_model();
  batch.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("N");
  REQUIRE(plan_of(batch, same_grid_model(), std::nullopt).layers.size() == 1);
  REQUIRE(plan_of(dynamic("H"), dynamic("W"), std::nullopt).layers.empty());
  // An unknown dimension equals nothing, itself included.
  REQUIRE(plan_of(dynamic(""), dynamic(""), std::nullopt).layers.empty());
}
