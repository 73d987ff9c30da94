// The check in Node (converter.check, the Node CLI's `check` and `convert --check`): the models
// are handed to a worker thread (check_worker.mjs) that runs them in onnxruntime-node, an
// optional peer dependency, so the caller's event loop never waits for the runtime.
import { Worker } from 'node:worker_threads';

import { GATE_KEYS, gateOf, gateOptionsError } from '../shared/check.mjs';
import { codedError } from './coded_error.mjs';

// A model as the worker reads it: a path (its data files beside it), or bytes with the data files
// of an external-data model by location ({model, dataFiles}, dataFiles a Map or an object). The
// CLI's staged files are {path, dataPaths}: a data file is read from the path given for its
// location, not from beside the model.
function sourceOf(model, label) {
  if (typeof model === 'string') return { path: model };
  if (typeof model?.path === 'string') return { path: model.path, dataPaths: { ...model.dataPaths } };
  const bytes = (x) => (x instanceof Uint8Array ? x : x instanceof ArrayBuffer ? new Uint8Array(x)
    : ArrayBuffer.isView(x) ? new Uint8Array(x.buffer, x.byteOffset, x.byteLength) : null);
  if (bytes(model)) return { bytes: bytes(model) };
  if (model && typeof model === 'object' && bytes(model.model)) {
    const files = model.dataFiles instanceof Map ? Object.fromEntries(model.dataFiles) : model.dataFiles ?? {};
    const dataFiles = {};
    for (const [location, data] of Object.entries(files)) {
      if (!bytes(data)) throw codedError(`the ${label} model's data file '${location}' must be a Uint8Array or an ArrayBuffer`, 'ERR_ONNX_LATTICE_OPTIONS');
      dataFiles[location] = bytes(data);
    }
    return { bytes: bytes(model.model), dataFiles };
  }
  throw codedError(`the ${label} model must be a file path, a Uint8Array or {model, dataFiles}`, 'ERR_ONNX_LATTICE_OPTIONS');
}

// The keys check() and repair() take: tests/node/options.test.mjs holds them to the option table.
export const CHECK_KEYS = ['seed', 'inputRange', 'rtol', 'atol', 'scaleAtol', 'inputShapes', 'inputValues', 'layerwise', 'conversion', 'onProgress',
  'inputs', 'labels', 'preprocessing', 'signal', 'simulate', 'mapThreshold', ...GATE_KEYS];
// The repair's own (repair()), beside the check's that shape its samples.
export const REPAIR_KEYS = ['calibration', 'ridge', 'maxRows', 'refitAbove', 'seed', 'inputRange', 'inputShapes', 'preprocessing', 'rtol', 'atol', 'conversion', 'onProgress', 'signal'];

// Runs the check in a worker: {report} for original vs candidate, and with `twin` the fold-only
// twin's check too ({twin}). With `repair` ({calibration: sources, check}), the candidate is
// repaired first ({repair: its report, repaired: the model's bytes}) and, when `check`, the check
// runs the repaired model. Rejects with a coded Error for a bad option, an unreadable file or
// a missing runtime; a model that fails to load or run is in the report.
export function runCheck({ original, candidate, twin = false, repair, rangeFit }, options = {}) {
  const known = repair || rangeFit ? [...new Set([...CHECK_KEYS, ...REPAIR_KEYS])] : CHECK_KEYS;
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) return Promise.reject(codedError(`unknown check option '${key}' (known: ${known.join(', ')})`, 'ERR_ONNX_LATTICE_OPTIONS'));
  }
  const { onProgress, signal, ...rest } = options;
  if (rest.simulate !== undefined && rest.simulate !== 'fpq') {
    return Promise.reject(codedError(`options.simulate takes 'fpq' (Lattice FPQ's fixed point), not ${JSON.stringify(rest.simulate)}`, 'ERR_ONNX_LATTICE_OPTIONS'));
  }
  const gateError = gateOptionsError(rest, rest.inputs !== undefined || (repair?.check && repair.calibration.length > 0));
  if (gateError) return Promise.reject(codedError(gateError, 'ERR_ONNX_LATTICE_OPTIONS'));
  if (onProgress !== undefined && typeof onProgress !== 'function') {
    return Promise.reject(codedError('options.onProgress must be a function', 'ERR_ONNX_LATTICE_OPTIONS'));
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    return Promise.reject(codedError('options.signal must be an AbortSignal', 'ERR_ONNX_LATTICE_OPTIONS'));
  }
  const aborted = () => Object.assign(codedError('the operation was aborted', 'ERR_ONNX_LATTICE_ABORTED'), { name: 'AbortError', cause: signal.reason });
  if (signal?.aborted) return Promise.reject(aborted());
  // Set on abort and read by the worker between steps: ending a worker while onnxruntime-node
  // runs in it takes the whole process down, so the worker stops itself.
  const stop = new Int32Array(new SharedArrayBuffer(4));
  let workerData;
  try {
    workerData = { original: sourceOf(original, 'original'), candidate: candidate === undefined ? undefined : sourceOf(candidate, 'candidate'), twin, repair, rangeFit, options: rest, stop };
  } catch (e) {
    return Promise.reject(e);
  }
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./check_worker.mjs', import.meta.url), { workerData });
    let settled = false;
    worker.on('message', (m) => {
      if (m.type === 'progress') onProgress?.({ stage: m.stage, fraction: m.fraction });
      else if (m.type === 'result') {
        settled = true;
        const gate = m.report && gateOf(m.report, rest);
        if (gate) m.report.gate = gate;
        resolve(m);
      }
      else if (m.type === 'error') { settled = true; reject(codedError(m.message, m.code, { ...(m.path ? { path: m.path, errno: m.errno } : {}), ...(m.missing ? { missing: m.missing } : {}) })); }
    });
    worker.on('error', (e) => { if (!settled) { settled = true; reject(codedError(`the check stopped: ${e.message}`, 'ERR_ONNX_LATTICE_CHECK')); } });
    worker.on('exit', (status) => { if (!settled) reject(codedError(`the check stopped (exit ${status})`, 'ERR_ONNX_LATTICE_CHECK')); });
    // The promise rejects at once; the worker stops at its next step and its result is dropped.
    // Nothing has been written (the caller writes only what a finished run hands back).
    signal?.addEventListener('abort', () => {
      if (settled) return;
      settled = true;
      Atomics.store(stop, 0, 1);
      reject(aborted());
    }, { once: true });
  });
}

// converter.repair(original, converted, options) -> {model: the repaired model's bytes, report}.
export async function repair(original, converted, options = {}) {
  for (const key of Object.keys(options)) {
    if (!REPAIR_KEYS.includes(key)) throw codedError(`unknown repair option '${key}' (known: ${REPAIR_KEYS.join(', ')})`, 'ERR_ONNX_LATTICE_OPTIONS');
  }
  const { calibration, ...rest } = options;
  const sources = calibration === undefined ? [] : Array.isArray(calibration) ? calibration : [calibration];
  const result = await runCheck({ original, candidate: converted, repair: { calibration: sources, check: false } }, rest);
  return { model: result.repaired, report: result.repair };
}

// converter.fitRanges(converted, options) -> {model: the fitted model's bytes, report}: FPQ's range
// fit (wasm/shared/range_fit.mjs) on `calibration` (a source or a list; none: seeded random inputs in
// [0, 2), said so), on a model converted with fixedPoint 'fpq'. `conversion`: its report.
export async function fitRanges(converted, options = {}) {
  for (const key of Object.keys(options)) {
    if (!REPAIR_KEYS.includes(key)) throw codedError(`unknown range fit option '${key}' (known: ${REPAIR_KEYS.join(', ')})`, 'ERR_ONNX_LATTICE_OPTIONS');
  }
  const { calibration, ...rest } = options;
  const sources = calibration === undefined ? [] : Array.isArray(calibration) ? calibration : [calibration];
  const result = await runCheck({ original: converted, candidate: converted, rangeFit: { calibration: sources, alone: true } }, rest);
  return { model: result.fitted, report: result.rangeFit };
}

// converter.check(original, candidate, options) -> the check report; with simulate: 'fpq', its
// `fpq` is the candidate's FPQ twin checked against the candidate.
export async function check(original, candidate, options = {}) {
  const { report, fpq } = await runCheck({ original, candidate }, options);
  return fpq ? { ...report, fpq } : report;
}
