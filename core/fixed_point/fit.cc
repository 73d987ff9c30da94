#include "core/fixed_point/fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/ranges.h>

#include "core/fixed_point/scheme.h"
#include "core/onnx/attributes.h"
#include "core/onnx/domain.h"
#include "core/onnx/tensor_data.h"
#include "core/onnx/tensor_values.h"

namespace lattice {
namespace {

using fixed_point::kFpqBatchNorm;
using fixed_point::kFpqWeights;

// A share as people read it, as the check's percent() says it: one decimal, and never "0.0 %" or
// "100.0 %" for what is not (a layer with one clipped weight in 2,304 clips "< 0.1 %").
std::string percent(double share) {
  const double p = 100.0 * share;
  if (p > 0 && p < 0.05) return "< 0.1 %";
  if (p < 100 && p >= 99.95) return "> 99.9 %";
  return fmt::format("{:.1f} %", p);
}

// One layer's weights in FPQ's signed 0.7 with scale 0.5, counted block by block.
Result<FixedPointLayer> weight_fit(const GraphView& view, int node, const onnx::TensorProto& w, ExternalData* data) {
  FixedPointLayer layer{view.label(node), view.node(node).op_type()};
  uint64_t count = 0, clipped = 0, vanished = 0;
  double sum_sq = 0, err_sq = 0;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  std::string what = fmt::format("the weight '{}' of '{}'", view.node(node).input(1), layer.node);
  auto scanned = scan_values(w, what, data, [&](size_t, std::span<double> values) {
    for (double v : values) {
      double q = kFpqWeights.quantize(v);
      clipped += kFpqWeights.clips(v) ? 1 : 0;
      vanished += v != 0 && q == 0 ? 1 : 0;
      sum_sq += v * v;
      err_sq += (v - q) * (v - q);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    count += values.size();
  });
  if (!scanned) return scanned.error();
  if (count == 0) return layer;
  layer.weight_min = lo;
  layer.weight_max = hi;
  layer.clipped = static_cast<double>(clipped) / static_cast<double>(count);
  layer.vanished = static_cast<double>(vanished) / static_cast<double>(count);
  layer.quantization_error = sum_sq > 0 ? std::sqrt(err_sq / sum_sq) : 0.0;
  layer.fits = clipped == 0 && layer.quantization_error < fixed_point::kFpqErrorThreshold;
  return layer;
}

// A BatchNormalization's per-channel scale gamma / sqrt(var + eps) and offset beta - mean * scale
// against signed 5.10; nullopt when its parameters are not float constants.
std::optional<FixedPointBatchNorm> batch_norm_fit(const GraphView& view, int node, ExternalData* data) {
  const auto& bn = view.node(node);
  if (bn.input_size() != 5) return std::nullopt;
  std::vector<std::vector<double>> params;
  for (int i = 1; i < 5; ++i) {
    const auto* t = view.constant(bn.input(i));
    if (!t) return std::nullopt;
    auto loaded = TensorWithData::of(*t, bn.input(i), data);
    if (!loaded) return std::nullopt;
    auto values = read_values(**loaded, bn.input(i));
    if (!values || (!params.empty() && values->size() != params[0].size())) return std::nullopt;
    params.push_back(std::move(values).value());
  }
  double eps = attr::get_float(bn, "epsilon", 1e-5f);
  const auto& [gamma, beta, mean, var] = std::tie(params[0], params[1], params[2], params[3]);
  if (gamma.empty()) return std::nullopt;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  FixedPointBatchNorm out{view.label(node), kInf, -kInf, kInf, -kInf, true};
  bool finite = true;  // min and max pass NaN by
  for (size_t c = 0; c < gamma.size(); ++c) {
    double scale = gamma[c] / std::sqrt(var[c] + eps), offset = beta[c] - mean[c] * scale;
    finite = finite && std::isfinite(scale) && std::isfinite(offset);
    out.scale_min = std::min(out.scale_min, scale);
    out.scale_max = std::max(out.scale_max, scale);
    out.offset_min = std::min(out.offset_min, offset);
    out.offset_max = std::max(out.offset_max, offset);
  }
  auto inside = [](double v) { return std::isfinite(v) && !kFpqBatchNorm.clips(v); };
  out.fits = finite && inside(out.scale_min) && inside(out.scale_max) && inside(out.offset_min) && inside(out.offset_max);
  return out;
}

// Whether the only reader of a Conv's output is a BatchNormalization (FPQ's bias rule).
bool followed_by_batch_norm(const GraphView& view, int conv) {
  const std::string& out = view.node(conv).output(0);
  const auto& readers = view.consumers(out);
  return view.reader_count(out) == 1 && readers.size() == 1 && view.node(readers[0]).op_type() == "BatchNormalization";
}

void input_range_findings(const GraphView& view, FixedPointFit& fit) {
  for (const auto& input : view.graph().input()) {
    if (!view.is_overridable_input(input.name())) continue;
    fit.findings.push_back({input.name(), "input-range",
                            "the FPGA expects inputs normalised to [0, 2) (unsigned 1.7, step 1/128); the model does "
                            "not say what range its inputs have, so check the preprocessing",
                            std::string(fixed_point::kInputRange)});
  }
}

// Which ranges FpqRangeFitPattern fitted to, once for the model: measured ones, or (with no data)
// its estimate from the BatchNormalizations' statistics.
void range_fit_finding(const Options& options, const Report& report, FixedPointFit& fit) {
  size_t fitted = 0;
  for (const auto& m : report.matches) fitted += m.applied && m.pattern == "FpqRangeFitPattern";
  if (fitted == 0) return;
  std::string message =
      options.channel_ranges.empty()
          ? fmt::format("{} layer{} fitted to FPQ's ranges without data: each activation's range estimated from its "
                        "BatchNormalization's statistics (beta + 3|gamma|); the Node CLI measures them on samples "
                        "(--calibration), the page on the samples its check is given",
                        fitted, fitted == 1 ? "" : "s")
          : fmt::format("{} layer{} fitted to FPQ's ranges measured on data ({} tensors)", fitted,
                        fitted == 1 ? "" : "s", options.channel_ranges.size());
  fit.findings.push_back({"", "range-fit", std::move(message), std::string(fixed_point::kFpqTable)});
}

Status analyse_fpq(const GraphView& view, ExternalData* data, FixedPointFit& fit) {
  input_range_findings(view, fit);
  const std::string table(fixed_point::kFpqTable);
  for (int i = view.first(); i >= 0; i = view.next(i)) {
    const auto& n = view.node(i);
    if (!is_default_domain(n.domain())) continue;
    const std::string& op = n.op_type();
    std::string label = view.label(i);
    if (op == "Conv" || op == "ConvTranspose" || op == "Gemm") {
      const auto* w = n.input_size() > 1 ? view.constant(n.input(1)) : nullptr;
      if (!w || !is_float_type(w->data_type())) {
        fit.findings.push_back({label, "weights-not-analysed",
                                fmt::format("{} '{}': its weight is not a float constant, so its fit is not known", op, label),
                                table});
      } else {
        auto layer = weight_fit(view, i, *w, data);
        if (!layer) return layer.error();
        if (layer->clipped > 0) {
          fit.findings.push_back(
              {label, "weights-clip",
               fmt::format("{} '{}': {} of its weights lie outside [-0.5, 0.5 - 1/256] and clip in FPQ's {} (weights "
                           "from {} to {})",
                           op, label, percent(layer->clipped), kFpqWeights.name, layer->weight_min, layer->weight_max),
               table});
        } else if (!layer->fits) {
          fit.findings.push_back(
              {label, "quantization-error",
               fmt::format("{} '{}': its weights stored in steps of 1/256 are {} off (‖w − q(w)‖ / ‖w‖, threshold {}); "
                           "{} of them round to zero",
                           op, label, percent(layer->quantization_error), percent(fixed_point::kFpqErrorThreshold),
                           percent(layer->vanished)),
               table});
        }
        fit.layers.push_back(std::move(layer).value());
      }
      if (op == "Conv" && n.input_size() > 2 && !n.input(2).empty() && !followed_by_batch_norm(view, i)) {
        fit.findings.push_back({label, "conv-bias-needs-batchnorm",
                                fmt::format("Conv '{}' has a bias and no BatchNormalization after it: FPQ does not load "
                                            "such a network",
                                            label),
                                std::string(fixed_point::kBiasRule)});
      }
    } else if (op == "BatchNormalization") {
      auto norm = batch_norm_fit(view, i, data);
      if (!norm) continue;
      if (!norm->fits) {
        fit.findings.push_back(
            {label, "batchnorm-range",
             fmt::format("BatchNormalization '{}': its scale ({} to {}) or offset ({} to {}) leaves FPQ's {} [-32, 32)",
                         label, norm->scale_min, norm->scale_max, norm->offset_min, norm->offset_max, kFpqBatchNorm.name),
             table});
      }
      fit.batch_norms.push_back(std::move(norm).value());
    }
  }
  return ok_status();
}

void analyse_lsq(const GraphView& view, const Report& report, FixedPointFit& fit) {
  input_range_findings(view, fit);
  const std::string table(fixed_point::kLsqTable);
  for (int i = view.first(); i >= 0; i = view.next(i)) {
    const auto& n = view.node(i);
    if (!is_default_domain(n.domain()) || (n.op_type() != "Mul" && n.op_type() != "Reciprocal")) continue;
    fit.findings.push_back({view.label(i), "not-on-fpga",
                            fmt::format("{} '{}': Multiply and Reciprocal are not supported on the FPGA in LSQ",
                                        n.op_type(), view.label(i)),
                            table});
  }
  // The snapping rewrites (every conversion pattern that changes outputs) exist for the CNN
  // accelerator's kernel, stride and pool limits, which LSQ does not have.
  std::set<std::string> patterns;
  size_t snaps = 0;
  for (const auto& m : report.matches) {
    if (!m.applied || m.phase != "conversion" || m.numerically_equivalent) continue;
    ++snaps;
    patterns.insert(m.pattern);
  }
  if (snaps > 0) {
    fit.findings.push_back(
        {"", "lsq-snapping-not-needed",
         fmt::format("LSQ takes any kernel size and stride and any pooling region, SPPF included: {} rewrite{} of this "
                     "conversion ({}) would not be needed for it; the conversion itself is the target's, unchanged",
                     snaps, snaps == 1 ? "" : "s", fmt::join(patterns, ", ")),
         table});
  }
}

}  // namespace

Status analyse_fixed_point(const GraphView& view, const Options& options, ExternalData* data, Report& report) {
  if (options.fixed_point == FixedPoint::kNone) return ok_status();
  FixedPointFit fit;
  fit.scheme = std::string(fixed_point_name(options.fixed_point));
  fit.source = fmt::format("{} ({})", fixed_point::scheme_description(options.fixed_point),
                           options.fixed_point == FixedPoint::kFpq ? fixed_point::kFpqTable : fixed_point::kLsqTable);
  if (options.fixed_point == FixedPoint::kFpq) {
    fit.error_threshold = fixed_point::kFpqErrorThreshold;
    if (auto s = analyse_fpq(view, data, fit); !s) return s;
    range_fit_finding(options, report, fit);
  } else {
    analyse_lsq(view, report, fit);
  }
  report.fixed_point = std::move(fit);
  return ok_status();
}

}  // namespace lattice
