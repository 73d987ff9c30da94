// The repair's calls into the converter (loaded by the conversion worker on the first repair):
// the check's worker, which runs onnxruntime, asks on a port of its own; fitLayer is the fit
// module's (onnx_lattice_fit, no protobuf in it, loaded here on the first repair), setLayerWeights
// the converter's, handed in by the worker. {id, call, args} in, {id, result} or {id, error} out.
/* global OnnxLatticeFit, importScripts */
let fitModule = null;
self.serveRepair = (port, setLayerWeights) => {
  // Loading starts with the repair, while the check's worker starts onnxruntime on the other core;
  // the first fit then finds it loaded.
  fitModule ??= new Promise((resolve) => {
    importScripts('onnx_lattice_fit.js');
    resolve(OnnxLatticeFit({ printErr: () => {} }));
  });
  fitModule.catch(() => {});  // a failed load is the first fit's error, not an unhandled one
  port.onmessage = async ({ data: { id, call, args } }) => {
    try {
      const result = call === 'fitLayer' ? (await fitModule).fitLayer(...args) : setLayerWeights(...args);
      if (result?.error !== undefined) throw new Error(result.error);
      // A new model's bytes (a copy out of the module's heap) are handed over, not copied.
      port.postMessage({ id, result }, result instanceof Uint8Array ? [result.buffer] : []);
    } catch (e) {
      port.postMessage({ id, error: e instanceof Error ? e.message : String(e) });
    }
  };
};
