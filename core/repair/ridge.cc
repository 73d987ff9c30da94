#include "core/repair/ridge.h"

#include <algorithm>
#include <cmath>

#include "core/repair/parallel.h"
#include "core/repair/products.h"

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

// Columns of the Cholesky factor, and rows of the triangular solves, taken a panel at a time: the
// products with everything before the panel are one pass of add_dot_products over the factor (the
// factor of a 4,608-feature layer is 170 MB: one pass per column made the solve memory-bound).
constexpr size_t kPanel = 32;
// Rows below a panel per piece of work when its columns are shared out between threads (about
// 30,000 multiply-adds each).
constexpr size_t kFactorRows = 64;

// A Cholesky pivot below this fraction of its diagonal means the feature is (numerically) a
// combination of earlier ones: the penalty is raised rather than weights amplified past 1e5.
constexpr double kPivotFloor = 1e-10;
constexpr int kJitterTries = 24;

// A bounded fit's coordinate descent stops when no weight moved by more than this share of its
// largest bound in a sweep, or after this many sweeps (each O(P^2) per output out of bounds).
constexpr double kBoundTolerance = 1e-7;
constexpr int kBoundSweeps = 400;

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
  // xx_, xy_, the solve's W and its transpose; the blocks; the panels of the factorisation and
  // the solve; the per-feature and per-output vectors.
  return sizeof(double) * (columns * columns + 3 * columns * outputs + kBlockRows * (columns + outputs) +
                           kPanel * (2 * columns + outputs) + 4 * columns + 6 * outputs);
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
    if (!retargeting_) sum_x_[i] += s;
  }
  for (size_t i = 0; i < m_; ++i) {
    double* row = by + i * kBlockRows;
    double s = 0;
    for (size_t r = 0; r < n; ++r) s += (row[r] -= y0_[i]);
    sum_y_[i] += s;
    sum_yy_[i] += dot(row, row, n);
  }
  // The block's rows are features (or outputs), their values the block's rows: the scatter
  // matrix's upper triangle is the rows' dot products with each other, Cxy those with y's.
  const Rows x{bx, p_, kBlockRows, 0}, y{by, m_, kBlockRows, 0};
  if (!retargeting_) add_dot_products(x, x, n, xx_.data(), p_, true);
  add_dot_products(x, y, n, xy_.data(), m_, false);
  rows_ += n;
  pending_ = 0;
}

Status NormalEquations::centre() {
  if (centred_) return ok_status();
  flush();
  if (rows_ == 0) return options_error("no rows to fit");
  if (retargeting_ && rows_ != feature_rows_) {
    return options_error("a second fit of the same rows was given {} rows where the first had {}", rows_, feature_rows_);
  }
  double n = static_cast<double>(rows_);
  // NaN and infinity in any row reach the sums (squares keep them there): one check for all rows.
  auto finite = [](const std::vector<double>& v) { return std::all_of(v.begin(), v.end(), [](double d) { return std::isfinite(d); }); };
  bool ok = finite(sum_x_) && finite(sum_y_) && finite(sum_yy_);
  for (size_t i = 0; i < p_ && ok; ++i) ok = std::isfinite(xx_[i * p_ + i]);
  if (!ok) return options_error("the layer's input or target holds NaN or infinity");
  if (!features_centred_) {
    mean_x_.resize(p_);
    shifted_mean_x_.resize(p_);
    for (size_t i = 0; i < p_; ++i) shifted_mean_x_[i] = sum_x_[i] / n;
    const std::vector<double>& mx = shifted_mean_x_;
    for (size_t i = 0; i < p_; ++i) {
      double* row = xx_.data() + i * p_;
      for (size_t j = i; j < p_; ++j) row[j] -= n * mx[i] * mx[j];
      row[i] = std::max(row[i], 0.0);  // a variance, however it rounded
      mean_x_[i] = x0_[i] + mx[i];
    }
    features_centred_ = true;
    feature_rows_ = rows_;
  }
  mean_y_.resize(m_);
  std::vector<double> my(m_);
  for (size_t i = 0; i < m_; ++i) my[i] = sum_y_[i] / n;
  for (size_t i = 0; i < p_; ++i) {
    double* xy = xy_.data() + i * m_;
    for (size_t j = 0; j < m_; ++j) xy[j] -= n * shifted_mean_x_[i] * my[j];
  }
  spread_ = 0;
  for (size_t i = 0; i < m_; ++i) {
    spread_ += std::max(sum_yy_[i] - n * my[i] * my[i], 0.0);
    mean_y_[i] = y0_[i] + my[i];
  }
  centred_ = true;
  return ok_status();
}

void NormalEquations::retarget() {
  // Whatever the first fit made of the rows (an error comes back from the next solve).
  if (!centred_ && !centre()) return;
  std::fill(xy_.begin(), xy_.end(), 0.0);
  std::fill(sum_y_.begin(), sum_y_.end(), 0.0);
  std::fill(sum_yy_.begin(), sum_yy_.end(), 0.0);
  rows_ = 0;
  pending_ = 0;
  centred_ = false;
  retargeting_ = true;
}

bool NormalEquations::factorise(double lambda) {
  chol_diag_.assign(p_, 0.0);
  double* a = xx_.data();
  std::vector<double> before;  // rows i >= j0 against the panel's rows, over the factor's columns < j0
  for (size_t j0 = 0; j0 < p_; j0 += kPanel) {
    const size_t j1 = std::min(p_, j0 + kPanel), w = j1 - j0, below = p_ - j0;
    before.assign(below * w, 0.0);
    add_dot_products(Rows{a + j0 * p_, below, p_, 0}, Rows{a + j0 * p_, w, p_, 0}, j0, before.data(), w, false);
    // L[i][j] for j in the panel, from the row's earlier columns in the panel and row j's.
    auto column = [&](size_t i, size_t j) {
      double* li = a + i * p_;
      const double* lj = a + j * p_;
      li[j] = (a[j * p_ + i] - before[(i - j0) * w + (j - j0)] - dot(li + j0, lj + j0, j - j0)) / chol_diag_[j];
    };
    // The panel's own rows, column by column: each pivot needs the columns before it.
    for (size_t j = j0; j < j1; ++j) {
      const double* lj = a + j * p_;
      const double diag = a[j * p_ + j] + lambda;
      const double s = diag - before[(j - j0) * w + (j - j0)] - dot(lj + j0, lj + j0, j - j0);
      if (!(s > kPivotFloor * diag) || !std::isfinite(s)) return false;
      chol_diag_[j] = std::sqrt(s);
      for (size_t i = j + 1; i < j1; ++i) column(i, j);
    }
    // The rows below it need only the panel's rows: each is its own piece of work.
    const size_t rest = p_ - j1, piece = rest * w * w / 2 < kParallelWork ? std::max<size_t>(rest, 1) : kFactorRows;
    parallel_for((rest + piece - 1) / piece, [&](size_t k) {
      const size_t i0 = j1 + k * piece, i1 = std::min(p_, i0 + piece);
      for (size_t i = i0; i < i1; ++i) {
        for (size_t j = j0; j < j1; ++j) column(i, j);
      }
    });
  }
  return true;
}

double NormalEquations::centred_sse(std::span<const double> w) const {
  // tr(Cyy) - 2 tr(W^T Cxy) + tr(W^T Cxx W), Cxx read from its upper triangle.
  double cross = 0;
  for (size_t i = 0; i < p_ * m_; ++i) cross += w[i] * xy_[i];
  // Each output's sum on one thread, a thread's outputs in one range: a pass over Cxx (170 MB for
  // 4,608 features) per thread, not per output.
  std::vector<double> quad(m_, 0.0);
  const size_t threads = p_ * p_ * m_ / 2 < kParallelWork ? 1 : std::min(thread_count(), m_);
  parallel_for(threads, [&](size_t t) {
    const size_t k0 = m_ * t / threads, k1 = m_ * (t + 1) / threads;
    for (size_t i = 0; i < p_; ++i) {
      const double* wi = w.data() + i * m_;
      const double* row = xx_.data() + i * p_;
      for (size_t j = i; j < p_; ++j) {
        double c = (i == j ? 1.0 : 2.0) * row[j];
        if (c == 0) continue;
        const double* wj = w.data() + j * m_;
        for (size_t k = k0; k < k1; ++k) quad[k] += c * wi[k] * wj[k];
      }
    }
  });
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
    if (factorised_ && factor_ridge_ == ridge) {
      lambda = factor_lambda_;
      solved = true;
    }
    for (int attempt = 0; attempt < kJitterTries && !solved; ++attempt) {
      solved = factorise(lambda);
      if (!solved) lambda = std::max(lambda * 10, mean_diag * 1e-12);
    }
    factorised_ = solved;
    factor_ridge_ = ridge;
    factor_lambda_ = lambda;
    fit.lambda = lambda;
  }
  if (solved) {
    solve_factorised(fit.weights);
    if (!std::all_of(fit.weights.begin(), fit.weights.end(), [](double v) { return std::isfinite(v); })) {
      fit.weights.assign(p_ * m_, 0.0);  // cannot happen with a pivot floor; never hand NaN on
      solved = false;
    }
  }
  fit.bias.resize(m_);
  for (size_t k = 0; k < m_; ++k) {
    double b = mean_y_[k];
    for (size_t i = 0; i < p_; ++i) b -= mean_x_[i] * fit.weights[i * m_ + k];
    fit.bias[k] = b;
  }
  // (Cxx + lambda I) W = Cxy makes W^T Cxx W = W^T Cxy - lambda W^T W, so the error
  // tr(Cyy) - 2 tr(W^T Cxy) + tr(W^T Cxx W) needs no product with Cxx (P^2 M multiply-adds).
  double error = spread_;
  if (solved) {
    for (size_t i = 0; i < p_ * m_; ++i) error -= fit.weights[i] * (xy_[i] + fit.lambda * fit.weights[i]);
  }
  fit.squared_error = std::max(error, 0.0);
  fit.residual = relative_residual(fit.squared_error, spread_);
  return fit;
}

Status NormalEquations::bound(RidgeFit& fit, std::span<const double> bounds) {
  if (bounds.size() != p_ * m_) return options_error("{} weight bounds for a {} x {} fit", bounds.size(), p_, m_);
  if (!std::all_of(bounds.begin(), bounds.end(), [](double b) { return b >= 0; })) {
    return options_error("a weight bound must be a number >= 0");
  }
  if (auto s = centre(); !s) return s.error();
  // H = Cxx + lambda I, read from the upper triangle (the factor lives below it).
  const auto h = [&](size_t i, size_t j) { return xx_[std::min(i, j) * p_ + std::max(i, j)] + (i == j ? fit.lambda : 0.0); };
  parallel_for(m_, [&](size_t k) {
    bool inside = true;
    for (size_t i = 0; i < p_ && inside; ++i) inside = std::abs(fit.weights[i * m_ + k]) <= bounds[i * m_ + k];
    if (inside) return;
    std::vector<double> w(p_), g(p_);
    for (size_t i = 0; i < p_; ++i) w[i] = std::clamp(fit.weights[i * m_ + k], -bounds[i * m_ + k], bounds[i * m_ + k]);
    // g = H w - Cxy: the objective's gradient, kept as each coordinate moves.
    for (size_t i = 0; i < p_; ++i) {
      double v = -xy_[i * m_ + k];
      for (size_t j = 0; j < p_; ++j) v += h(i, j) * w[j];
      g[i] = v;
    }
    double scale = 0;
    for (size_t i = 0; i < p_; ++i) scale = std::max(scale, std::isfinite(bounds[i * m_ + k]) ? bounds[i * m_ + k] : std::abs(w[i]));
    for (int sweep = 0; sweep < kBoundSweeps; ++sweep) {
      double moved = 0;
      for (size_t i = 0; i < p_; ++i) {
        const double hii = h(i, i);
        if (!(hii > 0)) continue;
        const double next = std::clamp(w[i] - g[i] / hii, -bounds[i * m_ + k], bounds[i * m_ + k]), delta = next - w[i];
        if (delta == 0) continue;
        w[i] = next;
        for (size_t j = 0; j < p_; ++j) g[j] += delta * h(j, i);
        moved = std::max(moved, std::abs(delta));
      }
      if (moved <= kBoundTolerance * scale) break;
    }
    for (size_t i = 0; i < p_; ++i) fit.weights[i * m_ + k] = w[i];
  });
  for (size_t k = 0; k < m_; ++k) {
    double b = mean_y_[k];
    for (size_t i = 0; i < p_; ++i) b -= mean_x_[i] * fit.weights[i * m_ + k];
    fit.bias[k] = b;
  }
  // The bias puts every output at its mean, so the error is the centred one.
  fit.squared_error = std::max(centred_sse(fit.weights), 0.0);
  fit.residual = relative_residual(fit.squared_error, spread_);
  return ok_status();
}

void NormalEquations::solve_factorised(std::vector<double>& weights) const {
  // L L^T W = Cxy for all outputs at once, on W transposed (output k's weights in a row), so that
  // the sums over features are dot products of rows: forward, then back substitution, a panel of
  // features at a time.
  const size_t p = p_, m = m_;
  const double* a = xx_.data();
  std::vector<double> wt(m * p), done, panel;
  for (size_t i = 0; i < p; ++i) {
    for (size_t k = 0; k < m; ++k) wt[k * p + i] = xy_[i * m + k];
  }
  for (size_t i0 = 0; i0 < p; i0 += kPanel) {
    const size_t i1 = std::min(p, i0 + kPanel), w = i1 - i0;
    done.assign(m * w, 0.0);  // sum over j < i0 of L[i][j] Z[k][j]
    add_dot_products(Rows{wt.data(), m, p, 0}, Rows{a + i0 * p, w, p, 0}, i0, done.data(), w, false);
    for (size_t k = 0; k < m; ++k) {
      double* z = wt.data() + k * p;
      for (size_t i = i0; i < i1; ++i) {
        const double* li = a + i * p;
        double s = z[i] - done[k * w + (i - i0)];
        for (size_t j = i0; j < i; ++j) s -= li[j] * z[j];
        z[i] = s / chol_diag_[i];
      }
    }
  }
  for (size_t i1 = p; i1 > 0;) {
    const size_t i0 = i1 > kPanel ? i1 - kPanel : 0, w = i1 - i0, rest = p - i1;
    // The factor's columns i0 .. i1 below the panel, as rows: panel[ii][j - i1] = L[j][i0 + ii].
    panel.resize(w * rest);
    for (size_t j = i1; j < p; ++j) {
      for (size_t ii = 0; ii < w; ++ii) panel[ii * rest + (j - i1)] = a[j * p + i0 + ii];
    }
    done.assign(m * w, 0.0);  // sum over j >= i1 of L[j][i] W[k][j]
    add_dot_products(Rows{wt.data() + i1, m, p, 0}, Rows{panel.data(), w, rest, 0}, rest, done.data(), w, false);
    for (size_t k = 0; k < m; ++k) {
      double* z = wt.data() + k * p;
      for (size_t i = i1; i-- > i0;) {
        double s = z[i] - done[k * w + (i - i0)];
        for (size_t j = i + 1; j < i1; ++j) s -= a[j * p + i] * z[j];
        z[i] = s / chol_diag_[i];
      }
    }
    i1 = i0;
  }
  weights.resize(p * m);
  for (size_t i = 0; i < p; ++i) {
    for (size_t k = 0; k < m; ++k) weights[i * m + k] = wt[k * p + i];
  }
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
