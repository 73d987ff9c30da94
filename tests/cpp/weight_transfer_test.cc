// --snap-weights: what a snapped Conv keeps of its trained kernel (transfer), and the seed's
// re-initialisation (reinit, the default) byte for byte as before.
#include <catch2/catch.hpp>

#include <numeric>

#include "converted.h"
#include "core/onnx/tensor_values.h"
#include "core/patterns/lattice/weight_transfer.h"

using namespace lattice;

namespace {

// w[r][c] = 5r + c + 1 for a 5x5: every tap tells where it came from.
std::vector<double> numbered(size_t kernels, size_t kh, size_t kw) {
  std::vector<double> w(kernels * kh * kw);
  std::iota(w.begin(), w.end(), 1.0);
  return w;
}

double squares(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return s;
}

using test::initializer;

const onnx::NodeProto& node(const onnx::ModelProto& m, const std::string& name) { return test::node_named(m, name); }

const MatchRecord& match(const Report& r, const std::string& id) {
  for (const auto& m : r.matches) {
    if (m.id == id) return m;
  }
  FAIL("no match " << id);
  throw std::logic_error("unreachable");
}

onnx::ModelProto parsed(const std::string& bytes) {
  auto m = parse_model(test::bytes(bytes));
  REQUIRE(m.ok());
  return std::move(m).value();
}

std::vector<double> values_of(const onnx::TensorProto& t) {
  auto v = read_values(t, t.name());
  REQUIRE(v.ok());
  return std::move(v).value();
}

uint64_t fnv1a(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

Options with(SnapWeights method, std::vector<std::string> only = {"LatticeConv2dPattern"}) {
  Options o;
  o.only = std::move(only);
  o.fold_batch_norm = false;
  o.snap_weights = method;
  return o;
}

}  // namespace

TEST_CASE("transfer: a 5x5 snapped at the same centre keeps its centre 3x3, and says how much energy that is") {
  auto w = numbered(1, 5, 5);
  TapAxis five{5, 1, 2, 2, 1}, three{3, 1, 1, 1, 1};
  auto t = transfer_kernel(w, std::vector<int64_t>{1, 1, 5, 5}, {five, five}, {three, three});
  CHECK(t.values == std::vector<double>{7, 8, 9, 12, 13, 14, 17, 18, 19});
  CHECK(t.kept_energy == Approx(squares(t.values) / squares(w)).epsilon(1e-15));
  CHECK_FALSE(t.lossless);
  CHECK(t.placement == "centre 3×3 of 5×5");
}

TEST_CASE("transfer: under Pad(bottom 1, right 1) + 3x3 stride 2 a 5x5 keeps the taps that read the same pixels") {
  auto w = numbered(2, 5, 5);  // two kernels: each is cropped on its own
  TapAxis old{5, 1, 2, 2, 2}, padded{3, 1, 0, 1, 2};
  auto t = transfer_kernel(w, std::vector<int64_t>{2, 1, 5, 5}, {old, old}, {padded, padded});
  REQUIRE(t.values.size() == 18);
  CHECK(std::vector<double>(t.values.begin(), t.values.begin() + 9) ==
        std::vector<double>{13, 14, 15, 18, 19, 20, 23, 24, 25});
  CHECK(t.values[9] == 25 + 13);
  CHECK(t.placement == "rows 2–4, columns 2–4 of 5×5");
}

TEST_CASE("transfer: a kernel embedded in a larger one is lossless; exact only where the outputs line up") {
  std::vector<double> w{0.5, -2};  // two 1x1 kernels
  TapAxis one_s2{1, 1, 0, 0, 2}, three_s2{3, 1, 1, 1, 2};
  auto t = transfer_kernel(w, std::vector<int64_t>{2, 1, 1, 1}, {one_s2, one_s2}, {three_s2, three_s2});
  CHECK(t.values == std::vector<double>{0, 0, 0, 0, 0.5, 0, 0, 0, 0, 0, 0, 0, 0, -2, 0, 0, 0, 0});
  CHECK(t.lossless);
  CHECK(t.kept_energy == 1.0);
  CHECK(t.placement == "1×1 at the centre of 3×3");
  Shape odd{1, 8, 15, 15};
  CHECK(same_outputs({one_s2, one_s2}, {three_s2, three_s2}, &odd));
  CHECK(same_outputs({one_s2, one_s2}, {three_s2, three_s2}, nullptr));
  // A 2x2 stride 2 without pads lines up with a 3x3 stride 2 pads 1 on even sizes only.
  TapAxis two_s2{2, 1, 0, 0, 2};
  auto t2 = transfer_kernel(numbered(1, 2, 2), std::vector<int64_t>{1, 1, 2, 2}, {two_s2, two_s2}, {three_s2, three_s2});
  CHECK(t2.lossless);
  CHECK(t2.values == std::vector<double>{0, 0, 0, 0, 1, 2, 0, 3, 4});
  Shape even{1, 1, 16, 16};
  CHECK(same_outputs({two_s2, two_s2}, {three_s2, three_s2}, &even));
  CHECK_FALSE(same_outputs({two_s2, two_s2}, {three_s2, three_s2}, &odd));
  CHECK_FALSE(same_outputs({two_s2, two_s2}, {three_s2, three_s2}, nullptr));
  // A crop whose dropped ring is all zero loses nothing.
  std::vector<double> ringless(25, 0.0);
  ringless[12] = 3;
  TapAxis five{5, 1, 2, 2, 1}, three{3, 1, 1, 1, 1};
  auto t3 = transfer_kernel(ringless, std::vector<int64_t>{1, 1, 5, 5}, {five, five}, {three, three});
  CHECK(t3.lossless);
  CHECK(same_outputs({five, five}, {three, three}, nullptr));
}

TEST_CASE("--snap-weights transfer on LatticeConv2dPattern: centre crop, the bias tensor kept, exact embeddings") {
  std::string bytes = test::fixture("odd_convs.onnx");
  auto original = parsed(bytes);
  auto c = test::convert_bytes(bytes, with(SnapWeights::kTransfer));
  CHECK(c.report.options.to_json().dump(false).find("\"snap_weights\":\"transfer\"") != std::string::npos);

  const auto& c5 = node(c.model, "/c5/Conv");
  // The bias is the trained tensor itself: its bytes cannot have changed.
  CHECK(c5.input(2) == "c5.bias");
  auto old_w = values_of(initializer(original, "c5.weight"));
  auto new_w = values_of(initializer(c.model, c5.input(1)));
  REQUIRE(new_w.size() == 8 * 3 * 9);
  double kept = 0;
  for (size_t k = 0; k < 8 * 3; ++k) {
    for (size_t r = 0; r < 3; ++r) {
      for (size_t col = 0; col < 3; ++col) {
        double v = old_w[k * 25 + (r + 1) * 5 + col + 1];
        CHECK(new_w[k * 9 + r * 3 + col] == v);
        kept += v * v;
      }
    }
  }
  const auto& m5 = match(c.report, "LatticeConv2dPattern:/c5/Conv");
  REQUIRE(m5.weights);
  CHECK(m5.weights->method == "transfer");
  CHECK(m5.weights->kept_energy == Approx(kept / squares(old_w)).epsilon(1e-12));
  CHECK_FALSE(m5.numerically_equivalent);

  // The 1x1 stride 2 (24x24 input) becomes a 3x3 stride 2 pads 1 reading the same pixels.
  const auto& m1 = match(c.report, "LatticeConv2dPattern:/c1s2/Conv");
  CHECK(m1.numerically_equivalent);
  CHECK(m1.weights->kept_energy == 1.0);
  CHECK(node(c.model, "/c1s2/Conv").input(2) == "c1s2.bias");
  bool said = false;
  for (const auto& w : c.report.warnings) {
    if (w.match_id != m1.id) continue;
    CHECK(w.message ==
          "/c1s2/Conv: kernel_size snapped from (1, 1) to (3, 3), stride/padding from (2, 2)/(0, 0) to (2, 2)/(1, 1) "
          "— weights transferred exactly (1×1 at the centre of 3×3, every non-zero tap kept): output unchanged "
          "(numerically equivalent).");
    said = true;
  }
  CHECK(said);
}

TEST_CASE("--snap-weights transfer on LatticeStride2AsymPadConvMaxPoolPattern: the 7x7 stem keeps its bias") {
  std::string bytes = test::fixture("resnet_stem.onnx");
  auto c = test::convert_bytes(bytes, with(SnapWeights::kTransfer, {"LatticeStride2AsymPadConvMaxPoolPattern"}));
  const auto& conv = node(c.model, "/stem/stem.0/Conv");
  auto original = parsed(bytes);
  const auto& old_conv = node(original, "/stem/stem.0/Conv");
  if (old_conv.input_size() > 2) CHECK(conv.input(2) == old_conv.input(2));
  const auto& m = match(c.report, "LatticeStride2AsymPadConvMaxPoolPattern:/stem/stem.0/Conv");
  REQUIRE(m.weights);
  CHECK(m.weights->method == "transfer");
  CHECK(m.weights->kept_energy > 0);
  CHECK(m.weights->kept_energy < 1);
  CHECK_THAT(c.report.warnings[0].message, Catch::Matchers::Contains("weights transferred (rows 3–5, columns 3–5 of 7×7, "));
}

TEST_CASE("--snap-weights reinit is the default and gives the bytes it gave before the option existed") {
  // FNV-1a of main's output (commit 812bc71, `onnx-lattice convert F -o OUT`) for these fixtures.
  for (auto [fixture, hash] : {std::pair{"odd_convs.onnx", 0x5ff67f69ceaf4ea7ull}, {"resnet_stem.onnx", 0xceae42e41afdc0dcull}}) {
    INFO(fixture);
    std::string bytes = test::fixture(fixture);
    for (auto method : {std::optional<SnapWeights>{}, std::optional{SnapWeights::kReinit}}) {
      Options o;
      if (method) o.snap_weights = *method;
      auto result = convert(test::bytes(bytes), o);
      REQUIRE(result.ok());
      CHECK(fnv1a(*result->output(bytes)) == hash);
      for (const auto& m : result->report.matches) {
        if (m.weights) CHECK(m.weights->method == "reinit");
      }
    }
  }
}

TEST_CASE("--snap-weights transfer refuses, naming the node, a weight whose values it cannot read") {
  std::string bytes = test::fixture("odd_convs.onnx");
  auto model = parsed(bytes);
  // c5.weight becomes a graph input: the values are the caller's, not the model's.
  auto* g = model.mutable_graph();
  for (int i = 0; i < g->initializer_size(); ++i) {
    if (g->initializer(i).name() == "c5.weight") {
      auto* in = g->add_input();
      in->set_name("c5.weight");
      auto* t = in->mutable_type()->mutable_tensor_type();
      t->set_elem_type(onnx::TensorProto::FLOAT);
      for (int64_t d : {8, 3, 5, 5}) t->mutable_shape()->add_dim()->set_dim_value(d);
      g->mutable_initializer()->DeleteSubrange(i, 1);
      break;
    }
  }
  std::string edited;
  REQUIRE(model.SerializeToString(&edited));
  auto c = test::convert_bytes(edited, with(SnapWeights::kTransfer));
  const auto& m = match(c.report, "LatticeConv2dPattern:/c5/Conv");
  CHECK_FALSE(m.applied);
  CHECK_THAT(m.reason, Catch::Matchers::Contains("cannot transfer the weights of '/c5/Conv'") &&
                           Catch::Matchers::Contains("not a constant"));
}
