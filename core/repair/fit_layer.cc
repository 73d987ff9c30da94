#include "core/repair/fit_layer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>

#include "core/repair/parallel.h"

namespace lattice::repair {
namespace {

uint64_t element_count(const std::vector<int64_t>& dims) {
  uint64_t n = 1;
  for (int64_t d : dims) n *= static_cast<uint64_t>(d);  // checked positive and small by layer_geometry
  return n;
}

// Index of weight element (output channel o, patch column p) in the node's layout.
size_t weight_index(const LayerGeometry& g, const LayerSpec& spec, int64_t o, int64_t p) {
  if (g.conv || spec.trans_b) return static_cast<size_t>(o * g.columns + p);  // [M, P] / Gemm [M, K]
  return static_cast<size_t>(p * g.out_channels + o);                          // Gemm [K, M]
}

Status check_request(const FitRequest& r, const LayerGeometry& g) {
  if (r.input.size() != element_count(r.input_dims)) {
    return options_error("the input holds {} values where its dims need {}", r.input.size(), element_count(r.input_dims));
  }
  if (r.target.size() != element_count(r.target_dims)) {
    return options_error("the target holds {} values where its dims need {}", r.target.size(),
                         element_count(r.target_dims));
  }
  if (r.max_rows < 1) return options_error("maxRows must be at least 1");
  if (r.current_bias && !r.current_weights) return options_error("a current bias needs the current weights too");
  if (r.current_weights && r.current_weights->size() != g.weight_count()) {
    return options_error("the current weights hold {} values where the weight shape needs {}", r.current_weights->size(),
                         g.weight_count());
  }
  if (r.weight_bounds && r.weight_bounds->size() != g.weight_count()) {
    return options_error("the weight bounds hold {} values where the weight shape needs {}", r.weight_bounds->size(),
                         g.weight_count());
  }
  if (r.current_bias && r.current_bias->size() != static_cast<size_t>(g.out_channels)) {
    return options_error("the current bias holds {} values where the layer has {} output channels", r.current_bias->size(),
                         g.out_channels);
  }
  return ok_status();
}

Result<LayerFit> fit(const FitRequest& r, KeptEquations* kept) {
  auto geometry = layer_geometry(r.spec, r.input_dims, r.target_dims);
  if (!geometry) return geometry.error();
  const LayerGeometry& g = *geometry;
  if (auto s = check_request(r, g); !s) return s.error();
  const std::vector<uint64_t> positions = sample_positions(g.positions(), r.max_rows, r.seed);
  const size_t p = static_cast<size_t>(g.columns), mg = static_cast<size_t>(g.outputs);

  LayerFit out;
  out.rows = positions.size();
  out.weights.resize(static_cast<size_t>(g.weight_count()));
  out.bias.resize(static_cast<size_t>(g.out_channels));
  double before = 0, after = 0, spread = 0;
  // Kept equations of these rows are fitted again with these targets; else they are summed anew.
  const bool keeps = kept && g.group == 1;
  const bool reuse = keeps && kept->equations && kept->input_dims == r.input_dims &&
                     kept->target_dims == r.target_dims && kept->weight_shape == r.spec.weight_shape &&
                     kept->positions == positions;
  if (keeps && !reuse) {
    *kept = KeptEquations{r.input_dims, r.target_dims, r.spec.weight_shape, positions, std::nullopt};
  } else if (kept && !keeps) {
    kept->equations.reset();
  }
  std::optional<NormalEquations> fresh;
  for (int64_t group = 0; group < g.group; ++group) {
    NormalEquations& eq = reuse ? *kept->equations : keeps ? kept->equations.emplace(p, mg) : fresh.emplace(p, mg);
    if (reuse) eq.retarget();
    add_rows(eq, g, group, r.input, r.target, positions);
    if (r.current_weights) {
      std::vector<double> w(p * mg), b(mg, 0.0);
      for (size_t m = 0; m < mg; ++m) {
        int64_t o = group * g.outputs + static_cast<int64_t>(m);
        for (size_t i = 0; i < p; ++i) w[i * mg + m] = (*r.current_weights)[weight_index(g, r.spec, o, static_cast<int64_t>(i))];
        if (r.current_bias) b[m] = (*r.current_bias)[static_cast<size_t>(o)];
      }
      auto sse = eq.squared_error_of(w, b);
      if (!sse) return sse.error();
      before += *sse;
    }
    auto solved = eq.solve(r.ridge);
    if (!solved) return solved.error();
    if (r.rectified) {
      const std::vector<double> relaxed = relaxed_targets(g, group, r.input, r.target, positions, solved->weights, solved->bias);
      eq.retarget();
      add_rows(eq, g, group, r.input, std::span<const double>(relaxed), positions);
      solved = eq.solve(r.ridge);
      if (!solved) return solved.error();
    }
    if (r.weight_bounds) {
      std::vector<double> bounds(p * mg);
      for (size_t m = 0; m < mg; ++m) {
        int64_t o = group * g.outputs + static_cast<int64_t>(m);
        for (size_t i = 0; i < p; ++i) bounds[i * mg + m] = (*r.weight_bounds)[weight_index(g, r.spec, o, static_cast<int64_t>(i))];
      }
      if (auto s = eq.bound(*solved, bounds); !s) return s.error();
    }
    after += solved->squared_error;
    spread += eq.spread();
    for (size_t m = 0; m < mg; ++m) {
      int64_t o = group * g.outputs + static_cast<int64_t>(m);
      for (size_t i = 0; i < p; ++i) {
        double v = solved->weights[i * mg + m];
        // Bounded by the ridge, but a float must still hold it.
        if (!(std::abs(v) <= std::numeric_limits<float>::max())) {
          return options_error("the fit gives weight {} of output channel {}, which float32 cannot hold", v, o);
        }
        out.weights[weight_index(g, r.spec, o, static_cast<int64_t>(i))] = static_cast<float>(v);
      }
      double b = solved->bias[m];
      if (!(std::abs(b) <= std::numeric_limits<float>::max())) {
        return options_error("the fit gives bias {} of output channel {}, which float32 cannot hold", b, o);
      }
      out.bias[static_cast<size_t>(o)] = static_cast<float>(b);
    }
  }
  if (r.current_weights) out.residual_before = relative_residual(before, spread);
  out.residual_after = relative_residual(after, spread);
  return out;
}

}  // namespace

Result<LayerFit> fit_layer(const FitRequest& request, KeptEquations* kept) {
  // As in convert(): running out of memory natively is an error like any other (in wasm, built
  // without exceptions, it aborts the module and the JS wrapper reports it).
  // Equations a fit failed in the middle of are not kept.
  auto forget = [kept] {
    if (kept) kept->equations.reset();
  };
  try {
    auto fitted = fit(request, kept);
    if (!fitted) forget();
    return fitted;
  } catch (const std::bad_alloc&) {
    forget();
    return Error{"out of memory while fitting a layer", ErrorKind::kMemory};
  }
}

Result<uint64_t> fit_bytes(const LayerSpec& spec, const std::vector<int64_t>& input_dims,
                           const std::vector<int64_t>& target_dims, uint64_t max_rows, bool bounded) {
  auto geometry = layer_geometry(spec, input_dims, target_dims);
  if (!geometry) return geometry.error();
  const LayerGeometry& g = *geometry;
  if (max_rows < 1) return options_error("maxRows must be at least 1");
  uint64_t p = static_cast<uint64_t>(g.columns), mg = static_cast<uint64_t>(g.outputs);
  uint64_t m = static_cast<uint64_t>(g.out_channels);
  uint64_t data = 4 * (element_count(input_dims) + element_count(target_dims) + 2 * g.weight_count() + 2 * m);
  uint64_t rows = std::min(g.positions(), max_rows);
  const uint64_t bounds = bounded ? 4 * g.weight_count() + 8 * p * mg + 16 * p * thread_count() : 0;
  return data + bounds + NormalEquations::bytes(p, mg) + 8 * p * mg + 8 * rows +
         8 * (p * mg + NormalEquations::kBlockRows * p + rows * mg) + thread_bytes();
}

}  // namespace lattice::repair
