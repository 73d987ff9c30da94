// The Node check's worker thread (started by check_node.mjs): onnxruntime-node creates sessions
// and runs them on the thread that calls it, for seconds on a large model, so the check runs here
// and the caller's event loop keeps turning. It reads the models (and their data files) itself,
// describes them with the converter's own module, makes the fold-only twin when asked, runs the
// shared comparison (check.mjs) and posts the report; one worker per check, so the runtime's
// memory goes back when it ends.
import { readFileSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';

import { UNREPAIRED, checkCandidates, checkFpqTwin, feedShapes, fpqTwinFailure, randomFitSamples, twinOptions } from '../shared/check.mjs';
import { sizesTooLarge } from '../shared/check_sizes.mjs';
import { codedError } from './coded_error.mjs';
import { createEngine, joinParts } from './engine.mjs';
import { holdOut, joinSamples, repairModel } from '../shared/repair.mjs';

const post = (message) => parentPort.postMessage(message);
// Whether two sample sources are the same: paths resolved, anything else (tensors, bytes) by identity.
const sameSource = (a, b) => a === b || (typeof a === 'string' && typeof b === 'string' && resolve(a) === resolve(b));

async function runtime() {
  let ort;
  try {
    ort = (await import('onnxruntime-node')).default;
  } catch (e) {
    throw codedError('the check runs both models in onnxruntime-node, which is not installed: npm install onnxruntime-node ' +
      `(${e.message.split('\n')[0]})`, 'ERR_ONNX_LATTICE_CHECK_RUNTIME');
  }
  return {
    name: 'onnxruntime-node', version: ort.env.versions?.node ?? ort.env.versions?.common, Tensor: ort.Tensor,
    // Optimisations off: the runtime's own Conv+BatchNorm fusion would hide what the converter did.
    // One core left to the caller, whose event loop this worker exists to keep turning; a repair,
    // minutes of the runtime on a large model, takes them all (`everyCore`) with the runtime's
    // idle threads asleep rather than spinning, so that the caller's event loop still gets its
    // turns (on ResNet-50 on 2 cores: 18.2 s of onnxruntime in the repair with one thread, 12.3 s
    // with two).
    session: (bytes, externalData, { everyCore = false } = {}) => ort.InferenceSession.create(bytes, {
      graphOptimizationLevel: 'disabled', externalData, logSeverityLevel: 3,
      intraOpNumThreads: everyCore ? availableParallelism() : Math.max(1, availableParallelism() - 1), interOpNumThreads: 1,
      ...(everyCore ? { extra: { session: { intra_op: { allow_spinning: '0' } } } } : {}),
    }),
  };
}

// The data files a model reads, by location, as the core asks for them: from the model's folder
// for a path (or the path given for that location), from the caller's map for bytes. Each is
// read once.
function dataFilesOf(source) {
  const read = new Map();
  const lookup = (location) => {
    if (!read.has(location)) {
      let file = null;
      if (source.path !== undefined) {
        try { file = readFileSync(source.dataPaths?.[location] ?? join(dirname(source.path), location)); } catch { file = null; }
      } else {
        file = source.dataFiles?.[location] ?? null;
      }
      read.set(location, file);
    }
    return read.get(location);
  };
  return { lookup, externalData: () => [...read].filter(([, data]) => data).map(([path, data]) => ({ path, data })) };
}

// A model to run: its bytes, the data files it reads and its description. `options` converts it
// first (the fold-only twin); without them the converter only reads it (nothing applied), which
// describes it and finds its data files the way every conversion does.
function modelFrom(module, source, label, options = { target: 'none', foldBatchNorm: false }) {
  let bytes;
  if (source.path !== undefined) {
    try {
      bytes = readFileSync(source.path);
    } catch (e) {
      throw codedError(`cannot read the ${label} model '${source.path}': ${e.message}`, 'ERR_ONNX_LATTICE_IO', { path: source.path, errno: e.errno });
    }
  } else {
    bytes = source.bytes;
  }
  const files = dataFilesOf(source);
  const result = module.convert(bytes, { ...options, describe: true, resolver: files.lookup, dataFile: 'twin.onnx.data' }, undefined);
  if (result.error !== undefined) throw codedError(`the ${label} model: ${result.error}`, result.code);
  const model = { bytes, externalData: files.externalData(), description: JSON.parse(result.inputDescription) };
  const report = JSON.parse(result.report);
  if (result.model === undefined) return { ...model, report };
  return {
    bytes: joinParts(result.model),
    externalData: result.data ? [{ path: 'twin.onnx.data', data: joinParts(result.data) }, ...model.externalData] : model.externalData,
    description: JSON.parse(result.description), report,
  };
}

// Random inputs at sizes whose activations this machine could not hold are refused before
// anything runs. The estimate needs every activation's shape at those sizes: a description of the
// original with its inputs pinned to them gives it.
function refuseOversized(module, source, reference, inputShapes) {
  const shapes = feedShapes(reference.description, inputShapes);
  const dynamic = reference.description.inputs.some((i) => !Array.isArray(i.shape) || i.shape.some((d) => typeof d !== 'number'));
  const sized = dynamic ? modelFrom(module, source, 'original', { target: 'none', foldBatchNorm: false, inputShapes: shapes }).description : reference.description;
  const weightBytes = reference.bytes.length + reference.externalData.reduce((n, f) => n + f.data.length, 0);
  const refusal = sizesTooLarge(sized, shapes, { weightBytes, limit: totalmem(), where: 'this machine has' });
  if (refusal) throw codedError(refusal, 'ERR_ONNX_LATTICE_OPTIONS');
}

// The FPQ twin of the (converted, or repaired) candidate against the candidate itself, on the
// same inputs (check.mjs, checkFpqTwin): what FPQ's fixed point does to the float model.
async function checkFpq(ort, candidate, options, onProgress) {
  const { fpqTwin } = await import('./fpq.mjs');
  let made;
  try {
    made = await fpqTwin(candidate.bytes);
  } catch (e) {
    // A model the twin cannot be made of (an opset below 11) is this comparison's finding.
    if (e.code !== 'ERR_ONNX_LATTICE_MODEL') throw e;
    return fpqTwinFailure(e.message);
  }
  return checkFpqTwin(ort, candidate, made, options, onProgress);
}

try {
  const { original, candidate, twin, repair, rangeFit, options, stop } = workerData;
  const signal = { get aborted() { return Atomics.load(stop, 0) === 1; } };
  const onProgress = (stage, fraction) => post({ type: 'progress', stage, fraction });
  const ort = await runtime();
  // The converter (its raw module describes and converts; the engine holds the repair's fit, and
  // its threads, only for a repair).
  const engine = await createEngine({ fit: Boolean(repair) });
  const module = engine._module;
  const reference = modelFrom(module, original, 'original');
  if (options.inputs === undefined && !repair?.calibration.length && !rangeFit?.calibration.length) refuseOversized(module, original, reference, options.inputShapes);
  // The original runs once for both comparisons. The twin is the original converted again with
  // the conversion's options; its own report names the folds behind its tensors. Folds are exact
  // up to float rounding, which grows with the values' scale: its atol is scaled by each
  // output's (check.mjs, compareTensor).
  const candidates = [];
  if (candidate) candidates.push({ model: modelFrom(module, candidate, 'candidate'), conversion: options.conversion, scaleAtol: options.scaleAtol, label: 'converted' });
  if (twin) {
    const folded = modelFrom(module, original, 'fold-only twin', twinOptions(options.conversion));
    candidates.push({ model: folded, conversion: folded.report, scaleAtol: true, label: 'fold-only twin' });
  }
  const { inputs, labels, preprocessing, ...rest } = options;
  // The readers (and their decoders) load only when samples are given.
  const read = async (source, withLabels) => (await import('./samples_node.mjs')).readSamples(source, reference.description.inputs, { labels: withLabels, preprocessing });
  // The user's samples, read against the original's inputs (their names, types and fixed sizes).
  if (inputs !== undefined) {
    onProgress('reading the samples', 0);
    rest.samples = await read(inputs, labels);
  }
  let repaired;
  if (repair) {
    onProgress('reading the calibration samples', 0);
    const given = [];
    for (const source of repair.calibration) given.push(await read(source));
    const calibration = given.length ? joinSamples(given) : randomFitSamples(reference.description, rest);
    // Without samples of its own, the check takes the calibration's last quarter, which the fit
    // does not see: a figure on the samples a fit was made on would flatter it.
    let fit = calibration;
    if (repair.check && given.length && rest.samples === undefined) [fit, rest.samples] = holdOut(calibration);
    // Samples of the check's own that are none of the calibration's files were held out of the
    // fit too (a path named in both was not).
    else if (rest.samples && !repair.calibration.some((c) => sameSource(c, inputs))) rest.samples.heldOut = true;
    // Under FPQ the repaired model goes through the scheme's exact rewrites again (repair.mjs).
    const settleFixedPoint = (bytes, settle) => {
      const settled = modelFrom(module, { bytes }, 'repaired', settle);
      return { bytes: settled.bytes, report: settled.report, description: settled.description };
    };
    const everyCore = { ...ort, session: (bytes, externalData) => ort.session(bytes, externalData, { everyCore: true }) };
    const { fpqTwin } = await import('./fpq.mjs');
    repaired = await repairModel(everyCore, { ...engine, settleFixedPoint, fpqTwin }, reference, candidates[0].model, options.conversion, fit, rest, onProgress, signal);
    // The converted model as it was is checked on the same samples too: what the repair bought.
    if (repair.check) candidates.push({ ...candidates[0], label: UNREPAIRED });
    candidates[0].model = { ...candidates[0].model, bytes: repaired.bytes };
  }
  let fitted;
  if (rangeFit) {
    // Under FPQ the ranges are measured on the model as it stands (repaired or converted), on the
    // calibration samples the repair fits too (its share of them), or seeded random inputs.
    const { fitRanges, fitSamples } = await import('../shared/range_fit.mjs');
    const { fpqTwin } = await import('./fpq.mjs');
    let calibration = null;
    if (rangeFit.calibration.length) {
      onProgress('reading the calibration samples', 0);
      const given = [];
      for (const source of rangeFit.calibration) given.push(await read(source));
      calibration = joinSamples(given);
      if (repair?.check && options.inputs === undefined) [calibration] = holdOut(calibration);
    }
    const files = Object.fromEntries(candidates[0].model.externalData.map((f) => [f.path, f.data]));
    // A repaired model is described anew: its new biases' BatchNormalizations renamed its convs' outputs.
    const current = repaired ? modelFrom(module, { bytes: candidates[0].model.bytes, dataFiles: files }, 'repaired') : candidates[0].model;
    const settle = (bytes, settleOptions) => modelFrom(module, { bytes, dataFiles: files }, 'range-fitted', settleOptions);
    fitted = await fitRanges(ort, { settle, fpqTwin }, current, options.conversion, fitSamples(current.description, calibration, rest), onProgress);
    candidates[0].model = { ...current, bytes: fitted.bytes, description: fitted.description };
  }
  const { simulate, ...shared } = rest;
  // A repair, or a range fit alone (converter.fitRanges), checks only when asked to.
  const checks = repair ? repair.check : !rangeFit?.alone;
  const reports = checks ? await checkCandidates(ort, reference, candidates, shared, onProgress) : [];
  const reportOf = (label) => reports[candidates.findIndex((c) => c.label === label)];
  const report = candidate && reports.length ? reports[0] : undefined;
  const message = { type: 'result', report, twin: twin ? reportOf('fold-only twin') : undefined, unrepaired: reportOf(UNREPAIRED) };
  if (simulate === 'fpq' && report) message.fpq = await checkFpq(ort, candidates[0].model, shared, onProgress);
  if (repaired) Object.assign(message, { repair: repaired.report, repaired: repaired.bytes });
  if (fitted) Object.assign(message, { rangeFit: fitted.report, fitted: fitted.bytes, fixedPoint: fitted.fixedPoint });
  post(message);
} catch (e) {
  post({ type: 'error', message: e.message, code: e.code ?? 'ERR_ONNX_LATTICE_CHECK', path: e.path, errno: e.errno, missing: e.missing });
}
