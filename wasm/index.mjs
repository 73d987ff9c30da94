// The Node.js API: createConverter() -> { convert, inspect, patterns, version }.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const factory = require('./dist/onnx_lattice.js');

// The emscripten loader of this toolchain fetch()es its .wasm, which Node cannot do for a file
// path: hand it the bytes instead.
export async function loadModule() {
  const wasmBinary = readFileSync(new URL('./dist/onnx_lattice.wasm', import.meta.url));
  return factory({ wasmBinary });
}

function toBytes(bytes) {
  if (bytes instanceof Uint8Array) return bytes;
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  throw new TypeError('the model must be a Uint8Array, an ArrayBuffer or a Buffer');
}

export async function createConverter() {
  const module = await loadModule();
  const convert = (bytes, options = {}) => {
    const result = module.convert(toBytes(bytes), options);
    if (result.error !== undefined) throw new Error(result.error);
    return { model: result.model, report: JSON.parse(result.report) };
  };
  return {
    convert,
    inspect: (bytes, options = {}) => convert(bytes, { ...options, dryRun: true }).report,
    patterns: () => JSON.parse(module.catalogue()),
    version: module.version(),
  };
}
