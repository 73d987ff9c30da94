// The Node.js API: createConverter() -> { convert, inspect, patterns, hardware, version }.
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
    throw new Error('out of memory: the model does not fit in the WebAssembly heap (4 GB at most)');
  }
}

function toBytes(bytes) {
  if (bytes instanceof Uint8Array) return bytes;
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  throw new TypeError('the model must be a Uint8Array, an ArrayBuffer or a Buffer');
}

export async function createConverter() {
  const module = await loadModule();
  const state = { broken: null };
  const convert = (bytes, options = {}) => {
    const input = toBytes(bytes);
    const result = guard(state, () => module.convert(input, options));
    if (result.error !== undefined) throw new Error(result.error);
    return { model: result.model, report: JSON.parse(result.report) };
  };
  return {
    convert,
    inspect: (bytes, options = {}) => convert(bytes, { ...options, dryRun: true }).report,
    patterns: () => JSON.parse(module.catalogue()),
    hardware: () => JSON.parse(module.hardware()),
    version: module.version(),
  };
}
