// The repair's calls into the converter (loaded by the conversion worker on the first repair or
// FPQ twin): the check's worker, which runs onnxruntime, asks on a port of its own; fitLayer is
// the fit module's (onnx_lattice_fit, no protobuf in it, loaded here on the first fit), fpqTwin
// the FPQ twin's (onnx_lattice_fpq, loaded on the first twin), setLayerWeights the converter's,
// handed in by the worker. {id, call, args} in, {id, result} or {id, error} out.
/* global OnnxLatticeFit, OnnxLatticeFpq, importScripts */
let fitModule = null, fpqModule = null;
self.serveRepair = (port, setLayerWeights) => {
  port.onmessage = async ({ data: { id, call, args } }) => {
    try {
      let result;
      if (call === 'fitLayer') {
        if (!fitModule) {
          importScripts('onnx_lattice_fit.js');
          fitModule = await OnnxLatticeFit({ printErr: () => {} });
        }
        result = fitModule.fitLayer(...args);
      } else if (call === 'fpqTwin') {
        if (!fpqModule) {
          importScripts('onnx_lattice_fpq.js');
          fpqModule = await OnnxLatticeFpq({ printErr: () => {} });
        }
        result = fpqModule.fpqTwin(...args);
      } else {
        result = setLayerWeights(...args);
      }
      if (result?.error !== undefined) throw new Error(result.error);
      port.postMessage({ id, result });
    } catch (e) {
      port.postMessage({ id, error: e instanceof Error ? e.message : String(e) });
    }
  };
};
