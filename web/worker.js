// The page's Web Worker: owns the WebAssembly module and the model bytes, so the page never
// freezes. Messages in: {type: 'load', bytes (transferred), files, options} and {type: 'convert',
// options}, and {type: 'init'} to load the module ahead of time; out: ready, progress, result
// (the model's buffer transferred back) or error. `files` are an external-data model's data files
// by name (ArrayBuffers, transferred), matched to its tensors' `location`s.
/* global OnnxLattice, importScripts */
importScripts('onnx_lattice.js');

let module = null;
let input = null;  // the model as dropped, kept here for converting again with other options
let files = new Map();  // its data files, by name
const post = (message, transfer = []) => self.postMessage(message, transfer);

async function ready() {
  if (!module) {
    post({ type: 'progress', stage: 'loading the converter (WebAssembly)…' });
    module = await OnnxLattice({ printErr: () => {} });
  }
  return module;
}

function convert(options) {
  post({ type: 'progress', stage: `converting ${(input.byteLength / 2 ** 20).toFixed(1)} MiB…` });
  const started = performance.now();
  let result;
  try {
    // With data files the download is one file, the data inline: one model to save, as before.
    const withData = files.size ? { ...options, resolver: (location) => files.get(location) ?? null, dataLayout: 'inline' } : options;
    result = module.convert(input, withData);
  } catch (e) {
    // Built without C++ exceptions: running out of heap aborts the module (a RuntimeError or a
    // bare number). Say so in words and start from a fresh module next time.
    module = null;
    throw new Error('out of memory: the model does not fit in the WebAssembly heap (4 GB at most)');
  }
  if (result.error !== undefined) throw new Error(result.error);
  const model = result.model ? result.model.buffer : null;
  post({ type: 'result', report: JSON.parse(result.report), model, ms: performance.now() - started },
    model ? [model] : []);
}

self.onmessage = async ({ data }) => {
  try {
    await ready();
    if (data.type === 'init') return post({ type: 'ready' });
    if (data.type === 'load') {
      input = new Uint8Array(data.bytes);
      files = new Map(Object.entries(data.files ?? {}).map(([name, buffer]) => [name, new Uint8Array(buffer)]));
    }
    if (!input) throw new Error('no model loaded');
    convert(data.options);
  } catch (e) {
    post({ type: 'error', message: e instanceof Error ? e.message : String(e) });
  }
};
