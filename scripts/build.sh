#!/usr/bin/env bash
# Builds the native CLI + tests (build/native), the wasm module + tests (build/wasm), the npm
# package's dist (wasm/dist) and the static site (build/web). Installs what is missing first.
set -euo pipefail
source "$(dirname "$0")/env.sh"
bash "$ROOT/scripts/setup.sh" "$@"

jobs=$(nproc)
# Release (-O3) for both: -Os made the wasm fold 2.7x slower for 37 KB less gzipped.
common=(-DONNX_ML_PROTO="$CACHE/onnx/onnx-ml.proto" -DCMAKE_BUILD_TYPE=Release "${COMPILER_CACHE[@]}")

log "building native"
cmake -S "$ROOT" -B "$ROOT/build/native" "${common[@]}" >/dev/null
cmake --build "$ROOT/build/native" -j"$jobs"

log "building wasm"
emcmake cmake -S "$ROOT" -B "$ROOT/build/wasm" "${common[@]}" \
  -DPROTOBUF_WASM_SRC="$PROTOBUF_SRC" -DPROTOBUF_WASM_BUILD="$PROTOBUF_WASM_BUILD" >/dev/null
cmake --build "$ROOT/build/wasm" -j"$jobs"

# The npm package carries the module; a nested package.json marks the emscripten loader CommonJS.
mkdir -p "$ROOT/wasm/dist"
cp "$ROOT/build/wasm/onnx_lattice.js" "$ROOT/build/wasm/onnx_lattice.wasm" "$ROOT/wasm/dist/"
# Repair's fit, a module of its own on every core, with its pthreads' worker script (CMakeLists.txt:
# onnx_lattice_fit_mt_wasm): Node always has the shared memory it needs. The page has a second, on
# one thread (onnx_lattice_fit_wasm), for when it has not.
threaded_fit=(onnx_lattice_fit_mt.js onnx_lattice_fit_mt.wasm onnx_lattice_fit_mt.worker.js)
rm -f "$ROOT/wasm/dist/onnx_lattice_fit.js" "$ROOT/wasm/dist/onnx_lattice_fit.wasm"
cp "${threaded_fit[@]/#/$ROOT/build/wasm/}" "$ROOT/wasm/dist/"
# The FPQ twin, a module of its own too (CMakeLists.txt: onnx_lattice_fpq_wasm).
cp "$ROOT/build/wasm/onnx_lattice_fpq.js" "$ROOT/build/wasm/onnx_lattice_fpq.wasm" "$ROOT/wasm/dist/"
# The repair's graph work, a module of its own (CMakeLists.txt: onnx_lattice_repair_wasm).
cp "$ROOT/build/wasm/onnx_lattice_repair.js" "$ROOT/build/wasm/onnx_lattice_repair.wasm" "$ROOT/wasm/dist/"
echo '{ "type": "commonjs" }' > "$ROOT/wasm/dist/package.json"
# The package carries the repository's licence (npm packs only files inside wasm/).
cp "$ROOT/LICENSE" "$ROOT/wasm/LICENSE"

log "assembling build/web"
rm -rf "$ROOT/build/web" && mkdir -p "$ROOT/build/web"
if [[ -d "$ROOT/web" ]] && compgen -G "$ROOT/web/*" >/dev/null; then cp -r "$ROOT"/web/* "$ROOT/build/web/"; fi
rm -f "$ROOT"/build/web/*.d.ts  # the page's types, for an editor: never loaded
cp "$ROOT/build/wasm/onnx_lattice.js" "$ROOT/build/wasm/onnx_lattice.wasm" "$ROOT/build/web/"
# Loaded by the page only when a repair runs, threaded when cross-origin isolated; not part of the
# first load.
cp "${threaded_fit[@]/#/$ROOT/build/wasm/}" "$ROOT/build/wasm/onnx_lattice_fit.js" "$ROOT/build/wasm/onnx_lattice_fit.wasm" \
  "$ROOT/build/web/"
# Loaded by the page only when a check simulates FPQ.
cp "$ROOT/build/wasm/onnx_lattice_fpq.js" "$ROOT/build/wasm/onnx_lattice_fpq.wasm" \
  "$ROOT/build/wasm/onnx_lattice_repair.js" "$ROOT/build/wasm/onnx_lattice_repair.wasm" "$ROOT/build/web/"
cp "$ROOT/tests/fixtures/sample.onnx" "$ROOT/build/web/sample.onnx" 2>/dev/null || true
# The graph view's layout library: its browser build, from node_modules (installed by setup.sh).
cp "$ROOT/node_modules/@dagrejs/dagre/dist/dagre.min.js" "$ROOT/build/web/"
# The modules the page runs as the Node package does (the check's comparison, the user's data
# readers, the repair's steps, FPQ's range fit), copied as the folder they live in: a module added
# there is on the site with no change here.
cp -r "$ROOT/wasm/shared" "$ROOT/build/web/shared"
# fflate's browser module for .npz, and onnxruntime-web's CPU build (one thread unless the page is
# cross-origin isolated, no WebGPU), loaded only when "Check" is pressed.
cp "$ROOT/node_modules/fflate/esm/browser.js" "$ROOT/build/web/fflate.mjs"
mkdir -p "$ROOT/build/web/ort"
cp "$ROOT/node_modules/onnxruntime-web/dist/ort.wasm.bundle.min.mjs" \
   "$ROOT/node_modules/onnxruntime-web/dist/ort-wasm-simd-threaded.wasm" "$ROOT/build/web/ort/"
# The page's own scripts are served without their whole-line comments, which are written for the
# people reading the source (about a quarter of the first load's gzipped script bytes): the
# sources in web/ and wasm/shared/ keep them. No line of those scripts inside a multi-line
# template literal starts with //, so only comments go.
for script in "$ROOT"/web/*.js; do sed -i -E '/^[[:space:]]*\/\//d' "$ROOT/build/web/$(basename "$script")"; done
sed -i -E '/^[[:space:]]*\/\//d' "$ROOT"/build/web/shared/*.mjs
log "built: build/native/onnx-lattice, node wasm/cli.mjs, build/web/"
