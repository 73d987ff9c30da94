// Internal: the converter on the calling thread, over one instance of the wasm module. The
// package's worker (worker.mjs) runs it for createConverter(); createSyncConverter() hands it out
// as it is; the Node CLI and bench/data_stays.mjs use its helpers. Not part of the package's API.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { codedError } from './coded_error.mjs';
import { fsHost } from './fs_host.mjs';

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

const require = createRequire(import.meta.url);
const factory = require('../dist/onnx_lattice.js');
const fitFactory = require('../dist/onnx_lattice_fit_mt.js');
const repairFactory = require('../dist/onnx_lattice_repair.js');

// The emscripten loader of this toolchain fetch()es its .wasm, which Node cannot do for a file
// path: hand it the bytes instead.
export async function loadModule() {
  const wasmBinary = readFileSync(new URL('../dist/onnx_lattice.wasm', import.meta.url));
  return factory({ wasmBinary, printErr: () => {} });
}

// Repair's fit (fitLayer, fitBytes): a module of its own, without protobuf, which the page loads
// only when a repair runs (bindings/fit_bindings.cc). In Node the one on every core
// (onnx_lattice_fit_mt, core/repair/parallel.h): its pthreads are worker threads, made as it loads
// and waiting for the fit's work between fits; unreferenced, they do not keep the process alive
// once everything else is done.
// The repair's graph work (its session, fpqWeightBounds): a module of its own (bindings/repair_bindings.cc), loaded
// with the fit module, so that the converter's, which the page loads first, does not carry it.
export async function loadRepairModule() {
  const wasmBinary = readFileSync(new URL('../dist/onnx_lattice_repair.wasm', import.meta.url));
  return repairFactory({ wasmBinary, printErr: () => {} });
}

export async function loadFitModule() {
  const wasmBinary = readFileSync(new URL('../dist/onnx_lattice_fit_mt.wasm', import.meta.url));
  const module = await fitFactory({ wasmBinary, printErr: () => {} });
  for (const worker of [...module.PThread.unusedWorkers, ...module.PThread.runningWorkers]) worker.unref();
  return module;
}

const optionsError = (message) => codedError(message, 'ERR_ONNX_LATTICE_OPTIONS');

// Calls into the module. The module has no C++ exceptions, so running out of its heap aborts it
// (a RuntimeError, or a bare number from a C++ throw): that becomes an Error, and the module is
// not used again.
export function guard(state, fn) {
  if (state.broken) {
    throw codedError(`this converter stopped after an earlier failure (${state.broken}); create a new one`, 'ERR_ONNX_LATTICE_MEMORY');
  }
  try {
    return fn();
  } catch (e) {
    if (e instanceof Error && !(e instanceof WebAssembly.RuntimeError)) throw e;
    state.broken = 'out of memory';
    throw codedError('out of memory: the model does not fit in the WebAssembly heap (4 GB at most)', 'ERR_ONNX_LATTICE_MEMORY');
  }
}

export function toBytes(bytes) {
  if (bytes instanceof Uint8Array) return bytes;
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  throw codedError('the model must be a Uint8Array, an ArrayBuffer or a Buffer', 'ERR_ONNX_LATTICE_OPTIONS', {}, TypeError);
}

// options.resolver as the core reads it: location -> the data file's bytes, or null. The caller
// gives a function, a Map or a plain object; what it throws or returns amiss reads as "no such file".
export function resolverFrom(resolver) {
  if (resolver === undefined) return undefined;
  const lookup = typeof resolver === 'function' ? resolver
    : resolver instanceof Map ? (location) => resolver.get(location)
      : resolver !== null && typeof resolver === 'object' ? (location) => (Object.hasOwn(resolver, location) ? resolver[location] : undefined)
        : null;
  if (!lookup) throw optionsError('options.resolver must be a function, a Map or an object of data files');
  return (location) => {
    try {
      const file = lookup(location);
      return file instanceof Uint8Array ? file : ArrayBuffer.isView(file) || file instanceof ArrayBuffer ? toBytes(file) : null;
    } catch {
      return null;
    }
  };
}

// onProgress is a callback, not a conversion option: taken out, the rest goes to the core, which
// checks every field (bindings/bindings.cc, options_from: one place for all of them).
export function splitProgress(options) {
  if (options === null || typeof options !== 'object' || !('onProgress' in options)) return { options, onProgress: undefined };
  const { onProgress, ...rest } = options;
  if (onProgress !== undefined && typeof onProgress !== 'function') throw optionsError('options.onProgress must be a function');
  return { options: rest, onProgress };
}


const thrown = (result) => codedError(result.error, result.code, { path: result.path, errno: result.errno });

// A path as a path: '-' is the file of that name (no standard input or output here).
function pathOf(path, what) {
  if (typeof path !== 'string' || path === '') throw optionsError(`${what} must be a file path (a non-empty string)`);
  return path === '-' ? './-' : path;
}

const refuse = (options, keys, message) => {
  for (const key of keys) if (options?.[key] !== undefined) throw optionsError(message(key));
};
// The option table's keys (core/option_table.h) that one call takes and another does not: the
// in-memory convert()'s that convertFile cannot take (it reads the data files beside the model and
// names its own), and those only the page's worker gives (ranges read ahead, the report before
// the downloads), which are not the package's.
function onlyIn(table, shells, notIn) {
  return table.options.filter((o) => o.key && shells.some((s) => o.shells.includes(s)) && !notIn.some((s) => o.shells.includes(s)))
    .map((o) => o.key);
}
const unknownOption = (key) => `unknown option '${key}'`;

// `host`: the file system convertFile works on (fs_host.mjs; the worker's adds cancellation).
// `fit: false` leaves the repair's modules (the fit, with its threads, and the weights' writing) out,
// for an engine only read for its tables.
export async function createEngine({ host = fsHost, fit = true } = {}) {
  const module = await loadModule();
  const [fitModule, repairModule] = fit ? await Promise.all([loadFitModule(), loadRepairModule()]) : [null, null];
  const state = { broken: null };
  const fitState = { broken: null };
  const repairState = { broken: null };
  const optionTable = module.options();
  const memoryOnly = onlyIn(JSON.parse(optionTable), ['convert'], ['convertFile']);
  const pageOnly = onlyIn(JSON.parse(optionTable), ['page'], ['convert', 'convertFile']);
  const convert = (bytes, options = {}) => {
    const input = toBytes(bytes);
    let onProgress;
    ({ options, onProgress } = splitProgress(options));
    refuse(options, pageOnly, unknownOption);
    const resolver = resolverFrom(options?.resolver);
    const opts = resolver ? { ...options, resolver } : options;
    const result = guard(state, () => module.convert(input, opts, onProgress));
    if (result.error !== undefined) throw thrown(result);
    // The parts are joined here, outside the WebAssembly heap; an unchanged model is the input.
    const model = result.model === undefined ? input.slice() : result.model && joinParts(result.model);
    const converted = { model, data: result.data && joinParts(result.data), report: JSON.parse(result.report) };
    if (result.description !== undefined) converted.description = JSON.parse(result.description);
    if (result.inputDescription !== undefined) converted.inputDescription = JSON.parse(result.inputDescription);
    return converted;
  };
  // The CLIs' own code (core/cli/convert_file.cc): external data read from the model's folder,
  // ranges copied file to file, the outputs written together or not at all.
  const convertFile = (inPath, outPath, options = {}) => {
    const input = pathOf(inPath, 'the input');
    const output = outPath === undefined || outPath === null ? '' : pathOf(outPath, 'the output');
    let onProgress;
    ({ options, onProgress } = splitProgress(options));
    refuse(options, memoryOnly, (key) => `options.${key} is for convert() (in memory); convertFile reads and names the files itself`);
    refuse(options, pageOnly, unknownOption);
    const result = guard(state, () => module.convertFile(input, output, options, host, onProgress));
    if (result.error !== undefined) throw thrown(result);
    return { report: JSON.parse(result.report), files: result.files };
  };
  return {
    convert,
    convertFile,
    inspect: (bytes, options = {}) => convert(bytes, { ...options, dryRun: true }).report,
    // One stage: parsing is all it does.
    describe: (bytes, options = {}) => {
      const input = toBytes(bytes);
      const { options: rest, onProgress } = splitProgress(options ?? {});
      const unknown = Object.keys(rest ?? {}).filter((key) => rest[key] !== undefined);
      if (unknown.length) throw optionsError(`unknown option '${unknown[0]}' (describe takes onProgress, and signal in the asynchronous converter)`);
      onProgress?.({ stage: 'parse', fraction: 0 });
      const result = guard(state, () => module.describe(input));
      if (typeof result !== 'string') throw thrown(result);
      onProgress?.({ stage: 'done', fraction: 1 });
      return JSON.parse(result);
    },
    // Repair's core (core/repair/): the fit of one layer from activations onnxruntime computed,
    // the bytes such a fit needs (to refuse a layer before running anything), and the session
    // that holds the models, cuts their parts and takes new weights. Synchronous: each is one call
    // into the module.
    fitLayer: (spec) => {
      const result = guard(fitState, () => fitModule.fitLayer(spec));
      if (result.error !== undefined) throw thrown(result);
      return result;
    },
    fitBytes: (spec) => {
      const result = guard(fitState, () => fitModule.fitBytes(spec));
      if (typeof result !== 'number') throw thrown(result);
      return result;
    },
    // The repair's session (core/repair/session.h): both models held in the module, parts cut
    // from them, new weights written in place. openRepairSession gives {session}; repairSession
    // (session, method, args) answers a method of it (bindings/repair_bindings.cc).
    openRepairSession: (original, converted) => {
      const [theirs, mine] = [toBytes(original), toBytes(converted)];
      const result = guard(repairState, () => repairModule.openRepairSession(theirs, mine));
      if (result.error !== undefined) throw thrown(result);
      return result;
    },
    repairSession: (session, method, args) => {
      const result = guard(repairState, () => repairModule.repairSession(session, method, args));
      if (result.error !== undefined) throw thrown(result);
      return result;
    },
    // Under FPQ, how large a layer's new weights may be for the range fit to scale its input
    // (core/repair/weight_bounds.h): {tensors, bounds?}.
    fpqWeightBounds: (bytes, node, ranges, clips, options = {}) => {
      const input = toBytes(bytes);
      const result = guard(repairState, () => repairModule.fpqWeightBounds(input, node, ranges, clips, options));
      if (result.error !== undefined) throw thrown(result);
      return result;
    },
    patterns: () => JSON.parse(module.catalogue()),
    options: () => JSON.parse(optionTable),
    hardware: () => JSON.parse(module.hardware()),
    version: module.version(),
    // For bench/data_stays.mjs: the module's memory in bytes (it only grows).
    _heapBytes: () => module.HEAPU8.length,
    _module: module,
  };
}
