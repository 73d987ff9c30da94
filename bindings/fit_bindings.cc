// Embind surface of repair's fit (core/repair/fit_layer.h): its own module, onnx_lattice_fit,
// which links no protobuf and only the arithmetic, so the page's first load does not carry it (the
// page loads it when a repair runs; wasm/node/engine.mjs loads it beside the converter).
// Rejections come back as {error, code}, as in bindings/bindings.cc, and the JS wrappers throw an
// Error.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <algorithm>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "core/repair/fit_layer.h"
#include "core/util/utf8.h"
#include "bindings/failure.h"
#include "bindings/js_values.h"

namespace {

using emscripten::val;

using lattice_wasm::failure;
using lattice_wasm::floats_in;
using lattice_wasm::floats_out;
using lattice_wasm::is_object;

std::vector<std::string> keys_of(const val& v) {
  return emscripten::vecFromJSArray<std::string>(val::global("Object").call<val>("keys", v));
}



lattice::Result<std::vector<int64_t>> ints_in(const val& v, const std::string& what) {
  if (!val::global("Array").call<bool>("isArray", v)) return lattice::options_error("{} must be an array of whole numbers", what);
  std::vector<int64_t> out;
  for (const auto& d : emscripten::vecFromJSArray<val>(v)) {
    if (!val::global("Number").call<bool>("isSafeInteger", d)) return lattice::options_error("{} must be an array of whole numbers", what);
    out.push_back(static_cast<int64_t>(d.as<double>()));
  }
  return out;
}

lattice::Result<double> number_in(const val& v, const std::string& what) {
  if (v.typeOf().as<std::string>() != "number") return lattice::options_error("{} must be a number", what);
  return v.as<double>();
}

// spec.attributes: a Conv's or Gemm's, ONNX names; transA/transB as 0/1 or booleans.
lattice::Status attributes_in(const val& a, lattice::repair::LayerSpec& spec) {
  if (a.isUndefined()) return lattice::ok_status();
  if (!is_object(a)) return lattice::options_error("spec.attributes must be an object");
  for (const auto& key : keys_of(a)) {
    val v = a[key];
    if (v.isUndefined() || v.isNull()) continue;
    std::string what = "spec.attributes." + key;
    auto ints = [&](std::vector<int64_t>& out) -> lattice::Status {
      auto list = ints_in(v, what);
      if (!list) return list.error();
      out = std::move(list).value();
      return lattice::ok_status();
    };
    auto flag = [&](bool& out) -> lattice::Status {
      if (v.typeOf().as<std::string>() == "boolean") {
        out = v.as<bool>();
      } else if (v.typeOf().as<std::string>() == "number" && (v.as<double>() == 0 || v.as<double>() == 1)) {
        out = v.as<double>() == 1;
      } else {
        return lattice::options_error("{} must be 0 or 1", what);
      }
      return lattice::ok_status();
    };
    lattice::Status s = lattice::ok_status();
    if (key == "kernel_shape") {
      s = ints(spec.kernel_shape);
    } else if (key == "strides") {
      s = ints(spec.strides);
    } else if (key == "pads") {
      s = ints(spec.pads);
    } else if (key == "dilations") {
      s = ints(spec.dilations);
    } else if (key == "group") {
      if (!val::global("Number").call<bool>("isSafeInteger", v)) return lattice::options_error("{} must be a whole number", what);
      spec.group = static_cast<int64_t>(v.as<double>());
    } else if (key == "auto_pad") {
      if (!v.isString()) return lattice::options_error("{} must be a string", what);
      spec.auto_pad = v.as<std::string>();
    } else if (key == "transA") {
      s = flag(spec.trans_a);
    } else if (key == "transB") {
      s = flag(spec.trans_b);
    } else if (key == "alpha" || key == "beta") {
      auto n = number_in(v, what);
      if (!n) return n.error();
      (key == "alpha" ? spec.alpha : spec.beta) = *n;
    } else {
      return lattice::options_error(
          "unknown attribute '{}' (known: kernel_shape, strides, pads, dilations, group, auto_pad, transA, transB, alpha, beta)", key);
    }
    if (!s) return s.error();
  }
  return lattice::ok_status();
}

// What fitLayer and fitBytes share: op, attributes, weightShape, input, target, maxRows (and for
// fitLayer current, ridge, seed, rectified, weightBounds); `with_data` reads the Float32Arrays too.
struct FitIn {
  lattice::repair::FitRequest request;
  std::vector<float> input, target, weights, bias, bounds;
  // `keep`: the fit's equations are kept for the next fit; `again`: that fit, of the same input and
  // rows, reuses them (a layer before the MaxPool a Lattice rewrite added, fitted a second time).
  bool keep = false, again = false;
};

// What the last fit with `keep` left (core/repair/fit_layer.h): held only until the next fit.
lattice::repair::KeptEquations kept;

lattice::Result<FitIn> fit_in(const val& spec, bool with_data) {
  FitIn in;
  auto& r = in.request;
  if (!is_object(spec)) return lattice::options_error("the spec must be an object");
  const std::vector<std::string> known = {"op",      "attributes", "weightShape", "input",    "target",
                                         "current", "ridge",      "maxRows",     "seed",     "rectified",
                                         "weightBounds", "keep",      "again"};
  for (const auto& key : keys_of(spec)) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return lattice::options_error("unknown field 'spec.{}' (known: op, attributes, weightShape, input, target, current, ridge, "
                                    "maxRows, seed, rectified, weightBounds, keep, again)", key);
    }
  }
  if (!spec["op"].isString()) return lattice::options_error("spec.op must be 'Conv' or 'Gemm'");
  r.spec.op = spec["op"].as<std::string>();
  if (auto s = attributes_in(spec["attributes"], r.spec); !s) return s.error();
  auto shape = ints_in(spec["weightShape"], "spec.weightShape");
  if (!shape) return shape.error();
  r.spec.weight_shape = std::move(shape).value();
  for (auto [name, dims, data] : {std::tuple{"input", &r.input_dims, &in.input}, std::tuple{"target", &r.target_dims, &in.target}}) {
    val t = spec[name];
    if (!is_object(t)) return lattice::options_error("spec.{} must be an object {{data: Float32Array, dims}}", name);
    auto d = ints_in(t["dims"], fmt::format("spec.{}.dims", name));
    if (!d) return d.error();
    *dims = std::move(d).value();
    if (with_data) {
      auto values = floats_in(t["data"], fmt::format("spec.{}.data", name));
      if (!values) return values.error();
      *data = std::move(values).value();
    }
  }
  if (val v = spec["maxRows"]; !v.isUndefined()) {
    if (!val::global("Number").call<bool>("isSafeInteger", v) || v.as<double>() < 1) {
      return lattice::options_error("spec.maxRows must be a whole number >= 1");
    }
    r.max_rows = static_cast<uint64_t>(v.as<double>());
  }
  if (!with_data) return in;
  if (val v = spec["ridge"]; !v.isUndefined()) {
    auto n = number_in(v, "spec.ridge");
    if (!n) return n.error();
    r.ridge = *n;
  }
  for (auto [name, flag] : {std::pair{"rectified", &r.rectified}, std::pair{"keep", &in.keep}, std::pair{"again", &in.again}}) {
    if (val v = spec[name]; !v.isUndefined()) {
      if (v.typeOf().as<std::string>() != "boolean") return lattice::options_error("spec.{} must be true or false", name);
      *flag = v.as<bool>();
    }
  }
  if (val v = spec["seed"]; !v.isUndefined()) {
    if (!val::global("Number").call<bool>("isSafeInteger", v) || v.as<double>() < 0) {
      return lattice::options_error("spec.seed must be a whole number >= 0");
    }
    r.seed = static_cast<uint64_t>(v.as<double>());
  }
  if (val b = spec["weightBounds"]; !b.isUndefined()) {
    auto bounds = floats_in(b, "spec.weightBounds");
    if (!bounds) return bounds.error();
    in.bounds = std::move(bounds).value();
  }
  if (val c = spec["current"]; !c.isUndefined()) {
    if (!is_object(c)) return lattice::options_error("spec.current must be an object {{weights: Float32Array, bias?}}");
    auto w = floats_in(c["weights"], "spec.current.weights");
    if (!w) return w.error();
    in.weights = std::move(w).value();
    if (!c["bias"].isUndefined()) {
      auto b = floats_in(c["bias"], "spec.current.bias");
      if (!b) return b.error();
      in.bias = std::move(b).value();
    }
  }
  return in;
}

// {weights: Float32Array, bias: Float32Array, rows, residualBefore?, residualAfter}, or {error}.
val fit_layer(const val& spec) {
  auto in = fit_in(spec, true);
  if (!in) return failure(in.error());
  auto& r = in->request;
  r.input = in->input;
  r.target = in->target;
  if (!spec["current"].isUndefined()) {
    r.current_weights = std::span<const float>(in->weights);
    if (!spec["current"]["bias"].isUndefined()) r.current_bias = std::span<const float>(in->bias);
  }
  if (!spec["weightBounds"].isUndefined()) r.weight_bounds = std::span<const float>(in->bounds);
  // Only a fit that says it is of the same input reuses the equations, and only one that asks
  // keeps its own: they are as large as the fit's sums (P^2 doubles).
  if (!in->again) kept.equations.reset();
  auto fit = lattice::repair::fit_layer(r, in->keep || in->again ? &kept : nullptr);
  if (!in->keep) kept.equations.reset();
  if (!fit) return failure(fit.error());
  val out = val::object();
  out.set("weights", floats_out(fit->weights));
  out.set("bias", floats_out(fit->bias));
  out.set("rows", static_cast<double>(fit->rows));
  if (fit->residual_before) out.set("residualBefore", *fit->residual_before);
  out.set("residualAfter", fit->residual_after);
  return out;
}

// The heap bytes fitLayer needs for such a spec (dims only; data is not read), or {error}.
val fit_bytes(const val& spec) {
  auto in = fit_in(spec, false);
  if (!in) return failure(in.error());
  const auto& r = in->request;
  auto bytes = lattice::repair::fit_bytes(r.spec, r.input_dims, r.target_dims, r.max_rows, !spec["weightBounds"].isUndefined());
  if (!bytes) return failure(bytes.error());
  return val(static_cast<double>(*bytes));
}

}  // namespace

EMSCRIPTEN_BINDINGS(onnx_lattice_fit) {
  emscripten::function("fitLayer", &fit_layer);
  emscripten::function("fitBytes", &fit_bytes);
}
