// The repair's calls into the converter (loaded by the conversion worker on the first repair):
// the check's worker, which runs onnxruntime, asks on a port of its own; fitLayer is the fit
// module's (onnx_lattice_fit, no protobuf in it, loaded here on the first repair); the converter's
// own calls (setLayerWeights, and settleFixedPoint under FPQ) are handed in by the worker.
// {id, call, args} in, {id, result} or {id, error} out.
/* global OnnxLatticeFit, importScripts */
let fitModule = null;
self.serveRepair = (port, converter) => {
  // Loading starts with the repair, while the check's worker starts onnxruntime on the other core;
  // the first fit then finds it loaded.
  fitModule ??= new Promise((resolve) => {
    importScripts('onnx_lattice_fit.js');
    resolve(OnnxLatticeFit({ printErr: () => {} }));
  });
  fitModule.catch(() => {});  // a failed load is the first fit's error, not an unhandled one
  port.onmessage = async ({ data: { id, call, args } }) => {
    try {
      if (call !== 'fitLayer' && !Object.hasOwn(converter, call)) throw new Error(`no repair call '${call}'`);
      const result = call === 'fitLayer' ? (await fitModule).fitLayer(...args) : await converter[call](...args);
      if (result?.error !== undefined) throw new Error(result.error);
      // A new model's bytes (a copy out of the module's heap) are handed over, not copied.
      const bytes = result instanceof Uint8Array ? result : result?.bytes;
      port.postMessage({ id, result }, bytes instanceof Uint8Array ? [bytes.buffer] : []);
    } catch (e) {
      port.postMessage({ id, error: e instanceof Error ? e.message : String(e) });
    }
  };
};
