// Repair's core: the ridge solve, the conv patches and their sampling, a layer's fit, and new
// weights written into a model through the Rewriter.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "converted.h"
#include "core/onnx/attributes.h"
#include "core/onnx/model_io.h"
#include "core/onnx/tensor_values.h"
#include "core/onnx/validate.h"
#include "core/repair/fit_layer.h"
#include "core/repair/parallel.h"
#include "core/repair/set_weights.h"
#include "support.h"

using namespace lattice;
using namespace lattice::repair;
using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

namespace {

std::vector<double> random_values(size_t n, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> out(n);
  for (auto& v : out) v = dist(gen);
  return out;
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  auto d = random_values(n, seed);
  return {d.begin(), d.end()};
}

// y = x W + b for S rows.
std::vector<double> linear(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                           size_t rows, size_t p, size_t m) {
  std::vector<double> y(rows * m);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t k = 0; k < m; ++k) {
      double s = b[k];
      for (size_t i = 0; i < p; ++i) s += x[r * p + i] * w[i * m + k];
      y[r * m + k] = s;
    }
  }
  return y;
}

double max_abs_diff(std::span<const double> a, std::span<const double> b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

template <typename T>
bool all_finite(const std::vector<T>& v) {
  return std::all_of(v.begin(), v.end(), [](T x) { return std::isfinite(x); });
}

// A 2-D convolution straight from its definition, in double: the reference the fits must recover.
struct Conv {
  int64_t c, m, kh, kw, group;
  std::vector<int64_t> strides{1, 1}, pads{0, 0, 0, 0}, dilations{1, 1};
  std::vector<float> weights, bias;

  int64_t out_size(int64_t in, int axis) const {
    int64_t extent = ((axis ? kw : kh) - 1) * dilations[axis] + 1;
    return (in + pads[axis] + pads[axis + 2] - extent) / strides[axis] + 1;
  }
  std::vector<float> run(const std::vector<float>& x, int64_t n, int64_t h, int64_t w) const {
    int64_t ho = out_size(h, 0), wo = out_size(w, 1), cg = c / group, mg = m / group;
    std::vector<float> y(static_cast<size_t>(n * m * ho * wo));
    for (int64_t b = 0; b < n; ++b)
      for (int64_t o = 0; o < m; ++o)
        for (int64_t oy = 0; oy < ho; ++oy)
          for (int64_t ox = 0; ox < wo; ++ox) {
            double s = bias.empty() ? 0.0 : bias[static_cast<size_t>(o)];
            int64_t g = o / mg;
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t ky = 0; ky < kh; ++ky)
                for (int64_t kx = 0; kx < kw; ++kx) {
                  int64_t iy = oy * strides[0] - pads[0] + ky * dilations[0];
                  int64_t ix = ox * strides[1] - pads[1] + kx * dilations[1];
                  if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                  double xv = x[static_cast<size_t>(((b * c + g * cg + ci) * h + iy) * w + ix)];
                  s += xv * weights[static_cast<size_t>(((o * cg + ci) * kh + ky) * kw + kx)];
                }
            y[static_cast<size_t>(((b * m + o) * ho + oy) * wo + ox)] = static_cast<float>(s);
          }
    return y;
  }
  LayerSpec spec() const {
    LayerSpec s;
    s.op = "Conv";
    s.kernel_shape = {kh, kw};
    s.strides = strides;
    s.pads = pads;
    s.dilations = dilations;
    s.group = group;
    s.weight_shape = {m, c / group, kh, kw};
    return s;
  }
};

struct ConvCase {
  Conv conv;
  std::vector<float> x, y;
  FitRequest request;
};

// Random input [n, c, h, w], its target by `conv`, and the request to fit it with ridge 0.
ConvCase conv_case(Conv conv, int64_t n, int64_t h, int64_t w, uint32_t seed) {
  ConvCase cc{std::move(conv), {}, {}, {}};
  auto& k = cc.conv;
  k.weights = random_floats(static_cast<size_t>(k.m * (k.c / k.group) * k.kh * k.kw), seed + 1);
  k.bias = random_floats(static_cast<size_t>(k.m), seed + 2);
  cc.x = random_floats(static_cast<size_t>(n * k.c * h * w), seed);
  cc.y = k.run(cc.x, n, h, w);
  cc.request.spec = k.spec();
  cc.request.input = cc.x;
  cc.request.input_dims = {n, k.c, h, w};
  cc.request.target = cc.y;
  cc.request.target_dims = {n, k.m, k.out_size(h, 0), k.out_size(w, 1)};
  cc.request.ridge = 0;
  return cc;
}

void require_recovers(const ConvCase& cc, const LayerFit& fit, double tolerance = 1e-4) {
  REQUIRE(fit.weights.size() == cc.conv.weights.size());
  for (size_t i = 0; i < fit.weights.size(); ++i) REQUIRE(std::abs(fit.weights[i] - cc.conv.weights[i]) < tolerance);
  for (size_t i = 0; i < fit.bias.size(); ++i) REQUIRE(std::abs(fit.bias[i] - cc.conv.bias[i]) < tolerance);
  REQUIRE(fit.residual_after < 1e-4);
}

}  // namespace

TEST_CASE("ridge 0 recovers the weights and bias of a linear map", "[repair]") {
  size_t rows = 300, p = 7, m = 3;
  auto x = random_values(rows * p, 1);
  auto w = random_values(p * m, 2), b = random_values(m, 3, 5, 9);
  auto y = linear(x, w, b, rows, p, m);
  auto fit = ridge_fit(x, y, rows, p, m, 0);
  REQUIRE(fit.ok());
  REQUIRE(max_abs_diff(fit->weights, w) < 1e-9);
  REQUIRE(max_abs_diff(fit->bias, b) < 1e-9);
  REQUIRE(fit->residual < 1e-6);
  REQUIRE(fit->lambda == 0);
}

TEST_CASE("ridge rows may come in any number of blocks, float or double", "[repair]") {
  size_t rows = NormalEquations::kBlockRows * 2 + 17, p = 4, m = 2;
  auto x = random_values(rows * p, 4);
  auto w = random_values(p * m, 5), b = random_values(m, 6);
  auto y = linear(x, w, b, rows, p, m);
  std::vector<float> xf(x.begin(), x.end()), yf(y.begin(), y.end());
  NormalEquations eq(p, m);
  eq.add(std::span(xf).first(5 * p), std::span(yf).first(5 * m), 5);
  eq.add(std::span(xf).subspan(5 * p), std::span(yf).subspan(5 * m), rows - 5);
  REQUIRE(eq.rows() == rows);
  auto fit = eq.solve(0);
  REQUIRE(fit.ok());
  REQUIRE(max_abs_diff(fit->weights, w) < 1e-5);  // the rows were rounded to float
}

TEST_CASE("the ridge penalty is relative to the features' scale and leaves the bias alone", "[repair]") {
  size_t rows = 50, p = 3, m = 2;
  auto x = random_values(rows * p, 7);
  auto w = random_values(p * m, 8), b = std::vector<double>{100, -40};
  auto noise = random_values(rows * m, 9, -0.1, 0.1);
  auto y = linear(x, w, b, rows, p, m);
  for (size_t i = 0; i < y.size(); ++i) y[i] += noise[i];
  auto fit = ridge_fit(x, y, rows, p, m, 1e-3);
  REQUIRE(fit.ok());
  // The same inputs a thousand times larger: weights a thousand times smaller, the same penalty.
  std::vector<double> big(x);
  for (auto& v : big) v *= 1000;
  auto scaled = ridge_fit(big, y, rows, p, m, 1e-3);
  REQUIRE(scaled.ok());
  for (size_t i = 0; i < w.size(); ++i) REQUIRE(scaled->weights[i] * 1000 == Approx(fit->weights[i]).epsilon(1e-9));
  REQUIRE(max_abs_diff(scaled->bias, fit->bias) < 1e-9);
  // A huge penalty takes the weights to zero, and the bias to the mean target, not to zero.
  auto heavy = ridge_fit(x, y, rows, p, m, 1e9);
  REQUIRE(heavy.ok());
  REQUIRE(max_abs_diff(heavy->weights, std::vector<double>(p * m, 0.0)) < 1e-6);
  for (size_t k = 0; k < m; ++k) {
    double mean = 0;
    for (size_t r = 0; r < rows; ++r) mean += y[r * m + k] / static_cast<double>(rows);
    REQUIRE(heavy->bias[k] == Approx(mean).epsilon(1e-6));
  }
  // The default penalty moves a well-conditioned fit very little.
  auto exact = ridge_fit(x, y, rows, p, m, 0);
  REQUIRE(exact.ok());
  REQUIRE(max_abs_diff(fit->weights, exact->weights) < 1e-2);
  REQUIRE(fit->weights != exact->weights);
}

TEST_CASE("rank-deficient and tiny sets give finite, bounded fits", "[repair]") {
  size_t p = 4, m = 2;
  SECTION("one sample: zero weights, the sample as bias") {
    std::vector<double> x{1, 2, 3, 4}, y{5, -6};
    for (double ridge : {0.0, 1e-3}) {
      auto fit = ridge_fit(x, y, 1, p, m, ridge);
      REQUIRE(fit.ok());
      REQUIRE(max_abs_diff(fit->weights, std::vector<double>(p * m, 0.0)) == 0);
      REQUIRE(fit->bias == std::vector<double>{5, -6});
      REQUIRE(fit->residual == 0);
    }
  }
  SECTION("all-zero input: zero weights, the mean target as bias") {
    std::vector<double> x(10 * p, 0.0), y;
    for (int r = 0; r < 10; ++r) y.insert(y.end(), {static_cast<double>(r), 1.0});
    auto fit = ridge_fit(x, y, 10, p, m, 1e-3);
    REQUIRE(fit.ok());
    REQUIRE(max_abs_diff(fit->weights, std::vector<double>(p * m, 0.0)) == 0);
    REQUIRE(fit->bias[0] == Approx(4.5));
    REQUIRE(fit->bias[1] == Approx(1.0));
    REQUIRE(fit->residual == Approx(1.0));  // nothing of the target's spread is explained
  }
  SECTION("constant input rows") {
    std::vector<double> x, y;
    for (int r = 0; r < 10; ++r) {
      x.insert(x.end(), {0.5, 0.5, -2, 7});
      y.insert(y.end(), {static_cast<double>(r % 3), 2.0});
    }
    auto fit = ridge_fit(x, y, 10, p, m, 0);
    REQUIRE(fit.ok());
    REQUIRE(all_finite(fit->weights));
    REQUIRE(max_abs_diff(fit->weights, std::vector<double>(p * m, 0.0)) == 0);
    REQUIRE(fit->bias[1] == Approx(2.0));
  }
  SECTION("collinear features with ridge 0: the penalty rises until the solve holds") {
    std::vector<double> x, y;
    auto base = random_values(20, 10);
    for (int r = 0; r < 20; ++r) {
      double a = base[static_cast<size_t>(r)];
      x.insert(x.end(), {a, 2 * a, -a, 1.0});  // rank 1
      y.insert(y.end(), {3 * a, -a});
    }
    auto fit = ridge_fit(x, y, 20, p, m, 0);
    REQUIRE(fit.ok());
    REQUIRE(all_finite(fit->weights));
    REQUIRE(fit->lambda > 0);
    for (double v : fit->weights) REQUIRE(std::abs(v) < 10);
    REQUIRE(fit->residual < 1e-3);
  }
  SECTION("nearly collinear features with ridge 0: a pivot that lost ten digits raises the penalty") {
    std::vector<double> x, y;
    auto base = random_values(30, 13), wiggle = random_values(30, 14), noise = random_values(30, 15);
    for (size_t r = 0; r < 30; ++r) {
      x.insert(x.end(), {base[r], base[r] + 1e-7 * wiggle[r]});
      y.push_back(3 * base[r] + 0.1 * noise[r]);
    }
    auto fit = ridge_fit(x, y, 30, 2, 1, 0);
    REQUIRE(fit.ok());
    REQUIRE(fit->lambda > 0);
    for (double v : fit->weights) REQUIRE(std::abs(v) < 10);
  }
  SECTION("fewer rows than features with the default ridge") {
    auto x = random_values(3 * 40, 11), y = random_values(3 * 2, 12);
    auto fit = ridge_fit(x, y, 3, 40, 2);
    REQUIRE(fit.ok());
    REQUIRE(all_finite(fit->weights));
    for (double v : fit->weights) REQUIRE(std::abs(v) < 100);
  }
}

TEST_CASE("ridge refuses what it cannot fit", "[repair]") {
  std::vector<double> x{1, 2, 3, 4}, y{1, 2};
  auto none = NormalEquations(2, 1).solve();
  REQUIRE_FALSE(none.ok());
  REQUIRE_THAT(none.error().message, Contains("no rows"));
  std::vector<double> bad{1, std::nan(""), 3, 4};
  auto nan = ridge_fit(bad, y, 2, 2, 1);
  REQUIRE_FALSE(nan.ok());
  REQUIRE_THAT(nan.error().message, Contains("NaN or infinity"));
  std::vector<double> inf_y{1, std::numeric_limits<double>::infinity()};
  REQUIRE_THAT(ridge_fit(x, inf_y, 2, 2, 1).error().message, Contains("NaN or infinity"));
  REQUIRE_THAT(ridge_fit(x, y, 2, 2, 1, -1).error().message, Contains("ridge must be a finite number >= 0"));
  REQUIRE_THAT(ridge_fit(x, y, 2, 2, 1, std::nan("")).error().message, Contains("ridge must be"));
}

TEST_CASE("the residual before says how far the current weights are", "[repair]") {
  size_t rows = 40, p = 3, m = 2;
  auto x = random_values(rows * p, 13);
  auto w = random_values(p * m, 14), b = random_values(m, 15);
  auto y = linear(x, w, b, rows, p, m);
  NormalEquations eq(p, m);
  eq.add(x, y, rows);
  auto exact = eq.residual_of(w, b);
  REQUIRE(exact.ok());
  REQUIRE(*exact < 1e-6);
  auto zeros = eq.residual_of(std::vector<double>(p * m, 0.0), std::vector<double>(m, 0.0));
  REQUIRE(zeros.ok());
  REQUIRE(*zeros > 1.0);  // predicting 0 is worse than predicting the mean (nonzero b)
  // The same number from the definition.
  double sse = 0, spread = 0;
  for (size_t k = 0; k < m; ++k) {
    double mean = 0;
    for (size_t r = 0; r < rows; ++r) mean += y[r * m + k] / static_cast<double>(rows);
    for (size_t r = 0; r < rows; ++r) {
      sse += y[r * m + k] * y[r * m + k];
      spread += (y[r * m + k] - mean) * (y[r * m + k] - mean);
    }
  }
  REQUIRE(*zeros == Approx(std::sqrt(sse / spread)).epsilon(1e-9));
}

TEST_CASE("a fit on any number of threads is the same to the last bit", "[repair]") {
  // Large enough that every shared-out step runs on the pool: the sums (P^2 per block), the
  // factor's panels and the rows below them (640 features), the solves, and the error of given
  // weights (P^2 M). Fewer rows than features: the ridge holds the solve.
  const size_t rows = 300, p = 640, m = 48;
  const auto x = random_values(rows * p, 21), y = random_values(rows * m, 22);
  const auto w = random_values(p * m, 23, -0.1, 0.1), b = random_values(m, 24);
  struct Run {
    RidgeFit fit;
    double before;
  };
  auto run = [&](size_t threads) {
    set_thread_count(threads);
    NormalEquations eq(p, m);
    eq.add(x, y, rows);
    auto before = eq.squared_error_of(w, b);
    auto fit = eq.solve();
    set_thread_count(0);
    REQUIRE(before.ok());
    REQUIRE(fit.ok());
    return Run{std::move(fit).value(), *before};
  };
  const Run one = run(1);
  REQUIRE(one.fit.residual > 0);
  for (size_t threads : {2, 3, 4}) {
    CAPTURE(threads);
    const Run many = run(threads);
    REQUIRE(many.fit.weights == one.fit.weights);  // exact: no tolerance
    REQUIRE(many.fit.bias == one.fit.bias);
    REQUIRE(many.fit.lambda == one.fit.lambda);
    REQUIRE(many.fit.squared_error == one.fit.squared_error);
    REQUIRE(many.before == one.before);
  }
  // A layer's whole fit too, its second fit before a Relu included.
  Conv conv{32, 24, 3, 3, 1};
  conv.pads = {1, 1, 1, 1};
  auto cc = conv_case(conv, 2, 12, 12, 40);
  cc.request.ridge = 1e-3;
  cc.request.current_weights = std::span<const float>(cc.conv.weights);
  auto layer = [&](size_t threads) {
    set_thread_count(threads);
    auto first = fit_layer(cc.request);
    FitRequest again = cc.request;
    again.rectified = true;
    auto second = fit_layer(again);
    set_thread_count(0);
    REQUIRE(first.ok());
    REQUIRE(second.ok());
    return std::pair{std::move(first).value(), std::move(second).value()};
  };
  const auto [first1, second1] = layer(1);
  const auto [first3, second3] = layer(3);
  REQUIRE(first3.weights == first1.weights);
  REQUIRE(first3.bias == first1.bias);
  REQUIRE(first3.residual_before == first1.residual_before);
  REQUIRE(second3.weights == second1.weights);
  REQUIRE(second3.residual_after == second1.residual_after);
}

TEST_CASE("a second fit of the same rows reuses the kept sums of the features and fits as one from scratch", "[repair]") {
  // The first fit keeps its equations; the second, of the same input and rows with other targets
  // (another conv's output, as a fit through a pool has), gives what a fit from scratch gives, up
  // to the rounding of the targets' sums about another origin. Before a Relu too.
  Conv conv{16, 12, 3, 3, 1};
  conv.pads = {1, 1, 1, 1};
  auto cc = conv_case(conv, 2, 10, 10, 50);
  cc.request.ridge = 1e-3;
  cc.request.max_rows = 150;  // a sample of the positions, the same for both fits
  Conv other_conv = conv;
  auto other = conv_case(other_conv, 2, 10, 10, 60);
  for (bool rectified : {false, true}) {
    CAPTURE(rectified);
    FitRequest first = cc.request, second = cc.request;
    first.rectified = second.rectified = rectified;
    second.target = std::span<const float>(other.y);
    KeptEquations kept;
    REQUIRE(fit_layer(first, &kept).ok());
    REQUIRE(kept.equations.has_value());
    auto reused = fit_layer(second, &kept);
    auto fresh = fit_layer(second);
    REQUIRE(reused.ok());
    REQUIRE(fresh.ok());
    CHECK(reused->rows == fresh->rows);
    REQUIRE(reused->weights.size() == fresh->weights.size());
    float largest = 0, apart = 0;
    for (size_t i = 0; i < fresh->weights.size(); ++i) {
      largest = std::max(largest, std::abs(fresh->weights[i]));
      apart = std::max(apart, std::abs(reused->weights[i] - fresh->weights[i]));
    }
    CHECK(apart <= 1e-5f * largest);
    CHECK(reused->residual_after == Approx(fresh->residual_after).epsilon(1e-6));
  }
  SECTION("equations of other rows are not reused: the fit is one from scratch") {
    KeptEquations kept;
    FitRequest elsewhere = other.request;
    elsewhere.max_rows = 100;  // other positions
    REQUIRE(fit_layer(elsewhere, &kept).ok());
    auto after_other = fit_layer(cc.request, &kept);
    auto fresh = fit_layer(cc.request);
    REQUIRE(after_other.ok());
    REQUIRE(fresh.ok());
    CHECK(after_other->weights == fresh->weights);  // exact
    CHECK(after_other->bias == fresh->bias);
  }
  SECTION("a fit that fails keeps nothing") {
    KeptEquations kept;
    REQUIRE(fit_layer(cc.request, &kept).ok());
    FitRequest broken = cc.request;
    std::vector<float> nan_target(other.y.size(), std::nanf(""));
    broken.target = std::span<const float>(nan_target);
    REQUIRE_FALSE(fit_layer(broken, &kept).ok());
    CHECK_FALSE(kept.equations.has_value());
  }
}

TEST_CASE("positions are all taken when they fit, else a seeded sample", "[repair]") {
  auto all = sample_positions(10, 10, 1);
  REQUIRE(all == std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  REQUIRE(sample_positions(5, 16384, 3).size() == 5);
  auto a = sample_positions(100000, 1000, 7), b = sample_positions(100000, 1000, 7), c = sample_positions(100000, 1000, 8);
  REQUIRE(a.size() == 1000);
  REQUIRE(a == b);
  REQUIRE(a != c);
  REQUIRE(std::is_sorted(a.begin(), a.end()));
  REQUIRE(std::adjacent_find(a.begin(), a.end()) == a.end());
  // Spread over the whole range, not the first positions.
  REQUIRE(a.front() < 1000);
  REQUIRE(a.back() > 99000);
  size_t low = static_cast<size_t>(std::count_if(a.begin(), a.end(), [](uint64_t v) { return v < 50000; }));
  REQUIRE(low > 400);
  REQUIRE(low < 600);
}

TEST_CASE("a Conv fit recovers the conv that made its target", "[repair]") {
  SECTION("stride 2, asymmetric pads, dilation 2, 2 groups") {
    Conv conv{4, 6, 3, 3, 2};
    conv.strides = {2, 2};
    conv.pads = {1, 0, 2, 1};
    conv.dilations = {2, 2};
    auto cc = conv_case(conv, 3, 9, 11, 20);
    auto fit = fit_layer(cc.request);
    REQUIRE(fit.ok());
    REQUIRE(fit->rows == 3 * 4 * 4);
    require_recovers(cc, *fit);
    REQUIRE_FALSE(fit->residual_before.has_value());
  }
  SECTION("depthwise, pads 1") {
    Conv conv{5, 5, 3, 3, 5};
    conv.pads = {1, 1, 1, 1};
    auto cc = conv_case(conv, 2, 6, 7, 30);
    auto fit = fit_layer(cc.request);
    REQUIRE(fit.ok());
    require_recovers(cc, *fit);
  }
  SECTION("a non-square kernel, stride 1 by 2") {
    Conv conv{3, 4, 2, 3, 1};
    conv.strides = {1, 2};
    conv.pads = {0, 1, 1, 0};
    auto cc = conv_case(conv, 2, 7, 9, 40);
    auto fit = fit_layer(cc.request);
    REQUIRE(fit.ok());
    require_recovers(cc, *fit);
  }
  SECTION("auto_pad SAME_UPPER and SAME_LOWER at stride 2") {
    for (std::string mode : {"SAME_UPPER", "SAME_LOWER"}) {
      Conv conv{2, 3, 4, 4, 1};
      conv.strides = {2, 2};
      // SAME at stride 2 on 8 x 9: out 4 x 5, total pads 2 and 3; UPPER puts the odd one at the end.
      conv.pads = mode == "SAME_UPPER" ? std::vector<int64_t>{1, 1, 1, 2} : std::vector<int64_t>{1, 2, 1, 1};
      auto cc = conv_case(conv, 3, 8, 9, 50);
      cc.request.spec.pads = {};
      cc.request.spec.auto_pad = mode;
      REQUIRE(cc.request.target_dims == std::vector<int64_t>{3, 3, 4, 5});
      auto fit = fit_layer(cc.request);
      REQUIRE(fit.ok());
      require_recovers(cc, *fit);
    }
  }
  SECTION("sampled positions recover it too, the same ones for the same seed") {
    Conv conv{2, 3, 3, 3, 1};
    conv.pads = {1, 1, 1, 1};
    auto cc = conv_case(conv, 4, 10, 10, 60);
    cc.request.max_rows = 60;
    cc.request.seed = 5;
    auto fit = fit_layer(cc.request);
    REQUIRE(fit.ok());
    REQUIRE(fit->rows == 60);
    require_recovers(cc, *fit);
    // With noise on the target, other positions give (slightly) other weights.
    for (size_t i = 0; i < cc.y.size(); ++i) cc.y[i] += 0.05f * static_cast<float>((i * 7919) % 13) - 0.3f;
    cc.request.target = cc.y;
    auto a = fit_layer(cc.request), b = fit_layer(cc.request);
    cc.request.seed = 6;
    auto c = fit_layer(cc.request);
    REQUIRE(a->weights == b->weights);
    REQUIRE(a->weights != c->weights);
  }
  SECTION("the residual before, with the current weights") {
    Conv conv{2, 2, 3, 3, 1};
    conv.pads = {1, 1, 1, 1};
    auto cc = conv_case(conv, 2, 5, 5, 70);
    cc.request.current_weights = std::span<const float>(cc.conv.weights);
    cc.request.current_bias = std::span<const float>(cc.conv.bias);
    auto exact = fit_layer(cc.request);
    REQUIRE(exact.ok());
    REQUIRE(*exact->residual_before < 1e-5);
    std::vector<float> zeros(cc.conv.weights.size(), 0.0f);
    cc.request.current_weights = std::span<const float>(zeros);
    cc.request.current_bias.reset();
    auto from_zero = fit_layer(cc.request);
    REQUIRE(from_zero.ok());
    REQUIRE(*from_zero->residual_before > 0.5);
    REQUIRE(from_zero->residual_after < 1e-4);
  }
}

TEST_CASE("a second fit of the same rows with other targets keeps the first's sums and gives a fresh fit's answer", "[repair]") {
  // 60 rows of 5 features, two sets of targets.
  const std::vector<double> x = random_values(60 * 5, 300), w = random_values(5 * 2, 301), b = random_values(2, 302);
  const std::vector<double> y = linear(x, w, b, 60, 5, 2);
  std::vector<double> other(y);
  for (size_t i = 0; i < other.size(); i += 2) other[i] = std::min(other[i], 0.0);
  NormalEquations eq(5, 2);
  eq.add(x, y, 60);
  auto first = eq.solve(1e-3);
  REQUIRE(first.ok());
  eq.retarget();
  eq.add(x, other, 60);
  auto reused = eq.solve(1e-3);
  auto fresh = ridge_fit(x, other, 60, 5, 2, 1e-3);
  REQUIRE(reused.ok());
  REQUIRE(fresh.ok());
  REQUIRE(max_abs_diff(reused->weights, fresh->weights) < 1e-12);
  REQUIRE(max_abs_diff(reused->bias, fresh->bias) < 1e-12);
  REQUIRE(reused->residual == Approx(fresh->residual).margin(1e-12));
  REQUIRE(max_abs_diff(reused->weights, first->weights) > 1e-3);
  // A second fit must add the same rows.
  NormalEquations short_of(2, 1);
  const std::vector<double> x2{1, 2, 3, 5, 4, 4}, y2{1, 2, 3};
  short_of.add(x2, y2, 3);
  REQUIRE(short_of.solve().ok());
  short_of.retarget();
  short_of.add(std::span(x2).first(4), std::span(y2).first(2), 2);
  REQUIRE_THAT(short_of.solve().error().message, Contains("given 2 rows where the first had 3"));
}

TEST_CASE("a rectified fit is fitted again on the targets a Relu lets through", "[repair]") {
  Conv conv{4, 6, 3, 3, 2};
  conv.pads = {1, 1, 1, 1};
  auto cc = conv_case(conv, 3, 7, 7, 400);
  // A target no conv gives exactly: what a Relu then a shift make of it, a third at or below zero.
  for (auto& v : cc.y) v = std::max(v, 0.0f) - 0.3f;
  cc.request.target = cc.y;
  cc.request.ridge = 1e-3;
  cc.request.max_rows = 100;  // of 147 positions
  auto first = fit_layer(cc.request);
  REQUIRE(first.ok());
  // By hand: the first fit's output everywhere, each target at or below zero where that output is
  // too replaced by it, and a fit of those targets.
  Conv fitted = cc.conv;
  fitted.weights = first->weights;
  fitted.bias = first->bias;
  const std::vector<float> out = fitted.run(cc.x, 3, 7, 7);
  std::vector<float> relaxed(cc.y);
  size_t changed = 0;
  for (size_t i = 0; i < relaxed.size(); ++i) {
    if (relaxed[i] <= 0 && out[i] <= 0) relaxed[i] = out[i], ++changed;
  }
  REQUIRE(changed > 20);
  FitRequest by_hand = cc.request;
  by_hand.target = relaxed;
  auto second = fit_layer(by_hand);
  FitRequest rectified = cc.request;
  rectified.rectified = true;
  auto fit = fit_layer(rectified);
  REQUIRE(second.ok());
  REQUIRE(fit.ok());
  // The same up to the first output's rounding to float.
  for (size_t i = 0; i < fit->weights.size(); ++i) REQUIRE(fit->weights[i] == Approx(second->weights[i]).margin(1e-5));
  for (size_t i = 0; i < fit->bias.size(); ++i) REQUIRE(fit->bias[i] == Approx(second->bias[i]).margin(1e-5));
  REQUIRE(fit->residual_after == Approx(second->residual_after).margin(1e-6));
  REQUIRE(std::abs(fit->weights[0] - first->weights[0]) + std::abs(fit->bias[0] - first->bias[0]) > 1e-3);
}

TEST_CASE("a Conv fit on a constant or one-sample input is finite and bounded", "[repair]") {
  Conv conv{2, 3, 3, 3, 1};
  conv.pads = {1, 1, 1, 1};
  auto cc = conv_case(conv, 1, 4, 4, 80);
  cc.request.ridge = kDefaultRidge;
  SECTION("all zeros") {
    std::fill(cc.x.begin(), cc.x.end(), 0.0f);
    auto fit = fit_layer(cc.request);
    REQUIRE(fit.ok());
    REQUIRE(std::all_of(fit->weights.begin(), fit->weights.end(), [](float v) { return v == 0; }));
    REQUIRE(all_finite(fit->bias));
  }
  SECTION("a constant image (only the padding varies the patches)") {
    std::fill(cc.x.begin(), cc.x.end(), 0.7f);
    auto fit = fit_layer(cc.request);
    REQUIRE(fit.ok());
    REQUIRE(all_finite(fit->weights));
    for (float v : fit->weights) REQUIRE(std::abs(v) < 100);
  }
  SECTION("one position") {
    cc.request.max_rows = 1;
    auto fit = fit_layer(cc.request);
    REQUIRE(fit.ok());
    REQUIRE(fit->rows == 1);
    REQUIRE(std::all_of(fit->weights.begin(), fit->weights.end(), [](float v) { return v == 0; }));
    REQUIRE(fit->residual_after == 0);
  }
}

TEST_CASE("a Gemm fit recovers its weights with and without transB", "[repair]") {
  int64_t n = 30, k = 5, m = 3;
  auto x = random_floats(static_cast<size_t>(n * k), 90);
  auto w = random_floats(static_cast<size_t>(k * m), 91), b = random_floats(static_cast<size_t>(m), 92);
  for (bool trans_b : {false, true}) {
    std::vector<float> y(static_cast<size_t>(n * m));
    for (int64_t r = 0; r < n; ++r)
      for (int64_t o = 0; o < m; ++o) {
        double s = b[static_cast<size_t>(o)];
        for (int64_t i = 0; i < k; ++i) {
          size_t wi = static_cast<size_t>(trans_b ? o * k + i : i * m + o);
          s += static_cast<double>(x[static_cast<size_t>(r * k + i)]) * w[wi];
        }
        y[static_cast<size_t>(r * m + o)] = static_cast<float>(s);
      }
    FitRequest req;
    req.spec.op = "Gemm";
    req.spec.trans_b = trans_b;
    req.spec.weight_shape = trans_b ? std::vector<int64_t>{m, k} : std::vector<int64_t>{k, m};
    req.input = x;
    req.input_dims = {n, k};
    req.target = y;
    req.target_dims = {n, m};
    req.ridge = 0;
    auto fit = fit_layer(req);
    REQUIRE(fit.ok());
    REQUIRE(fit->rows == static_cast<uint64_t>(n));
    for (size_t i = 0; i < w.size(); ++i) REQUIRE(std::abs(fit->weights[i] - w[i]) < 1e-4);
    for (size_t i = 0; i < b.size(); ++i) REQUIRE(std::abs(fit->bias[i] - b[i]) < 1e-4);
  }
}

// The box-constrained least squares by another method: projected gradient descent on the data
// itself (the bias free), long enough to converge.
std::vector<double> projected_gradient(const std::vector<double>& x, const std::vector<double>& y, size_t rows, size_t p,
                                       const std::vector<double>& bounds) {
  std::vector<double> w(p, 0.0);
  double lipschitz = 0;  // a bound on the Hessian's largest eigenvalue: its trace, centred
  std::vector<double> mean(p, 0.0);
  double mean_y = 0;
  for (size_t r = 0; r < rows; ++r) {
    mean_y += y[r] / static_cast<double>(rows);
    for (size_t i = 0; i < p; ++i) mean[i] += x[r * p + i] / static_cast<double>(rows);
  }
  for (size_t r = 0; r < rows; ++r)
    for (size_t i = 0; i < p; ++i) lipschitz += (x[r * p + i] - mean[i]) * (x[r * p + i] - mean[i]);
  for (int step = 0; step < 200000; ++step) {
    std::vector<double> g(p, 0.0);
    for (size_t r = 0; r < rows; ++r) {
      double e = -(y[r] - mean_y);
      for (size_t i = 0; i < p; ++i) e += (x[r * p + i] - mean[i]) * w[i];
      for (size_t i = 0; i < p; ++i) g[i] += e * (x[r * p + i] - mean[i]);
    }
    for (size_t i = 0; i < p; ++i) w[i] = std::clamp(w[i] - g[i] / lipschitz, -bounds[i], bounds[i]);
  }
  return w;
}

TEST_CASE("a bounded fit is the best fit within its weight bounds, not the free fit clipped", "[repair]") {
  // Correlated features: holding one weight at its bound moves the others' best values.
  const size_t rows = 200, p = 4;
  auto base = random_values(rows, 95), noise = random_values(rows * p, 96);
  std::vector<double> x(rows * p);
  for (size_t r = 0; r < rows; ++r)
    for (size_t i = 0; i < p; ++i) x[r * p + i] = base[r] + 0.3 * noise[r * p + i];
  const std::vector<double> w = {2.0, -0.5, 0.25, 1.0}, b = {0.3};
  auto y = linear(x, w, b, rows, p, 1);
  const std::vector<double> bounds = {0.8, 0.6, std::numeric_limits<double>::infinity(), 0.7};
  NormalEquations eq(p, 1);
  eq.add(x, y, rows);
  auto fit = eq.solve(0);
  REQUIRE(fit.ok());
  const RidgeFit free = *fit;
  REQUIRE(eq.bound(*fit, bounds).ok());
  auto reference = projected_gradient(x, y, rows, p, bounds);
  for (size_t i = 0; i < p; ++i) {
    CHECK(std::abs(fit->weights[i]) <= bounds[i]);
    CHECK(std::abs(fit->weights[i] - reference[i]) < 1e-6);
  }
  // Not the free fit clipped: that one is worse, and its error is what bound() reports.
  std::vector<double> clipped(p);
  for (size_t i = 0; i < p; ++i) clipped[i] = std::clamp(free.weights[i], -bounds[i], bounds[i]);
  double bias_clipped = 0;
  for (size_t r = 0; r < rows; ++r) {
    double v = y[r];
    for (size_t i = 0; i < p; ++i) v -= x[r * p + i] * clipped[i];
    bias_clipped += v / rows;
  }
  auto sse_clipped = eq.squared_error_of(clipped, std::vector<double>{bias_clipped});
  auto sse_bounded = eq.squared_error_of(fit->weights, fit->bias);
  REQUIRE(sse_clipped.ok());
  REQUIRE(sse_bounded.ok());
  CHECK(*sse_bounded < 0.9 * *sse_clipped);
  CHECK_THAT(fit->squared_error, WithinRel(*sse_bounded, 1e-9));
  CHECK(fit->residual > free.residual);
  // Bounds the free fit keeps leave it as it is; a bound of another length or below 0 is refused.
  RidgeFit again = free;
  REQUIRE(eq.bound(again, std::vector<double>(p, 10.0)).ok());
  CHECK(again.weights == free.weights);
  CHECK_THAT(eq.bound(again, std::vector<double>(p + 1, 1.0)).error().message, Contains("5 weight bounds for a 4 x 1 fit"));
  CHECK_THAT(eq.bound(again, std::vector<double>{1, -1, 1, 1}).error().message, Contains("must be a number >= 0"));
}

TEST_CASE("a layer's fit takes weight bounds in the node's layout", "[repair]") {
  int64_t n = 40, k = 3, m = 2;
  auto x = random_floats(static_cast<size_t>(n * k), 97);
  std::vector<float> y(static_cast<size_t>(n * m));
  for (int64_t r = 0; r < n; ++r) {
    y[static_cast<size_t>(r * m)] = 3 * x[static_cast<size_t>(r * k)];
    y[static_cast<size_t>(r * m + 1)] = -x[static_cast<size_t>(r * k + 2)];
  }
  FitRequest req;
  req.spec.op = "Gemm";
  req.spec.trans_b = true;
  req.spec.weight_shape = {m, k};
  req.input = x;
  req.input_dims = {n, k};
  req.target = y;
  req.target_dims = {n, m};
  req.ridge = 0;
  // [M, K]: output 0 reads input 0 at most 0.5; output 1 is free.
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> bounds = {0.5f, 0.5f, 0.5f, inf, inf, inf};
  req.weight_bounds = std::span<const float>(bounds);
  auto fit = fit_layer(req);
  REQUIRE(fit.ok());
  CHECK(std::abs(fit->weights[0] - 0.5f) < 1e-6);
  CHECK(std::abs(fit->weights[5] + 1.0f) < 1e-4);
  std::vector<float> few(5);
  req.weight_bounds = std::span<const float>(few);
  CHECK_THAT(fit_layer(req).error().message, Contains("the weight bounds hold 5 values where the weight shape needs 6"));
}

TEST_CASE("a fit refuses layers and data it cannot handle, saying why", "[repair]") {
  Conv conv{4, 6, 3, 3, 2};
  conv.pads = {1, 1, 1, 1};
  auto cc = conv_case(conv, 1, 5, 5, 100);
  auto refused = [&](auto change) {
    FitRequest r = cc.request;
    change(r);
    auto fit = fit_layer(r);
    REQUIRE_FALSE(fit.ok());
    REQUIRE(fit.error().kind == ErrorKind::kOptions);
    return fit.error().message;
  };
  REQUIRE_THAT(refused([](FitRequest& r) { r.spec.op = "ConvTranspose"; }), Contains("only Conv and Gemm"));
  REQUIRE_THAT(refused([](FitRequest& r) {
                 r.spec.weight_shape = {6, 2, 3};
                 r.spec.kernel_shape = {3};
               }),
               Contains("only 2-D Conv can be refitted: the weight shape has 3 dims (1-D)"));
  REQUIRE_THAT(refused([](FitRequest& r) { r.input_dims = {1, 4, 5, 5, 5}; }),
               Contains("only 2-D Conv can be refitted: the input has 5 dims (3-D)"));
  REQUIRE_THAT(refused([](FitRequest& r) { r.spec.kernel_shape = {3, 3, 3}; }), Contains("kernel_shape [3, 3, 3] has 3 values"));
  REQUIRE_THAT(refused([](FitRequest& r) { r.spec.auto_pad = "SAME"; }), Contains("auto_pad 'SAME' is not one of"));
  REQUIRE_THAT(refused([](FitRequest& r) { r.spec.group = 3; }), Contains("group 3 must divide"));
  REQUIRE_THAT(refused([](FitRequest& r) { r.spec.weight_shape = {6, 4, 3, 3}; }),
               Contains("does not fit an input of 4 channels in 2 groups"));
  REQUIRE_THAT(refused([](FitRequest& r) { r.spec.kernel_shape = {5, 5}; }), Contains("kernel_shape [5, 5] is not the weight's"));
  REQUIRE_THAT(refused([](FitRequest& r) { r.spec.strides = {0, 1}; }), Contains("do not describe a 2-D window"));
  REQUIRE_THAT(refused([](FitRequest& r) { r.spec.pads = {-1, 0, 0, 0}; }), Contains("must not be negative"));
  REQUIRE_THAT(refused([](FitRequest& r) { r.target_dims = {1, 6, 4, 5}; }),
               Contains("the target's dims [1, 6, 4, 5] are not the Conv's output [1, 6, 5, 5]"));
  REQUIRE_THAT(refused([](FitRequest& r) { r.input_dims = {1, 4, 0, 5}; }), Contains("must all be positive"));
  REQUIRE_THAT(refused([](FitRequest& r) { r.input = r.input.first(10); }), Contains("the input holds 10 values where its dims need 100"));
  REQUIRE_THAT(refused([](FitRequest& r) { r.target = r.target.first(10); }), Contains("the target holds 10 values"));
  REQUIRE_THAT(refused([](FitRequest& r) { r.max_rows = 0; }), Contains("maxRows must be at least 1"));
  REQUIRE_THAT(refused([](FitRequest& r) { r.ridge = -0.5; }), Contains("ridge must be a finite number >= 0"));
  std::vector<float> short_weights(5), bias(6);
  REQUIRE_THAT(refused([&](FitRequest& r) { r.current_weights = std::span<const float>(short_weights); }),
               Contains("the current weights hold 5 values where the weight shape needs 108"));
  REQUIRE_THAT(refused([&](FitRequest& r) { r.current_bias = std::span<const float>(bias); }),
               Contains("a current bias needs the current weights too"));
  std::vector<float> nan_input(cc.x);
  nan_input[3] = std::numeric_limits<float>::quiet_NaN();
  REQUIRE_THAT(refused([&](FitRequest& r) { r.input = nan_input; }), Contains("holds NaN or infinity"));

  FitRequest gemm;
  gemm.spec.op = "Gemm";
  gemm.spec.weight_shape = {4, 2};
  gemm.input_dims = {3, 4};
  gemm.target_dims = {3, 2};
  std::vector<float> gx(12), gy(6);
  gemm.input = gx;
  gemm.target = gy;
  REQUIRE(fit_layer(gemm).ok());
  auto gemm_refused = [&](auto change) {
    FitRequest r = gemm;
    change(r);
    auto fit = fit_layer(r);
    REQUIRE_FALSE(fit.ok());
    return fit.error().message;
  };
  REQUIRE_THAT(gemm_refused([](FitRequest& r) { r.spec.alpha = 2; }), Contains("only alpha = beta = 1"));
  REQUIRE_THAT(gemm_refused([](FitRequest& r) { r.spec.beta = 0.5; }), Contains("only alpha = beta = 1"));
  REQUIRE_THAT(gemm_refused([](FitRequest& r) { r.spec.trans_a = true; }), Contains("transA = 1"));
  REQUIRE_THAT(gemm_refused([](FitRequest& r) { r.spec.trans_b = true; }), Contains("do not fit [N, K] x [K, M] -> [N, M]"));
  REQUIRE_THAT(gemm_refused([](FitRequest& r) { r.input_dims = {3, 4, 1}; }), Contains("must each be 2-D"));
}

TEST_CASE("fit_bytes states a fit's memory up front", "[repair]") {
  Conv conv{4, 6, 3, 3, 2};
  conv.pads = {1, 1, 1, 1};
  LayerSpec spec = conv.spec();
  auto bytes = fit_bytes(spec, {2, 4, 8, 8}, {2, 6, 8, 8});
  REQUIRE(bytes.ok());
  // P = 18, M/group = 3: the data, the normal equations, a group's current weights, 128 positions.
  uint64_t data = 4 * (2 * 4 * 64 + 2 * 6 * 64 + 2 * 108 + 2 * 6);
  // One group's sums at a time; a fit before a Relu computes its first fit's output at the 128
  // rows, from a block of patches; and the stacks of the fit's other threads.
  REQUIRE(*bytes == data + NormalEquations::bytes(18, 3) + 8 * 18 * 3 + 8 * 128 +
                        8 * (18 * 3 + NormalEquations::kBlockRows * 18 + 128 * 3) + thread_bytes());
  // Held to weight bounds: those, a group's of them in double, and each thread's descent.
  REQUIRE(fit_bytes(spec, {2, 4, 8, 8}, {2, 6, 8, 8}, kDefaultMaxRows, true).value() ==
          *bytes + 4 * 108 + 8 * 18 * 3 + 16 * 18 * thread_count());
  REQUIRE(thread_bytes() == (thread_count() - 1) * (uint64_t{2} << 20));
  REQUIRE(NormalEquations::bytes(18, 3) == 8 * (18 * 18 + 3 * 18 * 3 + 128 * 21 + 32 * (2 * 18 + 3) + 4 * 18 + 6 * 3));
  // Fewer rows allowed, fewer bytes; a layer that cannot be fitted is refused here already.
  REQUIRE(fit_bytes(spec, {2, 4, 8, 8}, {2, 6, 8, 8}, 16).value() == *bytes - 8 * (128 - 16) * 4);
  REQUIRE_FALSE(fit_bytes(spec, {2, 4, 8, 8}, {2, 6, 7, 8}).ok());
  // A 3x3 512 -> 512 layer: its normal equations are what dominates (P = 4608).
  LayerSpec big = spec;
  big.group = 1;
  big.weight_shape = {512, 512, 3, 3};
  auto large = fit_bytes(big, {1, 512, 14, 14}, {1, 512, 14, 14});
  REQUIRE(large.ok());
  REQUIRE(*large > uint64_t{4608} * 4608 * 8);
  REQUIRE(*large < uint64_t{300} << 20);
}

// --- new weights into the model ---------------------------------------------------------------

namespace {

// x[1, 2, 4, 4] -> conv_a (w_a, no bias) -> a; x -> conv_b (w_shared) -> b;
// x -> conv_c (w_shared, b_c) -> c; a flattened x -> gemm (g_w transB, g_b [1, 3]) -> g.
onnx::ModelProto layers_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto& g = *m.mutable_graph();
  g.set_name("layers");
  test::set_input_shape(*g.add_input(), "x", {1, 2, 4, 4});
  test::set_input_shape(*g.add_input(), "v", {1, 5});
  for (auto name : {"a", "b", "c", "g"}) g.add_output()->set_name(name);
  *g.add_initializer() = test::float_tensor("w_a", {3, 2, 3, 3}, random_floats(54, 200));
  *g.add_initializer() = test::float_tensor("w_shared", {3, 2, 3, 3}, random_floats(54, 201));
  *g.add_initializer() = test::float_tensor("b_c", {3}, {1, 2, 3});
  *g.add_initializer() = test::float_tensor("g_w", {3, 5}, random_floats(15, 202));
  *g.add_initializer() = test::float_tensor("g_b", {1, 3}, {4, 5, 6});
  for (auto [name, w, out] : {std::tuple{"conv_a", "w_a", "a"}, std::tuple{"conv_b", "w_shared", "b"}}) {
    auto& n = test::add_node(g, "Conv", name, {"x", w}, {out});
    attr::set_ints(n, "pads", {1, 1, 1, 1});
  }
  auto& c = test::add_node(g, "Conv", "conv_c", {"x", "w_shared", "b_c"}, {"c"});
  attr::set_ints(c, "pads", {1, 1, 1, 1});
  auto& gemm = test::add_node(g, "Gemm", "gemm", {"v", "g_w", "g_b"}, {"g"});
  attr::set_int(gemm, "transB", 1);
  test::add_node(g, "Relu", "relu", {"a"}, {"r"});
  g.add_output()->set_name("r");
  return m;
}

const onnx::TensorProto* find_initializer(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer()) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

const onnx::NodeProto& find_node(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& n : m.graph().node()) {
    if (n.name() == name) return n;
  }
  FAIL("no node " << name);
  throw std::logic_error("unreachable");
}

std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

onnx::ModelProto parsed(const std::string& bytes) {
  auto model = parse_model(test::bytes(bytes));
  REQUIRE(model.ok());
  REQUIRE(validate_model(*model).ok());
  return std::move(model).value();
}

Result<std::string> set_weights(const onnx::ModelProto& m, const std::vector<LayerWeights>& layers) {
  std::string bytes = m.SerializeAsString();
  return set_layer_weights(test::bytes(bytes), layers);
}

}  // namespace

TEST_CASE("new weights go into the model: in place, as new tensors where shared, with a new bias", "[repair]") {
  auto input = layers_model();
  auto wa = random_floats(54, 300), ba = std::vector<float>{0.5f, -0.5f, 0.25f};
  auto wb = random_floats(54, 301), bb = std::vector<float>{7, 8, 9};
  auto gw = random_floats(15, 302), gb = std::vector<float>{-1, -2, -3};
  auto out = set_weights(input, {{"conv_a", wa, ba}, {"conv_b", wb, bb}, {"gemm", gw, gb}});
  REQUIRE(out.ok());
  auto m = parsed(*out);

  // conv_a alone read w_a: replaced under its name, and it gains a bias.
  const auto& a = find_node(m, "conv_a");
  REQUIRE(a.input_size() == 3);
  REQUIRE(a.input(1) == "w_a");
  REQUIRE(test::initializer_values(m, "w_a") == widen(wa));
  REQUIRE(test::initializer_values(m, a.input(2)) == widen(ba));
  REQUIRE(find_initializer(m, a.input(2))->dims_size() == 1);
  // conv_b shared w_shared with conv_c: it reads a new tensor, conv_c keeps the old values.
  const auto& b = find_node(m, "conv_b");
  REQUIRE(b.input(1) == "w_shared_repaired");
  REQUIRE(test::initializer_values(m, "w_shared_repaired") == widen(wb));
  REQUIRE(test::initializer_values(m, b.input(2)) == widen(bb));
  REQUIRE(find_node(m, "conv_c").input(1) == "w_shared");
  REQUIRE(test::initializer_values(m, "w_shared") == widen(random_floats(54, 201)));
  REQUIRE(test::initializer_values(m, "b_c") == std::vector<double>{1, 2, 3});
  // The Gemm's bias keeps its [1, 3] shape and its name.
  const auto& gemm = find_node(m, "gemm");
  REQUIRE(gemm.input(1) == "g_w");
  REQUIRE(gemm.input(2) == "g_b");
  REQUIRE(test::initializer_values(m, "g_w") == widen(gw));
  REQUIRE(test::initializer_values(m, "g_b") == widen(gb));
  REQUIRE(find_initializer(m, "g_b")->dims_size() == 2);
  // Nothing left behind: the five tensors, a new weight and two new biases, each name once.
  std::set<std::string> names;
  for (const auto& t : m.graph().initializer()) names.insert(t.name());
  REQUIRE(m.graph().initializer_size() == 8);
  REQUIRE(names.size() == 8);
  REQUIRE(names.contains("conv_a.bias"));
  REQUIRE(m.graph().node_size() == 5);
  REQUIRE(find_node(m, "relu").input(0) == "a");
  // It converts again.
  test::convert_bytes(*out, Options{});
}

TEST_CASE("new weights keep the weight's element type and unnamed nodes' labels", "[repair]") {
  auto input = layers_model();
  auto& g = *input.mutable_graph();
  g.mutable_node(0)->clear_name();  // labelled Conv_0
  // A float16 weight is written back as float16.
  auto* w = g.mutable_initializer(0);
  std::vector<double> halves(54, 0.5);
  *w = make_tensor("w_a", onnx::TensorProto::FLOAT16, {3, 2, 3, 3}, halves);
  auto out = set_weights(input, {{"Conv_0", std::vector<float>(54, 1.5f), {1, 2, 3}}});
  REQUIRE(out.ok());
  auto m = parsed(*out);
  const auto* t = find_initializer(m, "w_a");
  REQUIRE(t != nullptr);
  REQUIRE(t->data_type() == onnx::TensorProto::FLOAT16);
  REQUIRE(test::initializer_values(m, "w_a") == std::vector<double>(54, 1.5));
  auto big = set_weights(input, {{"Conv_0", std::vector<float>(54, 70000.0f), {1, 2, 3}}});
  REQUIRE_FALSE(big.ok());
  REQUIRE_THAT(big.error().message, Contains("the new weights of 'Conv_0' holds 70000 at index 0, which float16 cannot hold"));
}

TEST_CASE("weights fitted through a BatchNormalization have its map taken out, channel by channel", "[repair]") {
  // conv_a -> bn -> a: scale gamma / sqrt(var + eps) and shift beta - mean * scale per channel,
  // the third channel's scale 0 (gamma 0): nothing of the conv reaches the output there.
  auto input = layers_model();
  auto& g = *input.mutable_graph();
  for (auto& n : *g.mutable_node()) {
    if (n.name() == "conv_a") n.set_output(0, "a_conv");
  }
  *g.add_initializer() = test::float_tensor("bn_gamma", {3}, {2, -0.5f, 0});
  *g.add_initializer() = test::float_tensor("bn_beta", {3}, {1, 2, 3});
  *g.add_initializer() = test::float_tensor("bn_mean", {3}, {0.5f, -1, 4});
  *g.add_initializer() = test::float_tensor("bn_var", {3}, {3, 0, 1});
  auto& bn = test::add_node(g, "BatchNormalization", "bn", {"a_conv", "bn_gamma", "bn_beta", "bn_mean", "bn_var"}, {"a"});
  attr::set_float(bn, "epsilon", 1.0f);
  // Moved after the conv, as a topological order wants.
  for (int i = g.node_size() - 1; i > 1; --i) g.mutable_node()->SwapElements(i, i - 1);
  const std::vector<double> scale{2 / std::sqrt(4.0), -0.5 / std::sqrt(1.0), 0};
  const std::vector<double> shift{1 - 0.5 * scale[0], 2 + 1 * scale[1], 3};

  auto wanted = random_floats(54, 500);
  std::vector<float> bias{0.25f, -1.5f, 7};
  LayerWeights layer{"conv_a", wanted, bias, true};
  auto out = set_weights(input, {layer});
  REQUIRE(out.ok());
  auto m = parsed(*out);
  auto w = test::initializer_values(m, "w_a");
  auto b = test::initializer_values(m, find_node(m, "conv_a").input(2));
  for (size_t i = 0; i < w.size(); ++i) {
    size_t c = i / 18;
    // What the conv and the BatchNormalization now compute together is what was fitted.
    if (scale[c] != 0) REQUIRE_THAT(w[i] * scale[c], WithinRel(static_cast<double>(wanted[i]), 1e-6));
    if (scale[c] == 0) REQUIRE(w[i] == 0);
  }
  for (size_t c = 0; c < 3; ++c) {
    if (scale[c] != 0) REQUIRE_THAT(b[c] * scale[c] + shift[c], WithinRel(static_cast<double>(bias[c]), 1e-6));
  }
  REQUIRE(b[2] == 0);

  // Without a BatchNormalization as the layer's only reader, nothing is written.
  layer.node = "conv_b";
  auto refused = set_weights(input, {layer});
  REQUIRE_FALSE(refused.ok());
  REQUIRE_THAT(refused.error().message,
               Contains("'conv_b' was fitted through a BatchNormalization, and its output is not read by one alone"));
}

TEST_CASE("new weights are refused with a reason, and nothing is written", "[repair]") {
  auto input = layers_model();
  auto w = random_floats(54, 400);
  std::vector<float> bias{1, 2, 3};
  auto refused = [&](const onnx::ModelProto& m, std::vector<LayerWeights> layers) {
    auto out = set_weights(m, layers);
    REQUIRE_FALSE(out.ok());
    return out.error().message;
  };
  REQUIRE_THAT(refused(input, {{"conv_z", w, bias}}), Contains("no node is labelled 'conv_z'"));
  REQUIRE_THAT(refused(input, {{"conv_a", w, bias}, {"conv_a", w, bias}}), Contains("node 'conv_a' is listed twice"));
  REQUIRE_THAT(refused(input, {{"relu", w, bias}}), Contains("node 'relu' is a Relu, not a Conv or Gemm"));
  REQUIRE_THAT(refused(input, {{"conv_a", std::vector<float>(53), bias}}),
               Contains("'conv_a' has a weight of 54 values ([3, 2, 3, 3]), and 53 new values were given"));
  REQUIRE_THAT(refused(input, {{"conv_a", w, {1, 2}}}), Contains("'conv_a' has 3 output channels, and a new bias of 2 values"));
  REQUIRE_THAT(refused(input, {{"gemm", std::vector<float>(15), {1, 2}}}), Contains("'gemm' has 3 output channels"));
  auto nan = w;
  nan[7] = std::numeric_limits<float>::quiet_NaN();
  REQUIRE_THAT(refused(input, {{"conv_b", w, bias}, {"conv_a", nan, bias}}),
               Contains("the new weights of 'conv_a' holds nan at index 7"));
  REQUIRE_THAT(refused(input, {{"conv_a", w, {1, std::numeric_limits<float>::infinity(), 3}}}),
               Contains("the new bias of 'conv_a' holds inf at index 1"));

  auto scaled = input;
  for (auto& n : *scaled.mutable_graph()->mutable_node()) {
    if (n.name() == "gemm") attr::set_float(n, "alpha", 2.0f);
  }
  REQUIRE_THAT(refused(scaled, {{"gemm", std::vector<float>(15), bias}}),
               Contains("Gemm 'gemm' has alpha 2 and beta 1: new weights are written for alpha = beta = 1 only"));

  auto fed = input;  // a weight fed at run time is not a constant
  test::set_input_shape(*fed.mutable_graph()->add_input(), "w_a", {3, 2, 3, 3});
  REQUIRE_THAT(refused(fed, {{"conv_a", w, bias}}), Contains("the weight 'w_a' of 'conv_a' is not a constant"));

  auto external = input;
  auto* t = external.mutable_graph()->mutable_initializer(0);
  t->clear_float_data();
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* entry = t->add_external_data();
  entry->set_key("location");
  entry->set_value("m.onnx.data");
  REQUIRE_THAT(refused(external, {{"conv_b", w, bias}}),
               Contains("keeps its data in an external file: new weights are written into a model that holds all its data"));

  std::string garbage = "not a model";
  auto bad = set_layer_weights(test::bytes(garbage), {});
  REQUIRE_FALSE(bad.ok());
}
