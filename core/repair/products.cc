#include "core/repair/products.h"

#include <algorithm>
#include <cstring>

#include "core/repair/parallel.h"

namespace lattice::repair {
namespace {

// Two doubles, wasm's f64x2 (with -msimd128) or SSE2's: element-wise arithmetic only, so both
// compilers give the same rounding without reassociation flags.
struct Lanes {
  typedef double Vector __attribute__((vector_size(16)));
  static constexpr size_t kCount = 2;
  static Vector load(const double* p) {
    Vector v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static double sum(Vector v) { return v[0] + v[1]; }
};

// Rows of b per pass (their values stay in cache while every row of a meets them), and values of
// each row per pass (so that those rows fit in cache however long they are).
constexpr size_t kRowsPerPass = 32;
constexpr size_t kDepth = 256;

// Threads get pieces of a's rows (add_dot_products): about this many each, of at least this many
// rows.
constexpr size_t kPiecesPerThread = 8;
constexpr size_t kMinPieceRows = 16;

// One dot product, summed as the tiles sum it: lane by lane, the lanes added, then the last value.
double dot(const double* a, const double* b, size_t n) {
  using L = Lanes;
  L::Vector s = {};
  size_t r = 0;
  for (; r + L::kCount <= n; r += L::kCount) s += L::load(a + r) * L::load(b + r);
  double t = L::sum(s);
  for (; r < n; ++r) t += a[r] * b[r];
  return t;
}

// out[i][j] = the dot products of rows a + i * lda (i < 4) and b + j * ldb (j < 2) over n values.
void tile(const double* a, size_t lda, const double* b, size_t ldb, size_t n, double out[4][2]) {
  using L = Lanes;
  L::Vector s00 = {}, s01 = {}, s10 = {}, s11 = {}, s20 = {}, s21 = {}, s30 = {}, s31 = {};
  const double *a0 = a, *a1 = a + lda, *a2 = a + 2 * lda, *a3 = a + 3 * lda, *b0 = b, *b1 = b + ldb;
  size_t r = 0;
  for (; r + L::kCount <= n; r += L::kCount) {
    auto x0 = L::load(a0 + r), x1 = L::load(a1 + r), x2 = L::load(a2 + r), x3 = L::load(a3 + r);
    auto y = L::load(b0 + r);
    s00 += x0 * y;
    s10 += x1 * y;
    s20 += x2 * y;
    s30 += x3 * y;
    y = L::load(b1 + r);
    s01 += x0 * y;
    s11 += x1 * y;
    s21 += x2 * y;
    s31 += x3 * y;
  }
  const L::Vector sums[4][2] = {{s00, s01}, {s10, s11}, {s20, s21}, {s30, s31}};
  for (size_t i = 0; i < 4; ++i) {
    for (size_t j = 0; j < 2; ++j) {
      double t = L::sum(sums[i][j]);
      for (size_t q = r; q < n; ++q) t += a[i * lda + q] * b[j * ldb + q];
      out[i][j] = t;
    }
  }
}

// The products of a's rows, on one thread.
void add_products_of(Rows a, Rows b, size_t n, double* c, size_t ldc, bool upper) {
  auto wanted = [&](size_t i, size_t j) { return !upper || b.first + j >= a.first + i; };
  for (size_t r0 = 0; r0 < n; r0 += kDepth) {
    const size_t depth = std::min(kDepth, n - r0);
    for (size_t j0 = 0; j0 < b.count; j0 += kRowsPerPass) {
      const size_t j1 = std::min(b.count, j0 + kRowsPerPass);
      for (size_t i = 0; i < a.count; i += 4) {
        const double* ai = a.data + i * a.stride + r0;
        for (size_t j = j0; j < j1; j += 2) {
          // A tile below the diagonal has nothing wanted: its first row meets its last column.
          if (!wanted(i, std::min(j + 1, j1 - 1))) continue;
          const double* bj = b.data + j * b.stride + r0;
          if (i + 4 <= a.count && j + 2 <= j1) {
            double out[4][2];
            tile(ai, a.stride, bj, b.stride, depth, out);
            for (size_t ii = 0; ii < 4; ++ii) {
              for (size_t jj = 0; jj < 2; ++jj) {
                if (wanted(i + ii, j + jj)) c[(i + ii) * ldc + j + jj] += out[ii][jj];
              }
            }
            continue;
          }
          // The edges: fewer than 4 rows of a or 2 of b left.
          for (size_t ii = i; ii < std::min(i + 4, a.count); ++ii) {
            for (size_t jj = j; jj < std::min(j + 2, j1); ++jj) {
              if (wanted(ii, jj)) c[ii * ldc + jj] += dot(a.data + ii * a.stride + r0, b.data + jj * b.stride + r0, depth);
            }
          }
        }
      }
    }
  }
}

}  // namespace

void add_dot_products(Rows a, Rows b, size_t n, double* c, size_t ldc, bool upper) {
  // A thread takes a piece of a's rows and fills those rows of c: every sum stays whole, on one
  // thread, in its order. About eight pieces a thread, so that a triangle's long first rows and short
  // last ones even out; a multiple of the tile's 4 rows, so that a piece adds no edge tiles.
  const size_t threads = thread_count();
  if (threads < 2 || a.count * b.count * n < kParallelWork) return add_products_of(a, b, n, c, ldc, upper);
  const size_t share = (a.count + threads * kPiecesPerThread - 1) / (threads * kPiecesPerThread);
  const size_t piece = std::max(kMinPieceRows, (share + 3) / 4 * 4);
  const size_t pieces = (a.count + piece - 1) / piece;
  if (pieces < 2) return add_products_of(a, b, n, c, ldc, upper);
  parallel_for(pieces, [&](size_t k) {
    const size_t i0 = k * piece;
    const Rows part{a.data + i0 * a.stride, std::min(piece, a.count - i0), a.stride, a.first + i0};
    add_products_of(part, b, n, c + i0 * ldc, ldc, upper);
  });
}

}  // namespace lattice::repair
