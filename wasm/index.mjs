// The Node.js API: createConverter() -> { convert, inspect, describe, patterns, hardware, version }.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { check } from './check_node.mjs';
import { fsHost } from './fs_host.mjs';

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

// options.resolver as the core reads it: location -> the data file's bytes, or null. The caller
// gives a function, a Map or a plain object; what it throws or returns amiss reads as "no such file".
function resolverFrom(resolver) {
  if (resolver === undefined) return undefined;
  const lookup = typeof resolver === 'function' ? resolver
    : resolver instanceof Map ? (location) => resolver.get(location)
      : resolver !== null && typeof resolver === 'object' ? (location) => (Object.hasOwn(resolver, location) ? resolver[location] : undefined)
        : null;
  if (!lookup) throw codedError('options.resolver must be a function, a Map or an object of data files', 'ERR_ONNX_LATTICE_OPTIONS');
  return (location) => {
    try {
      const file = lookup(location);
      return file instanceof Uint8Array ? file : ArrayBuffer.isView(file) || file instanceof ArrayBuffer ? toBytes(file) : null;
    } catch {
      return null;
    }
  };
}

// convertFile's options as the shared command line's flags: the file path runs exactly as the CLIs.
function flagsFrom(options) {
  const flags = [];
  const list = (key, flag) => {
    const v = options[key];
    if (!Array.isArray(v) || v.some((item) => typeof item !== 'string')) throw codedError(`options.${key} must be an array of strings`, 'ERR_ONNX_LATTICE_OPTIONS');
    if (v.length) flags.push(flag, v.join(','));
  };
  for (const [key, v] of Object.entries(options ?? {})) {
    if (v === undefined) continue;
    const type = (want) => {
      if (typeof v !== want) throw codedError(`options.${key} has the wrong type (${typeof v})`, 'ERR_ONNX_LATTICE_OPTIONS');
    };
    if (key === 'target') { type('string'); flags.push('--target', v); }
    else if (key === 'foldBatchNorm') { type('boolean'); if (!v) flags.push('--no-fold-bn'); }
    else if (key === 'dryRun') { type('boolean'); if (v) flags.push('--dry-run'); }
    else if (key === 'only') list(key, '--only');
    else if (key === 'skip') list(key, '--skip');
    else if (key === 'skipMatches') list(key, '--skip-match');
    else if (key === 'dataLayout') {
      type('string');
      if (!['keep', 'external', 'inline'].includes(v)) throw codedError(`options.dataLayout '${v}' is not one of keep, external, inline`, 'ERR_ONNX_LATTICE_OPTIONS');
      if (v !== 'keep') flags.push(v === 'inline' ? '--inline' : '--external-data');
    } else {
      throw codedError(`unknown option '${key}' (known: target, foldBatchNorm, dryRun, only, skip, skipMatches, dataLayout)`, 'ERR_ONNX_LATTICE_OPTIONS');
    }
  }
  return flags;
}

// The parts of an output file (Uint8Arrays) as one.
export function joinParts(parts) {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
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
    const resolver = resolverFrom(options?.resolver);
    const opts = resolver ? { ...options, resolver } : options;
    const result = guard(state, () => module.convert(input, opts, onProgress));
    if (result.error !== undefined) throw codedError(result.error, result.code);
    // The parts are joined here, outside the WebAssembly heap; an unchanged model is the input.
    const model = result.model === undefined ? input.slice() : result.model && joinParts(result.model);
    const converted = { model, data: result.data && joinParts(result.data), report: JSON.parse(result.report) };
    if (result.description !== undefined) converted.description = JSON.parse(result.description);
    if (result.inputDescription !== undefined) converted.inputDescription = JSON.parse(result.inputDescription);
    return converted;
  };
  // The file path: external data read from the model's folder, ranges copied file to file, the
  // outputs written together or not at all -- the CLIs' own code, with the report returned.
  const convertFile = (inPath, outPath, options = {}) => {
    const args = ['convert', String(inPath), '-o', String(outPath), '--report', '-', ...flagsFrom(options)];
    let out = '';
    let err = '';
    const host = { ...fsHost, out: (text) => { out += text; }, err: (text) => { err += text; }, errIsTerminal: () => false };
    const status = guard(state, () => module.runCli(args, host));
    if (status !== 0) {
      const message = err.split('\n')[0].replace(/^onnx-lattice: (error: )?/, '');
      throw codedError(message, status === 2 ? 'ERR_ONNX_LATTICE_OPTIONS' : 'ERR_ONNX_LATTICE_MODEL');
    }
    return { report: JSON.parse(out) };
  };
  return {
    convert,
    convertFile,
    inspect: (bytes, options = {}) => convert(bytes, { ...options, dryRun: true }).report,
    describe: (bytes) => {
      const result = guard(state, () => module.describe(toBytes(bytes)));
      if (typeof result !== 'string') throw new Error(result.error);
      return JSON.parse(result);
    },
    // Runs both models in onnxruntime-node (in a worker thread) and compares them (check.mjs).
    check,
    patterns: () => JSON.parse(module.catalogue()),
    hardware: () => JSON.parse(module.hardware()),
    version: module.version(),
    // Undocumented, for bench/data_stays.mjs: the module's memory in bytes (it only grows).
    _heapBytes: () => module.HEAPU8.length,
  };
}
