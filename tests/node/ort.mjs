// onnxruntime-node as the reference runtime: graph optimisations disabled, or its own Conv+BN
// fusion would hide what the converter did.
import ort from 'onnxruntime-node';

import { checkModel } from './onnx_checker.mjs';
import { checkShapes } from '../../wasm/shared/check_sizes.mjs';

export async function session(bytes) {
  return ort.InferenceSession.create(bytes, { graphOptimizationLevel: 'disabled', intraOpNumThreads: 1 });
}

// The sizes the check proposes for a model's dynamic inputs ({name: dims}, from its description):
// a 1×1 image leaves a detector's rewritten convs nothing to read.
export function proposedSizes(description) {
  return Object.fromEntries(checkShapes(description).missing.filter((m) => m.proposed).map(({ input, proposed }) => [input.name, proposed.dims]));
}

// Deterministic inputs (a small LCG) for every float input, at `sizes` ({name: dims}) or the
// declared dims, symbolic ones 1.
export function feedsFor(sess, seed = 1, sizes = {}) {
  const feeds = {};
  let state = seed;
  const next = () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32 * 2 - 1;
  };
  for (const meta of sess.inputMetadata) {
    const dims = sizes[meta.name] ?? meta.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1));
    const data = Float32Array.from({ length: dims.reduce((a, b) => a * b, 1) }, next);
    feeds[meta.name] = new ort.Tensor('float32', data, dims);
  }
  return feeds;
}

// Runs both models on the same inputs: per output, the largest absolute difference and the
// largest magnitude of the original's values. The converted model must pass onnx's checker too.
// `sizes` as feedsFor takes them.
export async function compareOutputs(originalBytes, convertedBytes, sizes = {}) {
  await checkModel(convertedBytes);
  const a = await session(originalBytes);
  const b = await session(convertedBytes);
  const feeds = feedsFor(a, 1, sizes);
  const [ra, rb] = [await a.run(feeds), await b.run(feeds)];
  const result = {};
  for (const name of a.outputNames) {
    const x = ra[name].data, y = rb[name].data;
    let maxDiff = 0, maxMag = 0;
    for (let i = 0; i < x.length; ++i) {
      maxDiff = Math.max(maxDiff, Math.abs(x[i] - y[i]));
      maxMag = Math.max(maxMag, Math.abs(x[i]));
    }
    result[name] = { maxDiff, maxMag, dims: ra[name].dims, convertedDims: rb[name]?.dims };
  }
  return { outputs: result, originalNames: a.outputNames, convertedNames: b.outputNames };
}
