// The incremental engine (index, shapes and names kept current, worklist driver) against the
// reference that rebuilds everything from the whole graph after each rewrite and rescans from
// the first node: same models, matches, ids, order, refusals and warnings, on every fixture and
// on random models built to meet every pattern, its refusals and unsorted graphs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/graph/graph_view.h"
#include "core/onnx/model_io.h"
#include "core/pattern/driver.h"
#include "core/report/report.h"
#include "support.h"

namespace {

using lattice::Options;

struct Outcome {
  bool ok = false;
  std::string error, model, report;
  int applied = 0, refused = 0;
};

std::string describe(const lattice::Report& report) {
  std::string s;
  for (const auto& m : report.matches) {
    s += m.id + (m.applied ? " applied" : " refused: " + m.reason) + " [";
    for (const auto& n : m.nodes) s += n + ",";
    s += "] -> [";
    for (const auto& n : m.new_nodes) s += n + ",";
    s += "]\n";
  }
  for (const auto& w : report.warnings) s += "warning " + w.match_id + " " + w.node + ": " + w.message + "\n";
  return s;
}

template <typename Run>
Outcome run(const onnx::ModelProto& input, const Options& options, Run run_phases) {
  onnx::ModelProto model = input;
  auto labels = lattice::GraphView::original_labels(model.graph());
  lattice::Report report;
  Outcome out;
  auto status = run_phases(model, options, labels, report);
  out.ok = static_cast<bool>(status);
  if (!status) out.error = status.error().message;
  auto bytes = lattice::serialize_model(model);
  REQUIRE(bytes);
  out.model = *bytes;
  out.report = describe(report);
  for (const auto& m : report.matches) (m.applied ? out.applied : out.refused) += 1;
  return out;
}

// Runs both engines; returns the incremental outcome after checking they agree.
Outcome same_as_reference(const onnx::ModelProto& model, const Options& options) {
  Outcome incremental = run(model, options, [](auto&... args) { return lattice::run_phases(args...); });
  Outcome reference = run(model, options, lattice::run_phases_rebuilding);
  CHECK(incremental.ok == reference.ok);
  CHECK(incremental.error == reference.error);
  CHECK(incremental.report == reference.report);
  CHECK(incremental.model == reference.model);  // byte for byte
  return incremental;
}

std::vector<Options> option_sets() {
  std::vector<Options> sets;
  for (const char* target : {"lattice", "lattice-advanced", "none"}) {
    Options o;
    o.target = target;
    sets.push_back(o);
  }
  Options no_fold;
  no_fold.fold_batch_norm = false;
  sets.push_back(no_fold);
  // FPQ: conv biases move into BatchNorms (new nodes between a conv and its readers), and with
  // folding asked for, the folds come first and their convs are left alone.
  for (bool fold : {false, true}) {
    Options fpq;
    fpq.fixed_point = lattice::FixedPoint::kFpq;
    fpq.fold_batch_norm = fold;
    sets.push_back(fpq);
  }
  return sets;
}

// Random models: a trunk of blocks that meet every pattern (folds, snaps, SPPF, stride-2
// chains, Pad -> Conv, global pools), the cases they refuse (Concat branches, shared outputs,
// non-constant BN parameters), unnamed nodes, value_info (right and stale), and, sometimes, the
// nodes shuffled out of topological order.
class RandomModel {
 public:
  explicit RandomModel(uint32_t seed) : rng_(seed) {}

  onnx::ModelProto build() {
    m_.set_ir_version(pick(4) == 0 ? 3 : 8);
    m_.add_opset_import()->set_version(pick(3) == 0 ? 11 : 13);
    g_.set_name("random");
    int64_t size = std::vector<int64_t>{8, 16, 17, 32}[pick(4)];
    test::set_input_shape(*g_.add_input(), "x", {1, kC, size, size});
    std::string x = "x";
    int blocks = 3 + pick(10);
    for (int b = 0; b < blocks; ++b) x = block(x);
    if (pick(2)) x = unary(pick(2) ? "GlobalAveragePool" : "Relu", x);
    if (pick(2)) {
      test::set_input_shape(*g_.add_output(), x, {1, kC, 1, 1});  // often stale on purpose
    } else {
      g_.add_output()->set_name(x);
    }
    if (m_.ir_version() < 4) {
      for (const auto& init : g_.initializer()) g_.add_input()->set_name(init.name());
    }
    if (pick(6) == 0) {
      auto& nodes = *g_.mutable_node();
      for (int i = nodes.size() - 1; i > 0; --i) nodes.SwapElements(i, static_cast<int>(pick(i + 1)));
    }
    return m_;
  }

 private:
  static constexpr int64_t kC = 4;

  uint32_t pick(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }
  std::string name(const std::string& base) { return pick(5) == 0 ? "" : base + std::to_string(count_++); }
  std::string tensor(const std::string& base) {
    std::string t = base + "_t" + std::to_string(count_++);
    if (pick(6) == 0) test::set_input_shape(*g_.add_value_info(), t, {1, kC, 1 + pick(40), 1 + pick(40)});
    return t;
  }
  std::string weight(std::vector<int64_t> dims) {
    std::string n = "w" + std::to_string(count_++);
    int64_t count = 1;
    for (auto d : dims) count *= d;
    std::vector<float> v;
    for (int64_t i = 0; i < count; ++i) v.push_back(static_cast<float>(pick(200)) / 100.0f - 1.0f);
    *g_.add_initializer() = test::float_tensor(n, dims, v);
    return n;
  }
  onnx::NodeProto& node(const std::string& op, std::vector<std::string> inputs, const std::string& out) {
    return test::add_node(g_, op, name(op), std::move(inputs), {out});
  }
  static void ints(onnx::NodeProto& n, const char* attr, std::vector<int64_t> v) {
    auto* a = n.add_attribute();
    a->set_name(attr);
    a->set_type(onnx::AttributeProto::INTS);
    for (auto x : v) a->add_ints(x);
  }
  std::string unary(const std::string& op, const std::string& x) {
    std::string y = tensor(op);
    node(op, {x}, y);
    return y;
  }
  std::string conv(const std::string& x, int64_t k, int64_t s, bool same) {
    std::string y = tensor("conv");
    std::vector<std::string> in{x, weight({kC, kC, k, k})};
    if (pick(2)) in.push_back(weight({kC}));
    auto& n = node("Conv", in, y);
    ints(n, "kernel_shape", {k, k});
    ints(n, "strides", {s, s});
    if (same && pick(3) == 0) {
      auto* a = n.add_attribute();
      a->set_name("auto_pad");
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s("SAME_UPPER");
    } else {
      int64_t p = same ? k / 2 : 0;
      ints(n, "pads", {p, p, p, p});
    }
    return y;
  }
  std::string batch_norm(const std::string& x) {
    std::string y = tensor("bn");
    std::vector<std::string> in{x};
    for (int i = 0; i < 4; ++i) in.push_back(weight({kC}));
    if (pick(8) == 0) {  // a parameter fed at run time: not foldable
      test::set_input_shape(*g_.add_input(), in[1] + "_fed", {kC});
      in[1] += "_fed";
    }
    node("BatchNormalization", in, y);
    return y;
  }
  std::string maxpool(const std::string& x, int64_t k, int64_t s, int64_t p) {
    std::string y = tensor("pool");
    auto& n = node("MaxPool", {x}, y);
    ints(n, "kernel_shape", {k, k});
    ints(n, "strides", {s, s});
    ints(n, "pads", {p, p, p, p});
    return y;
  }
  std::string block(const std::string& x) {
    switch (pick(8)) {
      case 0:
      case 1: {  // Conv -> [BN] -> [Relu] -> [MaxPool]
        int64_t k = std::vector<int64_t>{1, 3, 3, 5, 7}[pick(5)];
        std::string y = conv(x, k, 1 + pick(2), pick(4) != 0);
        if (pick(4)) y = batch_norm(y);
        if (pick(3)) y = unary("Relu", y);
        if (pick(3) == 0) y = maxpool(y, 2 + pick(2), 1 + pick(2), pick(2));
        return y;
      }
      case 2: {  // SPPF
        std::string a = maxpool(x, 5, 1, 2), b = maxpool(a, 5, 1, 2), c = maxpool(b, 5, 1, 2);
        std::string cat = tensor("cat");
        auto& n = node("Concat", {x, a, b, c}, cat);
        auto* axis = n.add_attribute();
        axis->set_name("axis");
        axis->set_type(onnx::AttributeProto::INT);
        axis->set_i(1);
        std::string y = tensor("conv");
        node("Conv", {cat, weight({kC, 4 * kC, 1, 1})}, y);
        return y;
      }
      case 3: {  // residual: x + Relu(BN(Conv(x)))
        std::string branch = unary("Relu", batch_norm(conv(x, 3, 1, true)));
        std::string y = tensor("add");
        node("Add", {x, branch}, y);
        return y;
      }
      case 4: {  // Inception-like: a stride-1 pool beside a Conv, joined by Concat (refused snaps)
        std::string pool = maxpool(x, 3, 1, 1), c = conv(x, 1, 1, true);
        std::string cat = tensor("cat");
        node("Concat", {pool, c}, cat);
        std::string y = tensor("conv");
        node("Conv", {cat, weight({kC, 2 * kC, 1, 1})}, y);
        return y;
      }
      case 5: {  // Pad -> Conv(3x3, stride 2, pads 0), or a Conv whose output is also read elsewhere
        if (pick(2)) {
          std::string padded = tensor("pad");
          if (m_.opset_import(0).version() >= 11) {
            std::string pads = "pads" + std::to_string(count_++);
            *g_.add_initializer() = test::int64_tensor(pads, {0, 0, 0, 0, 0, 0, 1, 1});
            node("Pad", {x, pads}, padded);
          } else {
            ints(node("Pad", {x}, padded), "pads", {0, 0, 0, 0, 0, 0, 1, 1});
          }
          return conv(padded, 3, 2, false);
        }
        std::string c = conv(x, 3, 1, true);
        std::string y = tensor("add");
        node("Add", {batch_norm(c), c}, y);
        return y;
      }
      case 6: {  // a stride-2 chain with and without a pool after it
        std::string y = unary("Relu", batch_norm(conv(x, 3, 2, true)));
        return pick(2) ? maxpool(y, 3, 2, 1) : y;
      }
      default:
        return pick(2) ? unary("Relu", x) : maxpool(x, 3, 1, 1);
    }
  }

  std::mt19937 rng_;
  int count_ = 0;
  onnx::ModelProto m_;
  onnx::GraphProto& g_ = *m_.mutable_graph();
};

}  // namespace

TEST_CASE("the incremental engine converts every fixture as the full-rebuild reference does") {
  for (const auto& name : test::fixture_names()) {
    auto parsed = lattice::parse_model(test::bytes(test::fixture(name)));
    if (!parsed) continue;  // fixtures of bad input: refused before the engine runs
    for (const auto& options : option_sets()) {
      INFO(name << " target " << options.target << (options.folds_batch_norm() ? "" : " --no-fold-bn")
           << " --fixed-point " << lattice::fixed_point_name(options.fixed_point));
      same_as_reference(*parsed, options);
    }
  }
}

TEST_CASE("the incremental engine matches the reference on random rewrite sequences") {
  int applied = 0, refused = 0, failed = 0;
  for (uint32_t seed = 0; seed < 300; ++seed) {
    onnx::ModelProto model = RandomModel(seed).build();
    for (const auto& options : option_sets()) {
      INFO("seed " << seed << " target " << options.target << (options.folds_batch_norm() ? "" : " --no-fold-bn")
           << " --fixed-point " << lattice::fixed_point_name(options.fixed_point));
      Outcome out = same_as_reference(model, options);
      applied += out.applied;
      refused += out.refused;
      failed += out.ok ? 0 : 1;
    }
  }
  // The models reach the engine's paths: many rewrites, and refusals among them.
  CHECK(applied > 2000);
  CHECK(refused > 100);
  WARN("applied " << applied << " refused " << refused << " failed runs " << failed);
}
