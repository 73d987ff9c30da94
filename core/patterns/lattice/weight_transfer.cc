#include "core/patterns/lattice/weight_transfer.h"

#include <cmath>

#include <fmt/format.h>

#include "core/onnx/attributes.h"
#include "core/onnx/tensor_values.h"
#include "core/patterns/fold/channel_affine.h"
#include "core/patterns/lattice/emit.h"

namespace lattice {
namespace {

// For each new tap, the old tap reading the same input position, or -1.
std::vector<int64_t> tap_map(const TapAxis& from, const TapAxis& to) {
  std::vector<int64_t> map(static_cast<size_t>(to.kernel), -1);
  for (int64_t j = 0; j < to.kernel; ++j) {
    int64_t offset = to.position(j) + from.pad_begin;  // = from.dilation * old tap
    if (offset >= 0 && offset % from.dilation == 0 && offset / from.dilation < from.kernel) {
      map[static_cast<size_t>(j)] = offset / from.dilation;
    }
  }
  return map;
}

// How the old taps of one axis sit in the new kernel: `first` the old tap under the new tap 0
// (negative when the old kernel is embedded further in), when the mapped taps are one contiguous
// run at the same spacing; nullopt otherwise (dilations differ).
struct AxisPlacement {
  std::optional<int64_t> first;
  bool crop = false;      // every new tap reads an old one (the new kernel is inside the old)
  bool embed = false;     // every old tap is read (the old kernel is inside the new)
  bool centred = false;   // both kernels share their centre tap
};

AxisPlacement placement(const std::vector<int64_t>& map, int64_t old_kernel) {
  AxisPlacement p;
  int64_t first_new = -1, mapped = 0;
  for (size_t j = 0; j < map.size(); ++j) {
    if (map[j] < 0) continue;
    if (first_new < 0) first_new = static_cast<int64_t>(j);
    if (map[j] - map[static_cast<size_t>(first_new)] != static_cast<int64_t>(j) - first_new) return p;  // not a run
    ++mapped;
  }
  if (mapped == 0) return p;
  p.first = map[static_cast<size_t>(first_new)] - first_new;
  int64_t new_kernel = static_cast<int64_t>(map.size());
  p.crop = mapped == new_kernel;
  p.embed = mapped == old_kernel;
  // Centres coincide when the old tap under the new centre is the old centre (odd sizes), or
  // the run sits evenly inside (even differences).
  p.centred = (new_kernel - old_kernel) % 2 == 0 && 2 * -*p.first == new_kernel - old_kernel;
  return p;
}

std::string size_text(int64_t h, int64_t w) { return fmt::format("{}×{}", h, w); }

std::string describe(const std::array<AxisPlacement, 2>& p, const std::array<TapAxis, 2>& from,
                     const std::array<TapAxis, 2>& to, size_t kept_taps) {
  std::string old_size = size_text(from[0].kernel, from[1].kernel), new_size = size_text(to[0].kernel, to[1].kernel);
  bool runs = p[0].first && p[1].first;
  if (runs && p[0].centred && p[1].centred) {
    if (p[0].crop && p[1].crop) return fmt::format("centre {} of {}", new_size, old_size);
    if (p[0].embed && p[1].embed) return fmt::format("{} at the centre of {}", old_size, new_size);
    return fmt::format("{} centred on {}", old_size, new_size);
  }
  if (runs && p[0].crop && p[1].crop) {
    return fmt::format("rows {}–{}, columns {}–{} of {}", *p[0].first, *p[0].first + to[0].kernel - 1, *p[1].first,
                       *p[1].first + to[1].kernel - 1, old_size);
  }
  if (runs && p[0].embed && p[1].embed) {
    return fmt::format("{} at row {}, column {} of {}", old_size, -*p[0].first, -*p[1].first, new_size);
  }
  return fmt::format("{} of the {}'s {} taps, where the {} reads the same pixels", kept_taps, old_size,
                     from[0].kernel * from[1].kernel, new_size);
}

// Output size of one axis at input size `in`, as ONNX's Conv computes it (floor).
int64_t output_size(const TapAxis& a, int64_t in) {
  int64_t span = in + a.pad_begin + a.pad_end - a.dilation * (a.kernel - 1) - 1;
  return span < 0 ? -1 : span / a.stride + 1;
}

std::string percent(double share) {
  // A share that rounds to 100 % without being whole says so with one decimal (99.7 %).
  std::string text = fmt::format("{:.0f}", 100 * share);
  if (text == "100" && share != 1.0) text = fmt::format("{:.1f}", std::min(100 * share, 99.9));
  return text + " %";
}

}  // namespace

std::array<TapAxis, 2> tap_axes(const Window& w) {
  std::array<TapAxis, 2> axes;
  for (size_t a = 0; a < 2; ++a) axes[a] = {w.kernel[a], w.dilations[a], w.pads[a], w.pads[a + 2], w.strides[a]};
  return axes;
}

KernelTransfer transfer_kernel(std::span<const double> weights, std::span<const int64_t> dims,
                               const std::array<TapAxis, 2>& from, const std::array<TapAxis, 2>& to) {
  auto rows = tap_map(from[0], to[0]), cols = tap_map(from[1], to[1]);
  size_t kh = static_cast<size_t>(dims[2]), kw = static_cast<size_t>(dims[3]);
  size_t new_h = rows.size(), new_w = cols.size();
  size_t kernels = static_cast<size_t>(dims[0] * dims[1]);
  // Which old taps some new tap reads.
  std::vector<char> read(kh * kw, 0);
  for (size_t r = 0; r < new_h; ++r) {
    for (size_t c = 0; c < new_w; ++c) {
      if (rows[r] >= 0 && cols[c] >= 0) read[static_cast<size_t>(rows[r]) * kw + static_cast<size_t>(cols[c])] = 1;
    }
  }
  KernelTransfer out;
  out.values.assign(kernels * new_h * new_w, 0.0);
  double old_energy = 0, new_energy = 0;
  for (size_t k = 0; k < kernels; ++k) {
    const double* w = weights.data() + k * kh * kw;
    double* n = out.values.data() + k * new_h * new_w;
    for (size_t i = 0; i < kh * kw; ++i) {
      old_energy += w[i] * w[i];
      if (!read[i] && w[i] != 0) out.lossless = false;
    }
    for (size_t r = 0; r < new_h; ++r) {
      for (size_t c = 0; c < new_w; ++c) {
        if (rows[r] < 0 || cols[c] < 0) continue;
        double v = w[static_cast<size_t>(rows[r]) * kw + static_cast<size_t>(cols[c])];
        n[r * new_w + c] = v;
        new_energy += v * v;
      }
    }
  }
  out.kept_energy = old_energy > 0 ? new_energy / old_energy : 1.0;
  size_t kept_taps = 0;
  for (char r : read) kept_taps += r ? 1 : 0;
  std::array<AxisPlacement, 2> p{placement(rows, from[0].kernel), placement(cols, from[1].kernel)};
  out.placement = describe(p, from, to, kept_taps);
  return out;
}

bool same_outputs(const std::array<TapAxis, 2>& from, const std::array<TapAxis, 2>& to, const Shape* input) {
  for (size_t a = 0; a < 2; ++a) {
    if (from[a].stride != to[a].stride) return false;
    int64_t in = input && input->size() == 4 ? (*input)[2 + a] : -1;
    if (in >= 0) {
      if (output_size(from[a], in) != output_size(to[a], in)) return false;
    } else if (from[a].pad_begin + from[a].pad_end - from[a].dilation * (from[a].kernel - 1) !=
               to[a].pad_begin + to[a].pad_end - to[a].dilation * (to[a].kernel - 1)) {
      return false;  // equal at every size only if the spans are
    }
  }
  return true;
}

Result<SnappedWeights> transfer_conv_weights(const MatchContext& ctx, const onnx::NodeProto& conv,
                                             const std::string& label, const std::array<TapAxis, 2>& from,
                                             const std::array<TapAxis, 2>& to, NameAllocator& names) {
  auto values = constant_values(ctx, conv, 1, "weight");
  if (!values) return error("cannot transfer the weights of '{}' to the snapped kernel: {}", label, values.error().message);
  const onnx::TensorProto& old = *ctx.view.constant(conv.input(1));
  std::vector<int64_t> dims(old.dims().begin(), old.dims().end());
  // The operator rules checked the weight against kernel_shape before any pattern ran.
  auto moved = transfer_kernel(*values, dims, from, to);
  SnappedWeights s;
  s.weight = make_tensor(names.fresh(label + ".weight"), old.data_type(), {dims[0], dims[1], to[0].kernel, to[1].kernel},
                         moved.values);
  s.exact = moved.lossless && same_outputs(from, to, ctx.shapes.of(conv.input(0)));
  s.note = {"transfer", moved.kept_energy};
  s.what = s.exact ? fmt::format("weights transferred exactly ({}, every non-zero tap kept)", moved.placement)
                   : fmt::format("weights transferred ({}, {} of the kernel's energy)", moved.placement,
                                 percent(moved.kept_energy));
  return s;
}

Result<WeightsSnapped> snap_conv_weights(const MatchContext& ctx, onnx::NodeProto& conv, const std::string& label,
                                         const std::array<TapAxis, 2>& from, const std::array<TapAxis, 2>& to,
                                         NameAllocator& names, Replacement& r) {
  if (ctx.options.snap_weights == SnapWeights::kReinit) {
    reinitialise_conv(ctx, conv, label, to[0].kernel, names, r);
    r.weights = WeightsNote{"reinit", 0.0};
    return WeightsSnapped{false, "weights reinitialized"};
  }
  auto s = transfer_conv_weights(ctx, conv, label, from, to, names);
  if (!s) return s.error();
  conv.set_input(1, s->weight.name());
  attr::set_ints(conv, "kernel_shape", {to[0].kernel, to[1].kernel});
  r.initializers.push_back(std::move(s->weight));
  r.weights = s->note;
  r.exact = s->exact;
  return WeightsSnapped{s->exact, std::move(s->what)};
}

}  // namespace lattice
