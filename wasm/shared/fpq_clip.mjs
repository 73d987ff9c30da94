// The clip of an activation FPQ holds in unsigned 1.7, chosen per channel on data as the
// quantization tools choose it (the MSE-optimal clip: onnxruntime's and NNCF's calibrators, AIMET's
// SQNR-based encodings): 256 steps from 0 to the clip α, so a larger α rounds every value more
// coarsely (step α / 255) and a smaller one clips the values beyond it. Each channel's values are
// counted in a histogram over [0, its largest value], and α is the bin edge with the least
//   Σ_{x > α} (x − α)²  +  #{0 < x ≤ α} · (α / 255)² / 12
// (the clipped values' error, and the rounding error of the others). The same histogram says what
// a clip costs: its clipped share and SQNR.

export const HISTOGRAM_BINS = 128;
// Unsigned 1.7 has 256 values, 0 to 2 − 1/128: a clip α is held in steps of α / 255.
const STEPS = 255;

// Histograms of `channels` channels, each over [0, tops[c]] (values outside are taken to its ends,
// zeros counted apart: a Relu's zeros round to 0 exactly).
export function channelHistograms(tops) {
  const channels = tops.length;
  return { tops, counts: new Float32Array(channels * HISTOGRAM_BINS), zeros: new Float64Array(channels), totals: new Float64Array(channels) };
}

// Adds a tensor's values, laid out [N, C, inner…].
export function addValues(h, data, inner) {
  const channels = h.tops.length;
  for (let i = 0; i < data.length; ++i) {
    const c = Math.floor(i / inner) % channels, x = data[i];
    if (!Number.isFinite(x)) continue;
    h.totals[c] += 1;
    if (x <= 0) { h.zeros[c] += 1; continue; }
    const top = h.tops[c];
    const bin = top > 0 ? Math.min(HISTOGRAM_BINS - 1, Math.floor((x / top) * HISTOGRAM_BINS)) : 0;
    h.counts[c * HISTOGRAM_BINS + bin] += 1;
  }
}

// The rounding error of `kept` values held in 256 steps up to α (each step's error uniform).
const rounding = (kept, alpha) => kept * (alpha / STEPS) ** 2 / 12;

// A channel's error at clip α: the clipped values' Σ(x − α)², the rounding of the others, how
// many clip, and Σx² (values taken at their bin's centre).
function errorAt(h, c, alpha) {
  const width = h.tops[c] / HISTOGRAM_BINS, base = c * HISTOGRAM_BINS;
  let clip = 0, clipped = 0, kept = 0, signal = 0;
  for (let b = 0; b < HISTOGRAM_BINS; ++b) {
    const n = h.counts[base + b];
    if (!n) continue;
    const x = (b + 0.5) * width;
    signal += n * x * x;
    if (x > alpha) { clip += n * (x - alpha) ** 2; clipped += n; } else kept += n;
  }
  return { clip, rounding: rounding(kept, alpha), clipped, signal };
}

// Per channel, the MSE-optimal clip (0 for a channel that is never positive). The bins beyond the
// edge k·width are those from k on: suffix sums give each edge's error in one pass.
export function optimalClips(h) {
  const s0 = new Float64Array(HISTOGRAM_BINS + 1), s1 = new Float64Array(HISTOGRAM_BINS + 1), s2 = new Float64Array(HISTOGRAM_BINS + 1);
  return Array.from(h.tops, (top, c) => {
    if (!(top > 0)) return 0;
    const width = top / HISTOGRAM_BINS, base = c * HISTOGRAM_BINS;
    for (let b = HISTOGRAM_BINS - 1; b >= 0; --b) {
      const n = h.counts[base + b], x = (b + 0.5) * width;
      s0[b] = s0[b + 1] + n;
      s1[b] = s1[b + 1] + n * x;
      s2[b] = s2[b + 1] + n * x * x;
    }
    let best = top, least = Infinity;
    for (let k = 1; k <= HISTOGRAM_BINS; ++k) {
      const alpha = k * width;
      const error = s2[k] - 2 * alpha * s1[k] + alpha * alpha * s0[k] + rounding(s0[0] - s0[k], alpha);
      if (error < least) least = error, best = alpha;
    }
    return best;
  });
}

// What clipping channel c at α costs on the data: the share of its values beyond α, and the SQNR
// of the channel held in 256 steps up to α, in dB.
export function clipCost(h, c, alpha) {
  const e = errorAt(h, c, alpha);
  const noise = e.clip + e.rounding;
  return { clipped: h.totals[c] ? e.clipped / h.totals[c] : 0, sqnr_db: noise > 0 ? 10 * Math.log10(e.signal / noise) : Infinity };
}
