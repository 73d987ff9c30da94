#pragma once
// The dot products the normal equations and their Cholesky factorisation are made of, a tile of
// them at a time: each value loaded feeds several sums (4 rows of A against 2 of B, the sums in
// registers), where a dot product at a time loads two values for every multiply-add; and a pass
// over rows that do not fit in cache serves many sums at once. On ResNet-50's largest refits that
// made the sums and the solve bound by arithmetic rather than memory.
//
// Every sum is over r in increasing order in two interleaved halves (even and odd r, wasm's f64x2
// lanes), added at the end: the rounding is the same in every build (g++ and Emscripten, with or
// without SIMD), so the native tests and the wasm module agree to the last bit. The rows of c are
// shared out between threads (core/repair/parallel.h), each sum computed whole by one of them, so
// the thread count changes no bit either.
#include <cstddef>

namespace lattice::repair {

struct Rows {
  const double* data;
  size_t count;   // rows
  size_t stride;  // between rows
  size_t first;   // index of the first row, for `upper`
};

// For i < a.count and j < b.count:  c[i * ldc + j] += sum over r < n of a_i[r] * b_j[r].
// With `upper`, only the pairs with b.first + j >= a.first + i (a scatter matrix's upper triangle,
// a and b being rows of the same matrix) are computed and stored.
void add_dot_products(Rows a, Rows b, size_t n, double* c, size_t ldc, bool upper);

}  // namespace lattice::repair
