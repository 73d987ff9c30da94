// The repair's and the FPQ twin's calls into the converter (loaded by the conversion worker on the
// first repair or twin): the check's worker, which runs onnxruntime, asks on a port of its own;
// fitLayer is the fit module's (onnx_lattice_fit, no protobuf in it), the repair session and
// fpqWeightBounds the repair's (onnx_lattice_repair, loaded with the fit), fpqTwin the FPQ twin's
// (onnx_lattice_fpq, loaded on
// the first twin); the converter's own calls (settleFixedPoint under FPQ, describeAt) are handed in
// by the worker. {id, call, args} in, {id, result} or {id, error} out.
/* global OnnxLatticeFit, OnnxLatticeFitMt, OnnxLatticeFpq, OnnxLatticeRepair, importScripts */
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
// The repair module's calls: its session (core/repair/session.h) and the FPQ weight bounds.
const REPAIR_CALLS = new Set(['openRepairSession', 'repairSession', 'fpqWeightBounds']);
self.serveRepair = (port, converter, { repair = false } = {}) => {
  // A repair's fit module starts loading at once, while the check's worker starts onnxruntime on
  // the other core: the first fit then finds it loaded.
  if (repair) {
    fitLoaded();
    repairLoaded();
  }
  port.onmessage = async ({ data: { id, call, args } }) => {
    try {
      let result;
      if (call === 'fitLayer') result = (await fitLoaded()).fitLayer(...args);
      else if (call === 'fpqTwin') result = (await fpqLoaded()).fpqTwin(...args);
      else if (REPAIR_CALLS.has(call)) result = (await repairLoaded())[call](...args);
      else if (Object.hasOwn(converter, call)) result = await converter[call](...args);
      else throw new Error(`no call '${call}' on the converter's port`);
      if (result?.error !== undefined) throw new Error(result.error);
      // A new model's bytes (a copy out of the module's heap) are handed over, not copied.
      const bytes = result instanceof Uint8Array ? result : result?.bytes;
      port.postMessage({ id, result }, bytes instanceof Uint8Array ? [bytes.buffer] : []);
    } catch (e) {
      port.postMessage({ id, error: e instanceof Error ? e.message : String(e) });
    }
  };
};
