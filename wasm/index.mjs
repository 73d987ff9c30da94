// The Node.js API: createConverter() -> { convert, inspect, describe, patterns, hardware, version }.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const factory = require('./dist/onnx_lattice.js');

// The emscripten loader of this toolchain fetch()es its .wasm, which Node cannot do for a file
// path: hand it the bytes instead.
export async function loadModule() {
  const wasmBinary = readFileSync(new URL('./dist/onnx_lattice.wasm', import.meta.url));
  return factory({ wasmBinary, printErr: () => {} });
}

// Calls into the module. The module has no C++ exceptions, so running out of its heap aborts it
// (a RuntimeError, or a bare number from a C++ throw): that becomes an Error, and the module is
// not used again.
export function guard(state, fn) {
  if (state.broken) throw new Error(`this converter stopped after an earlier failure (${state.broken}); create a new one`);
  try {
    return fn();
  } catch (e) {
    if (e instanceof Error && !(e instanceof WebAssembly.RuntimeError)) throw e;
    state.broken = 'out of memory';
    throw codedError('out of memory: the model does not fit in the WebAssembly heap (4 GB at most)', 'ERR_ONNX_LATTICE_MEMORY');
  }
}

// An Error whose `code` tells a bad option (ERR_ONNX_LATTICE_OPTIONS) from a rejected model
// (ERR_ONNX_LATTICE_MODEL) and from a model too big for the heap (ERR_ONNX_LATTICE_MEMORY).
function codedError(message, code) {
  const e = new Error(message);
  e.code = code;
  return e;
}

function toBytes(bytes) {
  if (bytes instanceof Uint8Array) return bytes;
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const e = new TypeError('the model must be a Uint8Array, an ArrayBuffer or a Buffer');
  e.code = 'ERR_ONNX_LATTICE_OPTIONS';
  throw e;
}

export async function createConverter() {
  const module = await loadModule();
  const state = { broken: null };
  const convert = (bytes, options = {}) => {
    const input = toBytes(bytes);
    // onProgress is a callback, not a conversion option: the core checks the rest.
    let onProgress;
    if (options !== null && typeof options === 'object' && 'onProgress' in options) {
      ({ onProgress, ...options } = options);
      if (typeof onProgress !== 'function') throw codedError('options.onProgress must be a function', 'ERR_ONNX_LATTICE_OPTIONS');
    }
    const result = guard(state, () => module.convert(input, options, onProgress));
    if (result.error !== undefined) throw codedError(result.error, result.code);
    return { model: result.model, report: JSON.parse(result.report) };
  };
  return {
    convert,
    inspect: (bytes, options = {}) => convert(bytes, { ...options, dryRun: true }).report,
    describe: (bytes) => {
      const result = guard(state, () => module.describe(toBytes(bytes), null));
      if (typeof result !== 'string') throw new Error(result.error);
      return JSON.parse(result);
    },
    patterns: () => JSON.parse(module.catalogue()),
    hardware: () => JSON.parse(module.hardware()),
    version: module.version(),
  };
}
