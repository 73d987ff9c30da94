#pragma once
// Ridge-regularised least squares with an unregularised bias, from normal equations accumulated
// a block of rows at a time: memory is O(P^2 + P*M) whatever the number of rows S, so a fit over
// thousands of sampled positions never holds its S x P patch matrix.
//
// For rows x (P features) and targets y (M outputs) it finds W (P x M) and b (M) minimising
//   sum ||x W + b - y||^2 + lambda ||W||^2,   lambda = ridge * mean(diag(Cxx)),
// where Cxx is the centred scatter matrix sum (x - mean x)(x - mean x)^T. The bias is left out of
// the penalty by centring (b = mean y - W^T mean x, exactly what an unpenalised bias column gives),
// so a layer's offset is never shrunk towards zero. lambda is relative to the average feature
// variance times the row count, so the same `ridge` means the same thing for activations of any
// scale and any number of rows: 1e-3 (the default) costs a well-conditioned fit about 0.1 % of its
// scale and keeps a rank-deficient one (one sample, constant images, a feature that never varies)
// bounded: ||W|| <= ||Cxy|| / lambda.
//
// Never NaN: the solve is a Cholesky factorisation of Cxx + lambda I in double; when it fails
// (ridge 0 on a singular set, or rounding) lambda grows tenfold and it is tried again. Features
// that never vary (all zeros, a constant input) make Cxx zero: W is zero and b the mean target.
// Non-finite rows are an error, not a fit.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/util/result.h"

namespace lattice::repair {

inline constexpr double kDefaultRidge = 1e-3;

struct RidgeFit {
  std::vector<double> weights;  // P x M, row-major: weights[p * M + m]
  std::vector<double> bias;     // M
  double lambda = 0;            // the penalty the solve used, after any increase
  // ||X W + b - Y|| / ||Y - mean Y|| over the rows fitted (0 for an exact fit; for a constant
  // target, which has no spread, 0 when fitted exactly and 1 otherwise).
  double residual = 0;
  double squared_error = 0;  // ||X W + b - Y||^2, what `residual` is the relative root of
};

// sqrt(squared_error / spread), with a constant target (spread 0) giving 0 for an exact fit, else 1.
double relative_residual(double squared_error, double spread);

class NormalEquations {
 public:
  // Rows are gathered kBlockRows at a time, transposed, then folded into the sums.
  static constexpr size_t kBlockRows = 128;

  NormalEquations(size_t columns, size_t outputs);

  // The next row to fill: feature p at x[p * stride], output m at y[m * stride]. Slots start as
  // garbage; every feature and output must be written before the next call (or solve).
  struct Row {
    double* x;
    double* y;
    size_t stride;
  };
  Row next_row();

  // `rows` rows, row-major: x is rows x P, y is rows x M.
  void add(std::span<const float> x, std::span<const float> y, size_t rows);
  void add(std::span<const double> x, std::span<const double> y, size_t rows);

  // Starts the targets' sums again and keeps the features' and their factorisation, for a second
  // fit of the same rows with other targets (a layer before a Relu): the rows added next must be
  // those added before, in the same order (solve refuses another number of them). The second
  // solve then costs O(rows P M + P^2 M), not O(rows P^2 + P^3).
  void retarget();

  uint64_t rows() const { return rows_ + pending_; }
  size_t columns() const { return p_; }
  size_t outputs() const { return m_; }

  // The fit; an error if there are no rows, the rows hold NaN or infinity, or `ridge` is negative
  // or not finite.
  Result<RidgeFit> solve(double ridge = kDefaultRidge);
  // A solved fit (this one's, same ridge) held to a box: |weights[p * M + m]| <= bounds[p * M + m]
  // (a bound of infinity leaves the weight free). The ridge objective is minimised over the box by
  // projected coordinate descent from the solve's weights clipped into it; each output is its
  // own problem, and one whose weights already lie in the box keeps them (they are its optimum).
  // The bias, the error and the residual follow the new weights. Errors: bounds of another
  // length, or a bound that is negative or NaN.
  Status bound(RidgeFit& fit, std::span<const double> bounds);
  // The relative residual (as RidgeFit::residual) of given weights (P x M) and bias (M) on the
  // rows added: how well the layer did before it was refitted.
  // Errors as solve's. Add every row first: once a residual or a fit is asked, the sums are centred.
  Result<double> residual_of(std::span<const double> weights, std::span<const double> bias);
  // The same as a sum of squares, sum ||x W + b - y||^2, and the target's ||Y - mean Y||^2
  // (after centring): what a fit over several groups adds up before dividing.
  Result<double> squared_error_of(std::span<const double> weights, std::span<const double> bias);
  double spread() const { return spread_; }

  // Bytes an instance holds for P columns and M outputs: what a caller budgets before a fit. The
  // threads its sums and solves are shared out to (core/repair/parallel.h) write their own entries
  // of the same buffers and hold nothing of their own.
  static uint64_t bytes(uint64_t columns, uint64_t outputs);

 private:
  void flush();         // folds the pending block into the sums
  Status centre();      // once, before a solve: the scatter matrices about the means
  bool factorise(double lambda);  // Cholesky of Cxx + lambda I into the lower triangle
  double centred_sse(std::span<const double> w) const;  // sum ||(x - mean) W - (y - mean)||^2
  void solve_factorised(std::vector<double>& weights) const;  // W from the factor and Cxy

  size_t p_, m_;
  // The first row added, subtracted from every row before it is summed: centring then does not
  // cancel when activations sit far from zero (the scatter is the same about any point).
  std::vector<double> x0_, y0_;
  bool have_origin_ = false;
  std::vector<double> block_x_, block_y_;  // P x kBlockRows and M x kBlockRows, feature-major
  size_t pending_ = 0;
  uint64_t rows_ = 0;
  // Upper triangle (i <= j) of sum x x^T, then of Cxx; the strict lower triangle holds the
  // Cholesky factor, whose diagonal is `chol_diag_`, so a failed factorisation can be retried.
  std::vector<double> xx_;
  std::vector<double> xy_;  // P x M: sum x y^T, then Cxy
  std::vector<double> sum_x_, sum_y_, sum_yy_;
  std::vector<double> chol_diag_;
  std::vector<double> mean_x_, mean_y_;  // set by centre()
  std::vector<double> shifted_mean_x_;   // mean_x_ - x0_, what centring subtracts
  bool centred_ = false;
  bool features_centred_ = false;  // xx_ holds Cxx (kept by retarget)
  bool retargeting_ = false;       // rows added again: only the targets' sums are made
  uint64_t feature_rows_ = 0;
  // The factorisation in xx_'s lower triangle, valid for `factor_ridge_` (after any increase,
  // `factor_lambda_`), reused by a solve after retarget.
  bool factorised_ = false;
  double factor_ridge_ = 0, factor_lambda_ = 0;
  double spread_ = 0;  // sum of diag(Cyy): ||Y - mean Y||^2
};

// The whole fit of rows held in memory (S x P and S x M, row-major): the tests' and small
// callers' shortcut over NormalEquations.
Result<RidgeFit> ridge_fit(std::span<const double> x, std::span<const double> y, size_t rows, size_t columns,
                           size_t outputs, double ridge = kDefaultRidge);

}  // namespace lattice::repair
