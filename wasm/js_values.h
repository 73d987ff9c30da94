#pragma once
// JS values into and out of a module's heap, one copy each way (TypedArray.set and slice, never
// element by element), shared by every module's bindings.
#include <emscripten/val.h>

#include <cstdint>
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

// An owned Uint8Array: a view of the heap would be invalidated by its next growth.
inline emscripten::val bytes_out(std::string_view bytes) {
  return emscripten::val(
             emscripten::typed_memory_view(bytes.size(), reinterpret_cast<const uint8_t*>(bytes.data())))
      .call<emscripten::val>("slice");
}

}  // namespace lattice_wasm
