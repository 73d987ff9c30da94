// FPQ range fitting on data: the ranges FpqRangeFitPattern (core/patterns/fixed_point/range_fit.h)
// fits the weights and activations to are measured here, by running the float model on samples,
// and the core rewrites it. The flow, on the model as it stands (converted, or repaired):
//   1. run it on the calibration samples (or seeded random inputs in FPQ's input range [0, 2),
//      said so) and keep, per channel, the largest value of every activation FPQ holds (rangeTensors);
//   2. convert it again with only the range fit, given those ranges (its matches, their ids and
//      what no scale can fit are the core's);
//   3. say what that did: each FPQ activation's clipped share and SQNR on the same samples, before
//      → after (in the FPQ twin's representations), and the float check of the fit (the fold-only
//      tolerance: the fit is exact in float up to rounding).
// One module for both shells, like repair.mjs: handed the runtime and the converter.
import { activationFit, checkCandidates, feedBatches, percent, randomFitSamples, runModel } from './check.mjs';
import { addValues, channelHistograms, clipCost, optimalClips } from './fpq_clip.mjs';

export const RANGE_FIT_PATTERN = 'FpqRangeFitPattern';
// FPQ's input layer is unsigned 1.7: random inputs for the fit are drawn in its range.
export const FPQ_INPUT_RANGE = Object.freeze([0, 2]);
// The largest value unsigned 1.7 holds.
const FPQ_ACTIVATION_TOP = 2 - 1 / 128;

// The tensors the pattern reads ranges of, and how: the values FPQ holds in unsigned 1.7 (Relu,
// MaxPool and Add outputs) by their largest value (an Add's negative values are zeroed by that
// representation whatever the scale), the signed 5.10 ones (Conv and BatchNormalization outputs:
// a conv's or a dense layer's bounds how far its weights may grow) by their largest |value|.
const RANGE_OF = { Relu: 'top', MaxPool: 'top', Add: 'top', Conv: 'magnitude', Gemm: 'magnitude', BatchNormalization: 'magnitude' };

export function rangeTensors(description) {
  const tensors = [];
  for (const n of description.nodes) if (RANGE_OF[n.op] && n.outputs[0]?.name) tensors.push({ name: n.outputs[0].name, of: RANGE_OF[n.op] });
  return tensors;
}

// Runs the model on every batch, handing `take` each batch's outputs with `names` among them.
function runReading(runtime, model, batches, names, take) {
  const outputs = new Set(model.description.outputs.map((o) => o.name));
  return runModel(runtime, model, batches, names.filter((n) => !outputs.has(n)), { load: 0, run: 0 }, take);
}

// Per channel (axis 1), the largest value (or |value|) of each tensor over all batches: {tensor: [..]}.
async function channelTops(runtime, model, batches, tensors) {
  const tops = {};
  await runReading(runtime, model, batches, tensors.map((t) => t.name), (index, out) => {
    for (const { name, of } of tensors) {
      const t = out[name];
      if (!t || t.dims.length < 2 || t.type !== 'float32') continue;
      const channels = t.dims[1], inner = t.dims.slice(2).reduce((a, b) => a * b, 1);
      const top = (tops[name] ??= new Array(channels).fill(0));
      for (let i = 0; i < t.data.length; ++i) {
        const v = of === 'top' ? t.data[i] : Math.abs(t.data[i]), c = Math.floor(i / inner) % channels;
        if (v > top[c] && Number.isFinite(v)) top[c] = v;
      }
    }
  });
  return tops;
}

// The ranges the pattern fits to, per channel: the largest value of each activation FPQ holds in
// unsigned 1.7 and the largest |value| of the signed ones; and for the activations, where no scale
// fits, their MSE-optimal clip on the samples (fpq_clip.mjs; a second run fills the histograms
// over the first's largest values). Of every such tensor, or of `tensors` ({name, of} as
// rangeTensors gives them). Returns {ranges, clips, histograms}.
export async function measureChannelRanges(runtime, model, batches, tensors = rangeTensors(model.description)) {
  const tops = await channelTops(runtime, model, batches, tensors);
  const activations = tensors.filter((t) => t.of === 'top' && tops[t.name]);
  const histograms = Object.fromEntries(activations.map((t) => [t.name, channelHistograms(tops[t.name])]));
  await runReading(runtime, model, batches, activations.map((t) => t.name), (index, out) => {
    for (const [name, h] of Object.entries(histograms)) {
      const t = out[name];
      if (t) addValues(h, t.data, t.dims.slice(2).reduce((a, b) => a * b, 1));
    }
  });
  const clips = {};
  for (const [name, h] of Object.entries(histograms)) clips[name] = optimalClips(h);
  return { ranges: tops, clips, histograms };
}

// What the fit chose to clip: per activation, the channels whose values now reach beyond unsigned
// 1.7 (a clip the MSE chose, or one the next layer's weights forced), each with its clip in the
// model's own units (the top of the range times the scale the fit divided it by), its largest
// value, and what it costs on the samples: [{tensor, channels: [{channel, clip, largest, clipped,
// sqnr_db}]}].
function chosenClips(measured, fittedTops) {
  const clips = [];
  for (const [tensor, h] of Object.entries(measured.histograms)) {
    const after = fittedTops[tensor];
    if (!after) continue;
    const channels = [];
    h.tops.forEach((largest, channel) => {
      // The fit puts a fitting channel's largest value at the top, up to float32's rounding.
      if (!(after[channel] > FPQ_ACTIVATION_TOP * (1 + 1e-4))) return;
      const clip = FPQ_ACTIVATION_TOP * largest / after[channel];
      channels.push({ channel, clip, largest, ...clipCost(h, channel, clip) });
    });
    if (channels.length) clips.push({ tensor, channels });
  }
  return clips;
}

// Without calibration samples: seeded random inputs in FPQ's input range, at the model's sizes.
export function fitSamples(description, calibration, { seed, inputShapes } = {}) {
  return calibration ?? randomFitSamples(description, { seed, inputRange: FPQ_INPUT_RANGE, inputShapes });
}

// The share of all values of the FPQ activations that clip, over every tensor (weighted by count).
function overallClipped(activations) {
  let values = 0, clipped = 0;
  for (const a of activations) { values += a.values; clipped += a.clipped * a.values; }
  return values ? clipped / values : 0;
}

// The conversion that fits a model's ranges and does nothing else, on `measured`
// (measureChannelRanges'): the skipped matches and input sizes of `conversion` carry over.
export function rangeFitOptions(conversion, measured) {
  return {
    target: 'none', fixedPoint: 'fpq', only: [RANGE_FIT_PATTERN], skipMatches: conversion?.options?.skip_matches ?? [],
    ignoreUnknownSkips: true, ...(conversion?.input_shapes ? { inputShapes: conversion.input_shapes } : {}), channelRanges: measured.ranges, channelClips: measured.clips,
  };
}

// Fits `model` ({bytes, externalData, description}) to FPQ's ranges on `samples`. `engine`:
// {fpqTwin(bytes, {valuesOnly}), settle(bytes, options) -> {bytes, report, description}} (a conversion by the
// converter's module). `conversion`: the report of the conversion that made the model (its
// skipped match ids and input sizes carry over). Returns {bytes, description, report}.
export async function fitRanges(runtime, engine, model, conversion, samples, onProgress = () => {}) {
  const batches = feedBatches(samples.feeds, model.description.inputs, samples.samples);
  onProgress('measuring the ranges', 0);
  const measured = await measureChannelRanges(runtime, model, batches);
  onProgress('fitting the ranges', 0.4);
  const fitted = await engine.settle(model.bytes, rangeFitOptions(conversion, measured));
  const after = { ...model, bytes: fitted.bytes, description: fitted.description };
  const clips = chosenClips(measured, await channelTops(runtime, after, batches, rangeTensors(after.description).filter((t) => measured.histograms[t.name])));
  onProgress('the activations in FPQ, before and after', 0.6);
  // The twin's values alone: which representation holds each activation, at any opset.
  const representations = (await engine.fpqTwin(after.bytes, { valuesOnly: true })).twin.activations;
  const [before_, after_] = [await activationFit(runtime, model, batches, representations), await activationFit(runtime, after, batches, representations)];
  const activations = before_.map((b, i) => ({
    tensor: b.tensor, role: b.role, representation: b.representation,
    clipped: { before: b.clipped, after: after_[i].clipped }, sqnr_db: { before: b.sqnr_db, after: after_[i].sqnr_db },
  }));
  onProgress('the float check of the fit', 0.8);
  const [check] = await checkCandidates(runtime, model, [{ model: after, conversion: fitted.report, scaleAtol: true }], { samples });
  const matches = (fitted.report.matches ?? []).filter((m) => m.pattern === RANGE_FIT_PATTERN);
  onProgress('ranges fitted', 1);
  return {
    bytes: after.bytes, description: after.description, fixedPoint: fitted.report.fixed_point,
    report: {
      pattern: RANGE_FIT_PATTERN,
      data: { source: samples.source, samples: samples.samples, ...(samples.random ? { seed: samples.seed, note: 'seeded random inputs in FPQ\'s input range, not your data: ranges a guess' } : {}) },
      tensors_measured: Object.keys(measured.ranges).length,
      matches, warnings: (fitted.report.warnings ?? []).filter((w) => w.pattern === RANGE_FIT_PATTERN),
      clipped: { before: overallClipped(before_), after: overallClipped(after_) },
      activations, clips,
      float_check: { pass: check.pass, verdict: check.verdict, ...(check.error ? { error: check.error } : {}), outputs: check.outputs.map((o) => ({ name: o.name, max_abs: o.max_abs, pass: o.pass })) },
    },
  };
}

// The fit in a few lines, for the Node CLI and the page.
export function rangeFitLines(fit) {
  const applied = fit.matches.filter((m) => m.applied).length;
  const lines = [`range fit: ${applied} layer${applied === 1 ? '' : 's'} fitted to FPQ's ranges measured on ${fit.data.source}` +
    `${fit.data.note ? ` (${fit.data.note})` : ''}; FPQ activations clipped ${percent(fit.clipped.before)} → ${percent(fit.clipped.after)}`];
  for (const a of fit.activations) {
    if (a.clipped.before === 0 && a.clipped.after === 0) continue;
    lines.push(`range fit:   '${a.tensor}' clipped ${percent(a.clipped.before)} → ${percent(a.clipped.after)}, SQNR ${a.sqnr_db.before.toFixed(1)} → ${a.sqnr_db.after.toFixed(1)} dB`);
  }
  const channels = (fit.clips ?? []).flatMap((t) => t.channels.map((c) => ({ tensor: t.tensor, ...c })));
  if (channels.length) {
    const worst = channels.reduce((a, b) => (b.clipped > a.clipped ? b : a));
    lines.push(`range fit: ${channels.length} channel${channels.length === 1 ? '' : 's'} of ${fit.clips.length} activation${fit.clips.length === 1 ? '' : 's'} ` +
      `clip by choice (the MSE-optimal clip on the samples, or where the next layer's weights stop the scale), most '${worst.tensor}' ` +
      `channel ${worst.channel}: clipped at ${worst.clip.toPrecision(3)} (values up to ${worst.largest.toPrecision(3)}), ${percent(worst.clipped)} of its values, ` +
      `SQNR ${worst.sqnr_db.toFixed(1)} dB; every channel's clip and cost in range_fit.clips`);
  }
  for (const w of fit.warnings) lines.push(`range fit: ${w.message}`);
  lines.push(`range fit: the float check of the fit ${fit.float_check.pass ? 'passes' : 'fails'} (fold-only tolerance)`);
  return lines;
}
