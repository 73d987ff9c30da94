// FpqRangeFitPattern: cross-layer scaling (Nagel et al. 2019, "Data-Free Quantization") against
// FPQ's fixed ranges, anchored at each Conv → BatchNormalization.
//   - s: each channel of the BatchNormalization's output starts a group of values one scale moves
//     through (core/fixed_point/scale_group.h: Relu, pools, Resize, Flatten, Concat's slices, both
//     branches of an Add). The group's BatchNormalizations divide γ and β by s; the layers that
//     read it multiply their weights on that channel by s. Every value in between is divided by s
//     (each op there is positive-homogeneous per channel), and the readers' outputs are what they
//     were. A group with several BatchNormalizations (a residual stream) is fitted by one match,
//     the one whose BatchNormalization's output name comes first; the others leave it.
//   - t: each conv's output channel c is multiplied by t and its BatchNormalization takes it back
//     (mean · t, γ / t: BN(t·y) equals BN(y)).
// The scales are fixed_point::choose_*_scale's, from the ranges in Options::channel_ranges (keyed by
// tensor name, per channel: the largest value of an activation, the largest |value| of a Conv's or
// BatchNormalization's output) or, without any, from a BatchNormalization's statistics (its output
// is about N(β, γ²) per channel, so β + 3|γ|), which the report's options say.
// Other nodes' weights and parameters change through new initializers their readers are rewired
// to, so each must be read by its node alone (scale_group's rules).
#include "core/patterns/fixed_point/range_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/fixed_point/channel_scale.h"
#include "core/fixed_point/scale_group.h"
#include "core/fixed_point/scheme.h"
#include "core/onnx/attributes.h"
#include "core/onnx/domain.h"
#include "core/onnx/tensor_values.h"
#include "core/patterns/fold/channel_affine.h"

namespace lattice {
namespace {

using fixed_point::kFpqBatchNorm;
using fixed_point::kFpqWeights;

// Standard deviations above β taken as a channel's largest activation when no data is given.
constexpr double kEstimateSigmas = 3.0;
// What weight_bounds leaves below the exact bound: the range fit after a repair measures its
// values on the final weights and its own share of the samples, a few tenths of a percent apart
// (the residual CNN's head: 2.01 against 2), and a bound met exactly would leave it no scale.
constexpr double kBoundMargin = 1.0 / 64;
constexpr double kUnbounded = std::numeric_limits<double>::infinity();

// The share of signed 5.10 a BatchNormalization scale k leaves its row (at most 1): how far the
// row may shrink for the scale to grow by as much and take it back.
double row_room(double k) { return std::min(1.0, std::abs(k) / kFpqBatchNorm.max()); }

bool constant_float(const MatchContext& ctx, const onnx::NodeProto& n, int input) {
  if (n.input_size() <= input || n.input(input).empty()) return false;
  const auto* t = ctx.view.constant(n.input(input));
  return t && is_float_type(t->data_type());
}

// A layer whose output channel c is row c of its constant weights (and value c of its bias): a
// Conv, or a dense layer (Gemm) of [N, K] weights (transB) without a bias (under FPQ
// FpqDenseBiasIntoBatchNormPattern moves it into a BatchNormalization first).
bool row_layer(const MatchContext& ctx, int node) {
  const auto& n = ctx.view.node(node);
  if (!constant_float(ctx, n, 1) || n.output_size() != 1) return false;
  const bool biased = n.input_size() > 2 && !n.input(2).empty();
  if (n.op_type() == "Gemm") return !biased && attr::get_int(n, "transA", 0) == 0 && attr::get_int(n, "transB", 0) != 0;
  return n.op_type() == "Conv" && (!biased || constant_float(ctx, n, 2));
}

// An inference BatchNormalization whose four parameters are float constants.
bool constant_norm(const MatchContext& ctx, int node) {
  const auto& bn = ctx.view.node(node);
  if (attr::get_int(bn, "training_mode", 0) != 0 || bn.output_size() != 1 || bn.input_size() != 5) return false;
  if (ctx.opset < 7 && attr::get_int(bn, "is_test", 0) == 0) return false;
  for (int i = 1; i < 5; ++i) {
    if (!constant_float(ctx, bn, i)) return false;
  }
  return true;
}

// A layer that takes a per-input-channel scale into its constant weights.
bool scalable_layer(const MatchContext& ctx, int node) {
  const auto& n = ctx.view.node(node);
  if (!constant_float(ctx, n, 1)) return false;
  return n.op_type() == "Conv" || attr::get_int(n, "transA", 0) == 0;
}

// An initializer's values as this rewrite leaves them: read once, scaled in place, written once.
struct Edit {
  const onnx::TensorProto* tensor;
  std::vector<double> values;
};

class Edits {
 public:
  explicit Edits(const MatchContext& ctx) : ctx_(ctx) {}

  Result<Edit*> of(const onnx::NodeProto& node, int input, std::string_view role) {
    const std::string& name = node.input(input);
    if (auto it = edits_.find(name); it != edits_.end()) return &it->second;
    auto values = constant_values(ctx_, node, input, role);
    if (!values) return values.error();
    return &edits_.emplace(name, Edit{ctx_.view.constant(name), std::move(values).value()}).first->second;
  }

  const std::map<std::string, Edit>& all() const { return edits_; }

 private:
  const MatchContext& ctx_;
  std::map<std::string, Edit> edits_;  // by name: the written model does not depend on the order
};

// A BatchNormalization's parameters (as Edits), and the conv before it whose weights take t (-1:
// none that may be scaled).
struct Norm {
  Edit *gamma, *beta, *mean, *var;
  double eps;
  int conv = -1;
};

bool read_once(const MatchContext& ctx, const onnx::NodeProto& n, int input) {
  return n.input_size() <= input || n.input(input).empty() || ctx.view.reader_count(n.input(input)) == 1;
}

// The Conv (or dense layer) that writes a BatchNormalization's input, read by it alone: the chain
// this pattern matches, so the one match that owns a group exists.
int chain_conv(const MatchContext& ctx, int bn) {
  const std::string& in = ctx.view.node(bn).input(0);
  int conv = ctx.view.producer(in);
  if (conv < 0 || ctx.view.reader_count(in) != 1) return -1;
  return row_layer(ctx, conv) ? conv : -1;
}

// A BatchNormalization another match's rewrite may change: its parameters read by it alone.
bool group_producer(const MatchContext& ctx, int node) {
  const auto& n = ctx.view.node(node);
  if (n.op_type() != "BatchNormalization" || !is_default_domain(n.domain()) || !constant_norm(ctx, node)) return false;
  for (int i = 1; i < 5; ++i) {
    if (!read_once(ctx, n, i)) return false;
  }
  return true;
}

bool group_consumer(const MatchContext& ctx, int node) {
  const auto& n = ctx.view.node(node);
  return is_default_domain(n.domain()) && (n.op_type() == "Conv" || n.op_type() == "Gemm") &&
         scalable_layer(ctx, node) && read_once(ctx, n, 1);
}

Result<Norm> read_norm(const MatchContext& ctx, Edits& edits, int bn, int conv) {
  const auto& n = ctx.view.node(bn);
  Norm norm{nullptr, nullptr, nullptr, nullptr, attr::get_float(n, "epsilon", 1e-5f), conv};
  Edit** params[] = {&norm.gamma, &norm.beta, &norm.mean, &norm.var};
  for (int i = 1; i < 5; ++i) {
    auto p = edits.of(n, i, std::array{"scale", "bias", "mean", "variance"}[i - 1]);
    if (!p) return p.error();
    *params[i - 1] = *p;
  }
  const size_t channels = norm.gamma->values.size();
  if (norm.beta->values.size() != channels || norm.mean->values.size() != channels || norm.var->values.size() != channels) {
    return error("BatchNormalization '{}' has parameters of different lengths", ctx.view.label(bn));
  }
  return norm;
}

// A producer's conv (when it has one that may be scaled) with its output channels.
struct ConvWeights {
  Edit *weights = nullptr, *bias = nullptr;
  size_t per_channel = 0;
};

Result<ConvWeights> read_conv(const MatchContext& ctx, Edits& edits, int conv, size_t channels) {
  if (conv < 0) return ConvWeights{};
  const auto& n = ctx.view.node(conv);
  auto w = edits.of(n, 1, "weight");
  if (!w) return w.error();
  const auto* t = (*w)->tensor;
  if (t->dims_size() < 1 || static_cast<size_t>(t->dims(0)) != channels) {
    return error("'{}' has {} output channels and its BatchNormalization {} parameters", ctx.view.label(conv),
                 t->dims_size() ? t->dims(0) : 0, channels);
  }
  ConvWeights out{*w, nullptr, (*w)->values.size() / channels};
  if (n.input_size() > 2 && !n.input(2).empty()) {
    auto b = edits.of(n, 2, "bias");
    if (!b) return b.error();
    out.bias = *b;
  }
  return out;
}

// For each element of a layer's weights, the channel of its input it multiplies (or an error when
// the weights' shape does not fit `channels`).
Result<std::vector<size_t>> input_channels(const onnx::NodeProto& next, const onnx::TensorProto& w, size_t channels) {
  std::vector<size_t> dims(w.dims().begin(), w.dims().end());
  size_t total = 1;
  for (size_t d : dims) total *= d;
  std::vector<size_t> of(total);
  if (next.op_type() == "Conv") {
    auto group = static_cast<size_t>(attr::get_int(next, "group", 1));
    if (dims.size() < 3 || group == 0 || dims[1] * group != channels || dims[0] % group != 0) {
      return error("the weights of '{}' do not read {} channels", next.name(), channels);
    }
    size_t spatial = total / (dims[0] * dims[1]), out_per_group = dims[0] / group;
    for (size_t i = 0; i < total; ++i) {
      size_t o = i / (dims[1] * spatial), j = (i / spatial) % dims[1];
      of[i] = (o / out_per_group) * dims[1] + j;
    }
    return of;
  }
  // Gemm: B is [K, N], or [N, K] with transB; Flatten laid each channel's values out together.
  if (dims.size() != 2) return error("the weights of '{}' are not a matrix", next.name());
  bool transposed = attr::get_int(next, "transB", 0) != 0;
  size_t k = transposed ? dims[1] : dims[0];
  if (k % channels != 0) return error("'{}' reads {} values, not a whole number per each of {} channels", next.name(), k, channels);
  size_t per_channel = k / channels;
  for (size_t i = 0; i < total; ++i) of[i] = (transposed ? i % dims[1] : i / dims[1]) / per_channel;
  return of;
}

// A BatchNormalization that carries only a bias (FpqConvBiasIntoBatchNormPattern's: scale 1, mean
// 0, var + ε = 1) says nothing about its activations.
bool carries_only_bias(const Norm& n) {
  for (size_t c = 0; c < n.gamma->values.size(); ++c) {
    if (n.gamma->values[c] != 1 || n.mean->values[c] != 0 || std::abs(n.var->values[c] + n.eps - 1) > 1e-6) return false;
  }
  return true;
}

// The channel where a range is missed by most, described once for the match.
struct Worst {
  size_t count = 0, channel = 0;
  std::string need, value, layer;
  double bits = -1;
  void note(const fixed_point::ScaleChoice& choice, size_t c, std::string v = {}, std::string l = {}) {
    if (choice.need.empty()) return;
    ++count;
    if (choice.missing_bits > bits) bits = choice.missing_bits, channel = c, need = choice.need, value = std::move(v), layer = std::move(l);
  }
};

// One match's rewrite: the groups it owns (their s, and t of every conv writing them), and the t
// of its own channels whose group keeps its scale.
class RangeFit {
 public:
  // `m`: the match whose rewrite this is; null to read what the fit would allow (weight_bounds).
  RangeFit(const MatchContext& ctx, const Match* m) : ctx_(ctx), m_(m), edits_(ctx) {}

  Result<Replacement> run(NameAllocator& names) {
    const int conv = m_->at(kConv), bn = m_->at(kNorm);
    auto anchor = norm_of(bn, conv);
    if (!anchor) return anchor.error();
    const size_t channels = (*anchor)->gamma->values.size();
    auto anchor_conv = conv_of(bn);
    if (!anchor_conv) return anchor_conv.error();

    fixed_point::GroupRules rules{[&](int n) { return group_producer(ctx_, n); },
                                  [&](int n) { return group_consumer(ctx_, n); }};
    auto groups = fixed_point::scale_groups(ctx_.view, ctx_.shapes, bn, rules);
    std::vector<bool> seen(groups.groups.size());
    std::string owner_elsewhere;
    for (size_t c = 0; c < channels; ++c) {
      const fixed_point::ScaleGroup* g = groups.groups.empty() ? nullptr : &groups.groups[groups.of_channel[c]];
      int owner = g && !g->frozen ? owner_of(*g) : -1;
      if (owner < 0) {
        // Its values keep their scale: only this conv's weights move, against its own
        // BatchNormalization.
        if (auto s = fit_producer(bn, c, 1.0); !s) return s.error();
      } else if (owner != bn) {
        owner_elsewhere = ctx_.view.label(owner);
      } else if (!seen[groups.of_channel[c]]) {
        seen[groups.of_channel[c]] = true;
        if (auto s = fit_group(*g); !s) return s.error();
      }
    }
    // A group that no scale fits is said even when its scales stay (fitted already, say by the
    // estimate): what it would need is the warning.
    if (!changes_ && activation_worst_.count == 0 && weights_worst_.count == 0) {
      if (!owner_elsewhere.empty()) {
        return error("its channels move with the values '{}''s match fits", owner_elsewhere);
      }
      return error("every channel of '{}' is in FPQ's ranges as it is", ctx_.view.label(conv));
    }
    return replacement(names, channels);
  }

  // What this fit lets `node`'s weights be (fpq_weight_bounds): per input channel, the signed 0.7
  // top over the least scale its group's values need, up to their MSE-optimal clip; a channel no
  // match rescales keeps the range itself. A layer whose rows its own BatchNormalization rescales
  // may have each row as much larger as that BatchNormalization's scale can take back within
  // signed 5.10 (row_scales). None for a layer the fit does not scale.
  Result<FpqWeightBounds> weight_bounds(int node, bool through_batch_norm) {
    FpqWeightBounds out;
    const auto& n = ctx_.view.node(node);
    if (!group_consumer(ctx_, node)) return out;
    auto scales = row_scales(node);
    if (!scales) return scales.error();
    std::vector<double> room;
    for (double k : *scales) room.push_back(row_room(k));
    auto w = edits_.of(n, 1, "weight");
    if (!w) return w.error();
    std::map<size_t, double> least;  // by input channel: the least scale its group takes
    size_t channels = 0;
    std::set<std::string> read;
    fixed_point::GroupRules rules{[&](int p) { return group_producer(ctx_, p); }, [&](int q) { return group_consumer(ctx_, q); }};
    for (int bn = 0; bn < ctx_.view.size(); ++bn) {
      if (!group_producer(ctx_, bn)) continue;
      auto groups = fixed_point::scale_groups(ctx_.view, ctx_.shapes, bn, rules);
      for (const auto& g : groups.groups) {
        if (g.frozen || owner_of(g) < 0) continue;
        for (const auto& q : g.consumers) {
          if (q.node != node || least.contains(q.channel)) continue;
          std::string top_value;
          size_t top_channel = 0;
          auto r = value_ranges(g, top_value, top_channel);
          if (!r) return r.error();
          // Up to the values' MSE-optimal clip: beyond it the range fit clips them by choice.
          if (r->activation_clip > 0) r->activation_max = std::min(r->activation_max, r->activation_clip);
          least[q.channel] = fixed_point::least_activation_scale(*r);
          channels = q.channels;
          for (const auto& v : g.values) read.insert(v.tensor);
        }
      }
    }
    out.tensors.assign(read.begin(), read.end());
    std::vector<double> bounds((*w)->values.size(), kFpqWeights.max());
    if (!least.empty()) {
      auto of = input_channels(n, *(*w)->tensor, channels);
      if (!of) return of.error();
      for (size_t i = 0; i < of->size(); ++i) {
        auto it = least.find((*of)[i]);
        if (it == least.end()) continue;
        bounds[i] = it->second > 0 ? kFpqWeights.max() * (1 - kBoundMargin) / it->second : kUnbounded;
      }
    }
    const size_t row_size = per_row(node, **w);
    for (size_t i = 0; i < bounds.size() && !room.empty(); ++i) {
      const size_t row = std::min(i / row_size, room.size() - 1);
      bounds[i] = room[row] > 0 ? bounds[i] / room[row] : kUnbounded;
      // Fitted as one with its BatchNormalization: the weights the fit gives are these times its scale.
      if (through_batch_norm) bounds[i] *= std::abs((*scales)[row]);
    }
    out.bounds.assign(bounds.begin(), bounds.end());
    return out;
  }

 private:
  enum : size_t { kConv, kNorm };

  Result<Norm*> norm_of(int bn, int conv) {
    if (auto it = norms_.find(bn); it != norms_.end()) return &it->second;
    auto n = read_norm(ctx_, edits_, bn, conv);
    if (!n) return n.error();
    return &norms_.emplace(bn, std::move(n).value()).first->second;
  }

  Result<ConvWeights*> conv_of(int bn) {
    if (auto it = convs_.find(bn); it != convs_.end()) return &it->second;
    auto norm = norm_of(bn, -1);
    if (!norm) return norm.error();
    auto w = read_conv(ctx_, edits_, (*norm)->conv, (*norm)->gamma->values.size());
    if (!w) return w.error();
    return &convs_.emplace(bn, std::move(w).value()).first->second;
  }

  // The match that fits a group: the producer with the first output name among those a match is
  // anchored at (a name, not a position: it stays as rewrites move nodes), or -1.
  int owner_of(const fixed_point::ScaleGroup& g) const {
    int owner = -1;
    for (const auto& p : g.producers) {
      if (chain_conv(ctx_, p.node) < 0) continue;
      if (owner < 0 || ctx_.view.node(p.node).output(0) < ctx_.view.node(owner).output(0)) owner = p.node;
    }
    return owner;
  }

  const std::vector<double>* measured(const std::string& tensor, size_t channels) const {
    auto it = ctx_.options.channel_ranges.find(tensor);
    return it != ctx_.options.channel_ranges.end() && it->second.size() == channels ? &it->second : nullptr;
  }

  // The producer's conv is the match's own, or one whose weights only it reads.
  Result<Norm*> producer(int bn) {
    const bool own = m_ && bn == m_->at(kNorm);
    int conv = own ? m_->at(kConv) : chain_conv(ctx_, bn);
    if (conv >= 0 && !own) {
      const auto& n = ctx_.view.node(conv);
      if (!read_once(ctx_, n, 1) || !read_once(ctx_, n, 2)) conv = -1;
    }
    return norm_of(bn, conv);
  }

  // t of one producer channel given its group's s, applied with s.
  Status fit_producer(int bn, size_t c, double s) {
    auto norm = producer(bn);
    if (!norm) return norm.error();
    auto conv = conv_of(bn);
    if (!conv) return conv.error();
    const Norm& n = **norm;
    const ConvWeights& w = **conv;
    double t = 1;
    if (w.weights) {
      fixed_point::ProducerRanges r;
      r.bn_scale = n.gamma->values[c] / std::sqrt(n.var->values[c] + n.eps);
      r.weight_max = row_max(w, c);
      const std::string& out = ctx_.view.node(n.conv).output(0);
      if (const auto* m = measured(out, n.gamma->values.size())) r.conv_output_max = (*m)[c];
      auto choice = fixed_point::choose_weight_scale(r, s);
      t = choice.scale;
      weights_worst_.note(choice, c, "", ctx_.view.label(n.conv));
    }
    return scale_producer(bn, c, t, s);
  }

  static double row_max(const ConvWeights& w, size_t c) {
    double top = 0;
    for (size_t i = 0; i < w.per_channel; ++i) top = std::max(top, std::abs(w.weights->values[c * w.per_channel + i]));
    return top;
  }

  // The conv's row c times t (its bias too), and its BatchNormalization's γ over t·s, β over s,
  // mean times t: its output divided by s, everything else as it was.
  Status scale_producer(int bn, size_t c, double t, double s) {
    auto norm = producer(bn);
    if (!norm) return norm.error();
    auto conv = conv_of(bn);
    if (!conv) return conv.error();
    Norm& n = **norm;
    ConvWeights& w = **conv;
    if (!w.weights) t = 1;
    if (w.weights) {
      for (size_t i = 0; i < w.per_channel; ++i) w.weights->values[c * w.per_channel + i] *= t;
      if (w.bias && c < w.bias->values.size()) w.bias->values[c] *= t;
    }
    n.gamma->values[c] /= t * s;
    n.beta->values[c] /= s;
    n.mean->values[c] *= t;
    changes_ = changes_ || t != 1 || s != 1;
    return ok_status();
  }

  // The BatchNormalization after a reading conv, when that conv's rows may shrink (their t, which
  // its BatchNormalization takes back) to make room for the scale on its input; -1 otherwise.
  int norm_after(int conv) const {
    const auto& n = ctx_.view.node(conv);
    if (n.output_size() != 1) return -1;
    const auto& readers = ctx_.view.consumers(n.output(0));
    if (readers.size() != 1 || !group_producer(ctx_, readers[0]) || chain_conv(ctx_, readers[0]) != conv) return -1;
    return readers[0];
  }

  // What bounds the group's s from below: its values' ranges (measured, or without any data
  // estimated from a lone BatchNormalization's statistics) and its BatchNormalizations' offsets.
  Result<fixed_point::GroupRanges> value_ranges(const fixed_point::ScaleGroup& g, std::string& top_value, size_t& top_channel) {
    fixed_point::GroupRanges r;
    std::vector<int> producers;
    for (const auto& p : g.producers) producers.push_back(p.node);
    for (const auto& v : g.values) {
      int writer = ctx_.view.producer(v.tensor);
      const Shape* shape = ctx_.shapes.of(v.tensor);
      const auto* m = shape && shape->size() >= 2 && (*shape)[1] > 0 ? measured(v.tensor, static_cast<size_t>((*shape)[1])) : nullptr;
      if (!m) continue;
      if (std::find(producers.begin(), producers.end(), writer) != producers.end()) {
        r.signed_max = std::max(r.signed_max, (*m)[v.channel]);  // a BatchNormalization's output: signed 5.10
        continue;
      }
      auto clip = ctx_.options.channel_clips.find(v.tensor);
      if (clip != ctx_.options.channel_clips.end() && clip->second.size() == m->size()) {
        r.activation_clip = std::max(r.activation_clip, clip->second[v.channel]);
      }
      if ((*m)[v.channel] > r.activation_max) {
        r.activation_max = (*m)[v.channel];
        top_value = ctx_.view.label(writer);
        top_channel = v.channel;
      }
    }
    for (const auto& p : g.producers) {
      auto norm = producer(p.node);
      if (!norm) return norm.error();
      const Norm& n = **norm;
      const size_t c = p.channel;
      const double scale = n.gamma->values[c] / std::sqrt(n.var->values[c] + n.eps);
      r.signed_max = std::max(r.signed_max, std::abs(n.beta->values[c] - n.mean->values[c] * scale));
      // Without data: one BatchNormalization's output is about N(β, γ²), and nothing after it
      // (pools, Concat) grows its largest value; an Add would, so a stream is not estimated.
      if (ctx_.options.channel_ranges.empty() && g.producers.size() == 1 && !g.through_add && !carries_only_bias(n)) {
        r.activation_max = std::max(0.0, n.beta->values[c] + kEstimateSigmas * std::abs(n.gamma->values[c]));
        top_value = ctx_.view.label(p.node);
        for (const auto& v : g.values) {
          if (v.tensor != ctx_.view.node(p.node).output(0)) {
            top_value = ctx_.view.label(ctx_.view.producer(v.tensor));  // the first value after it
            break;
          }
        }
        top_channel = c;
      }
    }
    return r;
  }

  // What bounds the group's s: value_ranges, and its readers' weights from above.
  Result<fixed_point::GroupRanges> ranges_of(const fixed_point::ScaleGroup& g, std::string& top_value, size_t& top_channel) {
    auto values = value_ranges(g, top_value, top_channel);
    if (!values) return values.error();
    fixed_point::GroupRanges r = *values;
    // A reading conv with a BatchNormalization of its own can shrink each row by as much as that
    // BatchNormalization's scale can grow within signed 5.10: only what is left of its weights
    // bounds s. Other readers' weights (a dense head) bound it as they are.
    fixed_rows_ = false;
    for (const auto& q : g.consumers) {
      auto column = consumer_column(q);
      if (!column) return column.error();
      auto scales = row_scales(q.node);
      if (!scales) return scales.error();
      fixed_rows_ = fixed_rows_ || scales->empty();
      for (auto [w, row] : *column) {
        double least = std::abs(*w) * (row < scales->size() ? row_room((*scales)[row]) : 1.0);
        if (least > r.next_weight_max) r.next_weight_max = least, widest_reader_ = ctx_.view.label(q.node);
      }
    }
    return r;
  }

  // The scale γ/√(σ² + ε) of the BatchNormalization of a layer's own, per row of its weights: a row
  // may shrink as far as that scale can grow within signed 5.10 and take it back. Empty for a
  // layer with no BatchNormalization of its own.
  Result<std::vector<double>> row_scales(int layer) {
    std::vector<double> scales;
    const int bn = norm_after(layer);
    if (bn < 0) return scales;
    auto norm = producer(bn);
    if (!norm) return norm.error();
    for (size_t o = 0; o < (*norm)->gamma->values.size(); ++o) {
      scales.push_back((*norm)->gamma->values[o] / std::sqrt((*norm)->var->values[o] + (*norm)->eps));
    }
    return scales;
  }

  // How many weights make one row: a row layer's row is its output channel; other layers' rows are
  // not scaled, so all their weights are one.
  size_t per_row(int layer, const Edit& w) const {
    const onnx::TensorProto& t = *w.tensor;
    const size_t total = std::max<size_t>(1, w.values.size());
    return row_layer(ctx_, layer) && t.dims_size() > 0 && t.dims(0) > 0 ? total / static_cast<size_t>(t.dims(0)) : total;
  }

  // The weights of a consumer that multiply one of its input channels, each with its output row.
  Result<std::vector<std::pair<double*, size_t>>> consumer_column(const fixed_point::NodeChannel& q) {
    const auto& n = ctx_.view.node(q.node);
    auto w = edits_.of(n, 1, "weight");
    if (!w) return w.error();
    auto it = layouts_.find(q.node);
    if (it == layouts_.end()) {
      auto of = input_channels(n, *(*w)->tensor, q.channels);
      if (!of) return of.error();
      it = layouts_.emplace(q.node, std::move(of).value()).first;
    }
    const size_t row_size = per_row(q.node, **w);
    std::vector<std::pair<double*, size_t>> column;
    for (size_t i = 0; i < it->second.size(); ++i) {
      if (it->second[i] == q.channel) column.emplace_back(&(*w)->values[i], i / row_size);
    }
    return column;
  }

  Status fit_group(const fixed_point::ScaleGroup& g) {
    std::string top_value;
    size_t top_channel = 0;
    widest_reader_.clear();
    auto ranges = ranges_of(g, top_value, top_channel);
    if (!ranges) return ranges.error();
    auto choice = fixed_point::choose_activation_scale(*ranges, !fixed_rows_);
    const double s = choice.scale;
    activation_worst_.note(choice, top_channel, top_value, widest_reader_);
    ++groups_;
    for (const auto& p : g.producers) {
      if (auto st = fit_producer(p.node, p.channel, s); !st) return st;
    }
    // The readers' weights take s back; a row of a conv that s pushed beyond signed 0.7 shrinks.
    std::vector<std::pair<int, size_t>> rows;  // (conv, row) pushed beyond signed 0.7
    for (const auto& q : g.consumers) {
      auto column = consumer_column(q);
      if (!column) return column.error();
      for (auto [w, row] : *column) {
        *w *= s;
        if (std::abs(*w) > kFpqWeights.max()) rows.emplace_back(q.node, row);
      }
    }
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    for (const auto& [conv, row] : rows) {
      const int bn = norm_after(conv);
      if (bn < 0) continue;
      auto w = conv_of(bn);
      if (!w) return w.error();
      if (auto st = scale_producer(bn, row, kFpqWeights.max() / row_max(**w, row), 1.0); !st) return st;
    }
    return ok_status();
  }

  Result<Replacement> replacement(NameAllocator& names, size_t channels) {
    Replacement r;
    onnx::NodeProto conv = ctx_.view.node(m_->at(kConv)), bn = ctx_.view.node(m_->at(kNorm));
    for (const auto& [name, edit] : edits_.all()) {
      for (double v : edit.values) {
        if (!fits_type(v, edit.tensor->data_type())) {
          return error("fitting '{}' would give '{}' a value of {}, which its type cannot hold",
                       ctx_.view.label(m_->at(kConv)), name, v);
        }
      }
      std::vector<int64_t> dims(edit.tensor->dims().begin(), edit.tensor->dims().end());
      r.initializers.push_back(make_tensor(names.fresh(name + "_fpq_range"), edit.tensor->data_type(), dims, edit.values));
      const std::string& fresh = r.initializers.back().name();
      bool read_here = false;
      for (auto* node : {&conv, &bn}) {
        for (int i = 0; i < node->input_size(); ++i) {
          if (node->input(i) == name) node->set_input(i, fresh), read_here = true;
        }
      }
      // Another node's weights or parameters (each read by that node alone): its readers read the new tensor.
      if (!read_here) r.rewires.emplace_back(name, fresh);
    }
    r.nodes.push_back(std::move(conv));
    r.nodes.push_back(std::move(bn));

    // What no scale could fit, named once per match with its worst channel.
    if (activation_worst_.count) {
      r.warnings.push_back({activation_worst_.value,
                            fmt::format("'{}': {} of {} channels have no scale that keeps both this activation in unsigned "
                                        "1.7 and '{}''s weights in range; channel {} would need {}",
                                        activation_worst_.value, activation_worst_.count, groups_, activation_worst_.layer,
                                        activation_worst_.channel, activation_worst_.need)});
    }
    if (weights_worst_.count) {
      const std::string bn_label = ctx_.view.label(m_->at(kNorm));
      r.warnings.push_back({weights_worst_.layer,
                            fmt::format("'{}': {} of {} channels have no scale that keeps both its weights and its "
                                        "BatchNormalization's scale in range; channel {} would need {}",
                                        weights_worst_.layer, weights_worst_.count, channels, weights_worst_.channel,
                                        weights_worst_.need)});
    }
    return r;
  }

  const MatchContext& ctx_;
  const Match* m_;
  Edits edits_;
  std::map<int, Norm> norms_;
  std::map<int, ConvWeights> convs_;
  std::map<int, std::vector<size_t>> layouts_;  // by consumer: it reads one tensor
  std::string widest_reader_;
  bool fixed_rows_ = false;  // a reader of the group being fitted cannot shrink its rows
  Worst activation_worst_, weights_worst_;
  size_t groups_ = 0;
  bool changes_ = false;
};

Result<Replacement> fit_ranges(const MatchContext& ctx, const Match& m, NameAllocator& names) {
  return RangeFit(ctx, &m).run(names);
}

}  // namespace

Result<FpqWeightBounds> fpq_weight_bounds(const MatchContext& ctx, int node, bool through_batch_norm) {
  return RangeFit(ctx, nullptr).weight_bounds(node, through_batch_norm);
}

const Pattern& fpq_range_fit_pattern() {
  static const Pattern pattern{
      .name = "FpqRangeFitPattern",
      .phase = Phase::kFusion,
      .numerically_equivalent = true,
      .matches = "Conv -> BatchNormalization with constant weights, and the values each channel reaches through "
                 "Relu, pools, Resize, Flatten, Concat and Add to the Conv or Gemm layers that read them, under "
                 "--fixed-point fpq",
      .emits = "the same nodes with per-channel scales moved between them (t: a Conv's weights, its "
               "BatchNormalization's mean and scale; s: the BatchNormalizations' scale and offset, the readers' "
               "weights): weights within [-0.5, 0.5) and activations within [0, 2) on the ranges given",
      .chain = {Step{{"Conv", "Gemm"}, row_layer, false}, Step{{"BatchNormalization"}, constant_norm, false}},
      .graft = fit_ranges,
      .scheme = FixedPoint::kFpq,
  };
  return pattern;
}

}  // namespace lattice
