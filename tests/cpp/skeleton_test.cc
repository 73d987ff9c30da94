// The skeleton: tensor data left in the input file, read when a pattern needs it, and spliced back
// into output that is byte for byte protobuf's serialisation.
#include <algorithm>
#include <fstream>
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>

#include "core/convert.h"
#include "core/onnx/model_io.h"
#include "core/onnx/skeleton.h"
#include "core/onnx/tensor_values.h"
#include "core/onnx/validate.h"
#include "tests/cpp/converted.h"
#include "tests/cpp/support.h"

using namespace lattice;

namespace {

// The committed fixtures, and the zoo's models when the test run has made them
// (ONNX_LATTICE_ZOO): real exports with megabytes of weights.
std::vector<std::string> models() {
  std::vector<std::string> paths;
  for (const auto& name : test::fixture_names()) paths.push_back(std::string(test::kFixturesDir) + "/" + name);
  if (const char* zoo = std::getenv("ONNX_LATTICE_ZOO"); zoo && std::filesystem::is_directory(zoo)) {
    for (const auto& entry : std::filesystem::directory_iterator(zoo)) {
      if (entry.path().extension() == ".onnx") paths.push_back(entry.path().string());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// What protobuf writes for the model in `bytes`, parsed whole.
std::string protobuf_bytes(const std::string& bytes) {
  auto model = parse_model(test::bytes(bytes));
  REQUIRE(model);
  return model->SerializeAsString();
}

// Split, parsed, serialised and spliced back: the skeleton's way of writing a model.
std::string skeleton_round_trip(const std::string& bytes, uint64_t threshold, Skeleton* split = nullptr) {
  SpanData input(test::bytes(bytes));
  auto skeleton = split_skeleton(input, bytes.size(), threshold);
  REQUIRE(skeleton);
  auto model = parse_model(test::bytes(skeleton->bytes));
  REQUIRE(model);
  auto segments = splice_skeleton(model->SerializeAsString());
  REQUIRE(segments);
  auto out = assemble(*segments, input);
  REQUIRE(out);
  if (split) *split = *skeleton;
  return *out;
}

// A length-delimited field as protobuf writes it, for field numbers under 16.
std::string field(int number, const std::string& content) {
  std::string out(1, static_cast<char>(number << 3 | 2));
  for (uint64_t v = content.size(); ; v >>= 7) {
    if (v < 0x80) {
      out += static_cast<char>(v);
      break;
    }
    out += static_cast<char>((v & 0x7f) | 0x80);
  }
  return out + content;
}

// Two conversions write the same data file (or none), each put together from its own files.
void check_same_data_file(const ConvertResult& a, test::MemoryData& a_files, const ConvertResult& b,
                          test::MemoryData& b_files) {
  REQUIRE(a.data.has_value() == b.data.has_value());
  if (!a.data) return;
  auto a_bytes = assemble(*a.data, a_files), b_bytes = assemble(*b.data, b_files);
  REQUIRE(a_bytes);
  REQUIRE(b_bytes);
  CHECK(*a_bytes == *b_bytes);
}

// A model with one more initializer.
std::string model_with_tensor(const onnx::TensorProto& tensor) {
  onnx::ModelProto m = test::tiny_model();
  *m.mutable_graph()->add_initializer() = tensor;
  return m.SerializeAsString();
}

}  // namespace

TEST_CASE("a model split into a skeleton and spliced back is protobuf's serialisation, byte for byte") {
  for (const auto& path : models()) {
    CAPTURE(path);
    std::string bytes = test::read_file(path);
    std::string expected = protobuf_bytes(bytes);
    for (uint64_t threshold : {uint64_t{1}, uint64_t{64}, kSkeletonThreshold}) {
      CAPTURE(threshold);
      Skeleton split;
      CHECK(skeleton_round_trip(bytes, threshold, &split) == expected);
      CHECK(split.bytes.size() + split.bytes_left_out <= bytes.size() + 128 * split.tensors_left_out);
    }
  }
}

TEST_CASE("conversions that leave tensor data in the file equal those that read it all") {
  // The tests' limits send every tensor over 64 bytes down the path large ones take: left in
  // the file by the skeleton and read by the fold that needs it.
  const DataLimits small{64, 64};
  const DataLimits everything_read{uint64_t{1} << 40, uint64_t{1} << 40};
  std::vector<Options> option_sets(4);
  option_sets[1].target = "none";
  option_sets[2].target = "none";
  option_sets[2].fold_batch_norm = false;
  option_sets[3].layout = DataLayout::kExternal;
  bool deferred_somewhere = false;
  for (const auto& path : models()) {
    CAPTURE(path);
    std::string bytes = test::read_file(path);
    for (const auto& options : option_sets) {
      CAPTURE(options.target, options.folds_batch_norm(), static_cast<int>(options.layout));
      test::MemoryData reads;
      reads.files[kInputLocation] = bytes;
      auto left = convert(reads, bytes.size(), options, ConvertCall::with_files(&reads, "out.onnx.data", small));
      test::MemoryData whole;
      whole.files[kInputLocation] = bytes;
      auto read = convert(whole, bytes.size(), options, ConvertCall::with_files(&whole, "out.onnx.data", everything_read));
      REQUIRE(left.ok() == read.ok());
      if (!left) {
        CHECK(left.error().message == read.error().message);
        continue;
      }
      left->report.timings_ms = read->report.timings_ms = {};
      CHECK(left->report.to_json().dump() == read->report.to_json().dump());
      REQUIRE(left->converted.has_value() == read->converted.has_value());
      auto out = left->output(bytes);
      REQUIRE(out);
      CHECK(*out == *read->output(bytes));
      if (left->converted) CHECK(*out == protobuf_bytes(*out));  // the output is protobuf's own bytes
      check_same_data_file(*left, reads, *read, whole);

      // With the small limits, folded weights are computed as they are written (MappedValues);
      // with the large ones, held in the model: the outputs above are equal.
      auto mapped = [](const std::optional<std::vector<DataSegment>>& segments) {
        return segments && std::any_of(segments->begin(), segments->end(), [](const DataSegment& s) {
                 return dynamic_cast<const MappedValues*>(s.deferred.get()) != nullptr;
               });
      };
      if (mapped(left->converted) || mapped(left->data)) deferred_somewhere = true;
      CHECK_FALSE(mapped(read->converted));
    }
  }
  CHECK(deferred_somewhere);  // folding deferred its weights, on some model at least
}

TEST_CASE("a fold of a folded weight computes it from the first fold's recipe, to the held result") {
  // Conv -> BatchNormalization -> Mul -> Add by per-channel constants: the scale-and-shift fold
  // reads the weight the BatchNorm fold made, which the small limits leave deferred (a
  // MappedValues of a MappedValues).
  onnx::ModelProto m = test::conv_bn_model(16, true);
  auto& g = *m.mutable_graph();
  for (const char* name : {"scale", "shift"}) {
    auto t = g.initializer(2);  // the first BatchNormalization's gamma: 16 distinct values
    t.set_name(name);
    t.clear_dims();
    for (int64_t d : {1, 16, 1, 1}) t.add_dims(d);
    *g.add_initializer() = t;
  }
  test::add_node(g, "Mul", "mul", {"y", "scale"}, {"scaled"});
  test::add_node(g, "Add", "add", {"scaled", "shift"}, {"z"});
  g.mutable_output(0)->set_name("z");
  std::string bytes = m.SerializeAsString();
  Options options;
  options.target = "none";
  test::MemoryData deferred_files, held_files;
  deferred_files.files[kInputLocation] = held_files.files[kInputLocation] = bytes;
  auto deferred = convert(deferred_files, bytes.size(), options, ConvertCall::with_files(&deferred_files, "", DataLimits{64, 64}));
  auto held = convert(held_files, bytes.size(), options, ConvertCall::with_files(&held_files, "", DataLimits{uint64_t{1} << 40, uint64_t{1} << 40}));
  REQUIRE(deferred);
  REQUIRE(held);
  CHECK(std::count_if(deferred->report.matches.begin(), deferred->report.matches.end(),
                      [](const auto& match) { return match.applied; }) == 2);
  auto mapped_of_mapped = [](const DataSegment& s) {
    const auto* mapped = dynamic_cast<const MappedValues*>(s.deferred.get());
    return mapped != nullptr && mapped->source() != nullptr &&
           dynamic_cast<const MappedValues*>(mapped->source().get()) != nullptr;
  };
  REQUIRE(deferred->converted);
  CHECK(std::any_of(deferred->converted->begin(), deferred->converted->end(), mapped_of_mapped));
  CHECK(*deferred->output(bytes) == *held->output(bytes));
}

TEST_CASE("a string or segmented tensor left in the file is refused as when its raw_data is read") {
  // The split leaves large raw_data out whatever the tensor's type; the reference that stands for
  // it must be refused as the raw_data itself is (a fuzz finding: the string case converted).
  onnx::TensorProto strings;
  strings.set_name("s");
  strings.set_data_type(onnx::TensorProto::STRING);
  strings.add_dims(100);
  strings.set_raw_data(std::string(100, 'x'));
  onnx::TensorProto segmented = test::float_tensor("f", {25}, std::vector<float>(25, 1.0f));
  segmented.clear_float_data();
  segmented.set_raw_data(std::string(100, '\0'));
  segmented.mutable_segment()->set_begin(0);
  segmented.mutable_segment()->set_end(25);
  for (const auto& [tensor, refusal] : {std::pair{strings, "initializer 's' is a string tensor stored in raw_data"},
                                        std::pair{segmented, "initializer 'f' is a segmented tensor"}}) {
    std::string bytes = model_with_tensor(tensor);
    for (uint64_t threshold : {uint64_t{16}, uint64_t{1} << 40}) {
      CAPTURE(threshold);
      test::MemoryData files;
      files.files[kInputLocation] = bytes;
      auto result = convert(files, bytes.size(), Options{}, ConvertCall::with_files(&files, "", DataLimits{threshold, kReadAlways}));
      REQUIRE_FALSE(result);
      CHECK_THAT(result.error().message, Catch::StartsWith(refusal));
    }
  }
  // In a data file, as onnx's checker: strings are never stored externally.
  onnx::TensorProto external = strings;
  external.clear_raw_data();
  external.set_data_location(onnx::TensorProto::EXTERNAL);
  auto* location = external.add_external_data();
  location->set_key("location");
  location->set_value("s.bin");
  std::string bytes = model_with_tensor(external);
  test::MemoryData files;
  files.files["s.bin"] = std::string(100, 'x');
  auto result = convert(test::bytes(bytes), Options{}, ConvertCall::with_files(&files));
  REQUIRE_FALSE(result);
  CHECK_THAT(result.error().message, Catch::StartsWith("initializer 's' is a string tensor stored in the external file 's.bin'"));
  CHECK(files.reads == 0);
}

TEST_CASE("large tensor data is never read when no pattern needs it") {
  // One 8 MiB initializer nothing reads: the walk skips it without reading it.
  onnx::ModelProto m = test::tiny_model();
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("unused");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(2 << 20);
  t->set_raw_data(std::string(8 << 20, '\x01'));
  std::string bytes = m.SerializeAsString();
  test::MemoryData files;
  files.files[kInputLocation] = bytes;
  Options options;
  options.target = "none";
  options.fold_batch_norm = false;
  options.layout = DataLayout::kExternal;
  auto result = convert(files, bytes.size(), options, ConvertCall::with_files(&files, "out.onnx.data"));
  REQUIRE(result);
  CHECK(files.bytes_read < 2 << 20);
  REQUIRE(result->data);
  CHECK(result->data->back().location == kInputLocation);
  CHECK(result->data->back().length == 8u << 20);
}

TEST_CASE("the skeleton keeps protobuf's rules for odd tensors") {
  std::string big(100, '\x02'), small(8, '\x03');
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(onnx::TensorProto::UINT8);
  t.add_dims(100);
  t.set_raw_data(big);

  SECTION("an explicit data_location stays inline, data and all") {
    t.set_data_location(onnx::TensorProto::DEFAULT);
    std::string bytes = model_with_tensor(t);
    Skeleton split;
    CHECK(skeleton_round_trip(bytes, 1, &split) == protobuf_bytes(bytes));
    CHECK(split.tensors_left_out == 0);
  }
  SECTION("raw_data given twice: the last one counts, as protobuf reads it") {
    onnx::TensorProto other;
    other.set_raw_data(small);
    for (bool big_last : {true, false}) {
      CAPTURE(big_last);
      onnx::TensorProto first = t, second = other;
      if (big_last) std::swap(first, second), first.set_raw_data(small), second.clear_name(), second.set_raw_data(big);
      // Two serialisations one after the other are one tensor to protobuf, with two raw_data fields.
      std::string tensor = first.SerializeAsString() + second.SerializeAsString();
      std::string crafted = test::tiny_model().SerializeAsString() + field(7, field(5, tensor));
      std::string expected = protobuf_bytes(crafted);
      CHECK(skeleton_round_trip(crafted, 1) == expected);
      onnx::ModelProto parsed;
      REQUIRE(parsed.ParseFromString(crafted));
      CHECK(parsed.graph().initializer(0).raw_data() == (big_last ? big : small));
    }
  }
  SECTION("unknown fields (known numbers with another wire type) stay where protobuf writes them") {
    // Unknown to protobuf, so written after every known field, raw_data included: segment (3) as
    // a varint and a field 20 (left out of the skeleton's data); external_data (13) and
    // data_location (14) as varints (the tensor then keeps its data inline).
    for (auto [unknown, left_out] : {std::pair<std::string, uint64_t>{std::string("\x18\x03\xa0\x01\x07", 5), 1},
                                     {std::string("\x68\x01\x70\x05", 4), 0}}) {
      std::string tensor = t.SerializeAsString() + unknown;
      std::string crafted = test::tiny_model().SerializeAsString() + field(7, field(5, tensor));
      Skeleton split;
      CHECK(skeleton_round_trip(crafted, 1, &split) == protobuf_bytes(crafted));
      CHECK(split.tensors_left_out == left_out);
    }
  }
  // The tensor as the skeleton would refer to its data in the model file: a reserved location.
  auto refer_to_model_file = [](onnx::TensorProto& tensor) {
    tensor.clear_raw_data();
    tensor.set_data_location(onnx::TensorProto::EXTERNAL);
    auto* e = tensor.add_external_data();
    e->set_key("location");
    e->set_value(kInputLocation);
  };
  SECTION("a model naming the location reserved for the model file is refused") {
    refer_to_model_file(t);
    std::string bytes = model_with_tensor(t);
    SpanData input(test::bytes(bytes));
    auto split = split_skeleton(input, bytes.size(), 1);
    REQUIRE_FALSE(split);
    CHECK_THAT(split.error().message, Catch::Contains("a location onnx-lattice reserves for itself"));
  }
  SECTION("a Constant's value naming the reserved location is refused too, before anything is read") {
    refer_to_model_file(t);
    onnx::ModelProto model = test::tiny_model();
    auto* node = model.mutable_graph()->add_node();
    node->set_op_type("Constant");
    node->add_output("c");
    auto* value = node->add_attribute();
    value->set_name("value");
    value->set_type(onnx::AttributeProto::TENSOR);
    *value->mutable_t() = t;
    std::string bytes = model.SerializeAsString();
    SpanData input(test::bytes(bytes));
    auto result = convert(input, bytes.size(), Options{});
    REQUIRE_FALSE(result);
    CHECK_THAT(result.error().message, Catch::Contains("a location onnx-lattice reserves for itself"));
  }
  SECTION("encodings protobuf's parser refuses are refused by the split, at every level it reads") {
    // Field 100 (unknown everywhere) with its tag or length in more bytes than protobuf's parser
    // takes (5; CodedInputStream takes 10), field number 0, and a group holding a too-long tag.
    // The split writes what it reads canonically, so accepting these would repair the input.
    const std::string refused[] = {
        std::string("\xa0\x86\x80\x80\x80\x00\x01", 7),
        std::string("\xa2\x06\x81\x80\x80\x80\x80\x00x", 9),
        std::string("\x05\x01\x02\x03\x04", 5),
        std::string("\xa3\x06\xa0\x86\x80\x80\x80\x00\x01\xa4\x06", 11),
        std::string("\xa3\x06\xac\x06", 4),  // a group ended by another field's end tag
    };
    // The same fields in 5 bytes, or a group holding a field: both read them.
    const std::string accepted[] = {
        std::string("\xa0\x86\x80\x80\x00\x01", 6),
        std::string("\xa2\x06\x81\x80\x80\x80\x00x", 8),
        std::string("\xa3\x06\xa0\x86\x80\x80\x00\x01\xa4\x06", 10),
    };
    std::string tiny = test::tiny_model().SerializeAsString();
    auto at_every_level = [&](const std::string& fields) {
      return std::vector<std::string>{tiny + fields, tiny + field(7, fields),
                                      tiny + field(7, field(5, t.SerializeAsString() + fields))};
    };
    for (const auto& fields : refused) {
      for (const auto& crafted : at_every_level(fields)) {
        CAPTURE(crafted);
        REQUIRE_FALSE(parse_model(test::bytes(crafted)));
        SpanData input(test::bytes(crafted));
        CHECK_FALSE(split_skeleton(input, crafted.size(), 1));
      }
    }
    for (const auto& fields : accepted) {
      for (const auto& crafted : at_every_level(fields)) {
        CAPTURE(crafted);
        CHECK(skeleton_round_trip(crafted, 1) == protobuf_bytes(crafted));
      }
    }
  }
  SECTION("a tensor whose length runs past the graph holding it is refused, as protobuf refuses it") {
    // CodedInputStream's PushLimit clamps such a length to the enclosing message's end.
    std::string tensor = t.SerializeAsString();
    std::string too_long = field(5, tensor + std::string(20, 'x'));
    too_long.resize(too_long.size() - 20);
    std::string crafted = test::tiny_model().SerializeAsString() + field(7, too_long) + field(3, std::string(40, 'x'));
    REQUIRE_FALSE(parse_model(test::bytes(crafted)));
    SpanData input(test::bytes(crafted));
    CHECK_FALSE(split_skeleton(input, crafted.size(), 1));
  }
  SECTION("a model cut inside a tensor's data is refused as parse_model refuses it") {
    std::string bytes = model_with_tensor(t);
    std::string cut = bytes.substr(0, bytes.size() - 10);
    SpanData input(test::bytes(cut));
    auto split = split_skeleton(input, cut.size(), 1);
    REQUIRE_FALSE(split);
    CHECK(split.error().message == parse_model(test::bytes(cut)).error().message);
  }
}
