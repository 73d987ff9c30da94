#include "core/repair/ridge.h"

#include <algorithm>
#include <cmath>

namespace lattice::repair {
namespace {

// Four partial sums: the loops vectorise without reassociation flags, and the rounding is the
// same in every build (the native tests and the wasm module agree to the last bit).
double dot(const double* a, const double* b, size_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}

// Rows of the scatter matrix summed per tile of this many features, so the two tiles' rows of the
// block stay in cache while every pair of them is summed.
constexpr size_t kTile = 32;

// A Cholesky pivot below this fraction of its diagonal means the feature is (numerically) a
// combination of earlier ones: the penalty is raised rather than weights amplified past 1e5.
constexpr double kPivotFloor = 1e-10;
constexpr int kJitterTries = 24;

template <typename T>
void add_rows(NormalEquations& eq, std::span<const T> x, std::span<const T> y, size_t rows) {
  size_t p = eq.columns(), m = eq.outputs();
  for (size_t r = 0; r < rows; ++r) {
    auto row = eq.next_row();
    for (size_t i = 0; i < p; ++i) row.x[i * row.stride] = static_cast<double>(x[r * p + i]);
    for (size_t i = 0; i < m; ++i) row.y[i * row.stride] = static_cast<double>(y[r * m + i]);
  }
}

}  // namespace

NormalEquations::NormalEquations(size_t columns, size_t outputs)
    : p_(columns),
      m_(outputs),
      x0_(columns),
      y0_(outputs),
      block_x_(columns * kBlockRows),
      block_y_(outputs * kBlockRows),
      xx_(columns * columns),
      xy_(columns * outputs),
      sum_x_(columns),
      sum_y_(outputs),
      sum_yy_(outputs) {}

uint64_t NormalEquations::bytes(uint64_t columns, uint64_t outputs) {
  // xx_, xy_ and the solve's W; the blocks; the per-feature and per-output vectors.
  return sizeof(double) * (columns * columns + 2 * columns * outputs + kBlockRows * (columns + outputs) +
                           4 * columns + 6 * outputs);
}

NormalEquations::Row NormalEquations::next_row() {
  if (pending_ == kBlockRows) flush();
  size_t r = pending_++;
  return Row{block_x_.data() + r, block_y_.data() + r, kBlockRows};
}

void NormalEquations::add(std::span<const float> x, std::span<const float> y, size_t rows) { add_rows(*this, x, y, rows); }
void NormalEquations::add(std::span<const double> x, std::span<const double> y, size_t rows) { add_rows(*this, x, y, rows); }

void NormalEquations::flush() {
  size_t n = pending_;
  if (n == 0) return;
  double* bx = block_x_.data();
  double* by = block_y_.data();
  if (!have_origin_) {
    for (size_t i = 0; i < p_; ++i) x0_[i] = bx[i * kBlockRows];
    for (size_t i = 0; i < m_; ++i) y0_[i] = by[i * kBlockRows];
    have_origin_ = true;
  }
  for (size_t i = 0; i < p_; ++i) {
    double* row = bx + i * kBlockRows;
    double s = 0;
    for (size_t r = 0; r < n; ++r) s += (row[r] -= x0_[i]);
    sum_x_[i] += s;
  }
  for (size_t i = 0; i < m_; ++i) {
    double* row = by + i * kBlockRows;
    double s = 0;
    for (size_t r = 0; r < n; ++r) s += (row[r] -= y0_[i]);
    sum_y_[i] += s;
    sum_yy_[i] += dot(row, row, n);
  }
  for (size_t i0 = 0; i0 < p_; i0 += kTile) {
    size_t i1 = std::min(p_, i0 + kTile);
    for (size_t j0 = i0; j0 < p_; j0 += kTile) {
      size_t j1 = std::min(p_, j0 + kTile);
      for (size_t i = i0; i < i1; ++i) {
        const double* xi = bx + i * kBlockRows;
        double* out = xx_.data() + i * p_;
        for (size_t j = std::max(i, j0); j < j1; ++j) out[j] += dot(xi, bx + j * kBlockRows, n);
      }
    }
  }
  for (size_t i = 0; i < p_; ++i) {
    const double* xi = bx + i * kBlockRows;
    double* out = xy_.data() + i * m_;
    for (size_t j = 0; j < m_; ++j) out[j] += dot(xi, by + j * kBlockRows, n);
  }
  rows_ += n;
  pending_ = 0;
}

Status NormalEquations::centre() {
  if (centred_) return ok_status();
  flush();
  if (rows_ == 0) return options_error("no rows to fit");
  double n = static_cast<double>(rows_);
  // NaN and infinity in any row reach the sums (squares keep them there): one check for all rows.
  auto finite = [](const std::vector<double>& v) { return std::all_of(v.begin(), v.end(), [](double d) { return std::isfinite(d); }); };
  bool ok = finite(sum_x_) && finite(sum_y_) && finite(sum_yy_);
  for (size_t i = 0; i < p_ && ok; ++i) ok = std::isfinite(xx_[i * p_ + i]);
  if (!ok) return options_error("the layer's input or target holds NaN or infinity");
  mean_x_.resize(p_);
  mean_y_.resize(m_);
  std::vector<double> mx(p_), my(m_);
  for (size_t i = 0; i < p_; ++i) mx[i] = sum_x_[i] / n;
  for (size_t i = 0; i < m_; ++i) my[i] = sum_y_[i] / n;
  for (size_t i = 0; i < p_; ++i) {
    double* row = xx_.data() + i * p_;
    for (size_t j = i; j < p_; ++j) row[j] -= n * mx[i] * mx[j];
    row[i] = std::max(row[i], 0.0);  // a variance, however it rounded
    double* xy = xy_.data() + i * m_;
    for (size_t j = 0; j < m_; ++j) xy[j] -= n * mx[i] * my[j];
    mean_x_[i] = x0_[i] + mx[i];
  }
  spread_ = 0;
  for (size_t i = 0; i < m_; ++i) {
    spread_ += std::max(sum_yy_[i] - n * my[i] * my[i], 0.0);
    mean_y_[i] = y0_[i] + my[i];
  }
  // The blocks are not needed any more.
  block_x_ = {};
  block_y_ = {};
  centred_ = true;
  return ok_status();
}

bool NormalEquations::factorise(double lambda) {
  chol_diag_.assign(p_, 0.0);
  double* a = xx_.data();
  for (size_t j = 0; j < p_; ++j) {
    const double* lj = a + j * p_;
    double diag = a[j * p_ + j] + lambda;
    double s = diag - dot(lj, lj, j);
    if (!(s > kPivotFloor * diag) || !std::isfinite(s)) return false;
    double l = std::sqrt(s);
    chol_diag_[j] = l;
    for (size_t i = j + 1; i < p_; ++i) {
      double* li = a + i * p_;
      li[j] = (a[j * p_ + i] - dot(li, lj, j)) / l;
    }
  }
  return true;
}

double NormalEquations::centred_sse(std::span<const double> w) const {
  // tr(Cyy) - 2 tr(W^T Cxy) + tr(W^T Cxx W), Cxx read from its upper triangle.
  double cross = 0;
  for (size_t i = 0; i < p_ * m_; ++i) cross += w[i] * xy_[i];
  std::vector<double> quad(m_, 0.0);
  for (size_t i = 0; i < p_; ++i) {
    const double* wi = w.data() + i * m_;
    const double* row = xx_.data() + i * p_;
    for (size_t j = i; j < p_; ++j) {
      double c = (i == j ? 1.0 : 2.0) * row[j];
      if (c == 0) continue;
      const double* wj = w.data() + j * m_;
      for (size_t k = 0; k < m_; ++k) quad[k] += c * wi[k] * wj[k];
    }
  }
  double q = 0;
  for (double v : quad) q += v;
  return spread_ - 2 * cross + q;
}

double relative_residual(double squared_error, double spread) {
  if (spread > 0) return std::sqrt(squared_error / spread);
  return squared_error > 0 ? 1.0 : 0.0;
}

Result<double> NormalEquations::residual_of(std::span<const double> weights, std::span<const double> bias) {
  auto sse = squared_error_of(weights, bias);
  if (!sse) return sse.error();
  return relative_residual(*sse, spread_);
}

Result<double> NormalEquations::squared_error_of(std::span<const double> weights, std::span<const double> bias) {
  if (weights.size() != p_ * m_ || bias.size() != m_) {
    return options_error("weights of {} values and a bias of {} for a {} x {} fit", weights.size(), bias.size(), p_, m_);
  }
  if (auto s = centre(); !s) return s.error();
  // The centred error, plus the offset the bias leaves at the means, on every row.
  double offset = 0;
  for (size_t k = 0; k < m_; ++k) {
    double at_mean = bias[k] - mean_y_[k];
    for (size_t i = 0; i < p_; ++i) at_mean += mean_x_[i] * weights[i * m_ + k];
    offset += at_mean * at_mean;
  }
  // The sums' rounding can take an exact fit a hair below zero.
  double sse = std::max(centred_sse(weights) + static_cast<double>(rows_) * offset, 0.0);
  if (!std::isfinite(sse)) return options_error("the current weights give NaN or infinity on these rows");
  return sse;
}

Result<RidgeFit> NormalEquations::solve(double ridge) {
  if (!(ridge >= 0) || !std::isfinite(ridge)) return options_error("ridge must be a finite number >= 0, not {}", ridge);
  if (auto s = centre(); !s) return s.error();
  RidgeFit fit;
  fit.weights.assign(p_ * m_, 0.0);
  double trace = 0;
  for (size_t i = 0; i < p_; ++i) trace += xx_[i * p_ + i];
  double mean_diag = p_ > 0 ? trace / static_cast<double>(p_) : 0;
  bool solved = false;
  // No feature varies (all zeros, one sample, a constant input): nothing to fit but the bias.
  if (mean_diag > 0 && std::isfinite(mean_diag)) {
    double lambda = ridge * mean_diag;
    for (int attempt = 0; attempt < kJitterTries && !solved; ++attempt) {
      solved = factorise(lambda);
      if (!solved) lambda = std::max(lambda * 10, mean_diag * 1e-12);
    }
    fit.lambda = lambda;
  }
  if (solved) {
    // L L^T W = Cxy for all outputs at once: forward, then back substitution, row by row of W.
    double* w = fit.weights.data();
    const double* a = xx_.data();
    for (size_t i = 0; i < p_; ++i) {
      double* wi = w + i * m_;
      const double* c = xy_.data() + i * m_;
      for (size_t k = 0; k < m_; ++k) wi[k] = c[k];
      for (size_t j = 0; j < i; ++j) {
        double l = a[i * p_ + j];
        if (l == 0) continue;
        const double* wj = w + j * m_;
        for (size_t k = 0; k < m_; ++k) wi[k] -= l * wj[k];
      }
      for (size_t k = 0; k < m_; ++k) wi[k] /= chol_diag_[i];
    }
    for (size_t i = p_; i-- > 0;) {
      double* wi = w + i * m_;
      for (size_t j = i + 1; j < p_; ++j) {
        double l = a[j * p_ + i];
        if (l == 0) continue;
        const double* wj = w + j * m_;
        for (size_t k = 0; k < m_; ++k) wi[k] -= l * wj[k];
      }
      for (size_t k = 0; k < m_; ++k) wi[k] /= chol_diag_[i];
    }
    if (!std::all_of(fit.weights.begin(), fit.weights.end(), [](double v) { return std::isfinite(v); })) {
      fit.weights.assign(p_ * m_, 0.0);  // cannot happen with a pivot floor; never hand NaN on
    }
  }
  fit.bias.resize(m_);
  for (size_t k = 0; k < m_; ++k) {
    double b = mean_y_[k];
    for (size_t i = 0; i < p_; ++i) b -= mean_x_[i] * fit.weights[i * m_ + k];
    fit.bias[k] = b;
  }
  fit.squared_error = std::max(centred_sse(fit.weights), 0.0);
  fit.residual = relative_residual(fit.squared_error, spread_);
  return fit;
}

Result<RidgeFit> ridge_fit(std::span<const double> x, std::span<const double> y, size_t rows, size_t columns,
                           size_t outputs, double ridge) {
  if (x.size() != rows * columns || y.size() != rows * outputs) {
    return options_error("{} x values and {} y values for {} rows of {} features and {} outputs", x.size(), y.size(),
                         rows, columns, outputs);
  }
  NormalEquations eq(columns, outputs);
  eq.add(x, y, rows);
  return eq.solve(ridge);
}

}  // namespace lattice::repair
