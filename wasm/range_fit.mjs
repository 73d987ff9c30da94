// FPQ range fitting on data: the ranges FpqRangeFitPattern (core/patterns/fixed_point/range_fit.h)
// fits the weights and activations to are measured here, by running the float model on samples,
// and the core rewrites it. The flow, on the model as it stands (converted, or repaired):
//   1. run it on the calibration samples (or seeded random inputs in FPQ's input range [0, 2),
//      said so) and keep, per channel, the largest |value| of every Relu's and Conv's output;
//   2. convert it again with only the range fit, given those ranges (its matches, their ids and
//      what no scale can fit are the core's);
//   3. say what that did: each FPQ activation's clipped share and SQNR on the same samples, before
//      → after (in the FPQ twin's representations), and the float check of the fit (the fold-only
//      tolerance: the fit is exact in float up to rounding).
// One module for both shells, like repair.mjs: handed the runtime and the converter.
import { activationFit, checkCandidates, feedBatches, percent, randomFitSamples, runModel } from './check.mjs';

export const RANGE_FIT_PATTERN = 'FpqRangeFitPattern';
// FPQ's input layer is unsigned 1.7: random inputs for the fit are drawn in its range.
export const FPQ_INPUT_RANGE = Object.freeze([0, 2]);

// The tensors the pattern reads ranges of: every Relu's output (the activation it fits) and every
// Conv's (the conv output's signed 5.10 bounds how far its weights may grow).
export function rangeTensors(description) {
  const names = [];
  for (const n of description.nodes) if ((n.op === 'Relu' || n.op === 'Conv') && n.outputs[0]?.name) names.push(n.outputs[0].name);
  return names;
}

// Per channel (axis 1), the largest |value| of each tensor over all batches: {tensor: [..]}.
export async function measureChannelRanges(runtime, model, batches) {
  const names = rangeTensors(model.description);
  const outputs = new Set(model.description.outputs.map((o) => o.name));
  const ranges = {};
  await runModel(runtime, model, batches, names.filter((n) => !outputs.has(n)), { load: 0, run: 0 }, (index, out) => {
    for (const name of names) {
      const t = out[name];
      if (!t || t.dims.length < 2 || t.type !== 'float32') continue;
      const channels = t.dims[1], inner = t.dims.slice(2).reduce((a, b) => a * b, 1);
      const top = (ranges[name] ??= new Array(channels).fill(0));
      for (let i = 0; i < t.data.length; ++i) {
        const v = Math.abs(t.data[i]), c = Math.floor(i / inner) % channels;
        if (v > top[c] && Number.isFinite(v)) top[c] = v;
      }
    }
  });
  return ranges;
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

// Fits `model` ({bytes, externalData, description}) to FPQ's ranges on `samples`. `engine`:
// {fpqTwin(bytes), settle(bytes, options) -> {bytes, report, description}} (a conversion by the
// converter's module). `conversion`: the report of the conversion that made the model (its
// skipped match ids and input sizes carry over). Returns {bytes, description, report}.
export async function fitRanges(runtime, engine, model, conversion, samples, onProgress = () => {}) {
  const batches = feedBatches(samples.feeds, model.description.inputs, samples.samples);
  onProgress('measuring the ranges', 0);
  const ranges = await measureChannelRanges(runtime, model, batches);
  onProgress('fitting the ranges', 0.4);
  const fitted = engine.settle(model.bytes, {
    target: 'none', fixedPoint: 'fpq', only: [RANGE_FIT_PATTERN], skipMatches: conversion?.options?.skip_matches ?? [],
    ignoreUnknownSkips: true, ...(conversion?.input_shapes ? { inputShapes: conversion.input_shapes } : {}), channelRanges: ranges,
  });
  const after = { ...model, bytes: fitted.bytes, description: fitted.description };
  onProgress('the activations in FPQ, before and after', 0.6);
  const representations = (await engine.fpqTwin(after.bytes)).twin.activations;
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
      tensors_measured: Object.keys(ranges).length,
      matches, warnings: (fitted.report.warnings ?? []).filter((w) => w.pattern === RANGE_FIT_PATTERN),
      clipped: { before: overallClipped(before_), after: overallClipped(after_) },
      activations,
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
  for (const w of fit.warnings) lines.push(`range fit: ${w.message}`);
  lines.push(`range fit: the float check of the fit ${fit.float_check.pass ? 'passes' : 'fails'} (fold-only tolerance)`);
  return lines;
}
