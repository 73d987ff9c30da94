// The page's conversion worker: owns the WebAssembly module, so the page never freezes. The model
// and its data files stay Files (Blobs) on disk: what the core will read of them is read ahead
// (read-ahead.js), and the downloads are Blobs whose unchanged ranges are slices of those Files.
// Its messages are messages.js's toConverter (in) and fromConverter (out).
/* global OnnxLattice, importScripts, pageMessages, readAhead */
importScripts('onnx_lattice.js', 'read-ahead.js', 'messages.js');
const { fromConverter, receive, toConverter } = pageMessages;

// The worker's state.
const converter = {
  module: null,
  targets: [],  // the catalogue's, default first
  foldDefaults: {},  // scheme ('none', 'fpq', 'lsq') -> whether it folds BatchNorm unless told (the core's rule)
  input: null,  // the model as picked, kept for converting again with other options
  modelName: 'model',  // the picked file's name without .onnx
  files: new Map(),  // the model's data files, by name
  queue: Promise.resolve(),  // one message at a time: none may start a conversion while one waits for its reads
};
const post = (message, transfer = []) => self.postMessage(message, transfer);

async function ready() {
  if (!converter.module) {
    post(fromConverter.progress({ stage: 'loading the converter (WebAssembly)', fraction: 0 }));
    const module = converter.module = await OnnxLattice({ printErr: () => {} });
    converter.targets = JSON.parse(module.catalogue()).targets.map((t) => t.name);
    converter.foldDefaults = JSON.parse(module.options()).derived.fold_batch_norm;
  }
  return converter.module;
}

// Built without C++ exceptions: running out of heap aborts the module (a RuntimeError or a bare
// number). Say so in words and start from a fresh module next time.
function guarded(fn) {
  try {
    return fn();
  } catch (e) {
    converter.module = null;
    throw new Error('out of memory: the model does not fit in the WebAssembly heap (4 GB at most)');
  }
}

const blob = (parts) => new Blob(parts, { type: 'application/octet-stream' });

// The core's options: the page keeps skips across target switches and shows those that no
// longer match. The core names the downloads (and the data file written into the model) from the
// model's name and what the conversion did: the skipped ids that matched count, so a skip kept
// from another target does not rename this one (core/output_name.h).
// The fold-only twin's data file has a fixed name instead (check-run.js feeds it by that name).
function coreOptions(options, naming, held) {
  const { files } = converter;
  const resolver = files.size ? (location) => files.get(location) ?? null : undefined;
  return { ...options, resolver, ...naming, ignoreUnknownSkips: true, describe: true, held };
}

// The downloads' base name, as app.js adds `.onnx`, `.onnx.data` and `.report.json` to it.
const baseName = (result) => result.name.replace(/\.onnx$/, '');

// Every conversion the binding makes is counted (self.converts): the page's tests hold a change
// of options to one.
function run(options, naming, onProgress, held, onConverted) {
  self.converts = (self.converts ?? 0) + 1;
  const result = guarded(() => converter.module.convert(converter.input, { ...coreOptions(options, naming, held), onConverted }, onProgress));
  if (result.error !== undefined) throw new Error(result.error);
  return result;
}

// The last conversion's profile, read by bench/page.mjs: ms since the message came.
self.profile = null;

// A conversion or a twin needs a model: none comes before the first `load`.
function loaded() {
  if (!converter.input) throw new Error('no model loaded');
  return converter;
}

async function convert(options, received) {
  const { module, input, files, modelName } = loaded();
  const started = performance.now();
  const stages = [];
  const counts = module.profile = { reads: 0, readBytes: 0, readMs: 0, held: 0, heldBytes: 0, blobs: 0, blobMs: 0 };
  const profile = self.profile = { receivedAt: performance.timeOrigin + received, started: started - received, ahead: {}, stages };
  const at = () => performance.now() - received;
  const onProgress = ({ stage, fraction }) => {
    stages.push({ stage, at: at(), counts: { ...counts } });
    post(fromConverter.progress({ stage, fraction }));
  };
  // Held only for this conversion: the next one reads again rather than keep the bytes.
  const held = await readAhead(input, files, () => guarded(() => module.plan(input, coreOptions(options, { outputStem: modelName }))), profile.ahead);
  profile.planned = { ...counts };
  // The report is shown while the folded data is computed and the downloads are made.
  const onConverted = (early) => {
    Object.assign(profile, { converted: at(), countsAtReport: { ...counts } });
    post(fromConverter.result({
      report: JSON.parse(early.report), name: baseName(early), input: JSON.parse(early.inputDescription),
      output: JSON.parse(early.description), ms: performance.now() - started,
    }));
    profile.posted = at();
  };
  const result = run(options, { outputStem: modelName }, onProgress, held, onConverted);
  profile.written = at();
  // The parts are new bytes and slices of the picked files; an unchanged model is the input.
  const model = blob(result.model ?? [input]), data = result.data ? blob(result.data) : null;
  profile.joined = at();
  profile.counts = counts;
  post(fromConverter.output({ model, data, heapBytes: result.heapBytes }));
}

// The check's fold-only twin: the conversion's folds (and skips of them), no conversion pattern.
function twin(options) {
  loaded();
  const result = run({ ...options, target: 'none' }, { dataFile: 'twin.onnx.data' });
  post(fromConverter.twin({
    model: blob(result.model ?? [converter.input]), data: result.data ? blob(result.data) : null,
    description: JSON.parse(result.description), report: JSON.parse(result.report),
  }));
}

// A model through exact rewrites only: a repaired model under FPQ through the scheme's
// (`options`: the fold-only twin's, repair.mjs), or FPQ's range fit given the ranges measured on
// the samples (range_fit.mjs, `options.describe`: the fitted model is run next). Its bytes, report
// and, when asked, description.
async function settleFixedPoint(bytes, options) {
  const result = guarded(() => converter.module.convert(bytes, options, undefined));
  if (result.error !== undefined) throw new Error(result.error);
  const settled = result.model ? new Uint8Array(await blob(result.model).arrayBuffer()) : bytes;
  return { bytes: settled, report: JSON.parse(result.report), ...(result.description ? { description: JSON.parse(result.description) } : {}) };
}

// A model described (check-worker.js: a repaired model before its range fit).
function describe(bytes) {
  const described = guarded(() => converter.module.describe(bytes));
  if (typeof described !== 'string') throw new Error(described.error);
  return JSON.parse(described);
}

const handlers = (received) => ({
  init: () => post(fromConverter.ready({ targets: converter.targets, foldDefaults: converter.foldDefaults })),
  repairPort: ({ port, repair }) => {
    // Loaded on the first repair or FPQ twin: none of it weighs on the page's first load.
    if (!self.serveRepair) importScripts('repair-server.js');
    self.serveRepair(port, { settleFixedPoint, describe }, { repair });
  },
  load: ({ model, name, files, options }) => {
    Object.assign(converter, { input: model, modelName: name, files: new Map(Object.entries(files ?? {})) });
    return convert(options, received);
  },
  convert: ({ options }) => convert(options, received),
  twin: ({ options }) => twin(options),
});

async function handle(data, received) {
  try {
    await ready();
    if (data?.options) data.options.target ||= converter.targets[0];  // sent before the page had them
    await receive(toConverter, data, handlers(received), (said) => { throw new Error(`the page sent an ${said}`); });
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    post(data?.type === toConverter.twin.type ? fromConverter.twin({ message }) : fromConverter.error({ message }));
  }
}

self.onmessage = ({ data }) => {
  const received = performance.now();
  converter.queue = converter.queue.then(() => handle(data, received));
};
