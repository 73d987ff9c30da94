#include "core/repair/patches.h"

namespace lattice::repair {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
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
  const float* in = input.data();
  const float* tg = target.data();
  if (!g.conv) {
    const size_t k = static_cast<size_t>(g.columns), m = static_cast<size_t>(g.outputs);
    for (uint64_t pos : positions) {
      auto row = eq.next_row();
      const float* x = in + static_cast<size_t>(pos) * k;
      const float* y = tg + static_cast<size_t>(pos) * m;
      for (size_t i = 0; i < k; ++i) row.x[i * row.stride] = x[i];
      for (size_t i = 0; i < m; ++i) row.y[i * row.stride] = y[i];
    }
    return;
  }
  const Window& w = g.window;
  const int64_t kh = w.kernel[0], kw = w.kernel[1];
  const int64_t sh = w.strides[0], sw = w.strides[1], dh = w.dilations[0], dw = w.dilations[1];
  const int64_t top = w.pads[0], left = w.pads[1];
  const int64_t cg = g.channels / g.group, mg = g.outputs;
  const int64_t hw = g.height * g.width, out_hw = g.out_height * g.out_width;
  for (uint64_t pos : positions) {
    const int64_t n = static_cast<int64_t>(pos) / out_hw, rest = static_cast<int64_t>(pos) % out_hw;
    const int64_t oy = rest / g.out_width, ox = rest % g.out_width;
    auto row = eq.next_row();
    double* x = row.x;
    const size_t stride = row.stride;
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
    const float* y = tg + static_cast<size_t>((n * g.out_channels + group * mg) * out_hw + rest);
    for (int64_t m = 0; m < mg; ++m) row.y[static_cast<size_t>(m) * stride] = y[static_cast<size_t>(m * out_hw)];
  }
}

}  // namespace lattice::repair
