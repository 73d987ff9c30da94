// Node >= 18 has fetch(), which this emscripten's loader then tries on a file path and fails:
// hand it the .wasm beside this script instead.
Module['wasmBinary'] = require('fs').readFileSync(__filename.replace(/\.js$/, '.wasm'));
