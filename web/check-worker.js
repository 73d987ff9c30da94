// The page's check worker (a module worker, started when "Check" is pressed and ended after):
// runs the input, the converted model and the fold-only twin in onnxruntime-web's CPU build,
// served from this site (ort/), and compares them with the same module as the Node package
// (shared/check.mjs). Ending the worker hands the runtime's memory back to the browser.
// Its messages are messages.js's: in, one check (toCheck; `rangeFit` under FPQ, with samples); out
// (fromCheck), its progress, then its result (`check`: {converted, fold_only, unrepaired?, fpq?,
// models?}) or an error.
import { UNREPAIRED, checkCandidates, checkFpqTwin, fpqTwinFailure, modelsTable, randomFitSamples } from './shared/check.mjs';
import './messages.js';
import * as ort from './ort/ort.wasm.bundle.min.mjs';

const { fromCheck, fromPort, receive, toCheck, toPort } = self.pageMessages;

// Threads share memory, which a page has only when cross-origin isolated (its host sends COOP and
// COEP, as scripts/serve.mjs does): then one thread a core; without, one thread, which works on
// any host.
ort.env.wasm.numThreads = self.crossOriginIsolated ? Math.max(1, navigator.hardwareConcurrency || 1) : 1;
// The bundle carries the runtime's loader; only its .wasm is fetched, from this site.
ort.env.wasm.wasmPaths = { wasm: new URL('./ort/ort-wasm-simd-threaded.wasm', import.meta.url).href };

const runtime = {
  name: 'onnxruntime-web', version: ort.env.versions?.web ?? ort.env.versions?.common, Tensor: ort.Tensor,
  session: (bytes, externalData) => ort.InferenceSession.create(bytes, { graphOptimizationLevel: 'disabled', externalData }),
};

const bytesOf = async (file) => (file instanceof Uint8Array ? file : new Uint8Array(await file.arrayBuffer()));

// A model for shared/check.mjs: its bytes, and its data files read whole (the runtime holds them anyway).
async function modelOf({ model, files, description }) {
  const externalData = [];
  for (const [path, file] of Object.entries(files ?? {})) externalData.push({ path, data: await bytesOf(file) });
  return { bytes: await bytesOf(model), externalData, description };
}

// The repair's and the range fit's calls into the converter, answered by the conversion worker on
// `port` (it holds the module): the same calls as the Node engine's, as promises.
function converterOn(port) {
  const pending = new Map();
  let next = 0;
  // An answer not understood fails every call waiting: none would be answered.
  const failAll = (said) => {
    for (const call of pending.values()) call.reject(new Error(`the converter sent an ${said}`));
    pending.clear();
  };
  port.onmessage = ({ data }) => receive(fromPort, data, {
    answer: ({ id, result, error }) => {
      const call = pending.get(id);
      pending.delete(id);
      if (error !== undefined) call.reject(new Error(error)); else call.resolve(result);
    },
  }, failAll);
  const rpc = (call, args, transfer = []) => new Promise((resolve, reject) => {
    next += 1;
    pending.set(next, { resolve, reject });
    port.postMessage(toPort[call]({ id: next, args }), transfer);
  });
  // The model's bytes are handed over, not copied (ResNet-50's are 98 MB, twice a fit): the
  // repair only ever uses the bytes that come back.
  const own = (bytes) => (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? [bytes.buffer] : []);
  return {
    fitLayer: (spec) => rpc('fitLayer', [spec]),
    // The repair's session lives in the conversion worker: the models are copied there once,
    // and each step's part comes back, handed over.
    openRepairSession: (original, converted) => rpc('openRepairSession', [original, converted]),
    repairSession: (session, method, args) => rpc('repairSession', [session, method, args]),
    settleFixedPoint: (bytes, options) => rpc('settleFixedPoint', [bytes, options], own(bytes)),
    // Copies: the repair goes on with these bytes.
    describe: (bytes) => rpc('describe', [bytes]),
    fpqWeightBounds: (bytes, node, ranges, clips, options = {}) => rpc('fpqWeightBounds', [bytes, node, ranges, clips, options]),
    // FPQ's range fit given the measured ranges (shared/range_fit.mjs, engine.settle; a promise, as every
    // call here): a copy, as the fit goes on with the model before it; the fitted model is
    // described, as it runs next.
    settle: (bytes, options) => rpc('settleFixedPoint', [bytes, { ...options, describe: true }]),
    // The twin's bytes and what it holds (with valuesOnly, what it holds alone), read as the Node
    // module gives it (wasm/node/fpq.mjs).
    fpqTwin: async (bytes, { valuesOnly = false } = {}) => {
      const made = await rpc('fpqTwin', [bytes, valuesOnly]);
      return { ...(valuesOnly ? {} : { model: made.model }), twin: JSON.parse(made.twin) };
    },
  };
}

// The FPQ twin of the (converted, or repaired) candidate against the candidate, as the Node check
// makes it (shared/check.mjs, checkFpqTwin); the twin is the converter's, asked on its port.
async function checkFpq(converter, candidate, options, post) {
  post('making the FPQ twin', 0);
  let made;
  try {
    made = await converter.fpqTwin(candidate.bytes);
  } catch (e) {
    return { check: fpqTwinFailure(e.message) };
  }
  return { check: await checkFpqTwin(runtime, candidate, made, options, post), bytes: made.model };
}

async function check(data) {
  const { options } = data;
  try {
    const post = (stage, fraction) => self.postMessage(fromCheck.progress({ stage, fraction }));
    post('reading the models', 0);
    const original = await modelOf(data.original);
    if (data.data) {
      post('reading the samples', 0);
      const { readPicked } = await import('./check-samples.js');
      options.samples = await readPicked(data.data.files, original.description.inputs, data.data.preprocessing);
    }
    const candidate = await modelOf(data.candidate);
    const port = data.repair?.port ?? data.fpq?.port ?? data.rangeFit?.port;
    const converter = port && converterOn(port);
    let repaired, unrepairedBytes;
    // The samples the fits see (the repair's, then the range fit's).
    let fit = null;
    if (data.repair) {
      // The samples picked are the calibration: the fit takes three quarters, the check the
      // quarter it never saw (without samples, seeded random inputs for both, said so).
      const { holdOut, repairModel } = await import('./shared/repair.mjs');
      fit = options.samples ?? randomFitSamples(original.description, options);
      if (options.samples) [fit, options.samples] = holdOut(options.samples);
      // The converted model as it was, for the check after the repair: read again from its Blob
      // (the repair hands its bytes over to the converter), or copied first when given as bytes.
      const kept = data.candidate.model instanceof Blob ? null : candidate.bytes.slice();
      repaired = await repairModel(runtime, converter, original, candidate, data.conversion, fit, options, post);
      unrepairedBytes = kept ?? await bytesOf(data.candidate.model);
      candidate.bytes = repaired.bytes;
    }
    let fitted, rangeEstimate;
    if (data.rangeFit) {
      // Under FPQ the ranges are measured on the model as it stands (repaired or converted), on
      // the share of the picked samples a repair fitted on, or held out the same way: the check
      // never judges on a sample a fit saw. One sample cannot be both; the estimate stays.
      if (!fit && options.samples.samples > 1) {
        const { holdOut } = await import('./shared/repair.mjs');
        [fit, options.samples] = holdOut(options.samples, 'the range fit');
      }
      if (fit) {
        const { fitRanges } = await import('./shared/range_fit.mjs');
        // A repaired model is described anew: its new biases' BatchNormalizations renamed its convs' outputs.
        const model = repaired ? { ...candidate, description: await converter.describe(candidate.bytes) } : candidate;
        fitted = await fitRanges(runtime, converter, model, data.conversion, fit, post);
        Object.assign(candidate, { bytes: fitted.bytes, description: fitted.description });
      } else {
        rangeEstimate = 'one sample cannot be both fitted on and held out from the check; pick more to fit them';
      }
    }
    // The original runs once for every comparison; after a repair the converted model as it was
    // runs on the same samples too (what the repair bought).
    const [converted, fold_only, unrepaired] = await checkCandidates(runtime, original, [
      { model: candidate, conversion: data.conversion, label: 'converted' },
      { model: await modelOf(data.twin), conversion: data.twinConversion, scaleAtol: true, label: 'fold-only twin' },
      ...(repaired ? [{ model: { ...candidate, bytes: unrepairedBytes }, conversion: data.conversion, label: UNREPAIRED }] : []),
    ], options, post);
    const result = fromCheck.result({ check: { converted, fold_only, ...(unrepaired ? { unrepaired } : {}) } });
    if (repaired) Object.assign(result, { repair: repaired.report, repaired: repaired.bytes });
    if (fitted) Object.assign(result, { rangeFit: fitted.report, fitted: fitted.bytes, fixedPoint: fitted.fixedPoint });
    if (rangeEstimate) result.rangeEstimate = rangeEstimate;
    if (data.fpq) {
      const fpq = await checkFpq(converter, candidate, options, post);
      result.check.fpq = fpq.check;
      if (fpq.bytes) result.fpqTwin = fpq.bytes;
    }
    const models = modelsTable(result.check, { repaired: Boolean(repaired) });
    if (models) result.check.models = models;
    self.postMessage(result);
  } catch (e) {
    self.postMessage(fromCheck.error({ message: e instanceof Error ? e.message : String(e) }));
  }
}

self.onmessage = ({ data }) => receive(toCheck, data, { check },
  (said) => self.postMessage(fromCheck.error({ message: `the page sent an ${said}` })));
