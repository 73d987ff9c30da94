// FPQ's clip of an activation on data (wasm/shared/fpq_clip.mjs): the MSE-optimal clip the histogram
// picks is where the error, computed on the values themselves, is least (within a bin), and the
// cost it reports of a clip is the values' own (clipped share, SQNR). Seeded values.
import assert from 'node:assert/strict';
import test from 'node:test';

import { HISTOGRAM_BINS, addValues, channelHistograms, clipCost, optimalClips } from '../../wasm/shared/fpq_clip.mjs';

// Seeded: a Relu's output, half zeros, the rest exponential with a long tail.
function reluValues(n, seed) {
  let state = seed;
  const next = () => ((state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  return Float32Array.from({ length: n }, () => (next() < 0.5 ? 0 : -Math.log(1 - next())));
}

// The error of holding `values` in 256 steps up to α, on the values themselves.
function error(values, alpha) {
  let sum = 0;
  for (const x of values) {
    if (x <= 0) continue;
    const q = Math.min(alpha, Math.round(x / (alpha / 255)) * (alpha / 255));
    sum += (x - q) ** 2;
  }
  return sum;
}

test('the MSE-optimal clip is where the error on the values is least, and clips a lone outlier', () => {
  const values = reluValues(20000, 7);
  const top = Math.max(...values);
  const h = channelHistograms([top]);
  addValues(h, values, values.length);
  const [clip] = optimalClips(h);
  let best = top, least = Infinity;
  for (let k = 1; k <= HISTOGRAM_BINS; ++k) {
    const e = error(values, (k / HISTOGRAM_BINS) * top);
    if (e < least) least = e, best = (k / HISTOGRAM_BINS) * top;
  }
  assert.ok(Math.abs(clip - best) <= 2 * top / HISTOGRAM_BINS, `histogram ${clip}, values ${best}`);
  // Its cost: the share of values beyond it (to a bin), and an SQNR from the same error.
  const cost = clipCost(h, 0, clip);
  const share = values.filter((x) => x > clip).length / values.length;
  assert.ok(Math.abs(cost.clipped - share) <= 0.01, `${cost.clipped} against ${share}`);
  assert.ok(cost.sqnr_db > 10 && cost.sqnr_db < 60, `${cost.sqnr_db}`);
  // At 8 bits clipping rarely pays: a lone value 30 % beyond 200,000 in [0, 1) is where it does.
  const bulk = Float32Array.from({ length: 200001 }, (_, i) => (i === 0 ? 1.3 : (i % 1000) / 1000));
  const dense = channelHistograms([1.3]);
  addValues(dense, bulk, bulk.length);
  const [outlierClip] = optimalClips(dense);
  assert.ok(outlierClip < 1.05 && error(bulk, outlierClip) < error(bulk, 1.3), `clip ${outlierClip}`);
  // A channel of equal values is kept whole; one never positive has no clip.
  const flat = channelHistograms([1, 0]);
  addValues(flat, Float32Array.from([1, 1, 1, 1, 0, 0, 0, 0]), 4);
  assert.deepEqual(optimalClips(flat), [1, 0]);
});
