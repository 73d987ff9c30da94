// External data in the core, over an in-memory ExternalData (the CLIs' file-system reader is
// tested end to end by tests/node/external_data.test.mjs).
#include <catch2/catch.hpp>

#include <map>
#include <optional>

#include "core/convert.h"
#include "core/onnx/external_data.h"
#include "core/onnx/model_io.h"
#include "core/onnx/tensor_values.h"
#include "tests/cpp/support.h"

namespace {

using test::MemoryData;

// The model with every tensor of at least 256 bytes moved into `data.files[file]`, as onnx saves it.
std::string externalise(const std::string& model_bytes, MemoryData& data, const std::string& file = "m.onnx.data") {
  auto model = lattice::parse_model(test::bytes(model_bytes));
  REQUIRE(model);
  auto segments = lattice::lay_out_external(*model, file, 256);
  auto assembled = lattice::assemble(segments, data);
  REQUIRE(assembled);
  data.files[file] = *assembled;
  return model->SerializeAsString();
}

}  // namespace

TEST_CASE("every fixture with external data converts as its single-file self") {
  for (const auto& name : test::fixture_names()) {
    CAPTURE(name);
    std::string original = test::fixture(name);
    auto single = lattice::convert(test::bytes(original), {});
    REQUIRE(single);
    std::string expected(*single->output({original}));

    MemoryData data;
    std::string external = externalise(original, data);
    lattice::Options inline_layout;
    inline_layout.layout = lattice::DataLayout::kInline;
    auto converted = lattice::convert(test::bytes(external), inline_layout, lattice::ConvertCall::with_files(&data));
    REQUIRE(converted);
    std::string got(*converted->output(external));
    if (data.files.at("m.onnx.data").empty()) continue;  // no tensor of 256 bytes: nothing external
    CHECK(got == expected);
  }
}

TEST_CASE("locations outside the model's folder are refused, naming the tensor") {
  for (std::string bad : {"../x", "a/../../x", "..", "/etc/passwd", "\\\\server\\x", "C:\\x", "a\\..\\b", ""}) {
    CAPTURE(bad);
    auto s = lattice::check_location(bad, "initializer 'w'");
    REQUIRE_FALSE(s);
    CHECK_THAT(s.error().message, Catch::Contains("initializer 'w'"));
  }
  auto nul = lattice::check_location(std::string("w.bin\0x", 7), "initializer 'w'");
  REQUIRE_FALSE(nul);
  CHECK_THAT(nul.error().message, Catch::Contains("not a file name (it holds a NUL byte)"));
  for (std::string good : {"m.onnx.data", "weights/w.bin", "a..b", "..a"}) {
    CAPTURE(good);
    CHECK(lattice::check_location(good, "initializer 'w'"));
  }
}

TEST_CASE("a reference beyond its file or of the wrong length is refused before any read") {
  MemoryData data;
  std::string external = externalise(test::fixture("resnet_stem.onnx"), data);
  auto model = lattice::parse_model(test::bytes(external));
  REQUIRE(model);
  auto* w = model->mutable_graph()->mutable_initializer(0);
  REQUIRE(lattice::is_external(*w));
  SECTION("offset beyond the end") {
    for (auto& e : *w->mutable_external_data()) {
      if (e.key() == "offset") e.set_value(std::to_string(data.files["m.onnx.data"].size()));
    }
  }
  SECTION("ending one byte past the end") {
    uint64_t length = lattice::stored_ref(*w).length;
    for (auto& e : *w->mutable_external_data()) {
      if (e.key() == "offset") e.set_value(std::to_string(data.files["m.onnx.data"].size() - length + 1));
    }
  }
  SECTION("length not what the dims need") {
    for (auto& e : *w->mutable_external_data()) {
      if (e.key() == "length") e.set_value("4");
    }
  }
  SECTION("offset not a number") {
    for (auto& e : *w->mutable_external_data()) {
      if (e.key() == "offset") e.set_value("-1");
    }
  }
  std::string bytes = model->SerializeAsString();
  auto result = lattice::convert(test::bytes(bytes), {}, lattice::ConvertCall::with_files(&data, "out.onnx.data"));
  REQUIRE_FALSE(result);
  CHECK_THAT(result.error().message, Catch::Contains("initializer '" + w->name() + "'"));
  CHECK(data.reads == 0);
}

TEST_CASE("a reference may end exactly at the end of its file, not one byte past it") {
  // A float tensor of dims [4] (16 bytes) in a 20-byte file: offsets 0 to 4 fit, 5 does not.
  MemoryData data;
  data.files["w.bin"] = std::string(20, '\x01');
  auto tensor = [](std::optional<uint64_t> offset, std::optional<uint64_t> length) {
    onnx::TensorProto t;
    t.set_name("w");
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_dims(4);
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    auto key = [&](const char* k, const std::string& v) {
      auto* e = t.add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    key("location", "w.bin");
    if (offset) key("offset", std::to_string(*offset));
    if (length) key("length", std::to_string(*length));
    return t;
  };
  auto ref = [&](std::optional<uint64_t> offset, std::optional<uint64_t> length) {
    return lattice::external_ref(tensor(offset, length), "initializer 'w'", data);
  };
  auto at_end = ref(4, 16);
  REQUIRE(at_end);
  CHECK(at_end->offset == 4);
  CHECK(at_end->length == 16);
  auto rest = ref(4, std::nullopt);  // no length: the rest of the file
  REQUIRE(rest);
  CHECK(rest->length == 16);

  auto past = ref(5, 16);
  REQUIRE_FALSE(past);
  CHECK(past.error().message ==
        "initializer 'w' keeps its data at offset 5 length 16 of 'w.bin', beyond the end of that file (20 bytes)");
  // An offset one past the end, without a length, is beyond the file too (not a huge length).
  auto offset_past = ref(21, std::nullopt);
  REQUIRE_FALSE(offset_past);
  CHECK(offset_past.error().message ==
        "initializer 'w' keeps its data at offset 21 length 0 of 'w.bin', beyond the end of that file (20 bytes)");
  // What fits but is not what the dims need.
  auto short_rest = ref(5, std::nullopt);
  REQUIRE_FALSE(short_rest);
  CHECK(short_rest.error().message == "initializer 'w' keeps 15 bytes in 'w.bin', but dims [4] of type float need 16 bytes");
  CHECK(data.reads == 0);
}

TEST_CASE("without a reader an external-data model is refused, naming the tensor and its file") {
  MemoryData data;
  std::string external = externalise(test::fixture("resnet_stem.onnx"), data);
  auto result = lattice::convert(test::bytes(external), {});
  REQUIRE_FALSE(result);
  CHECK_THAT(result.error().message, Catch::Contains("keeps its data in an external file ('m.onnx.data')"));
}

namespace {

// x -> Conv with a 100 KiB weight "w" (raw_data) -> y: nothing for --target none to apply.
onnx::ModelProto conv_model() {
  onnx::ModelProto m = test::tiny_model();
  auto& g = *m.mutable_graph();
  g.mutable_node()->Clear();
  test::set_input_shape(*g.mutable_input(0), "x", {1, 32, 8, 8});
  test::add_node(g, "Conv", "conv", {"x", "w"}, {"y"});
  *g.add_initializer() = lattice::make_tensor("w", onnx::TensorProto::FLOAT, {32, 32, 5, 5},
                                              std::vector<double>(32 * 32 * 25, 0.5));
  return m;
}

}  // namespace

TEST_CASE("a weight no pattern reads stays where it is: copied as a range, never read") {
  MemoryData data;
  std::string external = externalise(conv_model().SerializeAsString(), data, "in.bin");
  lattice::Options none;
  none.target = "none";
  auto result = lattice::convert(test::bytes(external), none, lattice::ConvertCall::with_files(&data, "out.onnx.data"));
  REQUIRE(result);
  CHECK(data.reads == 0);
  REQUIRE(result->data);
  REQUIRE(result->data->size() == 1);
  CHECK(result->data->front().location == "in.bin");
  CHECK(result->data->front().length == 32 * 32 * 25 * 4);
  auto out = lattice::parse_model(test::bytes(*result->output(external)));
  REQUIRE(out);
  const auto& t = out->graph().initializer(0);
  CHECK(t.external_data(0).value() == "out.onnx.data");
}

TEST_CASE("written inline a weight no pattern reads is spliced in from its file and never read") {
  onnx::ModelProto m = conv_model();
  MemoryData data;
  std::string external = externalise(m.SerializeAsString(), data, "in.bin");
  lattice::Options inline_none;
  inline_none.target = "none";
  inline_none.layout = lattice::DataLayout::kInline;
  auto result = lattice::convert(test::bytes(external), inline_none, lattice::ConvertCall::with_files(&data));
  REQUIRE(result);
  CHECK(data.reads == 0);
  CHECK_FALSE(result->data);
  REQUIRE(result->converted);
  bool spliced = false;
  for (const auto& s : *result->converted) spliced = spliced || (s.location == "in.bin" && s.length == 32 * 32 * 25 * 4);
  CHECK(spliced);
  auto out = lattice::parse_model(test::bytes(*result->output(external, &data)));
  REQUIRE(out);
  CHECK(out->graph().initializer(0).raw_data() == m.graph().initializer(0).raw_data());
  CHECK_FALSE(lattice::is_external(out->graph().initializer(0)));
}

TEST_CASE("folding reads the weights it folds, and only those") {
  MemoryData data;
  std::string external = externalise(test::fixture("resnet_stem.onnx"), data);
  lattice::Options none;
  none.target = "none";
  auto result = lattice::convert(test::bytes(external), none, lattice::ConvertCall::with_files(&data, "out.onnx.data"));
  REQUIRE(result);
  CHECK(data.reads > 0);
  CHECK(data.bytes_read <= data.files["m.onnx.data"].size());
}

TEST_CASE("a data file gone before the output is written fails the writing and says why") {
  // The folded weights are computed from the input's data file as the output is written: without
  // it, there is nothing to write them from.
  MemoryData data;
  std::string external = externalise(test::fixture("resnet_stem.onnx"), data);
  lattice::Options none;
  none.target = "none";
  // Small limits: this fixture's weights are smaller than the product's deferred ones.
  lattice::SpanData model(test::bytes(external));
  auto result = lattice::convert(model, external.size(), none,
                                 lattice::ConvertCall::with_files(&data, "out.onnx.data", {64, 64}));
  REQUIRE(result);
  REQUIRE(result->data);
  REQUIRE(lattice::assemble(*result->data, data));
  data.files.clear();
  auto written = lattice::assemble(*result->data, data);  // its ranges come first
  REQUIRE_FALSE(written);
  CHECK(written.error().message == "cannot read 'm.onnx.data': No such file or directory");
  std::vector<lattice::DataSegment> folded;
  for (const auto& s : *result->data) {
    if (s.deferred) folded.push_back(s);
  }
  REQUIRE_FALSE(folded.empty());
  written = lattice::assemble(folded, data);
  REQUIRE_FALSE(written);
  CHECK_THAT(written.error().message, Catch::StartsWith("cannot compute the converted data: "));
  CHECK_THAT(written.error().message, Catch::EndsWith("No such file or directory"));
}
