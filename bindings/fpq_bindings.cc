// Embind surface of the FPQ twin (core/fixed_point/twin.h): a module of its own,
// onnx_lattice_fpq, so that the page's first load does not carry it (the page loads it when a
// check simulates FPQ; Node's check and CLI load it on the first twin, wasm/node/fpq.mjs).
// Rejections come back as {error, code}, as in wasm/bindings.cc.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <string>
#include <vector>

#include "core/fixed_point/twin.h"
#include "core/onnx/model_io.h"
#include "core/util/utf8.h"
#include "bindings/failure.h"
#include "bindings/js_values.h"

namespace {

using emscripten::val;

using lattice_wasm::failure;

// fpqTwin(model: Uint8Array, valuesOnly: boolean) -> {model: Uint8Array, twin: JSON text} or
// {error, code}; with valuesOnly, {twin} alone, for a model of any opset.
val fpq_twin(const val& bytes, bool values_only) {
  if (!bytes.instanceof(val::global("Uint8Array"))) return failure(lattice::options_error("the model must be a Uint8Array"));
  std::string in = lattice_wasm::copy_in(bytes);
  if (auto size = lattice::check_model_size(in.size()); !size) return failure(size.error());
  auto model = lattice::parse_model({reinterpret_cast<const uint8_t*>(in.data()), in.size()});
  if (!model) return failure(model.error());
  in = {};
  using lattice::fixed_point::TwinScope;
  auto twin = lattice::fixed_point::build_fpq_twin(*model, values_only ? TwinScope::values : TwinScope::model);
  if (!twin) return failure(twin.error());
  val result = val::object();
  if (!values_only) {
    auto out = lattice::serialize_model(twin->model);
    if (!out) return failure(out.error());
    result.set("model", lattice_wasm::bytes_out(*out));
  }
  result.set("twin", twin->to_json().dump(false));
  return result;
}

}  // namespace

EMSCRIPTEN_BINDINGS(onnx_lattice_fpq) { emscripten::function("fpqTwin", &fpq_twin); }
