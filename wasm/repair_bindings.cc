// Embind surface of the repair's graph work (core/repair/set_weights.h): a module of its own,
// onnx_lattice_repair, so that the page's first load does not carry it (the page's conversion
// worker loads it on the first repair, web/repair-server.js; Node's engine with the fit module,
// wasm/engine.mjs). The fit itself is onnx_lattice_fit's (no protobuf in it).
// Rejections come back as {error, code}, as in wasm/bindings.cc.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <string>
#include <vector>

#include "core/repair/set_weights.h"
#include "core/repair/weight_bounds.h"
#include "wasm/failure.h"
#include "wasm/js_values.h"

namespace {

using emscripten::val;
using lattice_wasm::failure;

// `layers`: [{node, weights: Float32Array, bias: Float32Array, throughBatchNorm?: boolean}]. The new
// model's bytes, or {error}.
val set_layer_weights(const val& u8, const val& layers) {
  if (!u8.instanceof(val::global("Uint8Array"))) return failure(lattice::options_error("the model must be a Uint8Array"));
  if (!val::global("Array").call<bool>("isArray", layers)) {
    return failure(lattice::options_error("layers must be an array of {{node, weights, bias}}"));
  }
  std::vector<lattice::repair::LayerWeights> list;
  int index = 0;
  for (const auto& layer : emscripten::vecFromJSArray<val>(layers)) {
    std::string at = fmt::format("layers[{}]", index++);
    if (!lattice_wasm::is_object(layer) || !layer["node"].isString()) {
      return failure(lattice::options_error("{} must be an object {{node: string, weights, bias}}", at));
    }
    auto w = lattice_wasm::floats_in(layer["weights"], at + ".weights");
    if (!w) return failure(w.error());
    auto b = lattice_wasm::floats_in(layer["bias"], at + ".bias");
    if (!b) return failure(b.error());
    const bool through = layer["throughBatchNorm"].isTrue();
    list.push_back({layer["node"].as<std::string>(), std::move(w).value(), std::move(b).value(), through});
  }
  std::string bytes = lattice_wasm::copy_in(u8);
  auto out = lattice::repair::set_layer_weights({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, list);
  if (!out) return failure(out.error());
  bytes = {};
  return lattice_wasm::bytes_out(*out);
}

// fpqWeightBounds(model, node, ranges, clips: {tensor: [per channel]}) -> {tensors: [the values
// whose ranges bound it], bounds?: Float32Array per weight element (absent: the layer is not
// bounded)}, or {error}.
val fpq_weight_bounds(const val& u8, const val& node, const val& ranges, const val& clips) {
  if (!u8.instanceof(val::global("Uint8Array"))) return failure(lattice::options_error("the model must be a Uint8Array"));
  if (!node.isString()) return failure(lattice::options_error("the node must be a string"));
  lattice::repair::MeasuredRanges measured;
  if (auto s = lattice_wasm::channel_values(ranges, "ranges", measured.ranges); !s) return failure(s.error());
  if (auto s = lattice_wasm::channel_values(clips, "clips", measured.clips); !s) return failure(s.error());
  std::string bytes = lattice_wasm::copy_in(u8);
  auto bounds = lattice::repair::fpq_layer_bounds({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()},
                                                  node.as<std::string>(), std::move(measured));
  if (!bounds) return failure(bounds.error());
  val out = val::object();
  out.set("tensors", val::array(bounds->tensors));
  if (!bounds->bounds.empty()) {
    out.set("bounds", lattice_wasm::floats_out(bounds->bounds));
  }
  return out;
}

}  // namespace

EMSCRIPTEN_BINDINGS(onnx_lattice_repair) {
  emscripten::function("setLayerWeights", &set_layer_weights);
  emscripten::function("fpqWeightBounds", &fpq_weight_bounds);
}
