// Embind surface of the repair's graph work (core/repair/session.h, weight_bounds.h): a module of
// its own, onnx_lattice_repair, so that the page's first load does not carry it (the page's conversion
// worker loads it on the first repair, web/repair-server.js; Node's engine with the fit module,
// wasm/node/engine.mjs). The fit itself is onnx_lattice_fit's (no protobuf in it).
// Rejections come back as {error, code}, as in wasm/bindings.cc.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/onnx/model_io.h"
#include "core/repair/session.h"
#include "core/repair/set_weights.h"
#include "core/repair/weight_bounds.h"
#include "bindings/failure.h"
#include "bindings/js_values.h"

namespace {

using emscripten::val;
using lattice_wasm::failure;

// `layers`: [{node, weights: Float32Array, bias: Float32Array, throughBatchNorm?: boolean}].
lattice::Result<std::vector<lattice::repair::LayerWeights>> layers_in(const val& layers) {
  if (!val::global("Array").call<bool>("isArray", layers)) {
    return lattice::options_error("layers must be an array of {{node, weights, bias}}");
  }
  std::vector<lattice::repair::LayerWeights> list;
  int index = 0;
  for (const auto& layer : emscripten::vecFromJSArray<val>(layers)) {
    std::string at = fmt::format("layers[{}]", index++);
    if (!lattice_wasm::is_object(layer) || !layer["node"].isString()) {
      return lattice::options_error("{} must be an object {{node: string, weights, bias}}", at);
    }
    auto w = lattice_wasm::floats_in(layer["weights"], at + ".weights");
    if (!w) return w.error();
    auto b = lattice_wasm::floats_in(layer["bias"], at + ".bias");
    if (!b) return b.error();
    const bool through = layer["throughBatchNorm"].isTrue();
    list.push_back({layer["node"].as<std::string>(), std::move(w).value(), std::move(b).value(), through});
  }
  return list;
}

// fpqWeightBounds(model, node, ranges, clips: {tensor: [per channel]}, options?: {throughBatchNorm})
// -> {tensors: [the values whose ranges bound it], bounds?: Float32Array per weight element
// (absent: the layer is not bounded)}, or {error}.
val fpq_weight_bounds(const val& u8, const val& node, const val& ranges, const val& clips, const val& options) {
  if (!u8.instanceof(val::global("Uint8Array"))) return failure(lattice::options_error("the model must be a Uint8Array"));
  if (!node.isString()) return failure(lattice::options_error("the node must be a string"));
  lattice::repair::MeasuredRanges measured;
  if (auto s = lattice_wasm::channel_values(ranges, "ranges", measured.ranges); !s) return failure(s.error());
  if (auto s = lattice_wasm::channel_values(clips, "clips", measured.clips); !s) return failure(s.error());
  const bool through = !options.isNull() && options.typeOf().as<std::string>() == "object" && options["throughBatchNorm"].isTrue();
  std::string bytes = lattice_wasm::copy_in(u8);
  auto bounds = lattice::repair::fpq_layer_bounds({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()},
                                                  node.as<std::string>(), std::move(measured), through);
  if (!bounds) return failure(bounds.error());
  val out = val::object();
  out.set("tensors", val::array(bounds->tensors));
  if (!bounds->bounds.empty()) {
    out.set("bounds", lattice_wasm::floats_out(bounds->bounds));
  }
  return out;
}

// --- The repair's session (core/repair/session.h): its models live here between calls, named by
// a number, so that the page's worker can hold one for the check's worker, which asks by message.

using lattice::repair::RepairSession;
std::map<int, std::unique_ptr<RepairSession>> sessions;
int last_session = 0;

lattice::Result<std::vector<std::string>> strings_in(const val& list, std::string_view what) {
  if (!val::global("Array").call<bool>("isArray", list)) return lattice::options_error("{} must be an array of strings", what);
  std::vector<std::string> out;
  for (const auto& item : emscripten::vecFromJSArray<val>(list)) {
    if (!item.isString()) return lattice::options_error("{} must be an array of strings", what);
    out.push_back(item.as<std::string>());
  }
  return out;
}

// onnxruntime's tensor type names (Tensor.type) as ONNX element types.
int32_t element_type(const std::string& name) {
  static const std::map<std::string, int32_t> kTypes = {
      {"float32", 1}, {"uint8", 2}, {"int8", 3}, {"uint16", 4}, {"int16", 5}, {"int32", 6}, {"int64", 7},
      {"string", 8}, {"bool", 9}, {"float16", 10}, {"float64", 11}, {"uint32", 12}, {"uint64", 13}};
  auto it = kTypes.find(name);
  return it == kTypes.end() ? 0 : it->second;
}

// `held`: {name: {type, dims}}, the tensors the caller holds.
lattice::Result<lattice::repair::GivenTensors> held_in(const val& held) {
  if (!lattice_wasm::is_object(held)) return lattice::options_error("held must be an object {{name: {{type, dims}}}}");
  lattice::repair::GivenTensors out;
  for (const auto& name : emscripten::vecFromJSArray<std::string>(val::global("Object").call<val>("keys", held))) {
    val t = held[name];
    if (!lattice_wasm::is_object(t) || !t["type"].isString() || !val::global("Array").call<bool>("isArray", t["dims"])) {
      return lattice::options_error("held['{}'] must be {{type, dims}}", name);
    }
    const int32_t type = element_type(t["type"].as<std::string>());
    if (!type) return lattice::options_error("'{}': a tensor of type {} cannot be given to a part of the model", name, t["type"].as<std::string>());
    std::vector<int64_t> dims;
    for (const auto& d : emscripten::vecFromJSArray<val>(t["dims"])) {
      if (!d.isNumber()) return lattice::options_error("held['{}'].dims must be numbers", name);
      dims.push_back(static_cast<int64_t>(d.as<double>()));
    }
    out[name] = {type, std::move(dims)};
  }
  return out;
}

val strings_out(const std::vector<std::string>& list) { return val::array(list); }

// The conversion report's `matches` ([{id, applied, numerically_equivalent, new_nodes}]), or null
// without a report.
lattice::Result<std::optional<std::vector<lattice::repair::ConversionMatch>>> matches_in(const val& matches) {
  if (matches.isNull() || matches.isUndefined()) return std::optional<std::vector<lattice::repair::ConversionMatch>>();
  if (!val::global("Array").call<bool>("isArray", matches)) return lattice::options_error("matches must be an array, or null without a report");
  const val truthy = val::global("Boolean");
  std::vector<lattice::repair::ConversionMatch> out;
  int index = 0;
  for (const auto& m : emscripten::vecFromJSArray<val>(matches)) {
    std::string at = fmt::format("matches[{}]", index++);
    if (!lattice_wasm::is_object(m) || !m["id"].isString()) return lattice::options_error("{} must be an object {{id: string, ...}}", at);
    lattice::repair::ConversionMatch match{m["id"].as<std::string>(), truthy(m["applied"]).as<bool>(),
                                           truthy(m["numerically_equivalent"]).as<bool>(), {}};
    if (match.applied) {
      auto nodes = strings_in(m["new_nodes"], at + ".new_nodes");
      if (!nodes) return nodes.error();
      match.new_nodes = std::move(nodes).value();
    }
    out.push_back(std::move(match));
  }
  return std::optional(std::move(out));
}

// `sizes`: {input: dims}, one sample's.
lattice::Result<lattice::repair::SampleSizes> sizes_in(const val& sizes) {
  if (!lattice_wasm::is_object(sizes)) return lattice::options_error("the sizes must be an object {{input: dims}}");
  lattice::repair::SampleSizes out;
  for (const auto& name : emscripten::vecFromJSArray<std::string>(val::global("Object").call<val>("keys", sizes))) {
    val dims = sizes[name];
    if (!val::global("Array").call<bool>("isArray", dims)) return lattice::options_error("sizes['{}'] must be an array of numbers", name);
    std::vector<int64_t> list;
    for (const auto& d : emscripten::vecFromJSArray<val>(dims)) {
      if (!d.isNumber()) return lattice::options_error("sizes['{}'] must be an array of numbers", name);
      list.push_back(static_cast<int64_t>(d.as<double>()));
    }
    out.emplace_back(name, std::move(list));
  }
  return out;
}

// openRepairSession(original, converted) -> {session: number}, or {error}.
val open_repair_session(const val& original, const val& converted) {
  for (const val* u8 : {&original, &converted}) {
    if (!u8->instanceof(val::global("Uint8Array"))) return failure(lattice::options_error("the models must be Uint8Arrays"));
  }
  std::string theirs = lattice_wasm::copy_in(original), mine = lattice_wasm::copy_in(converted);
  auto session = RepairSession::open(lattice::as_span(theirs), lattice::as_span(mine));
  if (!session) return failure(session.error());
  sessions[++last_session] = std::move(session).value();
  val out = val::object();
  out.set("session", last_session);
  return out;
}

// repairSession(session, method, args) for the methods of RepairSession, `which` being
// 'original' or 'converted':
//   start(which, inputs, keep) -> {}; next(which, held, commit, peek) -> {bytes?: Uint8Array,
//   inputs, nodes (the model's, by index), outputs, perSample, hold, aside, drop}; adopt(which, held) -> {drop};
//   release(which, name) -> {}; setWeights(layers) -> {}; bytes() -> Uint8Array; close() -> {};
//   plan(matches, sizes) -> {layers, left, bytesPerSample} (core/repair/plan.h).
// Or {error}.
val repair_session(int id, const std::string& method, const val& given_args) {
  auto it = sessions.find(id);
  if (it == sessions.end()) return failure(lattice::options_error("no repair session {}", id));
  RepairSession& session = *it->second;
  // bytes() and close() take none: their arguments may be left out.
  const val args = given_args.isUndefined() ? val::array() : given_args;
  if (!val::global("Array").call<bool>("isArray", args)) return failure(lattice::options_error("{}: the arguments must be an array", method));
  auto arg = [&](int i) { return args[i]; };
  if (method == "close") {
    sessions.erase(it);
    return val::object();
  }
  if (method == "bytes") {
    auto bytes = session.converted_bytes();
    if (!bytes) return failure(bytes.error());
    return lattice_wasm::bytes_out(*bytes);
  }
  if (method == "setWeights") {
    auto list = layers_in(arg(0));
    if (!list) return failure(list.error());
    if (auto s = session.set_weights(*list); !s) return failure(s.error());
    return val::object();
  }
  if (method == "plan") {
    auto matches = matches_in(arg(0));
    if (!matches) return failure(matches.error());
    auto sizes = sizes_in(arg(1));
    if (!sizes) return failure(sizes.error());
    auto plan = session.plan(*matches, *sizes);
    if (!plan) return failure(plan.error());
    return val::global("JSON").call<val>("parse", lattice::repair::plan_json(*plan).dump(false));
  }
  if (method != "start" && method != "next" && method != "adopt" && method != "release") {
    return failure(lattice::options_error("a repair session has no method '{}'", method));
  }
  if (!arg(0).isString() || (arg(0).as<std::string>() != "original" && arg(0).as<std::string>() != "converted")) {
    return failure(lattice::options_error("{}: the model must be 'original' or 'converted'", method));
  }
  const auto which = arg(0).as<std::string>() == "original" ? RepairSession::Which::kOriginal : RepairSession::Which::kConverted;
  if (method == "start") {
    auto inputs = strings_in(arg(1), "inputs");
    if (!inputs) return failure(inputs.error());
    auto keep = strings_in(arg(2), "keep");
    if (!keep) return failure(keep.error());
    session.start(which, *inputs, *keep);
    return val::object();
  }
  if (method == "release") {
    if (!arg(1).isString()) return failure(lattice::options_error("release: the name must be a string"));
    if (auto s = session.release(which, arg(1).as<std::string>()); !s) return failure(s.error());
    return val::object();
  }
  if (method == "adopt") {
    auto held = strings_in(arg(1), "held");
    if (!held) return failure(held.error());
    auto drop = session.adopt(which, *held);
    if (!drop) return failure(drop.error());
    val out = val::object();
    out.set("drop", strings_out(*drop));
    return out;
  }
  // next(which, held, commit, peek)
  auto held = held_in(arg(1));
  if (!held) return failure(held.error());
  auto commit = strings_in(arg(2), "commit");
  if (!commit) return failure(commit.error());
  auto peek = strings_in(arg(3), "peek");
  if (!peek) return failure(peek.error());
  auto run = session.next(which, *held, *commit, *peek);
  if (!run) return failure(run.error());
  val out = val::object();
  if (!run->part.bytes.empty()) out.set("bytes", lattice_wasm::bytes_out(run->part.bytes));
  out.set("inputs", strings_out(run->part.inputs));
  out.set("nodes", val::array(run->part.nodes));
  out.set("outputs", strings_out(run->outputs));
  out.set("perSample", strings_out(run->per_sample));
  out.set("hold", strings_out(run->hold));
  out.set("aside", strings_out(run->aside));
  out.set("drop", strings_out(run->drop));
  return out;
}

}  // namespace

EMSCRIPTEN_BINDINGS(onnx_lattice_repair) {
  emscripten::function("openRepairSession", &open_repair_session);
  emscripten::function("repairSession", &repair_session);
  emscripten::function("fpqWeightBounds", &fpq_weight_bounds);
}
