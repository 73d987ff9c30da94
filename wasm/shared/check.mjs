// The check: runs an original model and a candidate (the converted model, or any model with the
// same graph inputs) on the same seeded random inputs in onnxruntime, and compares their outputs
// (schema onnx-lattice-check/1). One module for every shell: the Node package runs it in a worker
// thread with onnxruntime-node (check_node.mjs), the page in a worker with onnxruntime-web
// (web/check-worker.js). It imports only the float16 codec and the check's sizes (check_sizes.mjs):
// the caller hands it the runtime.
//
// A model is {bytes, externalData: [{path, data}], description}: the model file, its data files
// by `location`, and what the converter's describe() says of it (the graph inputs to feed, and
// for the layerwise comparison the tensors each node computes, in topological order).

import { checkShapes, missingSizesMessage, sizesTooLarge } from './check_sizes.mjs';
import { fromHalf, roundHalfEven, toHalf } from './half.mjs';

export const CHECK_SCHEMA = 'onnx-lattice-check/1';
// onnxsim's: numpy.allclose per element, |Δ| ≤ atol + rtol·|original|.
export const DEFAULT_TOLERANCE = Object.freeze({ rtol: 1e-4, atol: 1e-5 });
export const DEFAULT_INPUT_RANGE = Object.freeze([-1, 1]);
export const DEFAULT_SEED = 0;
// The seeded random inputs a fit draws (a repair's, a range fit's) come from a stream of their own,
// the check's seed mixed with this constant: a check after a fit on random inputs, with the same
// seed, never feeds a sample the fit saw (which made a repair pass its own training data).
const FIT_STREAM = 0x5bd1e995;
const fitSeed = (seed) => (seed ^ FIT_STREAM) >>> 0;

// Without calibration data, a fit draws FIT_SAMPLES seeded random inputs in `inputRange` at the
// check's sizes (inputShapes; every dynamic dimension but the batch given), from the fits' stream,
// recorded as drawn. `description`: the model's.
const FIT_SAMPLES = 32;
export function randomFitSamples(description, { seed = DEFAULT_SEED, inputRange = DEFAULT_INPUT_RANGE, inputShapes = {} } = {}) {
  const sized = feedShapes(description, inputShapes);
  const shapes = Object.fromEntries(Object.entries(sized).map(([name, dims]) => [name, [FIT_SAMPLES, ...dims.slice(1)]]));
  const drawn = fitSeed(seed);
  const feeds = inputFeeds(description, { seed: drawn, inputRange, inputShapes: shapes });
  return { feeds, samples: FIT_SAMPLES, source: `${FIT_SAMPLES} random inputs in [${inputRange.join(', ')})`, random: true, seed: drawn };
}

// The code of every error the check throws for a caller's mistake (bad options, an unpinned
// dimension, models whose inputs differ); failures of a model to load or run are reported in the
// check's `error` instead, since they are what the check is for.
export const CHECK_OPTIONS_ERROR = 'ERR_ONNX_LATTICE_OPTIONS';

function optionsError(message) {
  return Object.assign(new Error(message), { code: CHECK_OPTIONS_ERROR });
}

// ONNX element type names (as describe() gives them) -> onnxruntime's tensor types and arrays.
const ELEMENT = {
  float: ['float32', Float32Array], double: ['float64', Float64Array], float16: ['float16', Uint16Array],
  int8: ['int8', Int8Array], uint8: ['uint8', Uint8Array], int16: ['int16', Int16Array], uint16: ['uint16', Uint16Array],
  int32: ['int32', Int32Array], uint32: ['uint32', Uint32Array], int64: ['int64', BigInt64Array],
  uint64: ['uint64', BigUint64Array], bool: ['bool', Uint8Array],
};
const FLOATING = new Set(['float', 'double', 'float16']);

// SplitMix32-style generator: the same numbers from the same seed in every JavaScript engine, so
// a check run in the page and one run in Node feed identical inputs.
function generator(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return ((z ^ (z >>> 16)) >>> 0) / 2 ** 32;
  };
}

// The error for inputs the check cannot size: `missing` (checkShapes') travels with it, so a
// shell can say it in its own words (the CLI names its flag, the API its option).
function sizesError(missing) {
  const error = optionsError(missingSizesMessage(missing, 'api'));
  error.missing = missing.map(({ input, axes, proposed }) => ({ input: { name: input.name, shape: input.shape }, axes, proposed }));
  return error;
}

// The shape of every graph input a check feeds (checkShapes: given shapes, declared ones, a
// dynamic batch as 1), or the error naming what must be given, and proposing it.
export function feedShapes(description, inputShapes = {}) {
  for (const [name, dims] of Object.entries(inputShapes ?? {})) {
    if (!Array.isArray(dims) || dims.some((d) => !Number.isInteger(d) || d < 0)) {
      throw optionsError(`the shape given for input '${name}' must be a list of non-negative integers`);
    }
  }
  const { shapes, missing } = checkShapes(description, inputShapes ?? {});
  if (missing.length) throw sizesError(missing);
  return shapes;
}

// Seeded values for every graph input of a model (its description: inputs, and nodes for the
// sizes it proposes), at feedShapes' sizes: uniform in [lo, hi) for floating point, zeros for
// integer and bool inputs unless `inputValues` gives them. Sizes whose values could not be held
// are refused before anything is allocated. Returns {name: {type, dims, data}}.
export function inputFeeds(description, { seed = DEFAULT_SEED, inputRange = DEFAULT_INPUT_RANGE, inputShapes = {}, inputValues = {} } = {}) {
  const next = generator(seed);
  const [lo, hi] = inputRange;
  const shapes = feedShapes(description, inputShapes);
  const tooLarge = sizesTooLarge(description, shapes, {});
  if (tooLarge) throw optionsError(tooLarge);
  const feeds = {};
  for (const input of description.inputs) {
    const element = ELEMENT[input.type];
    if (!element) throw optionsError(`input '${input.name}' is of type ${input.type}, which the check cannot feed`);
    const [type, TypedArray] = element;
    const dims = shapes[input.name];
    const count = dims.reduce((a, b) => a * b, 1);
    const given = inputValues[input.name];
    const wide = TypedArray === BigInt64Array || TypedArray === BigUint64Array;
    let data;
    if (given !== undefined) {
      if (given.length !== count) throw optionsError(`the values given for input '${input.name}' are ${given.length}, its shape [${dims}] holds ${count}`);
      data = TypedArray.from(given, (v) => (wide ? BigInt(v) : input.type === 'float16' ? toHalf(v) : v));
    } else {
      data = new TypedArray(count);  // zeros
      if (FLOATING.has(input.type)) {
        for (let i = 0; i < count; ++i) {
          const v = lo + (hi - lo) * next();
          data[i] = input.type === 'float16' ? toHalf(v) : v;
        }
      }
    }
    feeds[input.name] = { type, dims, data };
  }
  return feeds;
}

// A runtime's output as plain doubles (float16 decoded, integers widened).
function valuesOf(tensor) {
  const { data, type } = tensor;
  if (type === 'float16' && data instanceof Uint16Array) return Float64Array.from(data, fromHalf);
  if (data instanceof BigInt64Array || data instanceof BigUint64Array) return Float64Array.from(data, Number);
  if (Array.isArray(data)) return null;  // strings
  return data;
}

function statistics(values) {
  let min = Infinity, max = -Infinity, sum = 0, squares = 0, finite = 0;
  for (const v of values) {
    if (!Number.isFinite(v)) continue;
    finite += 1;
    min = Math.min(min, v);
    max = Math.max(max, v);
    sum += v;
    squares += v * v;
  }
  if (!finite) return { min: null, max: null, mean: null, std: null };
  const mean = sum / finite;
  return { min, max, mean, std: Math.sqrt(Math.max(0, squares / finite - mean * mean)) };
}

const count = (values, test) => {
  let n = 0;
  for (const v of values) if (test(v)) n += 1;
  return n;
};

// The index of flat element `at` in `dims`.
function indexOf(at, dims) {
  const index = new Array(dims.length);
  for (let axis = dims.length - 1; axis >= 0; --axis) {
    index[axis] = dims[axis] ? at % dims[axis] : 0;
    at = dims[axis] ? Math.floor(at / dims[axis]) : 0;
  }
  return index;
}

// The tolerance for one value, numpy.allclose's: |candidate − original| ≤ atol + rtol·|original|,
// NaN equal to NaN, an infinite original lending no rtol. The index of the first value beyond it,
// `original.length` when none is: the repair's measure of each refitted layer, over millions of
// values, so one loop with no call per value. compareTensor's `min_atol` is the least atol this
// passes at (tests/node/check.test.mjs holds the two together).
export function firstBeyondTolerance(original, candidate, rtol, atol) {
  const n = original.length;
  let at = 0;
  for (; at < n; ++at) {
    const t = original[at], v = candidate[at];
    if (v === t || (v !== v && t !== t)) continue;
    const ref = Math.abs(t);
    if (!(Math.abs(v - t) - rtol * (ref === Infinity ? 0 : ref) <= atol)) break;
  }
  return at;
}

// One tensor of both models compared element by element. NaN against NaN and an infinity against
// the same infinity count as equal (numpy's allclose with equal_nan); any other NaN or infinity
// is a difference of Infinity. min_atol is the smallest atol that passes at the given rtol,
// min_rtol the smallest rtol that passes at the given atol. With tolerance.scaled, atol is
// multiplied by the tensor's largest finite |value| (at least 1), reported as atol_used: float
// rounding grows with the scale of the values, so an exact rewrite (a fold) is judged by it.
// `brief` gives only max_abs, mean_abs, max_rel, pass and the original's range (max − min of its
// finite values: what a layerwise entry keeps, the range to say its change as a share of).
export function compareTensor(name, original, candidate, tolerance = DEFAULT_TOLERANCE, { brief = false } = {}) {
  const a = valuesOf(original), b = valuesOf(candidate);
  const entry = { name, dtype: original.type, shape_original: [...original.dims], shape_candidate: [...candidate.dims] };
  const sameShape = entry.shape_original.length === entry.shape_candidate.length &&
    entry.shape_original.every((d, i) => d === entry.shape_candidate[i]);
  entry.comparable = Boolean(a && b && sameShape && original.type === candidate.type);
  if (!entry.comparable) {
    entry.pass = false;
    entry.reason = !a || !b ? 'not numeric' : !sameShape ? 'the shape changed' : `the type changed to ${candidate.type}`;
    if (a) entry.stats_original = statistics(a);
    if (b) entry.stats_candidate = statistics(b);
    return entry;
  }
  const { rtol } = tolerance;
  let atol = tolerance.atol;
  if (tolerance.scaled) {
    let scale = 1;
    for (const v of a) if (Number.isFinite(v)) scale = Math.max(scale, Math.abs(v));
    atol *= scale;
    entry.atol_used = atol;
  }
  const n = a.length;
  // The p99 needs every |Δ| kept and sorted: only for what the report shows per output, not for
  // each of a layerwise check's hundreds of tensors.
  const diffs = brief ? null : new Float64Array(n);
  let maxAbs = 0, maxAt = 0, sum = 0, maxRel = 0, minAtol = 0, minRtol = 0, lo = Infinity, hi = -Infinity;
  for (let i = 0; i < n; ++i) {
    const x = a[i], y = b[i];
    if (brief && Number.isFinite(x)) { lo = Math.min(lo, x); hi = Math.max(hi, x); }
    const same = x === y || (Number.isNaN(x) && Number.isNaN(y));
    const d = same ? 0 : Math.abs(x - y);
    const diff = Number.isNaN(d) ? Infinity : d;
    if (diffs) diffs[i] = diff;
    if (diff > maxAbs) { maxAbs = diff; maxAt = i; }
    sum += diff;
    const ref = Math.abs(x);
    if (diff > 0) {
      if (ref > 0) maxRel = Math.max(maxRel, diff / ref);
      else maxRel = Infinity;
      minAtol = Math.max(minAtol, diff - rtol * (Number.isFinite(ref) ? ref : 0));
      if (diff > atol) minRtol = Math.max(minRtol, ref > 0 ? (diff - atol) / ref : Infinity);
    }
  }
  const meanAbs = n ? sum / n : 0, pass = minAtol <= atol;
  if (brief) return Object.assign(entry, { max_abs: maxAbs, mean_abs: meanAbs, max_rel: maxRel, pass, range: hi > lo ? hi - lo : 0 });
  diffs.sort();
  return Object.assign(entry, {
    max_abs: maxAbs, max_abs_index: indexOf(maxAt, entry.shape_original), mean_abs: meanAbs,
    p99_abs: n ? diffs[Math.min(n - 1, Math.ceil(0.99 * n) - 1)] : 0, max_rel: maxRel,
    nan: [count(a, Number.isNaN), count(b, Number.isNaN)],
    inf: [count(a, (v) => v === Infinity || v === -Infinity), count(b, (v) => v === Infinity || v === -Infinity)],
    min_atol: minAtol, min_rtol: minRtol, pass, stats_original: statistics(a), stats_candidate: statistics(b),
  });
}

// JSON has no Infinity: the report says "Infinity" (as Python's json module writes it, quoted).
export function finiteForJson(value) {
  if (typeof value === 'number' && !Number.isFinite(value)) return Number.isNaN(value) ? 'NaN' : value > 0 ? 'Infinity' : '-Infinity';
  if (Array.isArray(value)) return value.map(finiteForJson);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, finiteForJson(v)]));
  return value;
}

// Protocol buffers merge a message field that appears twice, so a second `graph` (ModelProto
// field 7) holding only `output`s (GraphProto field 12, ValueInfoProto with just a name) appended
// to the model adds those graph outputs; onnxruntime infers their types. The model's own bytes
// are not touched or re-serialised.
export function withOutputs(bytes, names) {
  if (!names.length) return bytes;
  const encoder = new TextEncoder();
  const varint = (n) => {
    const out = [];
    for (; n > 127; n = Math.floor(n / 128)) out.push((n % 128) | 128);
    out.push(n);
    return out;
  };
  const field = (number, payload) => [...varint(number * 8 + 2), ...varint(payload.length), ...payload];
  const outputs = [];
  for (const name of names) outputs.push(...field(12, field(1, [...encoder.encode(name)])));
  const tail = Uint8Array.from(field(7, outputs));
  const out = new Uint8Array(bytes.length + tail.length);
  out.set(bytes);
  out.set(tail, bytes.length);
  return out;
}

// The tensors of the layerwise comparison: every node output of the candidate that a node of the
// original also computes (same name), in the candidate's topological order, with the node that
// computes it and the conversion's match whose new node that is. A graph output of both models is
// one of them (`output: true`: the runtime gives it anyway, so a rewrite that ends the graph is
// ranked too); one that is a graph output of only one model is left out (it cannot be asked of
// the other by the same name without renaming).
export function layerTensors(original, candidate, conversion) {
  const computed = new Set(original.nodes.flatMap((n) => n.outputs.map((o) => o.name)));
  const theirs = new Set(candidate.outputs.map((o) => o.name));
  const mine = new Set(original.outputs.map((o) => o.name));
  const matchOf = new Map();
  for (const m of conversion?.matches ?? []) if (m.applied) for (const n of m.new_nodes) matchOf.set(n, m.id);
  const tensors = [];
  for (const node of candidate.nodes) {
    for (const { name } of node.outputs) {
      if (!name || !computed.has(name) || mine.has(name) !== theirs.has(name)) continue;
      const tensor = { tensor: name, node: node.name, op: node.op };
      if (mine.has(name)) tensor.output = true;
      if (matchOf.has(node.name)) tensor.match_id = matchOf.get(node.name);
      tensors.push(tensor);
    }
  }
  return tensors;
}

// The layer tensors a model must be asked for beside its graph outputs.
const extraOutputs = (layers) => layers.filter((l) => !l.output).map((l) => l.tensor);

// Per applied rewrite, the change measured where it hands its result on: the last compared
// tensor its new nodes compute, and the largest change among the tensors its matched nodes read
// from outside the match (what it was given; a chain's tensors between its own nodes are its
// work), so a figure inherited from upstream is told from one it introduced.
// Sorted by the change at the output, largest first: the ranking "retraining recommended" asks for.
export function rewriteChanges(layers, original, conversion) {
  const byTensor = new Map(layers.map((l) => [l.tensor, l]));
  const nodes = new Map(original.nodes.map((n) => [n.name, n]));
  const out = [];
  for (const m of conversion?.matches ?? []) {
    if (!m.applied) continue;
    const mine = layers.filter((l) => l.match_id === m.id);
    if (!mine.length) continue;
    const last = mine[mine.length - 1];
    const matched = m.nodes.map((n) => nodes.get(n)).filter(Boolean);
    const own = new Set(matched.flatMap((n) => n.outputs.map((o) => o.name)));
    const inputs = matched.flatMap((n) => n.inputs.map((i) => i.name)).filter((t) => !own.has(t)).map((t) => byTensor.get(t)).filter(Boolean);
    out.push({
      match_id: m.id, pattern: m.pattern, tensor: last.tensor, max_abs: last.max_abs, max_rel: last.max_rel,
      max_abs_in: inputs.length ? Math.max(...inputs.map((l) => l.max_abs)) : 0, pass: last.pass,
    });
  }
  return out.sort((x, y) => y.max_abs - x.max_abs);
}

// Both graphs must take the same inputs (names, types, ranks, and dims where both are fixed: a
// pinned conversion fixes what the original leaves symbolic): a check feeds them the same values.
function sameInputs(original, candidate) {
  const show = (i) => `${i.name}: ${i.type} [${Array.isArray(i.shape) ? i.shape.join(', ') : '?'}]`;
  const fixed = (d) => typeof d === 'number' && d >= 0;
  const agree = (a, b) => a.type === b.type && (!Array.isArray(a.shape) || !Array.isArray(b.shape) ||
    (a.shape.length === b.shape.length && a.shape.every((d, axis) => !fixed(d) || !fixed(b.shape[axis]) || d === b.shape[axis])));
  const theirs = new Map(candidate.inputs.map((i) => [i.name, i]));
  const same = original.inputs.length === candidate.inputs.length &&
    original.inputs.every((i) => theirs.has(i.name) && agree(i, theirs.get(i.name)));
  if (!same) {
    throw optionsError(`the two models take different inputs: ${original.inputs.map(show).join(', ')} against ${candidate.inputs.map(show).join(', ')}`);
  }
}

function checkOptions(options) {
  const { seed = DEFAULT_SEED, inputRange = DEFAULT_INPUT_RANGE, rtol = DEFAULT_TOLERANCE.rtol, atol = DEFAULT_TOLERANCE.atol } = options;
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw optionsError('the seed must be an integer from 0 to 4294967295');
  if (!Array.isArray(inputRange) || inputRange.length !== 2 || !inputRange.every(Number.isFinite) || !(inputRange[0] < inputRange[1])) {
    throw optionsError('the input range must be two finite numbers LO < HI');
  }
  for (const [name, v] of [['rtol', rtol], ['atol', atol]]) {
    if (!Number.isFinite(v) || v < 0) throw optionsError(`${name} must be a finite number ≥ 0`);
  }
  const { mapThreshold = DEFAULT_MAP_THRESHOLD } = options;
  if (typeof mapThreshold !== 'number' || !(mapThreshold >= 0 && mapThreshold <= 1)) throw optionsError('mapThreshold must be a number from 0 to 1');
  return { seed, inputRange: [...inputRange], tolerance: { rtol, atol }, mapThreshold };
}

// A runtime's failure in words: running out of memory said as such (onnxruntime's own message
// for it is a C++ exception's name).
function runtimeFailure(cause) {
  const message = String(cause?.message ?? cause);
  if (/bad_alloc|out of memory|Failed to allocate|Array buffer allocation failed|Invalid typed array length/i.test(message)) {
    return `it ran out of memory at these sizes: lower them (${message})`;
  }
  return message;
}

// Loads `model` with `extra` tensors as added graph outputs and runs it on each batch of feeds in
// turn, handing each batch's outputs by name ({type, dims, data}) to `take(index, outputs)`.
// Adds the time taken to `timings`. A failure is thrown as {stage: 'to load' | 'to run', cause}.
export async function runModel(runtime, model, batches, extra, timings, take) {
  let started = performance.now();
  let session;
  try {
    session = await runtime.session(withOutputs(model.bytes, extra), model.externalData ?? []);
  } catch (cause) {
    throw { stage: 'to load', cause };
  }
  timings.load += performance.now() - started;
  try {
    for (const [index, feeds] of batches.entries()) {
      started = performance.now();
      let outputs;
      try {
        const tensors = Object.fromEntries(Object.entries(feeds).map(([name, f]) => [name, new runtime.Tensor(f.type, f.data, f.dims)]));
        outputs = await session.run(tensors);
      } catch (cause) {
        throw { stage: 'to run', cause };
      }
      timings.run += performance.now() - started;
      take(index, Object.fromEntries(Object.entries(outputs).map(([name, t]) => [name, { type: t.type, dims: t.dims, data: t.data }])));
    }
  } finally {
    await session.release?.();
  }
}

// The batches to feed: the given samples split along axis 0 (every input alike), or the seeded
// random feeds as one batch. A model whose batch dimension is a number runs batches of that
// size; a dynamic one, batches of up to MAX_BATCH samples, so the runtime's activations stay
// bounded whatever the number of samples.
export const MAX_BATCH = 32;
export function feedBatches(feeds, inputs, samples) {
  if (samples === undefined) return [feeds];
  const fixed = inputs.map((i) => (Array.isArray(i.shape) && typeof i.shape[0] === 'number' && i.shape[0] > 0 ? i.shape[0] : null)).filter((d) => d !== null);
  const size = fixed.length ? fixed[0] : Math.min(samples, MAX_BATCH);
  if (fixed.length && samples % size) {
    throw optionsError(`the model takes batches of ${size} (its inputs' first dimension) and ${samples} samples are not a multiple of it`);
  }
  const batches = [];
  for (let start = 0; start < samples; start += size) batches.push(sliceFeeds(feeds, start, Math.min(samples, start + size)));
  return batches;
}

// Samples [start, end) of every input ({name: {type, dims, data}}, samples on axis 0): views of
// the same data, or with `copy` arrays of their own.
export function sliceFeeds(feeds, start, end, { copy = false } = {}) {
  return Object.fromEntries(Object.entries(feeds).map(([name, f]) => {
    const each = f.dims.slice(1).reduce((a, b) => a * b, 1);
    const data = copy ? f.data.slice(start * each, end * each) : f.data.subarray(start * each, end * each);
    return [name, { type: f.type, dims: [end - start, ...f.dims.slice(1)], data }];
  }));
}

// Tensors joined along axis 0 ({type, dims, data}, the first's type and trailing dims): what one
// run on every sample would give, or one set of samples from several.
export function joinTensors(parts) {
  if (parts.length === 1) return parts[0];
  const [first] = parts;
  const length = parts.reduce((n, p) => n + p.data.length, 0);
  const data = Array.isArray(first.data) ? [] : new first.data.constructor(length);
  let at = 0;
  for (const p of parts) {
    if (Array.isArray(data)) data.push(...p.data);
    else data.set(p.data, at);
    at += p.data.length;
  }
  return { type: first.type, dims: [parts.reduce((n, p) => n + (p.dims[0] ?? 1), 0), ...first.dims.slice(1)], data };
}

// Batches' outputs joined per name.
function joinBatches(parts) {
  return Object.fromEntries(Object.keys(parts[0]).map((name) => [name, joinTensors(parts.map((p) => p[name]))]));
}

// What a run keeps of a model's outputs: every graph output for every batch (joined), and the
// layer tensors of the first batch only (a layerwise comparison of every tensor on every
// sample would hold the whole model's activations N times).
function collector(names) {
  const outputs = [], layers = {};
  return {
    take: (index, out) => {
      outputs.push(Object.fromEntries(names.map((n) => [n, out[n]]).filter(([, t]) => t)));
      if (index === 0) for (const [n, t] of Object.entries(out)) if (!names.includes(n)) layers[n] = t;
    },
    result: () => ({ ...layers, ...joinBatches(outputs) }),
  };
}

// What an output is, read from its shape (and, for a map, the original's values), for the figures
// that say whether the candidate still does the task: 'classes' ([N, K], K > 1: scores over
// classes), 'map' ([N, 1, H, W] or [N, H, W, 1], H·W > 1, every value of the original in [0, 1]:
// a probability or score map, as DB text detectors give), 'anchors' ([N, A, 1]: a score per
// anchor), 'sequence' ([N, T, C], C > 1: per-step class scores, as CTC decoders read them), or null.
export function taskKind(dims, values) {
  if (dims.length === 2) return dims[1] >= 2 ? 'classes' : null;
  if (dims.length === 3) return dims[2] === 1 ? 'anchors' : dims[2] >= 2 ? 'sequence' : null;
  if (dims.length !== 4 || (dims[1] !== 1 && dims[3] !== 1) || dims[1] * dims[2] * dims[3] < 2) return null;
  for (const v of values) if (!(v >= 0 && v <= 1)) return null;  // NaN too
  return 'map';
}

// The defaults of the task figures: a map's pixel counts as marked above 0.3 (the binarisation
// threshold of PaddleOCR's DB post-process; --map-threshold, mapThreshold); an anchor detects
// when its score is above 0.5 (after a sigmoid when the original's scores leave [0, 1]: logits);
// the CTC blank is class 0.
export const DEFAULT_MAP_THRESHOLD = 0.3;
export const ANCHOR_THRESHOLD = 0.5;
export const CTC_BLANK = 0;

// The index of the largest of `count` values from `at` (NaN never wins; none finite or larger
// than -Infinity gives -1).
function argmax(values, at, count) {
  let best = -1, top = -Infinity;
  for (let k = 0; k < count; ++k) {
    const v = values[at + k];
    if (v > top) { top = v; best = k; }
  }
  return best;
}

const share = (part, whole) => (whole ? part / whole : null);

// [N, K]: the share of samples whose top-1 class is the same in both models.
function classesTask(a, b, [rows, classes]) {
  let same = 0;
  for (let r = 0; r < rows; ++r) {
    const x = argmax(a, r * classes, classes);
    if (x >= 0 && x === argmax(b, r * classes, classes)) same += 1;
  }
  return { kind: 'classes', samples: rows, top1_agreement: share(same, rows), original_confidence: meanTopConfidence(a, rows, classes) };
}

// The original's mean top-1 probability over the samples: its scores as they are when every row
// already is a distribution (in [0, 1], summing to 1), else their softmax. Null when a row holds
// no finite score.
function meanTopConfidence(a, rows, classes) {
  let probabilities = true;
  for (let r = 0; r < rows && probabilities; ++r) {
    let sum = 0;
    for (let k = r * classes; k < (r + 1) * classes; ++k) {
      if (!(a[k] >= 0 && a[k] <= 1)) probabilities = false;
      sum += a[k];
    }
    if (Math.abs(sum - 1) > 1e-3) probabilities = false;
  }
  let total = 0;
  for (let r = 0; r < rows; ++r) {
    const row = Array.from(a.subarray ? a.subarray(r * classes, (r + 1) * classes) : a.slice(r * classes, (r + 1) * classes));
    const top = Math.max(...row);
    if (!Number.isFinite(top)) return null;
    total += probabilities ? top : 1 / row.reduce((sum, v) => sum + Math.exp(v - top), 0);
  }
  return share(total, rows);
}

// A map's pixels above the threshold in both models: per sample the IoU of the two sets (1 when
// both are empty: they agree), its mean over the samples; the share of all pixels decided alike;
// and the share of pixels each model marks. Both layouts keep a sample's pixels together. The
// threshold is taken in the output's precision, as numpy compares a float32 map with 0.3 (a
// value of 0.3 in float32 is not above it).
function mapTask(a, b, dims, type, given) {
  const samples = dims[0], pixels = dims[1] * dims[2] * dims[3];
  const threshold = type === 'float32' ? Math.fround(given) : type === 'float16' ? fromHalf(toHalf(given)) : given;
  let iou = 0, alike = 0, markedA = 0, markedB = 0;
  for (let s = 0; s < samples; ++s) {
    let inter = 0, union = 0;
    for (let i = s * pixels; i < (s + 1) * pixels; ++i) {
      const x = a[i] > threshold, y = b[i] > threshold;
      if (x && y) inter += 1;
      if (x || y) union += 1;
      if (x === y) alike += 1;
      if (x) markedA += 1;
      if (y) markedB += 1;
    }
    iou += union ? inter / union : 1;
  }
  const total = samples * pixels;
  return {
    kind: 'map', samples, layout: dims[1] === 1 ? 'nchw' : 'nhwc', threshold: given, mean_iou: share(iou, samples),
    pixel_agreement: share(alike, total), marked: [share(markedA, total), share(markedB, total)],
  };
}

// [N, A, 1] scores per anchor: a sample detects when its best anchor's score is above 0.5. When
// the original's scores leave [0, 1] they are logits, and both models' take a sigmoid first.
// The share of samples that detect (or not) alike, that have the same best anchor, the share of
// all anchor decisions alike, and the share of samples each model detects in.
function anchorsTask(a, b, [samples, anchors]) {
  let logits = false;
  for (const v of a) if (Number.isFinite(v) && (v < 0 || v > 1)) { logits = true; break; }
  const score = logits ? (v) => 1 / (1 + Math.exp(-v)) : (v) => v;
  const above = (v) => score(v) > ANCHOR_THRESHOLD;
  let decided = 0, top = 0, alike = 0, detectedA = 0, detectedB = 0;
  for (let s = 0; s < samples; ++s) {
    const at = s * anchors;
    const x = argmax(a, at, anchors), y = argmax(b, at, anchors);
    const dx = x >= 0 && above(a[at + x]), dy = y >= 0 && above(b[at + y]);
    if (dx === dy) decided += 1;
    if (x >= 0 && x === y) top += 1;
    if (dx) detectedA += 1;
    if (dy) detectedB += 1;
    for (let i = at; i < at + anchors; ++i) if (above(a[i]) === above(b[i])) alike += 1;
  }
  return {
    kind: 'anchors', samples, threshold: ANCHOR_THRESHOLD, sigmoid: logits, decision_agreement: share(decided, samples),
    top_anchor_agreement: share(top, samples), anchor_agreement: share(alike, samples * anchors),
    detected: [share(detectedA, samples), share(detectedB, samples)],
  };
}

// A sample's greedy CTC reading of [T, C] scores: the class of each step's largest score, repeats
// collapsed, the blank removed.
function greedyCtc(steps) {
  const out = [];
  let last = null;
  for (const k of steps) {
    if (k !== last && k !== CTC_BLANK) out.push(k);
    last = k;
  }
  return out;
}

// [N, T, C]: the share of samples whose greedy CTC sequence is the same in both models, and the
// share of steps whose largest score is at the same class.
function sequenceTask(a, b, [samples, steps, classes]) {
  let same = 0, alike = 0;
  for (let s = 0; s < samples; ++s) {
    const x = [], y = [];
    for (let t = 0; t < steps; ++t) {
      const at = (s * steps + t) * classes;
      x.push(argmax(a, at, classes));
      y.push(argmax(b, at, classes));
      if (x[t] >= 0 && x[t] === y[t]) alike += 1;
    }
    const p = greedyCtc(x), q = greedyCtc(y);
    if (p.length === q.length && p.every((k, i) => k === q[i])) same += 1;
  }
  return { kind: 'sequence', samples, blank: CTC_BLANK, sequence_agreement: share(same, samples), step_agreement: share(alike, samples * steps) };
}

// The task figures of a comparable output (taskKind), as `entry.task`: whether the candidate still
// does what the original does, which a distance alone does not say. An output shaped [N, K] keeps
// `top1_agreement` beside it, and with labels each model's `accuracy`.
export function decisions(entry, original, candidate, labels, { mapThreshold = DEFAULT_MAP_THRESHOLD } = {}) {
  const dims = entry.shape_original;
  if (!entry.comparable) return entry;
  const a = valuesOf(original), b = valuesOf(candidate);
  const kind = taskKind(dims, a);
  if (!kind) return entry;
  entry.task = kind === 'classes' ? classesTask(a, b, dims) : kind === 'map' ? mapTask(a, b, dims, original.type, mapThreshold)
    : kind === 'anchors' ? anchorsTask(a, b, dims) : sequenceTask(a, b, dims);
  if (kind !== 'classes') return entry;
  const [rows, classes] = dims;
  entry.top1_agreement = entry.task.top1_agreement;
  if (labels && labels.length === rows) {
    let right = [0, 0];
    for (let r = 0; r < rows; ++r) right = [right[0] + (argmax(a, r * classes, classes) === labels[r]), right[1] + (argmax(b, r * classes, classes) === labels[r])];
    entry.accuracy = { original: right[0] / rows, candidate: right[1] / rows };
  }
  return entry;
}

// Why a comparison of this output tests nothing, or null: the original's output does not vary
// (every element the same, or none finite), so no change could show in it.
function constantOutput(values) {
  let first = null;
  for (const v of values) {
    if (!Number.isFinite(v)) continue;
    if (first === null) first = v;
    else if (v !== first) return null;
  }
  if (first === null) return values.length ? 'the original\'s output holds no finite value' : 'the original\'s output has no elements';
  return `the original's output holds one value (${figure(first, 3)}) in all its ${values.length} element${values.length === 1 ? '' : 's'}, so no change could show`;
}

// The tensors an applied rewrite's new nodes compute in the candidate (its graph outputs aside):
// asked of the runtime so that a rewrite reduced to nothing at the check's sizes is seen.
export function rewriteTensors(candidate, conversion) {
  const made = new Set((conversion?.matches ?? []).filter((m) => m.applied).flatMap((m) => m.new_nodes));
  const outputs = new Set(candidate.outputs.map((o) => o.name));
  return candidate.nodes.filter((n) => made.has(n.name)).flatMap((n) => n.outputs.map((o) => o.name)).filter((t) => t && !outputs.has(t));
}

// One candidate's outputs (and layer tensors) against the original's, into `report`. The
// verdict is 'pass', 'fail', or 'inconclusive' (with the reasons) when a comparison could not
// have shown a change: never a pass for what was not tested.
function compareRuns(report, a, b, original, layers, rewritten, options, tolerance) {
  const reasons = [];
  for (const { name } of original.description.outputs) {
    if (!(name in b)) {
      report.outputs.push({ name, dtype: a[name].type, shape_original: [...a[name].dims], shape_candidate: null, comparable: false, pass: false, reason: 'the candidate has no such output', stats_original: statistics(valuesOf(a[name]) ?? []) });
      continue;
    }
    const entry = decisions(compareTensor(name, a[name], b[name], tolerance), a[name], b[name], options.labels, options);
    const values = valuesOf(a[name]);
    // A change shown is a change; only a pass on an output that cannot vary proves nothing.
    const constant = entry.pass && values ? constantOutput(values) : null;
    if (constant) {
      Object.assign(entry, { pass: false, inconclusive: constant });
      reasons.push(`output '${name}': ${constant}`);
    }
    report.outputs.push(entry);
  }
  for (const tensor of rewritten) {
    const t = b[tensor];
    if (t && t.dims.some((d) => d === 0)) reasons.push(`the rewritten layer's output '${tensor}' has no elements at these sizes (${t.dims.join('×')})`);
  }
  if (options.layerwise) {
    report.layers = [];
    for (const layer of layers) {
      const entry = compareTensor(layer.tensor, a[layer.tensor], b[layer.tensor], tolerance, { brief: true });
      if (!entry.comparable) continue;  // a tensor whose shape a rewrite changed: nothing to compare
      report.layers.push({ ...layer, shape: entry.shape_original, max_abs: entry.max_abs, mean_abs: entry.mean_abs, max_rel: entry.max_rel, pass: entry.pass, range: entry.range });
    }
    const failing = report.layers.find((l) => !l.pass);
    if (failing) report.first_failing = failing.match_id ? { tensor: failing.tensor, match_id: failing.match_id } : { tensor: failing.tensor };
    if (options.conversion) report.rewrites = rewriteChanges(report.layers, original.description, options.conversion);
  }
  const comparable = report.outputs.filter((o) => o.comparable);
  const within = comparable.length > 0 && comparable.every((o) => o.pass || o.inconclusive);
  report.pass = within && !reasons.length;
  report.verdict = reasons.length && within ? 'inconclusive' : report.pass ? 'pass' : 'fail';
  if (reasons.length) report.inconclusive = reasons;
}

// Runs the original once and every candidate on the same seeded inputs, and compares each
// candidate with the original: one report per candidate, in order. `runtime`: {name, version,
// Tensor, session(bytes, externalData) -> an onnxruntime InferenceSession}. `options` (shared):
// seed, inputRange, rtol, atol, mapThreshold, inputShapes, inputValues, layerwise. Each candidate: {model,
// conversion (its conversion's report, to name the match behind each tensor), scaleAtol (see
// compareTensor)}. `onProgress(stage, fraction)`. A model that does not load or run is reported
// (pass false, `error`; the original's failure in every report), not thrown. The original's load
// and run times are counted in every report's timings_ms (it ran once for all of them).
export async function checkCandidates(runtime, original, candidates, options = {}, onProgress = () => {}) {
  const { seed, inputRange, tolerance, mapThreshold } = checkOptions(options);
  for (const c of candidates) sameInputs(original.description, c.model.description);
  const given = options.samples;
  const feeds = given?.feeds ?? inputFeeds(original.description, { seed, inputRange, inputShapes: options.inputShapes, inputValues: options.inputValues });
  const batches = feedBatches(feeds, [original, ...candidates.map((c) => c.model)].flatMap((m) => m.description.inputs), given?.samples);
  const layers = candidates.map((c) => (options.layerwise ? layerTensors(original.description, c.model.description, c.conversion) : []));
  const timings = { load: 0, run: 0 };
  const inputs = inputsRecord(given, feeds, batches, seed, inputRange);
  const reports = candidates.map((c) => ({
    // The seed and range say what was fed only when the inputs were drawn, not read.
    schema: CHECK_SCHEMA, runtime: { name: runtime.name, version: runtime.version }, ...(given ? {} : { seed, input_range: inputRange }), inputs,
    tolerance: c.scaleAtol ? { ...tolerance, scaled: true } : tolerance, pass: false, outputs: [], timings_ms: { ...timings },
  }));
  const steps = candidates.length + 1;
  const failed = (report, which, { stage, cause }) => Object.assign(report, {
    error: `the ${which} model failed ${stage} in ${runtime.name}: ${runtimeFailure(cause)}`, failed: which, verdict: 'fail',
  });
  const run = async (model, extra, spent) => {
    const kept = collector(model.description.outputs.map((o) => o.name));
    await runModel(runtime, model, batches, extra, spent, kept.take);
    return kept.result();
  };
  let reference;
  try {
    onProgress('running the original model', 0);
    // The original computes every tensor any candidate's layerwise comparison asks for.
    reference = await run(original, [...new Set(layers.flatMap(extraOutputs))], timings);
  } catch (e) {
    if (!e?.stage) throw e;
    for (const report of reports) failed(report, 'original', e);
    return reports;
  }
  for (const [i, c] of candidates.entries()) {
    const report = reports[i];
    const own = { load: 0, run: 0 };
    try {
      onProgress(`running the ${c.label ?? 'candidate'} model`, (i + 1) / steps);
      const rewritten = rewriteTensors(c.model.description, c.conversion);
      const outputs = await run(c.model, [...new Set([...extraOutputs(layers[i]), ...rewritten])], own);
      compareRuns(report, reference, outputs, original, layers[i], rewritten, { ...options, mapThreshold, labels: given?.labels, conversion: c.conversion }, report.tolerance);
    } catch (e) {
      if (!e?.stage) throw e;  // the comparison's own defect, not the model's
      failed(report, 'candidate', e);
    }
    report.timings_ms = { load: timings.load + own.load, run: timings.run + own.run };
  }
  onProgress('compared', 1);
  return reports;
}

// `names` (graph outputs or any tensor the model computes) over every batch, joined along axis 0:
// what the repair reads of a model on its calibration samples.
export async function computeTensors(runtime, model, batches, names, timings = { load: 0, run: 0 }) {
  const graphOutputs = new Set(model.description.outputs.map((o) => o.name));
  const parts = [];
  await runModel(runtime, model, batches, names.filter((n) => !graphOutputs.has(n)), timings,
    (index, out) => parts.push(Object.fromEntries(names.map((n) => [n, out[n]]))));
  return joinBatches(parts);
}

// How a model's activations fare in their FPQ representations on data (the FPQ twin's
// `activations`: {tensor, role, representation, step, min, max, rectified_next?}), each tensor taken as the float
// model computes it: the share of values that round outside the range and clip, the share of
// non-zero values that round to 0 (vanish), and the SQNR, 10·log10(Σx² / Σ(x − q(x))²) in dB
// (Infinity where nothing changes). Accumulated batch by batch: no tensor is held for all samples.
export async function activationFit(runtime, model, batches, representations) {
  const inputs = new Set(model.description.inputs.map((i) => i.name));
  const outputs = new Set(model.description.outputs.map((o) => o.name));
  const sums = representations.map((r) => ({ ...r, count: 0, clipped: 0, vanished: 0, signal: 0, noise: 0 }));
  const add = (s, values) => {
    for (let x of values) {
      if (!Number.isFinite(x)) continue;
      // Only Relus read it: what they zero, an unsigned representation loses nothing of.
      if (s.rectified_next && x < 0) x = 0;
      const steps = roundHalfEven(x / s.step) * s.step;
      const q = Math.min(s.max, Math.max(s.min, steps));
      s.count += 1;
      if (steps < s.min || steps > s.max) s.clipped += 1;
      if (x !== 0 && q === 0) s.vanished += 1;
      s.signal += x * x;
      s.noise += (x - q) * (x - q);
    }
  };
  const extra = [...new Set(sums.filter((s) => !inputs.has(s.tensor) && !outputs.has(s.tensor)).map((s) => s.tensor))];
  await runModel(runtime, model, batches, extra, { load: 0, run: 0 }, (index, out) => {
    for (const s of sums) {
      const t = inputs.has(s.tensor) ? batches[index][s.tensor] : out[s.tensor];
      const values = t && valuesOf(t);
      if (values) add(s, values);
    }
  });
  return sums.map(({ tensor, role, representation, count, clipped, vanished, signal, noise }) => ({
    tensor, role, representation, values: count, clipped: count ? clipped / count : 0, vanished: count ? vanished / count : 0,
    sqnr_db: noise > 0 ? 10 * Math.log10(signal / noise) : Infinity,
  }));
}

// The candidate against its FPQ twin (`made`: {model: its bytes, twin: what it simulates, as
// fpqTwin() gives them}) on the same inputs, and on samples the activations' fit: `check.fpq`. The
// twin keeps every tensor name of the candidate (and reads its data files), so the candidate's
// description serves for both, layer by layer too. A twin that could not be made is
// fpqTwinFailure(its message): this comparison's error, not the check's.
export async function checkFpqTwin(runtime, candidate, made, options, onProgress = () => {}) {
  const twin = { bytes: made.model, externalData: candidate.externalData, description: candidate.description };
  const [report] = await checkCandidates(runtime, candidate, [{ model: twin, label: 'FPQ twin' }], options, onProgress);
  const fpq = { ...report, simulation: made.twin };
  if (options.samples && !report.error) {
    onProgress('the activations in FPQ', 1);
    const batches = feedBatches(options.samples.feeds, candidate.description.inputs, options.samples.samples);
    fpq.activations = await activationFit(runtime, candidate, batches, made.twin.activations);
  }
  return fpq;
}

export const fpqTwinFailure = (message) => ({ schema: CHECK_SCHEMA, error: message, pass: false, verdict: 'fail', outputs: [] });

// What the models were fed, for the report: the data's source, how many samples, how they were
// read (dtype conversions, an image preprocessing), whether a repair held them out of its fit,
// and the batch each run took; or the seeded random values and their shapes.
function inputsRecord(given, feeds, batches, seed, inputRange) {
  const shapes = Object.fromEntries(Object.entries(batches[0]).map(([name, f]) => [name, [...f.dims]]));
  if (!given) return { source: 'random', seed, range: [...inputRange], samples: Object.values(feeds)[0]?.dims[0] ?? 1, batch_shapes: shapes };
  const record = { source: given.source, samples: given.samples, batches: batches.length, batch_shapes: shapes };
  if (given.labels) record.labels = given.labels.length;
  if (given.heldOut) record.held_out = true;
  if (given.conversions?.length) record.conversions = [...given.conversions];
  if (given.preprocessing) record.preprocessing = given.preprocessing;
  return record;
}

// One candidate against the original (see checkCandidates); options.conversion and
// options.scaleAtol are the candidate's.
export async function checkModels(runtime, original, candidate, options = {}, onProgress = () => {}) {
  const [report] = await checkCandidates(runtime, original, [{ model: candidate, conversion: options.conversion, scaleAtol: options.scaleAtol }], options, onProgress);
  return report;
}

// Whether a converted model introduces NaN or infinity where the original has none, per output.
export function introducesNonFinite(check) {
  return check.outputs.some((o) => (o.nan && o.nan[1] > o.nan[0]) || (o.inf && o.inf[1] > o.inf[0]) ||
    (!o.comparable && o.stats_candidate && o.stats_original && o.stats_candidate.min === null && o.stats_original.min !== null));
}

// A figure for people (the verdict, the page's tables, the CLI's lines): `digits` significant
// digits, positional from 0.01 to 1000 and exponential outside; a string (finiteForJson's
// "Infinity") as it is.
export function figure(x, digits = 2) {
  if (typeof x !== 'number') return String(x);
  if (x === 0) return '0';
  const magnitude = Math.abs(x);
  return magnitude >= 0.01 && magnitude < 1000 ? String(Number(x.toPrecision(digits))) : x.toExponential(digits - 1);
}

// A check's verdict in words, one line per output (the CLI's summary and the page's): `kind` is
// 'fold_only' (must pass), 'converted' (the Lattice rewrites change outputs by design),
// 'repaired' (a converted model after its repair, whose report is `repair`) or 'fpq'. An
// inconclusive comparison says why first.
export function verdict(check, kind, repair) {
  if (check.error) return [check.error];
  const inconclusive = (check.inconclusive ?? []).map((reason) => `inconclusive: ${reason}: check at sizes (or on samples) where it varies`);
  if (kind === 'fold_only') {
    const worst = Math.max(0, ...check.outputs.filter((o) => o.comparable).map((o) => o.max_abs));
    if (check.verdict === 'inconclusive') return [`the fold-only twin's check is ${inconclusive.join('; ')}`];
    // Exactly equal: nothing was folded, or the folds were exact in float (never "by more than 0").
    if (check.pass && worst === 0) return ['the fold-only twin computes every output exactly as the input'];
    return [check.pass ? `folding changed no output by more than ${figure(worst)}` :
      `folding changed ${check.outputs.filter((o) => !o.pass).map((o) => `'${o.name}' by up to ${figure(o.max_abs ?? NaN)}`).join(', ')}: beyond rtol ${check.tolerance.rtol}, atol ${check.tolerance.atol} — a defect, please report it`];
  }
  if (kind === 'fpq') return fpqLines(check);
  const data = dataLines(check);
  // A repair fitted on random inputs and checked on others: no figure here can judge it.
  const blind = kind === 'repaired' && repair?.data?.seed !== undefined && !onSamples(check.inputs)
    ? [`the repair fitted ${repair.data.source} and this check fed random inputs too (drawn apart from them): neither says whether the repaired model still does its task; repair from your samples and check on others`]
    : [];
  // On samples an output's task figures come first: they say whether the model still does its
  // job. On random inputs they say nothing of the task, and come after the distance, said so.
  return [...data, ...blind, ...inconclusive, ...check.outputs.flatMap((o) => {
    const task = o.task?.samples ? [taskLine(o, check.inputs)] : [];
    const distance = distanceLine(o, kind === 'repaired', check.inputs);
    return onSamples(check.inputs) ? [...task, distance] : [distance, ...task];
  })];
}

// Below these the samples are probably not read as the model expects: the original's own accuracy
// on their labels, and (without labels) its mean top-1 confidence in multiples of chance.
const LOW_ORIGINAL_ACCURACY = 0.9;
const NEAR_CHANCE = 2;

// What the samples say of themselves before any comparison, first in the verdict: how the
// original itself does on them (its accuracy with labels; its mean top-1 confidence without),
// with a warning when that looks like data it does not expect (a scale, a colour order, the
// labels' order), and colour images read into a one-channel input.
function dataLines(check) {
  if (check.error || !onSamples(check.inputs)) return [];
  const lines = [];
  const p = check.inputs.preprocessing;
  if (p?.colour_to_luma) {
    lines.push(`data: ${p.colour_to_luma} of the ${check.inputs.samples} images are in colour, and the model takes one channel: it was fed their luma (0.299 R + 0.587 G + 0.114 B)`);
  }
  const asRead = p ? ` (images scaled to ${p.scale}${p.channels === 3 ? `, ${p.order.toUpperCase()}` : ''})` : '';
  for (const o of check.outputs) {
    if (o.accuracy) {
      const low = o.accuracy.original < LOW_ORIGINAL_ACCURACY;
      lines.push(`data: the original gets ${percent(o.accuracy.original)} of these labels right ('${o.name}')` +
        (low ? `: if it does better on its own data, these samples are not read as it expects${asRead}, or the labels are not its classes` : ''));
    } else if (o.task?.kind === 'classes' && typeof o.task.original_confidence === 'number') {
      const classes = o.shape_original[1], chance = 1 / classes;
      const low = o.task.original_confidence < NEAR_CHANCE * chance;
      lines.push(`data: the original's mean top-1 confidence on these samples is ${percent(o.task.original_confidence)} ('${o.name}', ${classes} classes)` +
        (low ? `: near chance (${percent(chance)}); these samples may not be read as it expects${asRead}` : ''));
    }
  }
  return lines;
}

// The FPQ twin against the float model it simulates: what the fixed point changes (by design, never
// a failure), where it first parts from the float layer by layer, and what it leaves in float.
function fpqLines(check) {
  if (check.error) return [check.error];
  const lines = [];
  for (const o of check.outputs) {
    const task = [];
    if (o.task?.kind === 'classes' && o.task.samples) {
      task.push(`the FPQ twin decides as the float model on ${percent(o.top1_agreement)} of ${onText(o.task.samples, check.inputs)} ('${o.name}'` +
        `${o.accuracy ? `; accuracy ${percent(o.accuracy.original)} → ${percent(o.accuracy.candidate)}` : ''})${randomNote(check.inputs)}`);
    } else if (o.task?.samples) {
      task.push(taskLine(o, check.inputs, { subject: `the FPQ twin's output '${o.name}'`, reference: 'the float model' }));
    }
    let distance;
    if (!o.comparable) distance = `FPQ twin, output '${o.name}': ${o.reason}`;
    else {
      const range = o.stats_original.max - o.stats_original.min;
      distance = `FPQ's fixed point moves output '${o.name}' by up to ${figure(o.max_abs)}${range > 0 ? ` (${Math.round(100 * o.max_abs / range)} % of its range)` : ''}, mean ${figure(o.mean_abs)}`;
    }
    // As in verdict(): the task first on samples, after the distance on random inputs.
    lines.push(...(onSamples(check.inputs) ? [...task, distance] : [distance, ...task]));
  }
  if (check.first_failing) lines.push(`FPQ twin: the first tensor where the fixed point parts from the float is '${check.first_failing.tensor}'`);
  const clipping = (check.activations ?? []).filter((a) => a.clipped > 0).sort((a, b) => b.clipped - a.clipped);
  if (check.activations) {
    lines.push(`FPQ activations on the data: ${clipping.length} of ${check.activations.length} tensors clip in their representation` +
      (clipping.length ? `, most '${clipping[0].tensor}' (${percent(clipping[0].clipped)} beyond ${clipping[0].representation}, SQNR ${figure(clipping[0].sqnr_db)} dB)` : ''));
  }
  const gaps = check.simulation?.not_simulated ?? [];
  if (gaps.length) lines.push(`FPQ twin: ${gaps.length} node${gaps.length === 1 ? '' : 's'} left in float (${[...new Set(gaps.map((g) => g.op))].join(', ')}): see check.fpq.simulation`);
  return lines;
}

// What both models were fed, in words: the samples (their conversions, how images became
// tensors) or the seeded random values, and the shape of each run's inputs.
export function fedText(check) {
  const { inputs } = check;
  const shapes = Object.entries(inputs.batch_shapes).map(([name, dims]) => `${name} ${dims.join('×')}`).join(', ');
  if (inputs.source === 'random') return `${shapes}, uniform in [${inputs.range.join(', ')}), seed ${inputs.seed}`;
  const p = inputs.preprocessing;
  const colour = p?.channels === 1 ? `one channel${p.colour_to_luma ? ` (the luma of ${p.colour_to_luma} colour image${p.colour_to_luma === 1 ? '' : 's'})` : ''}` : p?.order.toUpperCase();
  const images = p ? `; images ${p.resize === 'pad' ? 'padded' : 'stretched'} to ${p.height}×${p.width}, scaled to ${p.scale}, ${colour}` : '';
  const converted = inputs.conversions?.length ? ` (${inputs.conversions.join(', ')})` : '';
  const runs = inputs.batches === 1 ? `in one batch, ${shapes}` : `in ${inputs.batches} batches like ${shapes}`;
  return `${inputs.samples} samples of ${inputs.source}${converted} ${runs}${images}`;
}

// The fold-only twin of a conversion: the same folds (and skips of them), the same pinned
// shapes, the fixed-point scheme's exact rewrites (FPQ's bias moves), no conversion pattern.
// The page's twin is made the same way (web/worker.js: the conversion's options, target none); a
// repair under FPQ runs these on the repaired model (repair.mjs).
export function twinOptions(conversion) {
  const o = conversion.options;
  // FPQ's range fit skipped in the conversion stays skipped in the exact rewrites made again.
  const skip = o.skip?.filter((name) => name === 'FpqRangeFitPattern') ?? [];
  return {
    target: 'none', foldBatchNorm: o.fold_batch_norm, skipMatches: o.skip_matches, ignoreUnknownSkips: true,
    inputShapes: conversion.input_shapes, ...(o.fixed_point ? { fixedPoint: o.fixed_point } : {}), ...(skip.length ? { skip } : {}),
  };
}

// A share as people read it: one decimal, and never "0.0 %" or "100.0 %" for what is not.
export function percent(share) {
  const p = 100 * share;
  if (p > 0 && p < 0.05) return '< 0.1 %';
  if (p < 100 && p >= 99.95) return '> 99.9 %';
  return `${p.toFixed(1)} %`;
}

// Whether the check ran on the user's samples (not seeded random inputs).
const onSamples = (inputs) => Boolean(inputs?.source && inputs.source !== 'random');

// The figure of each task kind a gate reads: whether the candidate decides as the original does.
const GATED_FIGURE = { classes: 'top1_agreement', map: 'mean_iou', anchors: 'decision_agreement', sequence: 'sequence_agreement' };
export const GATE_KEYS = ['minAgreement', 'minAccuracy'];

// What is wrong with a gate's options ('' when nothing): shares from 0 to 1, and samples to judge
// on (random inputs say nothing of a task). `samples`: whether the check will have any.
export function gateOptionsError(options, samples) {
  for (const key of GATE_KEYS) {
    const p = options[key];
    if (p !== undefined && !(typeof p === 'number' && p >= 0 && p <= 1)) return `options.${key} must be a share from 0 to 1 (0.95 for 95 %)`;
  }
  if (GATE_KEYS.some((key) => options[key] !== undefined) && !samples) return 'a gate (minAgreement, minAccuracy) judges your samples: give options.inputs';
  return '';
}

// The gate a CI job sets on a check (minAgreement, minAccuracy: --min-agreement, --min-accuracy),
// or null when none: every output with a task figure agrees with the original's on at least that
// share of the samples, and the candidate's accuracy on labelled samples is at least that. What
// cannot be judged (random inputs, no task figure, no labels, a model that did not run) is below it.
export function gateOf(check, { minAgreement, minAccuracy } = {}) {
  if (minAgreement === undefined && minAccuracy === undefined) return null;
  const below = [];
  if (check.error) below.push(check.error);
  else if (!onSamples(check.inputs)) below.push('random inputs say nothing of the task: give your samples');
  else {
    if (minAgreement !== undefined) {
      const tasks = check.outputs.filter((o) => o.task?.samples);
      if (!tasks.length) below.push('no output has a task figure (class scores, a map, anchor scores, a CTC sequence) to gate on');
      for (const o of tasks) {
        const name = GATED_FIGURE[o.task.kind], value = o.task[name];
        if (!(value >= minAgreement)) below.push(`output '${o.name}': ${name} ${percent(value)} < ${percent(minAgreement)}`);
      }
    }
    if (minAccuracy !== undefined) {
      const labelled = check.outputs.filter((o) => o.accuracy);
      if (!labelled.length) below.push('no output has an accuracy: the samples came without labels');
      for (const o of labelled) if (!(o.accuracy.candidate >= minAccuracy)) below.push(`output '${o.name}': accuracy ${percent(o.accuracy.candidate)} < ${percent(minAccuracy)}`);
    }
  }
  return { ...(minAgreement !== undefined ? { min_agreement: minAgreement } : {}), ...(minAccuracy !== undefined ? { min_accuracy: minAccuracy } : {}), pass: !below.length, below };
}

// The label of the converted model as it was before its repair, checked beside the repaired one.
export const UNREPAIRED = 'converted, not repaired';

// Every model a check on samples ran, side by side on those same samples: the original (its
// accuracy with labels), the converted model (before its repair, when repaired), the repaired
// one, and the FPQ twin (its agreement is with the float model it simulates), each output with a
// task figure in a column: {samples: in words, outputs: [{name, figure}], rows: [{model,
// against, cells: [{value, accuracy}]}]}. Null on random inputs, which say nothing of a task.
// `reports`: {converted, unrepaired?, fpq?}; `repaired`: whether `converted` is the repaired
// model; `name`: what to call the converted model (`check`'s is a candidate).
export function modelsTable({ converted, unrepaired, fpq }, { repaired = false, name = 'converted' } = {}) {
  if (converted.error || !onSamples(converted.inputs)) return null;
  const tasks = converted.outputs.filter((o) => o.task?.samples);
  if (!tasks.length) return null;
  const cellsOf = (report, original = false) => tasks.map((t) => {
    const o = report?.outputs.find((x) => x.name === t.name);
    const accuracy = o?.accuracy ? o.accuracy[original ? 'original' : 'candidate'] : null;
    return original ? { value: null, accuracy } : { value: o?.task?.[GATED_FIGURE[o.task.kind]] ?? null, accuracy };
  });
  const rows = [{ model: 'original', against: null, cells: cellsOf(converted, true) }];
  if (repaired && unrepaired && !unrepaired.error) rows.push({ model: name, against: 'original', cells: cellsOf(unrepaired) });
  const last = repaired ? 'repaired' : name;
  rows.push({ model: last, against: 'original', cells: cellsOf(converted) });
  if (fpq && !fpq.error) rows.push({ model: 'FPQ twin', against: last, cells: cellsOf(fpq) });
  // A share split off by holdOut (repair.mjs) names what it was held out from in its source; a
  // whole file the repair did not fit is said to be here.
  const heldOut = converted.inputs.held_out && !converted.inputs.source.includes('held out from') ? ', held out from the repair' : '';
  return {
    samples: onText(tasks[0].task.samples, converted.inputs) + heldOut,
    outputs: tasks.map((t) => ({ name: t.name, figure: GATED_FIGURE[t.task.kind] })), rows,
  };
}

// The table as a terminal's lines: a row per model, a column per output (its figure, and the
// accuracy when labelled).
export function modelsTableLines(table) {
  const header = ['model', ...table.outputs.map((o) => `${o.name}: ${o.figure.replace('_', ' ')}`)];
  const labelled = table.rows[0].cells.map((c) => c.accuracy !== null);
  const cell = (c, i) => [c.value === null ? '—' : percent(c.value), ...(labelled[i] ? [c.accuracy === null ? '—' : `accuracy ${percent(c.accuracy)}`] : [])].join(', ');
  const lines = [header, ...table.rows.map((r) => [r.against ? `${r.model} (vs ${r.against})` : r.model, ...r.cells.map(cell)])];
  const widths = header.map((_, i) => Math.max(...lines.map((l) => l[i].length)));
  return [`on ${table.samples}:`, ...lines.map((l) => `  ${l.map((x, i) => x.padEnd(widths[i])).join('  ').trimEnd()}`)];
}

// The gate in one line: passed, or what is below it.
export function gateLine(gate) {
  const asked = [gate.min_agreement !== undefined && `agreement ≥ ${percent(gate.min_agreement)}`, gate.min_accuracy !== undefined && `accuracy ≥ ${percent(gate.min_accuracy)}`].filter(Boolean).join(', ');
  return gate.pass ? `gate passed (${asked})` : `gate FAILED (${asked}): ${gate.below.join('; ')}`;
}

// What the task figures were taken on, in words: "400 samples of heldout.npz", "1 random input".
function onText(samples, inputs) {
  return onSamples(inputs) ? `${samples} samples of ${inputs.source}` : `${samples} random input${samples === 1 ? '' : 's'}`;
}

const randomNote = (inputs) => (onSamples(inputs) ? '' : '; random inputs say nothing of the task');

// An output's task figures (`o.task`, see decisions()) in a sentence: whether `subject` still does
// what `reference` does, on what.
export function taskLine(o, inputs, { subject = `output '${o.name}'`, reference = 'the original' } = {}) {
  const t = o.task;
  const on = onText(t.samples, inputs), note = randomNote(inputs);
  if (t.kind === 'classes') {
    const accuracy = o.accuracy ? ` (accuracy ${percent(o.accuracy.original)} → ${percent(o.accuracy.candidate)})` : '';
    return `${subject} decides as ${reference} on ${percent(t.top1_agreement)} of ${on}${accuracy}${note}`;
  }
  if (t.kind === 'map') {
    return `${subject} marks the regions ${reference} marks (pixels above ${t.threshold}) with a mean IoU of ${figure(t.mean_iou, 3)} ` +
      `on ${on}; ${percent(t.pixel_agreement)} of pixels decided alike${note}`;
  }
  if (t.kind === 'anchors') {
    return `${subject} detects as ${reference} on ${percent(t.decision_agreement)} of ${on} (the best anchor's score` +
      `${t.sigmoid ? ', after a sigmoid,' : ''} above ${t.threshold} or not); the same best anchor on ${percent(t.top_anchor_agreement)}, ` +
      `${percent(t.anchor_agreement)} of anchor decisions alike${note}`;
  }
  return `${subject} reads the same sequence as ${reference} on ${percent(t.sequence_agreement)} of ${on} (greedy CTC, blank ${t.blank}); ` +
    `${percent(t.step_agreement)} of steps take the same class${note}`;
}

// An output's task figures in a few words, for a table cell or a terminal line.
export function taskCell(task) {
  if (!task?.samples) return '';
  if (task.kind === 'classes') return `the same top-1 on ${percent(task.top1_agreement)}`;
  if (task.kind === 'map') return `mean IoU ${figure(task.mean_iou, 3)} above ${task.threshold}, ${percent(task.pixel_agreement)} of pixels alike`;
  if (task.kind === 'anchors') {
    return `detects alike on ${percent(task.decision_agreement)}, the same best anchor on ${percent(task.top_anchor_agreement)}, ` +
      `${percent(task.anchor_agreement)} of anchors alike${task.sigmoid ? ' (scores through a sigmoid)' : ''}`;
  }
  return `the same CTC sequence on ${percent(task.sequence_agreement)}, ${percent(task.step_agreement)} of steps alike`;
}

// After a repair the change that is left is not news, and retraining is not the advice: the
// agreement on samples the fit never saw says whether the repaired model still does its job.
// Samples the repair held out of its fit (`inputs.held_out`) are said to be; the advice to check
// on such samples is given only when the check's were not.
function distanceLine(o, repaired, inputs) {
  if (o.inconclusive) return `output '${o.name}' is within the tolerance (max |Δ| ${figure(o.max_abs)}), which says nothing here`;
  if (!o.comparable) return `output '${o.name}': ${o.reason} (${o.shape_original?.join('×')} → ${o.shape_candidate?.join('×') ?? 'none'}); value statistics in the report`;
  if (o.pass) return `output '${o.name}' is unchanged within the tolerance (max |Δ| ${figure(o.max_abs)})`;
  const range = o.stats_original.max - o.stats_original.min;
  const share = range > 0 ? ` (${Math.round(100 * o.max_abs / range)} % of its range)` : '';
  if (repaired) {
    const heldOut = inputs?.held_out ? `${inputs.samples} held-out samples the repair did not fit` : null;
    const counts = o.task?.samples && onSamples(inputs);
    return `after the repair, output '${o.name}' differs from the original's by up to ${figure(o.max_abs)}${share}` +
      (counts && heldOut ? `: the agreement above, on ${heldOut}, is what counts`
        : counts ? ': the agreement above is what counts, if the repair did not fit these samples'
          : heldOut ? ` on ${heldOut}` : ': check it on samples the repair did not fit');
  }
  return `the Lattice rewrites change output '${o.name}' by up to ${figure(o.max_abs)}${share}: expected; repair it from calibration data, or retrain`;
}
