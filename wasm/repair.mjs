// Repair: after a Lattice conversion, every Conv and Gemm whose output the conversion changed is
// refitted, in topological order, so that on the calibration samples its output matches the
// original model's tensor, given the repaired model's own input to it (each fit sees the fits
// before it). onnxruntime computes the activations; the fit (patches, normal equations, a
// Cholesky solve) and the writing of the new weights are the converter's own compiled code
// (core/repair), so Node and the page run the same. One module for both shells, like check.mjs:
// it imports only check.mjs and is handed the runtime and the converter's module.
import { CHECK_OPTIONS_ERROR, DEFAULT_INPUT_RANGE, compareTensor, computeTensors, feedBatches, feedShapes, inputFeeds, joinTensors, sliceFeeds } from './check.mjs';

export const REPAIR_DEFAULTS = Object.freeze({ ridge: 1e-3, maxRows: 16384, seed: 0 });
// The original's targets are held for every sample at once; above this the caller is told to
// give fewer samples rather than the runtime running out of memory halfway.
export const TARGET_BUDGET_BYTES = 512 * 2 ** 20;
// An elementwise activation a rewrite-made layer may sit behind while its target is the
// activation's output (the SPPF chains: Conv → Relu writing the pool's output).
const THROUGH = new Set(['Relu']);

const optionsError = (message) => Object.assign(new Error(message), { code: CHECK_OPTIONS_ERROR });
const fixed = (shape) => Array.isArray(shape) && shape.every((d) => typeof d === 'number' && d >= 0);
// The same dims past axis 0 (the samples), a symbol counting as equal to itself, an unknown one
// to nothing.
const sameShape = (a, b) => Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((d, i) => i === 0 || (d !== '?' && d === b[i]));

// The layers to refit and what each must reproduce: a Conv or Gemm of the converted model with
// constant weights whose output the original computes too (same name, same shape), or whose only
// reader is an activation whose output it does (a layer a rewrite created). Layers with no such
// tensor are listed with the reason, so the report says what was left as converted.
export function repairPlan(original, converted, conversion) {
  const theirs = new Map();
  for (const n of original.nodes) for (const o of n.outputs) if (o.name) theirs.set(o.name, o.shape);
  const readers = new Map();
  for (const n of converted.nodes) for (const i of n.inputs) if (i.name) readers.set(i.name, [...(readers.get(i.name) ?? []), n]);
  const matchOf = new Map();
  // The first match that made a node names it: a conversion pattern's, before the fold that
  // folded its BatchNormalization into the same node.
  for (const m of conversion?.matches ?? []) if (m.applied) for (const n of m.new_nodes) if (!matchOf.has(n)) matchOf.set(n, m.id);
  const layers = [], left = [];
  for (const node of converted.nodes) {
    if (node.op !== 'Conv' && node.op !== 'Gemm') continue;
    const [input, weight] = node.inputs;
    const output = node.outputs[0];
    const entry = { node: node.name, op: node.op, input: input.name, output: output.name, ...(matchOf.has(node.name) ? { match_id: matchOf.get(node.name) } : {}) };
    if (!weight?.constant || !fixed(weight.shape)) { left.push({ ...entry, reason: 'its weights are not a constant of known shape' }); continue; }
    // The tensor to reproduce: the layer's own output, or its activation's; the same shape, or
    // (past a pool the conversion made coarser) whole multiples of it in height and width.
    let target = null;
    const next = readers.get(output.name) ?? [];
    const activation = next.length === 1 && THROUGH.has(next[0].op) ? next[0].outputs[0] : null;
    for (const [tensor, through] of [[output, null], [activation, next[0]?.op]]) {
      if (!tensor || target) continue;
      const factors = sameShape(theirs.get(tensor.name), tensor.shape) ? null : coarser(theirs.get(tensor.name), tensor.shape);
      if (factors === undefined) continue;
      target = tensor.name;
      if (through) entry.through = through;
      if (factors) entry.pooled = factors;
    }
    if (!target) { left.push({ ...entry, reason: 'the original computes no tensor of the same name and shape at its output' }); continue; }
    // A layer read only by a Relu: what it computes below zero is cut off anyway.
    if (next.length === 1 && next[0].op === 'Relu') entry.rectified = true;
    layers.push({ ...entry, target, attributes: node.attributes, weightShape: weight.shape, hasBias: Boolean(node.inputs[2]?.name) });
  }
  return { layers, left };
}

// [fh, fw] when `theirs` is an NCHW tensor of the same channels whose height and width are whole
// multiples (not both 1) of `mine`'s; undefined otherwise.
function coarser(theirs, mine) {
  if (!Array.isArray(theirs) || !Array.isArray(mine) || theirs.length !== 4 || mine.length !== 4) return undefined;
  if (theirs[1] !== mine[1] || typeof mine[1] !== 'number') return undefined;
  const [fh, fw] = [theirs[2] / mine[2], theirs[3] / mine[3]];
  return Number.isInteger(fh) && Number.isInteger(fw) && fh >= 1 && fw >= 1 && fh * fw > 1 ? [fh, fw] : undefined;
}

// The original's tensor brought to the converted model's coarser grid: each fh×fw block's mean
// (on the digits CNN, whose snapped MaxPool halves the SPPF block's grid, the mean gave 97.75 %
// held-out accuracy after repair, the block's max 97.5 %).
function pooled({ data, dims }, [fh, fw]) {
  const [n, c, h, w] = dims, [ho, wo] = [h / fh, w / fw];
  const out = new Float32Array(n * c * ho * wo);
  for (let plane = 0; plane < n * c; ++plane) {
    for (let y = 0; y < ho; ++y) {
      for (let x = 0; x < wo; ++x) {
        let sum = 0;
        for (let dy = 0; dy < fh; ++dy) for (let dx = 0; dx < fw; ++dx) sum += data[(plane * h + y * fh + dy) * w + x * fw + dx];
        out[(plane * ho + y) * wo + x] = sum / (fh * fw);
      }
    }
  }
  return { type: 'float32', data: out, dims: [n, c, ho, wo] };
}

// |Δ| and ‖Δ‖/‖target‖ between a layer's output and its target.
function distance(values, target) {
  let maxAbs = 0, num = 0, den = 0;
  for (let i = 0; i < target.length; ++i) {
    const d = values[i] - target[i];
    maxAbs = Math.max(maxAbs, Math.abs(d));
    num += d * d;
    den += target[i] * target[i];
  }
  return { max_abs: maxAbs, rel: den > 0 ? Math.sqrt(num / den) : (num > 0 ? Infinity : 0) };
}

// Refits the converted model's layers on `samples` ({feeds, samples, source, preprocessing?}).
// `original` and `converted`: {bytes, externalData, description}; `module`: the converter's
// (fitLayer, setLayerWeights; either may return a promise: the page's are calls to the worker that
// holds the module). Returns {bytes, report} with the repaired model's bytes.
export async function repairModel(runtime, module, original, converted, conversion, samples, options = {}, onProgress = () => {}, signal) {
  const { ridge, maxRows, seed } = { ...REPAIR_DEFAULTS, ...options };
  const tolerance = { rtol: options.rtol ?? 1e-4, atol: options.atol ?? 1e-5 };
  if (conversion?.options?.fixed_point === 'fpq') {
    throw optionsError('repair under --fixed-point fpq is not supported yet: a refitted conv has a bias, which FPQ moves into a BatchNormalization');
  }
  const started = performance.now();
  const batches = feedBatches(samples.feeds, [original, converted].flatMap((m) => m.description.inputs), samples.samples);
  const plan = repairPlan(original.description, converted.description, conversion);
  const targetBytes = plan.layers.reduce((n, l) => n + 4 * samples.samples * convertedShape(converted.description, l.target).slice(1).reduce((a, b) => a * (typeof b === 'number' ? b : 1), 1), 0);
  if (targetBytes > TARGET_BUDGET_BYTES) {
    throw optionsError(`repairing on ${samples.samples} samples would hold ${Math.ceil(targetBytes / 2 ** 20)} MiB of the original's activations ` +
      `(at most ${TARGET_BUDGET_BYTES / 2 ** 20} MiB): give fewer samples`);
  }
  onProgress('running the original model', 0);
  const theirs = await computeTensors(runtime, original, batches, [...new Set(plan.layers.map((l) => l.target))]);
  const targets = Object.fromEntries(plan.layers.map((l) => [l.target, l.pooled ? pooled(theirs[l.target], l.pooled) : theirs[l.target]]));
  let bytes = converted.bytes;
  const layers = [];
  for (const [index, layer] of plan.layers.entries()) {
    if (signal?.aborted) throw Object.assign(new Error('the repair was aborted'), { name: 'AbortError', code: 'ABORT_ERR' });
    onProgress(`fitting ${layer.node}`, (index + 1) / (plan.layers.length + 1));
    const model = { ...converted, bytes };
    const seen = await computeTensors(runtime, model, batches, [...new Set([layer.input, layer.target])]);
    const target = targets[layer.target].data;
    const before = distance(seen[layer.target].data, target);
    const entry = { node: layer.node, ...(layer.match_id ? { match_id: layer.match_id } : {}), target_tensor: layer.target, samples: samples.samples, before };
    // Within the check's tolerance everywhere (its own allclose): nothing to repair, as after a fold.
    if (compareTensor(layer.target, targets[layer.target], seen[layer.target], tolerance, { brief: true }).pass) {
      layers.push({ ...entry, refitted: false, reason: 'unchanged within the tolerance' });
      continue;
    }
    const fitTo = async (values) => {
      const fit = await module.fitLayer({
        op: layer.op, attributes: layer.attributes, weightShape: layer.weightShape,
        input: { data: seen[layer.input].data, dims: seen[layer.input].dims },
        target: { data: values, dims: targets[layer.target].dims }, ridge, maxRows, seed,
      });
      bytes = await module.setLayerWeights(bytes, [{ node: layer.node, weights: fit.weights, bias: fit.bias }]);
      return fit;
    };
    let fit = await fitTo(target);
    // One round: on the digits CNNs a second changed held-out accuracy by ±0.25 points, no better.
    if (layer.rectified) {
      // Before a Relu, a value the original had at or below zero needs only to stay there:
      // fitted again with those targets set to what the first fit gives there, the solve spends
      // its freedom where the Relu lets values through.
      const given = (await computeTensors(runtime, { ...converted, bytes }, batches, [layer.output]))[layer.output].data;
      const relaxed = Float32Array.from(target, (t, i) => (t <= 0 && given[i] <= 0 ? given[i] : t));
      fit = await fitTo(relaxed);
    }
    layers.push({ ...entry, refitted: true, rows: fit.rows, residual: fit.residualAfter });
  }
  // Each refit layer's change after all fits, measured on the repaired model.
  const repaired = { ...converted, bytes };
  const finals = await computeTensors(runtime, repaired, batches, [...new Set(plan.layers.map((l) => l.target))]);
  for (const entry of layers) entry.after = distance(finals[entry.target_tensor].data, targets[entry.target_tensor].data);
  onProgress('repaired', 1);
  const data = { source: samples.source, samples: samples.samples, ...(samples.preprocessing ? { preprocessing: samples.preprocessing } : {}), ...(samples.random ? { seed: samples.seed, note: 'seeded random inputs, not your data: a weaker repair' } : {}) };
  return {
    bytes,
    report: { data, options: { ridge, max_rows: maxRows, seed }, layers, left: plan.left, time_ms: performance.now() - started },
  };
}

// Samples of several sources as one set: every input's values joined along axis 0.
export function joinSamples(list) {
  if (list.length === 1) return list[0];
  const feeds = {};
  for (const name of Object.keys(list[0].feeds)) {
    const parts = list.map((s) => s.feeds[name]);
    const rest = parts[0].dims.slice(1);
    for (const [i, p] of parts.entries()) {
      if (p.type !== parts[0].type || p.dims.length !== parts[0].dims.length || p.dims.slice(1).some((d, a) => d !== rest[a])) {
        throw optionsError(`${list[i].source}: input '${name}' is ${p.type} [${p.dims}], ${list[0].source} gave ${parts[0].type} [${parts[0].dims}]`);
      }
    }
    feeds[name] = joinTensors(parts);
  }
  const labelled = list.every((s) => s.labels);
  return {
    feeds, samples: list.reduce((n, s) => n + s.samples, 0), source: list.map((s) => s.source).join(' + '),
    ...(labelled ? { labels: Int32Array.from(list.flatMap((s) => [...s.labels])) } : {}),
    ...(list[0].preprocessing ? { preprocessing: list[0].preprocessing } : {}),
    conversions: [...new Set(list.flatMap((s) => s.conversions ?? []))],
  };
}

// Samples [start, end) as a set of their own.
function slice(samples, start, end, source) {
  const feeds = sliceFeeds(samples.feeds, start, end, { copy: true });
  return { ...samples, feeds, samples: end - start, source, ...(samples.labels ? { labels: samples.labels.slice(start, end) } : {}) };
}

// The calibration samples split for a check on samples the fit never saw: the fit takes the
// first three quarters, the check the last quarter (at least one sample each).
export function holdOut(samples) {
  const kept = Math.max(1, samples.samples - Math.max(1, Math.floor(samples.samples / 4)));
  if (kept >= samples.samples) throw optionsError(`${samples.source}: one sample cannot be both fitted and held out: give --inputs for the check`);
  return [slice(samples, 0, kept, `${samples.source} [0, ${kept})`), slice(samples, kept, samples.samples, `${samples.source} [${kept}, ${samples.samples}), held out from the repair`)];
}

// Without calibration data: RANDOM_SAMPLES seeded random inputs in the check's input range, at
// the check's sizes (inputShapes; every dynamic dimension but the batch given), as the check's
// random inputs are. `description`: the original's.
export const RANDOM_SAMPLES = 32;
export function randomSamples(description, { seed = 0, inputRange = DEFAULT_INPUT_RANGE, inputShapes = {} } = {}) {
  const sized = feedShapes(description, inputShapes);
  const shapes = Object.fromEntries(Object.entries(sized).map(([name, dims]) => [name, [RANDOM_SAMPLES, ...dims.slice(1)]]));
  const feeds = inputFeeds(description, { seed, inputRange, inputShapes: shapes });
  return { feeds, samples: RANDOM_SAMPLES, source: `${RANDOM_SAMPLES} random inputs`, random: true, seed };
}

function convertedShape(description, tensor) {
  for (const n of description.nodes) for (const o of n.outputs) if (o.name === tensor) return o.shape;
  return [0];
}
