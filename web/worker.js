// The page's conversion worker: owns the WebAssembly module and the model bytes, so the page never
// freezes. Messages in: {type: 'init'} to load the module ahead of time, {type: 'load', bytes
// (transferred), files, options} and {type: 'convert', options}. Out: ready; progress {stage, fraction}
// as the core reports each stage; result {report, model (transferred), input, output (the graph
// descriptions), ms}; error {message}. `files` are an external-data model's data files by name
// (ArrayBuffers, transferred), matched to its tensors' `location`s.
/* global OnnxLattice, importScripts */
importScripts('onnx_lattice.js');

let module = null;
let input = null;             // the model as dropped, kept for converting again with other options
let inputDescription = null;  // described once per model: it does not depend on the options
let files = new Map();         // the model's data files, by name
const post = (message, transfer = []) => self.postMessage(message, transfer);

// The bar's scale: the core's stages fill most of it, describing the graphs for the view the rest.
const CORE_SHARE = 0.85;

async function ready() {
  if (!module) {
    post({ type: 'progress', stage: 'loading the converter (WebAssembly)', fraction: 0 });
    module = await OnnxLattice({ printErr: () => {} });
  }
  return module;
}

// Built without C++ exceptions: running out of heap aborts the module (a RuntimeError or a bare
// number). Say so in words and start from a fresh module next time.
function guarded(fn) {
  try {
    return fn();
  } catch (e) {
    module = null;
    inputDescription = null;
    throw new Error('out of memory: the model does not fit in the WebAssembly heap (4 GB at most)');
  }
}

function describe(bytes) {
  const text = guarded(() => module.describe(bytes));
  if (typeof text !== 'string') throw new Error(text.error);
  return JSON.parse(text);
}

function convert(options) {
  const started = performance.now();
  const onProgress = ({ stage, fraction }) => post({ type: 'progress', stage, fraction: fraction * CORE_SHARE });
  // The page keeps skips across target switches and shows those that no longer match.
  // With data files the download is one file, the data inline: one model to save.
  const data = files.size ? { resolver: (location) => files.get(location) ?? null, dataLayout: 'inline' } : {};
  // The converted graph is described by the conversion itself, from the model in memory.
  const result = guarded(() => module.convert(input, { ...options, ...data, ignoreUnknownSkips: true, describe: true },
    onProgress));
  if (result.error !== undefined) throw new Error(result.error);
  const report = JSON.parse(result.report);
  const output = JSON.parse(result.description);
  post({ type: 'progress', stage: 'describing the graph', fraction: CORE_SHARE });
  inputDescription ??= describe(input);
  // The download is a Blob of the output's parts (new bytes, and views of the input for the tensor
  // data the conversion left where it was); an unchanged model is the input itself.
  const model = new Blob(result.model ?? [input], { type: 'application/octet-stream' });
  post({ type: 'result', report, model, input: inputDescription, output, ms: performance.now() - started });
}

self.onmessage = async ({ data }) => {
  try {
    await ready();
    if (data.type === 'init') return post({ type: 'ready' });
    if (data.type === 'load') {
      input = new Uint8Array(data.bytes);
      inputDescription = null;
      files = new Map(Object.entries(data.files ?? {}).map(([name, buffer]) => [name, new Uint8Array(buffer)]));
    }
    if (!input) throw new Error('no model loaded');
    convert(data.options);
  } catch (e) {
    post({ type: 'error', message: e instanceof Error ? e.message : String(e) });
  }
};
