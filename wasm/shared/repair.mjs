// Repair: after a Lattice conversion, every Conv and Gemm whose output the conversion changed is
// refitted, in topological order, so that on the calibration samples its output matches the
// original model's tensor, given the repaired model's own input to it (each fit sees the fits
// before it). onnxruntime computes the activations; which layers are refitted and what each
// reproduces (the plan), the fit (patches, normal equations, a Cholesky solve) and the writing of
// the new weights are the converter's own compiled code (core/repair), so Node and the page run
// the same. Both models are held in the module for the whole repair (core/repair/session.h),
// which cuts them part by part: each layer's step runs only the nodes between the tensors held and
// that layer, so the whole repair costs about one pass of each model, not one per layer, and new
// weights go into the held model without a copy of it.
// One module for both shells, like check.mjs: it imports only check.mjs and range_fit.mjs and is
// handed the runtime and the converter's module.
import { CHECK_OPTIONS_ERROR, feedBatches, firstBeyondTolerance, joinTensors, percent, sliceFeeds, twinOptions } from './check.mjs';
import { measureChannelRanges, RANGE_FIT_PATTERN, rangeTensors } from './range_fit.mjs';
import { TWIN_INPUT_LEAST_SQNR_DB, twinInput, twinInputsRefused } from './twin_input.mjs';

// refitAbove: a layer no Lattice rewrite changed (its weights the original's, folded or not) is
// refitted only when its output is off by more than this share (‖Δ‖/‖original‖): below it the
// change is what its input brought, which a refit of this layer barely reduces. On ResNet-50 (64
// generated images) refitting the 29 such layers under 3 % too took 79 % of the fits' time and
// the output's mean |Δ| from 0.1331 to 0.1322 (10.84 unrepaired); between 5 % and 10 % they
// matter (leaving those too gave 1.35). docs/repair.md has the measurement.
export const REPAIR_DEFAULTS = Object.freeze({ ridge: 1e-3, maxRows: 16384, seed: 0, refitAbove: 0.03 });
// The activations the repair holds for every sample at once (both models' tensors that later
// nodes still read, and one layer's input, target and output); above this the caller is told to
// give fewer samples rather than the runtime running out of memory halfway.
export const ACTIVATION_BUDGET_BYTES = 4096 * 2 ** 20;
// The original's tensors do not depend on the fits: one run gives the targets of the next layers
// up to this many bytes (at least one layer's), which saves a session per layer on a small model.
const TARGET_CHUNK_BYTES = 64 * 2 ** 20;
const FPQ_BIAS_PATTERNS = new Set(['FpqConvBiasIntoBatchNormPattern', 'FpqDenseBiasIntoBatchNormPattern']);
// The end of the reason a layer kept by refitAbove gives.
const KEPT_WITHIN = 'of the original\'s (refitAbove)';

const optionsError = (message) => Object.assign(new Error(message), { code: CHECK_OPTIONS_ERROR });

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

// The original's tensor at a MaxPool's output brought back to the finer grid of the layer before
// the pool (`fine`: its output's shape; `strides`: the pool's): each position takes the value of
// the window it falls in, the value the pool's maximum must give there. A window's other
// positions need only stay at or below it, which the fit does not know; poolShift corrects what
// that costs on average.
function unpooled({ data, dims }, { strides: [sh, sw], fine }) {
  const [n, c, h, w] = dims, [hf, wf] = fine.slice(2);
  const out = new Float32Array(n * c * hf * wf);
  for (let plane = 0; plane < n * c; ++plane) {
    for (let y = 0; y < hf; ++y) {
      const row = (plane * h + Math.min(h - 1, Math.floor(y / sh))) * w;
      for (let x = 0; x < wf; ++x) out[(plane * hf + y) * wf + x] = data[row + Math.min(w - 1, Math.floor(x / sw))];
    }
  }
  return { type: 'float32', data: out, dims: [n, c, hf, wf] };
}

// The fine grid's targets once the layer has weights that put each window's maximum somewhere
// (`values`: its output there): the position holding the window's maximum takes the original's
// value, every other position only needs to stay at or below it, so it keeps its own value when
// that is below, else takes the original's. A second fit on these spends its freedom where the
// pool reads.
function windowTargets(values, wanted, { strides: [sh, sw], kernel: [kh, kw] }) {
  const [n, c, hf, wf] = values.dims, [h, w] = wanted.dims.slice(2);
  const out = new Float32Array(values.data.length);
  for (let plane = 0; plane < n * c; ++plane) {
    const base = plane * hf * wf;
    for (let y = 0; y < h; ++y) {
      for (let x = 0; x < w; ++x) {
        const t = wanted.data[(plane * h + y) * w + x];
        let best = -1;
        for (let dy = 0; dy < kh; ++dy) {
          for (let dx = 0; dx < kw; ++dx) {
            const [fy, fx] = [y * sh + dy, x * sw + dx];
            if (fy >= hf || fx >= wf) continue;
            const at = base + fy * wf + fx;
            out[at] = Math.min(values.data[at], t);
            if (best < 0 || values.data[at] > values.data[best]) best = at;
          }
        }
        if (best >= 0) out[best] = t;
      }
    }
  }
  return { type: 'float32', data: out, dims: values.dims };
}

// Per channel, how far the pool's output lies above the original's tensor on average: the maximum
// of a window whose every position was fitted to the same value lands above it (on BlazeFace's
// stem, ...). Behind a Relu, only where the original's value is positive: elsewhere the Relu
// takes any excess away. The layer's bias less this brings the pool's output back onto it.
function poolShift(values, wanted, rectified) {
  const [n, c] = wanted.dims, plane = wanted.data.length / (n * c);
  const shift = new Float32Array(c);
  for (let ch = 0; ch < c; ++ch) {
    let sum = 0, count = 0;
    for (let i = 0; i < n; ++i) {
      const at = (i * c + ch) * plane;
      for (let p = at; p < at + plane; ++p) {
        const t = wanted.data[p];
        if (rectified && !(t > 0)) continue;
        sum += values.data[p] - t;
        count += 1;
      }
    }
    shift[ch] = count ? sum / count : 0;
  }
  return shift;
}

// |Δ| and ‖Δ‖/‖target‖ between a layer's output and its target (`wanted`, a tensor), and whether
// the output is within the check's tolerance everywhere, as the check judges a tensor (its
// compareTensor: allclose, NaN equal to NaN, a non-finite target counting as 0 for rtol). No
// copy: on ResNet-50's first layers these are tens of millions of values, every layer.
function compared(values, wanted, { rtol, atol }) {
  const target = wanted.data, data = values.data, n = target.length;
  const sameShape = values.type === wanted.type && values.dims.length === wanted.dims.length && values.dims.every((d, i) => d === wanted.dims[i]);
  // Whether the values leave the check's tolerance anywhere: a changed layer does so at once.
  const pass = sameShape && firstBeyondTolerance(target, data, rtol, atol) === n;
  // The distance in a loop of its own, without calls or branches that hold the compiler back
  // (three times faster than one loop doing both); a NaN anywhere makes max |Δ| NaN.
  let maxAbs = 0, num = 0, den = 0, nan = false;
  for (let i = 0; i < n; ++i) {
    const t = target[i], d = data[i] - t;
    const abs = d < 0 ? -d : d;
    if (abs > maxAbs) maxAbs = abs;
    else if (abs !== abs) nan = true;
    num += d * d;
    den += t * t;
  }
  return { distance: { max_abs: nan ? NaN : maxAbs, rel: den > 0 ? Math.sqrt(num / den) : (num > 0 ? Infinity : 0) }, pass };
}

// One model's activations on every sample, computed part by part: the repair's session in the
// core (core/repair/part_runs.h) says which nodes each step runs and which tensors are held
// between steps (those that nodes not yet run still read, and those in `keep`, which the caller
// will ask for); this holds them and runs the parts, each in one session.
// `run(commit, peek)`: the nodes computing `commit` are taken as final (their outputs are held
// while read); those computing only `peek` run aside, for a layer whose weights are about to
// change, unless `adopt()` says it keeps them.
// `session(method, ...args)`: the repair session's calls; `which`: 'original' or 'converted'.
// `timing.runtime` sums the sessions' creation and runs.
async function activations(runtime, session, which, externalData, batches, inputs, keep, timing) {
  const sizes = batches.map((b) => Object.values(b)[0]?.dims[0] ?? 1);
  const held = new Map(inputs.map((name) => [name, joinTensors(batches.map((b) => b[name]))]));
  await session('start', which, inputs, [...keep]);
  const letGo = (names) => { for (const name of names) held.delete(name); };
  // The outputs the last run computed aside that are still read: held by adopt() when the layer
  // they lead to keeps its weights, so they do not run again.
  let aside = null;
  async function run(commit, peek = []) {
    aside = null;
    const shapes = Object.fromEntries([...held].map(([name, t]) => [name, { type: t.type, dims: t.dims }]));
    const step = await session('next', which, shapes, commit, peek);
    const values = {};
    if (step.bytes) {
      Object.assign(values, await runPart(step.bytes, step.inputs, new Set(step.perSample)));
      for (const name of step.hold) held.set(name, values[name]);
      letGo(step.drop);
      aside = Object.fromEntries(step.aside.map((name) => [name, values[name]]));
    }
    return (name) => values[name] ?? held.get(name);
  }
  // The last run's tensors computed aside are final after all (the model is as it was then).
  async function adopt() {
    if (!aside) return;
    for (const [name, value] of Object.entries(aside)) held.set(name, value);
    aside = null;
    letGo((await session('adopt', which, [...held.keys()])).drop);
  }
  // The part's outputs on every sample, fed from the tensors held, batch by batch.
  async function runPart(bytes, names, perSample) {
    const started = performance.now();
    const ort = await runtime.session(bytes, externalData);
    const out = [];
    try {
      let at = 0;
      for (const size of sizes) {
        const feeds = {};
        for (const name of names) {
          const t = held.get(name), each = t.data.length / t.dims[0];
          feeds[name] = perSample.has(name) ? new runtime.Tensor(t.type, t.data.subarray(at * each, (at + size) * each), [size, ...t.dims.slice(1)])
            : new runtime.Tensor(t.type, t.data, t.dims);
        }
        const result = await ort.run(feeds);
        out.push(Object.fromEntries(Object.entries(result).map(([name, t]) => [name, { type: t.type, dims: t.dims, data: t.data }])));
        at += size;
      }
    } finally {
      await ort.release?.();
    }
    timing.runtime += performance.now() - started;
    return Object.fromEntries(Object.keys(out[0]).map((name) => [name, perSample.has(name) ? joinTensors(out.map((o) => o[name])) : out[0][name]]));
  }
  return {
    run,
    adopt,
    has: (name) => held.has(name),
    // The caller has what it asked for: no need to hold it any more for its sake.
    release: (name) => session('release', which, name),
  };
}

// Under FPQ, a dense layer (a head) is fitted within the weights the range fit can then scale its
// input for, up to its values' MSE-optimal clip, and its rows shrink into signed 0.7 for the
// BatchNormalization FPQ gives it to take back, within signed 5.10: the core names the values whose
// ranges decide that, they are measured as the range fit measures them (range_fit.mjs), and the
// core gives a bound per weight (core/repair/weight_bounds.h), of the layer with its
// BatchNormalization when the two are fitted as one; null for a layer that is not bounded. All on
// the model as the range fit will see it: after the scheme's exact rewrites, whose new
// BatchNormalizations own parameters an exporter may share between two, and so start groups the
// fit can scale.
async function fpqWeightBounds(runtime, module, model, conversion, batches, layer) {
  // A copy: the page's worker takes over the bytes it is handed. Without the range fit itself: it
  // would move scales into the layer's weights, and the bounds are for the weights the fit gives
  // (on the sppf CNN, bounds taken after it were 3-7 times too loose for its head).
  const exact = twinOptions(conversion);
  const settled = await module.settleFixedPoint(model.bytes.slice(), { ...exact, skip: [...new Set([...(exact.skip ?? []), RANGE_FIT_PATTERN])], describe: true });
  const options = { throughBatchNorm: Boolean(layer.throughBatchNorm) };
  const asked = await module.fpqWeightBounds(settled.bytes, layer.node, {}, {}, options);
  if (!asked.bounds) return null;
  const reads = new Set(asked.tensors);
  const measured = await measureChannelRanges(runtime, { ...model, ...settled }, batches, rangeTensors(settled.description).filter((t) => reads.has(t.name)));
  return (await module.fpqWeightBounds(settled.bytes, layer.node, measured.ranges, measured.clips, options)).bounds;
}

// Refits the converted model's layers on `samples` ({feeds, samples, source, preprocessing?}).
// `original` and `converted`: {bytes, externalData, description}; `module`: the converter's
// (fitLayer, openRepairSession, repairSession, settleFixedPoint, fpqWeightBounds; each
// may return a promise: the page's are calls to the worker that holds the module). Returns
// {bytes, report} with the repaired model's bytes.
export async function repairModel(runtime, module, original, converted, conversion, samples, options = {}, onProgress = () => {}, signal) {
  const { ridge, maxRows, seed, refitAbove } = { ...REPAIR_DEFAULTS, ...options };
  if (!(refitAbove >= 0)) throw optionsError(`refitAbove must be a number >= 0 (a share of the original's output), not ${refitAbove}`);
  const tolerance = { rtol: options.rtol ?? 1e-4, atol: options.atol ?? 1e-5 };
  const started = performance.now();
  const batches = feedBatches(samples.feeds, [original, converted].flatMap((m) => m.description.inputs), samples.samples);
  const timing = { runtime: 0 };
  const fpq = conversion?.options?.fixed_point === 'fpq';
  // Under FPQ each layer is fitted on the FPQ twin's values of its input (twin_input.mjs), when the
  // samples are in FPQ's input range.
  const twinRefused = fpq ? twinInputsRefused(samples.feeds) : '';
  const inputsOf = (m) => m.description.inputs.map((i) => i.name);
  // Both models held in the module for the whole repair (core/repair/session.h), which plans it,
  // cuts the parts and takes the new weights.
  const { session: id } = await module.openRepairSession(original.bytes, converted.bytes);
  const session = (method, ...args) => module.repairSession(id, method, args);
  const layers = [];
  let bytes, plan;
  try {
    // Which layers are refitted and what each reproduces, and which are left and why
    // (core/repair/plan.h), both models described at one sample's sizes: a dynamic original's
    // tensors then match a conversion pinned with --input-shape by value, and the memory estimate
    // counts them. Without the conversion's report every layer counts as rewritten.
    const sizes = Object.fromEntries(Object.entries(batches[0]).map(([name, t]) => [name, [1, ...t.dims.slice(1)]]));
    plan = await session('plan', conversion ? conversion.matches ?? [] : null, sizes);
    const perSample = plan.bytesPerSample;
    const layerBytes = Math.max(0, ...perSample.layers.map((l) => l.input + 3 * l.target));
    const heldBytes = samples.samples * (perSample.original + perSample.converted + layerBytes) + TARGET_CHUNK_BYTES;
    if (heldBytes > ACTIVATION_BUDGET_BYTES) {
      throw optionsError(`repairing on ${samples.samples} samples would hold ${Math.ceil(heldBytes / 2 ** 20)} MiB of activations ` +
        `(at most ${ACTIVATION_BUDGET_BYTES / 2 ** 20} MiB): give fewer samples`);
    }
    const later = (index, key) => new Set(plan.layers.slice(index + 1).map((l) => l[key]));
    // The original's tensors do not depend on the fits: several layers' targets come from one run.
    const theirs = await activations(runtime, session, 'original', original.externalData ?? [], batches, inputsOf(original), later(-1, 'target'), timing);
    const mine = await activations(runtime, session, 'converted', converted.externalData ?? [], batches, inputsOf(converted), later(-1, 'input'), timing);
    // The last layer refitted: its change is measured with the next run of the repaired model.
    let pending = null;
    const measure = (value) => {
      pending.entry.after = compared(value(pending.entry.target_tensor), pending.wanted, tolerance).distance;
      pending = null;
    };
    onProgress('running the models', 0);
    for (const [index, layer] of plan.layers.entries()) {
      if (signal?.aborted) throw Object.assign(new Error('the repair was aborted'), { name: 'AbortError', code: 'ABORT_ERR' });
      onProgress(`fitting ${layer.node}`, (index + 1) / (plan.layers.length + 1));
      const ranBefore = timing.runtime;
      if (!theirs.has(layer.target)) {
        let chunk = 0;
        const next = plan.layers.slice(index).filter((l, i) => i === 0 || (chunk += samples.samples * perSample.layers[index + i].originalTarget) <= TARGET_CHUNK_BYTES);
        await theirs.run([...new Set(next.map((l) => l.target))]);
      }
      const given = (await theirs.run([layer.target]))(layer.target);
      if (!later(index, 'target').has(layer.target)) await theirs.release(layer.target);
      const wanted = layer.pooled ? pooled(given, layer.pooled) : given;
      // The layer's input in the repaired model, and its output as converted on that input.
      const value = await mine.run([layer.input, ...(pending ? [pending.entry.target_tensor] : [])], [layer.target]);
      if (pending) measure(value);
      const input = value(layer.input), seen = value(layer.target);
      if (!later(index, 'input').has(layer.input)) await mine.release(layer.input);
      const { distance: before, pass } = compared(seen, wanted, tolerance);
      const entry = { node: layer.node, ...(layer.match_id ? { match_id: layer.match_id } : {}), target_tensor: layer.target, ...(layer.through ? { through: layer.through } : {}), samples: samples.samples, before };
      // Within the check's tolerance everywhere: nothing to repair, as after a fold.
      const drift = !layer.rewritten && before.rel <= refitAbove;
      if (pass || drift) {
        const reason = pass ? 'unchanged within the tolerance'
          : `no rewrite changed it, and its output is within ${percent(refitAbove)} ${KEPT_WITHIN}`;
        layers.push({ ...entry, refitted: false, reason, after: before, runtime_ms: timing.runtime - ranBefore, fit_ms: 0 });
        await mine.adopt();
        continue;
      }
      // Before a Relu the fit module fits twice on the same rows: the second time each target at or
      // below zero that the first fit also puts there is set to what that fit gives, so the solve
      // spends its freedom where the Relu lets values through (patches.h, relaxed_targets). One
      // round: on the digits CNNs a third fit changed held-out accuracy by ±0.25 points, no better.
      const fitStarted = performance.now();
      // Only a Gemm: a refitted Conv gains a bias, which FPQ's rewrites then move into a
      // BatchNormalization of its own, through which the range fit rescales its rows. (Bounding
      // BlazeFace's convs on the model before their refit took its repaired task figure from 0.948
      // back to the converted model's 0.458.)
      const bounded = fpq && layer.op === 'Gemm';
      // Under FPQ, on the input as the FPQ twin of the model repaired so far computes it
      // (twin_input.mjs), where the twin's values are the float's rounded, not destroyed; a graph
      // input is the samples as given.
      const onTwin = fpq && !twinRefused && !inputsOf(converted).includes(layer.input);
      // The model repaired so far, which decides both, read out of the session once.
      const current = bounded || onTwin ? { ...converted, bytes: await session('bytes') } : null;
      const weightBounds = bounded ? await fpqWeightBounds(runtime, module, current, conversion, batches, layer) : null;
      const held = onTwin ? await twinInput(runtime, module, current, conversion, batches, layer.input, input) : null;
      const fitInput = held?.faithful ? held : input;
      const fitTo = ({ data, dims }, reuse = {}) => module.fitLayer({
        op: layer.op, attributes: layer.attributes, weightShape: layer.weightShape,
        input: { data: fitInput.data, dims: fitInput.dims }, target: { data, dims }, ridge, maxRows, seed, rectified: Boolean(layer.rectified),
        ...(weightBounds ? { weightBounds } : {}), ...reuse,
      });
      const write = ({ weights, bias }) => session('setWeights', [{ node: layer.node, weights, bias, throughBatchNorm: Boolean(layer.throughBatchNorm) }]);
      const fine = layer.unpooled ? unpooled(wanted, layer.unpooled) : null;
      // Through the pool the fit is made twice on the same input and rows: the module keeps the
      // first's sums of the features for the second (fit_layer.h, KeptEquations).
      const fit = await fitTo(fine ?? wanted, fine ? { keep: true } : {});
      await write(fit);
      if (fine) {
        // Through the pool (each step a run of this layer's part aside): a second fit where the
        // first put each window's maximum (on BlazeFace's and PaddleOCR's detector's stride-2
        // layers it took the pool's output 3-6 % closer to the original's than the first fit
        // alone), then the bias moved by what the pool's output lies above the original's.
        const firstOut = (await mine.run([], [layer.unpooled.tensor]))(layer.unpooled.tensor);
        const second = await fitTo(windowTargets(firstOut, wanted, layer.unpooled), { again: true });
        await write(second);
        const pooledOut = (await mine.run([], [layer.target]))(layer.target);
        const shift = poolShift(pooledOut, wanted, Boolean(layer.rectified));
        Object.assign(fit, { weights: second.weights, bias: Float32Array.from(second.bias, (b, ch) => b - shift[ch]), residualAfter: second.residualAfter });
        await write(fit);
      }
      const fitMs = performance.now() - fitStarted;
      // Its change is measured on its output once its weights are final (later fits change only
      // later layers, so that is its change in the repaired model too).
      // What the bounds cost: how many weights the fit holds at theirs.
      const atBound = weightBounds ? { weights_at_fpq_bound: fit.weights.reduce((n, w, i) => n + (Math.abs(w) >= weightBounds[i] * (1 - 1e-6) ? 1 : 0), 0) } : {};
      const twinInputFit = held ? { fit_input: held.faithful ? 'fpq twin' : 'float', twin_input_sqnr_db: held.sqnr_db } : {};
      const done = { ...entry, refitted: true, rows: fit.rows, residual: fit.residualAfter, ...atBound, ...twinInputFit, after: null, runtime_ms: timing.runtime - ranBefore, fit_ms: fitMs };
      layers.push(done);
      pending = { entry: done, wanted };
    }
    if (pending) measure(await mine.run([pending.entry.target_tensor]));
    bytes = await session('bytes');
  } finally {
    await session('close');
  }
  // Under FPQ no Conv may keep a bias (FPGA-UG-02228 section 5.1.1), and a refit gives each one:
  // the scheme's exact rewrites run again on the repaired model (the fold-only twin's options),
  // which move every bias into the BatchNormalization after it, and analyse the new weights.
  let fixedPoint;
  if (fpq) {
    onProgress('moving the new biases into BatchNormalizations (FPQ)', 1);
    const settled = await module.settleFixedPoint(bytes, twinOptions(conversion));
    bytes = settled.bytes;
    fixedPoint = { ...fixedPointOfRefits(settled.report, layers), twin_inputs: !twinRefused, ...(twinRefused ? { twin_inputs_note: twinRefused } : {}) };
  }
  onProgress('repaired', 1);
  const data = { source: samples.source, samples: samples.samples, ...(samples.preprocessing ? { preprocessing: samples.preprocessing } : {}), ...(samples.random ? { seed: samples.seed, note: 'seeded random inputs, not your data: a weaker repair' } : {}) };
  return {
    bytes,
    report: {
      data, options: { ridge, max_rows: maxRows, seed, refit_above: refitAbove }, layers, left: plan.left,
      ...(fixedPoint ? { fixed_point: fixedPoint } : {}), time_ms: performance.now() - started,
    },
  };
}

// What FPQ makes of the refitted layers, from the analysis of the repaired model: each refitted
// layer's entry gains its weights' fit (the share FPQ's signed 0.7 clips, the quantization
// error), and the summary names the biases moved and the layers whose new weights leave the range.
function fixedPointOfRefits(settled, layers) {
  const analysed = new Map((settled.fixed_point?.layers ?? []).map((l) => [l.node, l]));
  const leaving = [];
  for (const layer of layers) {
    const fit = layer.refitted ? analysed.get(layer.node) : undefined;
    if (!fit) continue;
    layer.fixed_point = { clipped: fit.clipped, quantization_error: fit.quantization_error, fits: fit.fits };
    if (fit.clipped > 0) leaving.push(layer.node);
  }
  const moved = (settled.matches ?? []).filter((m) => m.applied && FPQ_BIAS_PATTERNS.has(m.pattern)).length;
  return { scheme: 'fpq', biases_moved: moved, weights_clip: leaving };
}

// How many layers the repair refitted, how many that no rewrite changed it kept (their output
// within refitAbove of the original's), and how many it left as converted, which decide as much
// as the refitted ones: the Node CLI and the page say it the same way.
export function refittedText(repair) {
  const refitted = repair.layers.filter((l) => l.refitted).length;
  const kept = repair.layers.filter((l) => !l.refitted && l.reason?.endsWith(KEPT_WITHIN)).length;
  const left = repair.left.length;
  return `${refitted} layer${refitted === 1 ? '' : 's'} refitted` +
    (left ? `, ${left} left as converted (nothing of the original's to fit them to)` : '') +
    (kept ? ` (${kept} that no rewrite changed kept, within ${percent(repair.options.refit_above)} of the original's)` : '');
}

// The repair under FPQ in words ('' otherwise): what the biases became, and which refitted
// layers' weights FPQ's range clips. The Node CLI and the page say it the same way.
export function fixedPointRepairText(repair) {
  const fp = repair.fixed_point;
  if (!fp) return '';
  const clip = fp.weights_clip.length
    ? `the new weights of ${fp.weights_clip.length} layer${fp.weights_clip.length === 1 ? '' : 's'} leave FPQ's [-0.5, 0.5) and would clip: ` +
      fp.weights_clip.map((node) => {
        const share = repair.layers.find((l) => l.node === node).fixed_point.clipped;
        return `${node} (${percent(share)})`;
      }).join(', ')
    : 'every new weight is within FPQ\'s [-0.5, 0.5)';
  // The layers fitted within the weights the range fit can scale their input for, and what that cost.
  const bounded = repair.layers.filter((l) => l.weights_at_fpq_bound !== undefined);
  const held = bounded.length
    ? `; ${bounded.length} dense layer${bounded.length === 1 ? '' : 's'} fitted within FPQ's ranges: ` +
      bounded.map((l) => `${l.node} (${l.weights_at_fpq_bound} weight${l.weights_at_fpq_bound === 1 ? '' : 's'} at the bound, residual ${l.residual.toFixed(3)})`).join(', ')
    : '';
  // Which input the fits took, and where the twin's was no model of the float's.
  const floats = repair.layers.filter((l) => l.fit_input === 'float');
  const inputs = !fp.twin_inputs ? (fp.twin_inputs_note ? `; ${fp.twin_inputs_note}` : '')
    : floats.length
      ? `; ${floats.length} layer${floats.length === 1 ? '' : 's'} fitted on ${floats.length === 1 ? 'its' : 'their'} float input, where the FPQ twin's is under ${TWIN_INPUT_LEAST_SQNR_DB} dB SQNR: ` +
        floats.map((l) => `${l.node} (${l.twin_input_sqnr_db.toFixed(1)} dB)`).join(', ') + '; the others on the twin\'s'
      : '; each layer fitted on its input as the FPQ twin computes it';
  return `FPQ: ${fp.biases_moved} new bias${fp.biases_moved === 1 ? '' : 'es'} moved into BatchNormalizations; ${clip}${held}${inputs}`;
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
// first three quarters, the check the last quarter (at least one sample each), marked `heldOut`
// (the check's report says `inputs.held_out`) and named for what it was held out from (`fit`:
// the page's range fit holds out as the repair does).
export function holdOut(samples, fit = 'the repair') {
  const kept = Math.max(1, samples.samples - Math.max(1, Math.floor(samples.samples / 4)));
  if (kept >= samples.samples) throw optionsError(`${samples.source}: one sample cannot be both fitted and held out: give --inputs for the check`);
  return [slice(samples, 0, kept, `${samples.source} [0, ${kept})`), { ...slice(samples, kept, samples.samples, `${samples.source} [${kept}, ${samples.samples}), held out from ${fit}`), heldOut: true }];
}
