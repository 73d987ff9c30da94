#pragma once
// JS values into and out of a module's heap, one copy each way (TypedArray.set and slice, never
// element by element), shared by every module's bindings.
#include <emscripten/val.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/result.h"

namespace lattice_wasm {

// One copy from the JS heap into wasm memory: a Uint8Array's bytes.
inline std::string copy_in(const emscripten::val& u8) {
  std::string bytes(u8["length"].as<size_t>(), '\0');
  emscripten::val(emscripten::typed_memory_view(bytes.size(), reinterpret_cast<uint8_t*>(bytes.data())))
      .call<void>("set", u8);
  return bytes;
}

inline bool is_object(const emscripten::val& v) {
  return !v.isNull() && v.typeOf().as<std::string>() == "object";
}

// A Float32Array's values, copied into the heap in one go.
inline lattice::Result<std::vector<float>> floats_in(const emscripten::val& v, const std::string& what) {
  if (!v.instanceof(emscripten::val::global("Float32Array"))) {
    return lattice::options_error("{} must be a Float32Array", what);
  }
  std::vector<float> out(v["length"].as<size_t>());
  emscripten::val(emscripten::typed_memory_view(out.size(), out.data())).call<void>("set", v);
  return out;
}

// {tensor: [per channel, ...]}: FPQ's range fit's measured ranges or clips
// (wasm/shared/range_fit.mjs), `what` named in the errors, into `into`.
inline lattice::Status channel_values(const emscripten::val& v, std::string_view what,
                                      std::map<std::string, std::vector<double>>& into) {
  if (!is_object(v)) return lattice::options_error("{} must be an object of arrays of numbers", what);
  for (const auto& name : emscripten::vecFromJSArray<std::string>(emscripten::val::global("Object").call<emscripten::val>("keys", v))) {
    emscripten::val list = v[name];
    if (!emscripten::val::global("Array").call<bool>("isArray", list)) {
      return lattice::options_error("{}['{}'] must be an array of numbers", what, name);
    }
    std::vector<double> values;
    for (const auto& item : emscripten::vecFromJSArray<emscripten::val>(list)) {
      if (!item.isNumber()) return lattice::options_error("{}['{}'] must be an array of numbers", what, name);
      values.push_back(item.as<double>());
    }
    into[name] = std::move(values);
  }
  return lattice::ok_status();
}

// An owned Float32Array (not a view of the heap, which the next growth would invalidate).
inline emscripten::val floats_out(const std::vector<float>& values) {
  return emscripten::val(emscripten::typed_memory_view(values.size(), values.data())).call<emscripten::val>("slice");
}

// An owned Uint8Array: a view of the heap would be invalidated by its next growth.
inline emscripten::val bytes_out(std::string_view bytes) {
  return emscripten::val(
             emscripten::typed_memory_view(bytes.size(), reinterpret_cast<const uint8_t*>(bytes.data())))
      .call<emscripten::val>("slice");
}

}  // namespace lattice_wasm
