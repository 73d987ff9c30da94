// The repair's and the FPQ twin's calls into the converter (loaded by the conversion worker on the
// first repair or twin): the check's worker, which runs onnxruntime, asks on a port of its own;
// fitLayer is the fit module's (onnx_lattice_fit, no protobuf in it), the repair session and
// fpqWeightBounds the repair's (onnx_lattice_repair, loaded with the fit), fpqTwin the FPQ twin's
// (onnx_lattice_fpq, loaded on
// the first twin); the converter's own calls (settleFixedPoint under FPQ, describe) are handed in
// by the worker. Its messages are messages.js's toPort (a kind a call) and fromPort (the answers).
/* global OnnxLatticeFit, OnnxLatticeFitMt, OnnxLatticeFpq, OnnxLatticeRepair, importScripts, pageMessages */
let fitModule = null, fpqModule = null, repairModule = null;
const load = (script, factory, settings = {}) => {
  const loading = new Promise((resolve) => {
    importScripts(script);
    resolve(factory()({ printErr: () => {}, ...settings }));
  });
  loading.catch(() => {});  // a failed load is the first call's error, not an unhandled one
  return loading;
};
// The fit on every core (onnx_lattice_fit_mt, core/repair/parallel.h) needs shared memory, which a
// page has only when cross-origin isolated (scripts/serve.mjs sends the headers; a static host may
// not): otherwise the same fit on one thread. Its pthreads are workers of their own that load the
// module's script again: named here, since in this worker the loader would take this worker's.
const threaded = self.crossOriginIsolated === true;
const fitLoaded = () => (fitModule ??= threaded
  ? load('onnx_lattice_fit_mt.js', () => OnnxLatticeFitMt,
    { mainScriptUrlOrBlob: new URL('onnx_lattice_fit_mt.js', self.location.href).href })
  : load('onnx_lattice_fit.js', () => OnnxLatticeFit));
const fpqLoaded = () => (fpqModule ??= load('onnx_lattice_fpq.js', () => OnnxLatticeFpq));
const repairLoaded = () => (repairModule ??= load('onnx_lattice_repair.js', () => OnnxLatticeRepair));
self.serveRepair = (port, converter, { repair = false } = {}) => {
  // A repair's fit module starts loading at once, while the check's worker starts onnxruntime on
  // the other core: the first fit then finds it loaded.
  if (repair) {
    fitLoaded();
    repairLoaded();
  }
  const { fromPort, receive, toPort } = pageMessages;
  // The answer to call `id`: what `work` returns, or the error it throws.
  const answer = async (id, work) => {
    try {
      const result = await work();
      if (result?.error !== undefined) throw new Error(result.error);
      // A new model's bytes (a copy out of the module's heap) are handed over, not copied.
      const bytes = result instanceof Uint8Array ? result : result?.bytes;
      port.postMessage(fromPort.answer({ id, result }), bytes instanceof Uint8Array ? [bytes.buffer] : []);
    } catch (e) {
      port.postMessage(fromPort.answer({ id, error: e instanceof Error ? e.message : String(e) }));
    }
  };
  // Each call, by the module that answers it.
  const handlers = {
    fitLayer: ({ id, args }) => answer(id, async () => (await fitLoaded()).fitLayer(...args)),
    fpqTwin: ({ id, args }) => answer(id, async () => (await fpqLoaded()).fpqTwin(...args)),
    // The repair's session (core/repair/session.h): the models stay in this module between calls.
    openRepairSession: ({ id, args }) => answer(id, async () => (await repairLoaded()).openRepairSession(...args)),
    repairSession: ({ id, args }) => answer(id, async () => (await repairLoaded()).repairSession(...args)),
    fpqWeightBounds: ({ id, args }) => answer(id, async () => (await repairLoaded()).fpqWeightBounds(...args)),
    settleFixedPoint: ({ id, args }) => answer(id, () => converter.settleFixedPoint(...args)),
    describe: ({ id, args }) => answer(id, () => converter.describe(...args)),
  };
  port.onmessage = ({ data }) => receive(toPort, data, handlers, (said) => answer(data?.id, () => { throw new Error(`the converter's port got an ${said}`); }));
};
