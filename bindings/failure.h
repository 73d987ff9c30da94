#pragma once
// An error as the JS wrappers throw it: {error: message, code, path?, errno?} (wasm/index.d.ts),
// the same from every module (the converter's, the fit's, the FPQ twin's).
#include <emscripten/val.h>

#include <string>

#include "core/util/result.h"
#include "core/util/utf8.h"

namespace lattice_wasm {

inline emscripten::val failure(const lattice::Error& e) {
  emscripten::val out = emscripten::val::object();
  out.set("error", lattice::printable(e.message));
  out.set("code", std::string(lattice::error_code(e.kind)));
  if (!e.path.empty()) out.set("path", e.path);
  if (!e.errno_name.empty()) out.set("errno", e.errno_name);
  return out;
}

}  // namespace lattice_wasm
