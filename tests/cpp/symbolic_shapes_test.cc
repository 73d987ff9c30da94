// The fixture matrix: every committed fixture with a symbolic batch, with symbolic height and
// width, and with no value_info at all gives its static twin's applied matches wherever the
// patterns' needed dimensions are known, otherwise a refusal naming the dimension; pinning the
// input shapes (--input-shape) makes it its static twin again.
#include <catch2/catch.hpp>

#include <set>

#include "converted.h"
#include "core/graph/graph_view.h"
#include "core/graph/shapes.h"

using namespace lattice;
using Catch::Matchers::Contains;

namespace {

bool is_initializer(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& t : g.initializer()) {
    if (t.name() == name) return true;
  }
  return false;
}

enum class Variant { kDynamicBatch, kDynamicSize, kNoValueInfo };

// The twin of a model: graph inputs' batch (or height and width) made symbolic, or every
// declared intermediate and output shape dropped.
onnx::ModelProto twin(onnx::ModelProto m, Variant variant) {
  auto& g = *m.mutable_graph();
  if (variant == Variant::kNoValueInfo) {
    g.clear_value_info();
    for (auto& o : *g.mutable_output()) o.mutable_type()->mutable_tensor_type()->clear_shape();
    return m;
  }
  for (auto& in : *g.mutable_input()) {
    if (is_initializer(g, in.name()) || !in.type().tensor_type().has_shape()) continue;
    auto* shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
    if (variant == Variant::kDynamicBatch) {
      shape->mutable_dim(0)->set_dim_param("N");
    } else if (shape->dim_size() == 4) {
      shape->mutable_dim(2)->set_dim_param("H");
      shape->mutable_dim(3)->set_dim_param("W");
    }
  }
  return m;
}

// The static model's graph input shapes, as pins (a symbolic or negative dimension pinned to 1).
std::vector<std::pair<std::string, std::vector<int64_t>>> pins_of(const onnx::ModelProto& m) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> pins;
  for (const auto& in : m.graph().input()) {
    if (is_initializer(m.graph(), in.name()) || !in.type().tensor_type().has_shape()) continue;
    std::vector<int64_t> dims;
    for (const auto& d : in.type().tensor_type().shape().dim()) {
      dims.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : 1);  // dim_value -1 is dynamic
    }
    pins.emplace_back(in.name(), dims);
  }
  return pins;
}

std::set<std::string> applied(const Report& r) {
  std::set<std::string> ids;
  for (const auto& m : r.matches) {
    if (m.applied) ids.insert(m.id);
  }
  return ids;
}

Report run(const onnx::ModelProto& m, Options options) {
  auto result = convert(test::bytes(m.SerializeAsString()), options);
  REQUIRE(result.ok());
  return std::move(result->report);
}

}  // namespace

TEST_CASE("symbolic, pinned and undeclared shapes give the static twin's matches or a refusal naming the dimension") {
  for (const char* target : {"lattice", "lattice-advanced"}) {
    for (const auto& name : test::fixture_names()) {
      auto parsed = parse_model(test::bytes(test::fixture(name)));
      REQUIRE(parsed.ok());
      const onnx::ModelProto& model = *parsed;
      Options options;
      options.target = target;
      auto expected = applied(run(model, options));
      for (auto variant : {Variant::kDynamicBatch, Variant::kDynamicSize, Variant::kNoValueInfo}) {
        INFO(name << " " << target << " variant " << static_cast<int>(variant));
        auto dynamic = twin(model, variant);
        auto report = run(dynamic, options);
        auto got = applied(report);
        for (const auto& id : got) CHECK(expected.contains(id));
        for (const auto& id : expected) {
          if (got.contains(id)) continue;
          auto refused = std::find_if(report.matches.begin(), report.matches.end(), [&](const MatchRecord& m) { return m.id == id; });
          INFO(id);
          REQUIRE(refused != report.matches.end());
          bool names_dimension = refused->reason.find("which is unknown") != std::string::npos ||
                                 refused->reason.find("would not be valid") != std::string::npos;
          CHECK(names_dimension);
        }
        Options pinned = options;
        pinned.input_shapes = pins_of(model);
        if (variant != Variant::kNoValueInfo) CHECK(applied(run(dynamic, pinned)) == expected);
      }
    }
  }
}

TEST_CASE("equal symbols compare equal, and a size-keeping Conv keeps the symbol") {
  auto m = test::conv_bn_model(3, true);
  auto* dims = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->mutable_dim(0)->set_dim_param("batch");
  dims->mutable_dim(2)->set_dim_param("height");
  GraphView view(m.graph());
  Shapes shapes(view, 13);
  const Shape* x = shapes.of("x");
  const Shape* y = shapes.of("y");
  REQUIRE(x);
  REQUIRE(y);
  CHECK(*x == *y);
  CHECK((*x)[0] < -1);
  CHECK((*x)[0] != (*x)[2]);
  CHECK(format_shape(*y, &shapes) == "[batch, 3, height, 1]");
  CHECK(format_shape(*y) == "[?, 3, ?, 1]");
}

TEST_CASE("SPPF with an unknown channel count is refused, naming the tensor and the dimension") {
  auto parsed = parse_model(test::bytes(test::fixture("sample.onnx")));
  REQUIRE(parsed.ok());
  auto m = twin(*parsed, Variant::kNoValueInfo);
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  auto report = run(m, Options{});
  bool seen = false;
  for (const auto& r : report.matches) {
    if (r.pattern != "LatticeSPPFMaxPoolPattern") continue;
    seen = true;
    CHECK_FALSE(r.applied);
    CHECK_THAT(r.reason, Contains("needs the channel count (dimension 1) of '") && Contains("which is unknown"));
  }
  CHECK(seen);
  // And no SPPF pool is snapped as an ordinary MaxPool instead.
  for (const auto& r : report.matches) CHECK_FALSE((r.pattern == "LatticeMaxPool2dPattern" && r.id.find("sppf") != std::string::npos));
}

TEST_CASE("a pinned input shape is written into the output and recorded; a contradiction names both") {
  auto parsed = parse_model(test::bytes(test::fixture("conv_bn_relu.onnx")));
  REQUIRE(parsed.ok());
  auto dynamic = twin(*parsed, Variant::kDynamicBatch);
  Options options;
  options.target = "none";
  options.fold_batch_norm = false;
  options.input_shapes = {{"input", {1, 3, 16, 16}}};
  auto [out, report] = test::convert_bytes(dynamic.SerializeAsString(), options);
  const auto& dims = out.graph().input(0).type().tensor_type().shape().dim();
  REQUIRE(dims.size() == 4);
  CHECK(dims[0].dim_value() == 1);
  CHECK(report.to_json().dump(false).find("\"input_shapes\":{\"input\":[1,3,16,16]}") != std::string::npos);

  options.input_shapes = {{"input", {1, 3, 32, 16}}};
  auto bad = convert(test::bytes(dynamic.SerializeAsString()), options);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Contains("the shape [1, 3, 32, 16] pinned for 'input' contradicts graph input 'input' "
                                           "[N, 3, 16, 16]: its dimension 2 is fixed at 16"));
  options.input_shapes = {{"nope", {1}}};
  auto unknown = convert(test::bytes(dynamic.SerializeAsString()), options);
  REQUIRE_FALSE(unknown.ok());
  CHECK_THAT(unknown.error().message, Contains("no graph input 'nope' (its inputs: input)"));
}

TEST_CASE("a pin equal to the declared shape changes nothing: the output is the input") {
  auto bytes = test::fixture("conv_bn_relu.onnx");
  Options options;
  options.target = "none";
  options.fold_batch_norm = false;
  options.input_shapes = {{"input", {1, 3, 16, 16}}};
  auto result = convert(test::bytes(bytes), options);
  REQUIRE(result.ok());
  CHECK(result->output(bytes) == std::string_view(bytes));
}

TEST_CASE("a YOLO exported with a dynamic batch converts its SPPF blocks like the static export") {
  Options options;
  auto sample = parse_model(test::bytes(test::fixture("sample.onnx")));
  auto yolo = parse_model(test::bytes(test::fixture("yolo_dynamic_batch.onnx")));
  REQUIRE(sample.ok());
  REQUIRE(yolo.ok());
  auto fixed = run(*sample, options);
  auto dynamic = run(*yolo, options);
  CHECK(applied(dynamic) == applied(fixed));
  CHECK(applied(dynamic).contains("LatticeSPPFMaxPoolPattern:/sppf5/m/MaxPool"));
  CHECK(applied(dynamic).contains("LatticeSPPFMaxPoolPattern:/sppf3/m/MaxPool"));
}

TEST_CASE("auto_pad SAME at stride 2 on an input of unknown height: the pad-moving pattern refuses, naming it") {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto& g = *m.mutable_graph();
  test::set_input_shape(*g.add_input(), "x", {1, 2, 8, 8});
  g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)->set_dim_param("H");
  g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(3)->set_dim_param("W");
  g.add_output()->set_name("y");
  *g.add_initializer() = test::float_tensor("w", {2, 2, 3, 3}, std::vector<float>(36, 0.1f));
  auto& conv = test::add_node(g, "Conv", "conv", {"x", "w"}, {"c"});
  auto* a = conv.add_attribute();
  a->set_name("auto_pad");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("SAME_UPPER");
  auto* s = conv.add_attribute();
  s->set_name("strides");
  s->set_type(onnx::AttributeProto::INTS);
  s->add_ints(2);
  s->add_ints(2);
  auto& pool = test::add_node(g, "MaxPool", "pool", {"c"}, {"y"});
  auto* k = pool.add_attribute();
  k->set_name("kernel_shape");
  k->set_type(onnx::AttributeProto::INTS);
  k->add_ints(2);
  k->add_ints(2);
  auto report = run(m, Options{});
  auto it = std::find_if(report.matches.begin(), report.matches.end(),
                         [](const MatchRecord& r) { return r.id == "LatticeStride2AsymPadConvMaxPoolPattern:conv"; });
  REQUIRE(it != report.matches.end());
  CHECK_FALSE(it->applied);
  CHECK_THAT(it->reason, Contains("needs the height (auto_pad SAME_UPPER at stride 2 pads by it) (dimension 2) of 'x', "
                                  "which is unknown (shape [1, 2, H, W])"));
  // Pinned to an odd size, SAME pads every side by 1 and the pattern moves them; to an even size,
  // SAME pads the bottom and right only, the target's own stride-2 form, which stays as it is.
  Options odd;
  odd.input_shapes = {{"x", {1, 2, 9, 9}}};
  CHECK(applied(run(m, odd)).contains("LatticeStride2AsymPadConvMaxPoolPattern:conv"));
  Options even;
  even.input_shapes = {{"x", {1, 2, 8, 8}}};
  for (const auto& id : applied(run(m, even))) CHECK(id.find(":conv") == std::string::npos);
}
