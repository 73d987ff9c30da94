#include "core/repair/patches.h"

#include <algorithm>

#include "core/repair/products.h"

namespace lattice::repair {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The features of the row at output position `pos` of group `group`, written to x[i * stride]:
// a Conv's input patch [C/group, kh, kw] in the weight's order (zeros in the padding), a Gemm's
// input row.
void gather(const LayerGeometry& g, int64_t group, const float* in, uint64_t pos, double* x, size_t stride) {
  if (!g.conv) {
    const size_t k = static_cast<size_t>(g.columns);
    const float* row = in + static_cast<size_t>(pos) * k;
    for (size_t i = 0; i < k; ++i) x[i * stride] = row[i];
    return;
  }
  const Window& w = g.window;
  const int64_t kh = w.kernel[0], kw = w.kernel[1];
  const int64_t sh = w.strides[0], sw = w.strides[1], dh = w.dilations[0], dw = w.dilations[1];
  const int64_t top = w.pads[0], left = w.pads[1];
  const int64_t cg = g.channels / g.group, hw = g.height * g.width, out_hw = g.out_height * g.out_width;
  const int64_t n = static_cast<int64_t>(pos) / out_hw, rest = static_cast<int64_t>(pos) % out_hw;
  const int64_t oy = rest / g.out_width, ox = rest % g.out_width;
  const float* image = in + static_cast<size_t>((n * g.channels + group * cg) * hw);
  for (int64_t c = 0; c < cg; ++c) {
    const float* plane = image + static_cast<size_t>(c * hw);
    for (int64_t ky = 0; ky < kh; ++ky) {
      const int64_t iy = oy * sh - top + ky * dh;
      const bool row_inside = iy >= 0 && iy < g.height;
      for (int64_t kx = 0; kx < kw; ++kx) {
        const int64_t ix = ox * sw - left + kx * dw;
        *x = row_inside && ix >= 0 && ix < g.width ? static_cast<double>(plane[static_cast<size_t>(iy * g.width + ix)]) : 0.0;
        x += stride;
      }
    }
  }
}

// Where output channel m (of the group's M/group) of output position `pos` is in the target.
size_t target_index(const LayerGeometry& g, int64_t group, uint64_t pos, int64_t m) {
  if (!g.conv) return static_cast<size_t>(pos) * static_cast<size_t>(g.outputs) + static_cast<size_t>(m);
  const int64_t out_hw = g.out_height * g.out_width;
  const int64_t n = static_cast<int64_t>(pos) / out_hw, rest = static_cast<int64_t>(pos) % out_hw;
  return static_cast<size_t>((n * g.out_channels + group * g.outputs + m) * out_hw + rest);
}

}  // namespace

std::vector<uint64_t> sample_positions(uint64_t total, uint64_t count, uint64_t seed) {
  std::vector<uint64_t> out;
  if (count >= total) {
    out.resize(static_cast<size_t>(total));
    for (uint64_t t = 0; t < total; ++t) out[static_cast<size_t>(t)] = t;
    return out;
  }
  out.reserve(static_cast<size_t>(count));
  uint64_t state = seed;
  for (uint64_t t = 0; t < total && out.size() < count; ++t) {
    // u uniform in [0, 1) from the top 53 bits; position t is taken with probability
    // (still needed) / (still left), which gives every subset of `count` the same chance.
    double u = static_cast<double>(splitmix64(state) >> 11) * 0x1p-53;
    if (static_cast<double>(total - t) * u < static_cast<double>(count - out.size())) out.push_back(t);
  }
  return out;
}

void add_rows(NormalEquations& eq, const LayerGeometry& g, int64_t group, std::span<const float> input,
              std::span<const float> target, std::span<const uint64_t> positions) {
  for (uint64_t pos : positions) {
    auto row = eq.next_row();
    gather(g, group, input.data(), pos, row.x, row.stride);
    for (int64_t m = 0; m < g.outputs; ++m) row.y[static_cast<size_t>(m) * row.stride] = target[target_index(g, group, pos, m)];
  }
}

void add_rows(NormalEquations& eq, const LayerGeometry& g, int64_t group, std::span<const float> input,
              std::span<const double> row_targets, std::span<const uint64_t> positions) {
  const size_t mg = static_cast<size_t>(g.outputs);
  for (size_t r = 0; r < positions.size(); ++r) {
    auto row = eq.next_row();
    gather(g, group, input.data(), positions[r], row.x, row.stride);
    for (size_t m = 0; m < mg; ++m) row.y[m * row.stride] = row_targets[r * mg + m];
  }
}

std::vector<double> relaxed_targets(const LayerGeometry& g, int64_t group, std::span<const float> input,
                                    std::span<const float> target, std::span<const uint64_t> positions,
                                    std::span<const double> weights, std::span<const double> bias) {
  const size_t p = static_cast<size_t>(g.columns), mg = static_cast<size_t>(g.outputs);
  // The weights as rows of P (one per output) and a block of patches as rows of P: the outputs
  // are their dot products, a tile at a time (core/repair/products.h).
  std::vector<double> wt(mg * p);
  for (size_t i = 0; i < p; ++i) {
    for (size_t m = 0; m < mg; ++m) wt[m * p + i] = weights[i * mg + m];
  }
  constexpr size_t kBlock = NormalEquations::kBlockRows;
  std::vector<double> patches(kBlock * p), out(positions.size() * mg, 0.0);
  for (size_t r0 = 0; r0 < positions.size(); r0 += kBlock) {
    const size_t n = std::min(kBlock, positions.size() - r0);
    for (size_t r = 0; r < n; ++r) gather(g, group, input.data(), positions[r0 + r], patches.data() + r * p, 1);
    add_dot_products(Rows{patches.data(), n, p, 0}, Rows{wt.data(), mg, p, 0}, p, out.data() + r0 * mg, mg, false);
  }
  for (size_t r = 0; r < positions.size(); ++r) {
    for (size_t m = 0; m < mg; ++m) {
      const double first = out[r * mg + m] + bias[m];
      const double wanted = target[target_index(g, group, positions[r], static_cast<int64_t>(m))];
      out[r * mg + m] = wanted <= 0 && first <= 0 ? first : wanted;
    }
  }
  return out;
}

}  // namespace lattice::repair
