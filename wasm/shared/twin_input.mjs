// Under FPQ the repair fits each layer on its input as the FPQ twin of the model repaired so far
// computes it, not as the float model does: the fit then takes the fixed point's error on that
// input as part of what it corrects, rather than a layer fitted on clean values amplifying it (the
// sequential reconstruction AIMET's AdaRound and SeqMSE do with a quantized model's input and the
// float model's target). The twin is made as the download will be: the scheme's exact rewrites, the
// range fit on ranges measured on the same samples, then FPQ's representations (twin.h).
//
// The range fit moves scales between layers, so the twin's values of a tensor are the model's
// divided, channel by channel, by the scale the fit gave that channel; the float fitted model's
// values of it give that scale, and the twin's values are taken back into the repaired model's
// own units. Not for samples beyond FPQ's input range (twinInputsRefused). One module for both
// shells, like repair.mjs: handed the runtime and the converter (settleFixedPoint, fpqTwin).
import { joinTensors, runModel, twinOptions } from './check.mjs';
import { FPQ_INPUT_RANGE, measureChannelRanges, rangeFitOptions } from './range_fit.mjs';

// Whether the twin computes what the device would on these samples: every float value fed lies in
// FPQ's input range (unsigned 1.7). Samples preprocessed for another range ([-1, 1], say) lose what
// lies outside it in the twin, and a layer fitted on that would be fitted on values the model,
// fed as the samples are, never sees (BlazeFace under FPQ: its task figure 0.948 -> 0.083).
// Returns '' when they do, else why not, in words.
export function twinInputsRefused(feeds) {
  const [low, high] = FPQ_INPUT_RANGE;
  for (const [name, t] of Object.entries(feeds)) {
    if (t.type !== 'float32') continue;
    let min = Infinity, max = -Infinity;
    for (const v of t.data) { if (v < min) min = v; if (v > max) max = v; }
    if (min < low || max >= high) {
      return `the samples' '${name}' spans [${min.toPrecision(3)}, ${max.toPrecision(3)}], beyond FPQ's input range [${low}, ${high}): ` +
        'each layer fitted on its float input instead';
    }
  }
  return '';
}

// Below this signal-to-noise ratio of the twin's values against the float model's (the noise a
// quarter of the signal's power), the fixed point has not rounded the layer's input but destroyed
// it (values clipped wholesale, ops FPQ cannot hold: on an SE block's HardSwish model 0.0-3.8 dB),
// and a layer fitted on it would give up the float model for a twin that cannot work (its float
// accuracy 97.0 -> 10.8 %). The trained CNNs that fitting on the twin helped lie at 10.7-39 dB.
export const TWIN_INPUT_LEAST_SQNR_DB = 6;

// Each batch's values of `name` in `model` ({bytes, externalData}), joined: {type, dims, data}.
async function valuesOf(runtime, model, batches, name) {
  const parts = [];
  await runModel(runtime, model, batches, [name], { load: 0, run: 0 }, (index, out) => parts.push(out[name]));
  return joinTensors(parts);
}

// `name`'s values as the FPQ twin of `model` computes them on `batches`, in `model`'s units, given
// `own` (model's float values of it, {data, dims}): {data, dims, sqnr_db, faithful} (faithful:
// sqnr_db at least TWIN_INPUT_LEAST_SQNR_DB). `conversion`: the report of the conversion (its
// scheme options and skipped matches carry over).
export async function twinInput(runtime, module, model, conversion, batches, name, own) {
  // As the repair's end and the range fit after it do (repair.mjs, range_fit.mjs fitRanges); a
  // range fit the conversion skipped stays skipped (twinOptions).
  const exact = twinOptions(conversion);
  const settled = await module.settleFixedPoint(model.bytes.slice(), { ...exact, describe: true });
  const measured = await measureChannelRanges(runtime, { ...model, bytes: settled.bytes, description: settled.description }, batches);
  const fitted = await module.settleFixedPoint(settled.bytes.slice(), { ...rangeFitOptions(conversion, measured), ...(exact.skip ? { skip: exact.skip } : {}) });
  const twin = await module.fpqTwin(fitted.bytes.slice());
  const scaled = await valuesOf(runtime, { ...model, bytes: fitted.bytes }, batches, name);
  const held = await valuesOf(runtime, { ...model, bytes: twin.model }, batches, name);
  // Per channel (axis 1), the scale the fit divided the values by: least squares of own on scaled.
  const channels = own.dims[1], inner = own.dims.slice(2).reduce((a, b) => a * b, 1);
  const dot = new Float64Array(channels), norm = new Float64Array(channels);
  for (let i = 0; i < own.data.length; ++i) {
    const c = Math.floor(i / inner) % channels;
    dot[c] += own.data[i] * scaled.data[i];
    norm[c] += scaled.data[i] * scaled.data[i];
  }
  const data = new Float32Array(held.data.length);
  let signal = 0, noise = 0;
  for (let i = 0; i < data.length; ++i) {
    const c = Math.floor(i / inner) % channels;
    data[i] = norm[c] > 0 ? held.data[i] * (dot[c] / norm[c]) : own.data[i];
    signal += own.data[i] ** 2;
    noise += (data[i] - own.data[i]) ** 2;
  }
  const sqnr_db = noise > 0 ? 10 * Math.log10(signal / noise) : Infinity;
  return { data, dims: own.dims, sqnr_db, faithful: sqnr_db >= TWIN_INPUT_LEAST_SQNR_DB };
}
