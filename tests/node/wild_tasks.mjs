// The task figures of the "wild" models (public trained models from npm, tests/fixtures/make_wild.py),
// computed here independently of the converter and of its check: both models run in
// onnxruntime-node on the held-out samples, and their outputs are decoded as each model's own
// runtime decodes them (the npm package's shaders and scripts, PaddleOCR's post-processes).
//
//   taskFigure(kind, originalPath, candidatePath, heldoutNpyPath, options) -> {
//     kind, figure,      // the share (0..1) of held-out samples on which the candidate does the task
//                        // as the original does (see FIGURES), 1 for the original against itself
//     samples, agree,    // how many samples, and on how many the candidate agrees (or the IoU sum)
//     original: {...},   // the original's own sanity figures on the data (faces found, accuracy
//                        // against the labels the data were made with, confidence, map coverage)
//     candidate: {...},  // the same figures for the candidate
//     extra: {...},      // secondary figures (a tolerant line match, a character-level match, ...)
//     outputDims: {original, candidate},  // each model's output dims on the first sample
//     perSample: [...],  // the per-sample agreement (1/0 or the IoU)
//   }
//
// kinds:
//   face        BlazeFace (MediaPipe, 128×128 front model). Scores are logits for 16×16×2 + 8×8×6
//               anchors, boxes are (cx, cy, w, h) in input pixels from the anchor centre, as the
//               package's Shaders/Postprocess1Kernel.hlsl decodes them; a face is found when the best
//               sigmoid(score) > 0.5, its box is the score-weighted blend of the boxes over 0.5
//               overlapping the best by IoU ≥ 0.3 (Postprocess2.compute's overlap removal).
//               Figure: the share of images where the candidate makes the same face / no-face
//               decision as the original and, when both find one, its box has IoU ≥ 0.5 with the
//               original's.
//   classifier  PaddleOCR's text direction classifier ([N, 2] softmax): top-1 agreement.
//   textdet     PaddleOCR's DB text detector (sigmoid map [N, 1, H, W]): the mean over samples of the
//               IoU of both maps thresholded at 0.3 (DB post-process's pixel threshold); two empty
//               maps count 1.
//   lines       M-LSD (jp.keijiro.mlsd): `scores` [1, H/2, W/2, 1] is the line-centre map after the
//               model's own sigmoid and 3×3 max-pool peak selection; the package's
//               Shader/Postprocess.compute keeps a centre when its score ≥ Threshold, 0.1 by default
//               (LineSegmentDetector.ProcessImage). Figure: the mean IoU of the two sets of centres
//               (score ≥ 0.1); two empty sets count 1. extra.tolerantF1: the F1 of the centres
//               matched within one cell (Chebyshev distance ≤ 1), extra.endpointAgreement: of the
//               centres both keep at the same cell, the share whose two endpoints (offsets) are
//               within 1 cell of the original's.
//   ctc         PaddleOCR's CTC recogniser ([N, T, C] softmax): greedy decoding (arg-max per step,
//               repeats merged, blank 0 removed); figure: the share of samples whose decoded
//               sequence equals the original's. extra.charAgreement: 1 − the mean normalised edit
//               distance between the two sequences.
//
// options:
//   inputName     the model's input (default: the original's first input)
//   labels        what the data were made with, for the original's sanity figures: an array, or the
//                 path of a JSON file holding one (face: 1/0; classifier: the class; ctc: the text;
//                 textdet: the text boxes [[x0, y0, x1, y1], ...] per sample in input pixels)
//   dictionary    ctc: the path of the dictionary (ppocr_keys_v1.txt), to turn sequences into text
//   threshold     overrides the task's threshold (face: the sigmoid score, textdet: the pixel
//                 probability, lines: the centre score)
//   limit         only the first `limit` samples
//   cache         a Map: the original's decoded outputs are kept there between calls (keyed by
//                 original, held-out file, kind and threshold)
import { readFileSync } from 'node:fs';

import ort from 'onnxruntime-node';

import { readNpy } from '../../wasm/shared/npy.mjs';

export const FIGURES = {
  face: 'same face/no-face decision, and top box IoU ≥ 0.5 when both find a face',
  classifier: 'top-1 agreement',
  textdet: 'mean IoU of the probability maps thresholded at 0.3',
  lines: 'mean IoU of the line-centre sets (score ≥ 0.1)',
  ctc: 'share of samples with the same CTC greedy-decoded sequence',
};

export const THRESHOLDS = { face: 0.5, textdet: 0.3, lines: 0.1 };

// A .npy file as {shape, data: Float32Array}, with the repo's own reader (float32 only).
export function loadNpy(path) {
  const { dtype, shape, data } = readNpy(new Uint8Array(readFileSync(path)), path);
  if (dtype !== 'float') throw new Error(`${path}: ${dtype}, the held-out samples must be float32`);
  return { shape, data };
}

async function open(path) {
  return ort.InferenceSession.create(path, { graphOptimizationLevel: 'basic', intraOpNumThreads: 1, interOpNumThreads: 1 });
}

// Runs a model on every sample, one at a time (the wild models are pinned to batch 1), and hands
// each sample's outputs ({name: {dims, data}}, in the model's output order as `list`) to `decode`.
async function runEach(path, npy, inputName, limit, decode) {
  const sess = await open(path);
  const name = inputName ?? sess.inputNames[0];
  if (!sess.inputNames.includes(name)) throw new Error(`${path}: no input ${name} (it has ${sess.inputNames.join(', ')})`);
  const [n, ...dims] = npy.shape;
  const size = dims.reduce((a, b) => a * b, 1);
  const count = Math.min(n, limit ?? n);
  const results = [];
  for (let i = 0; i < count; ++i) {
    const data = npy.data.slice(i * size, (i + 1) * size);
    const out = await sess.run({ [name]: new ort.Tensor('float32', data, [1, ...dims]) });
    const list = sess.outputNames.map((o) => ({ name: o, dims: out[o].dims, data: out[o].data }));
    results.push(decode(Object.fromEntries(list.map((o) => [o.name, o])), list, dims));
    if (i === 0) results.outputDims = Object.fromEntries(list.map((o) => [o.name, o.dims]));
  }
  await sess.release?.();
  return results;
}

// ---- face (BlazeFace) -------------------------------------------------------------------------

const sigmoid = (x) => 1 / (1 + Math.exp(-x));

function boxIou(a, b) {
  const ix = Math.max(0, Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0));
  const iy = Math.max(0, Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0));
  const inter = ix * iy;
  const union = (a.x1 - a.x0) * (a.y1 - a.y0) + (b.x1 - b.x0) * (b.y1 - b.y0) - inter;
  return union > 0 ? inter / union : 0;
}

// Outputs by name when the candidate kept them, else by position (scores 512, scores 384, boxes
// 512, boxes 384, as the original declares them).
function faceOutputs(byName, list) {
  const pick = (names, index) => names.map((n) => byName[n]).find(Boolean) ?? list[index];
  return [pick(['Identity:0', 'Identity'], 0), pick(['Identity_1:0', 'Identity_1'], 1),
    pick(['Identity_2:0', 'Identity_2'], 2), pick(['Identity_3:0', 'Identity_3'], 3)];
}

export function decodeFace(byName, list, dims, threshold = THRESHOLDS.face) {
  const [s1, s2, b1, b2] = faceOutputs(byName, list);
  const size = dims[1] ?? 128;  // NHWC [128, 128, 3]
  const dets = [];
  let best = -Infinity;
  const layer = (scores, boxes, cells, anchors) => {
    for (let y = 0; y < cells; ++y) {
      for (let x = 0; x < cells; ++x) {
        for (let a = 0; a < anchors; ++a) {
          const k = (y * cells + x) * anchors + a;
          const logit = scores.data[k];
          best = Math.max(best, logit);
          const score = sigmoid(logit);
          if (!(score > threshold)) continue;
          const r = boxes.data.subarray(k * 16, k * 16 + 4);
          const cx = (x + 0.5) / cells + r[0] / size, cy = (y + 0.5) / cells + r[1] / size;
          const w = r[2] / size, h = r[3] / size;
          dets.push({ score, cx, cy, w, h, x0: cx - w / 2, y0: cy - h / 2, x1: cx + w / 2, y1: cy + h / 2 });
        }
      }
    }
  };
  layer(s1, b1, 16, 2);
  layer(s2, b2, 8, 6);
  const bestScore = sigmoid(best);
  if (!dets.length) return { face: false, bestScore, box: null, count: 0 };
  // Weighted blending of the boxes overlapping the best one (IoU ≥ 0.3), as Postprocess2 does.
  dets.sort((p, q) => q.score - p.score);
  const top = dets[0];
  let sw = 0, cx = 0, cy = 0, w = 0, h = 0;
  for (const d of dets) {
    if (d !== top && boxIou(top, d) < 0.3) continue;
    sw += d.score; cx += d.cx * d.score; cy += d.cy * d.score; w += d.w * d.score; h += d.h * d.score;
  }
  cx /= sw; cy /= sw; w /= sw; h /= sw;
  const box = { cx, cy, w, h, x0: cx - w / 2, y0: cy - h / 2, x1: cx + w / 2, y1: cy + h / 2 };
  // Faces after the overlap removal (greedy, IoU ≥ 0.3 merged into the higher-scoring box).
  let count = 0;
  const used = new Array(dets.length).fill(false);
  for (let i = 0; i < dets.length; ++i) {
    if (used[i]) continue;
    count += 1;
    for (let j = i + 1; j < dets.length; ++j) if (!used[j] && boxIou(dets[i], dets[j]) >= 0.3) used[j] = true;
  }
  return { face: true, bestScore, box, count };
}

// ---- text detector (DB) -----------------------------------------------------------------------

function decodeMap(byName, list, dims, threshold = THRESHOLDS.textdet) {
  const map = list[0];
  const [, , h, w] = map.dims;
  const mask = new Uint8Array(map.data.length);
  let on = 0;
  for (let i = 0; i < mask.length; ++i) if (map.data[i] > threshold) { mask[i] = 1; on += 1; }
  return { mask, h, w, on };
}

function maskIou(a, b) {
  let inter = 0, union = 0;
  for (let i = 0; i < a.length; ++i) {
    inter += a[i] & b[i];
    union += a[i] | b[i];
  }
  return union ? inter / union : 1;
}

// ---- lines (M-LSD) ----------------------------------------------------------------------------

function decodeLines(byName, list, dims, threshold = THRESHOLDS.lines) {
  const scores = byName.scores ?? list.find((o) => o.dims.at(-1) === 1);
  const offsets = byName.offsets ?? list.find((o) => o.dims.at(-1) === 4);
  const [, h, w] = scores.dims;
  const centres = new Map();  // cell index -> [x0, y0, x1, y1] endpoints in cells
  for (let i = 0; i < h * w; ++i) {
    if (!(scores.data[i] >= threshold)) continue;
    const x = i % w, y = Math.floor(i / w);
    const o = offsets.data.subarray(i * 4, i * 4 + 4);
    centres.set(i, [x + o[0], y + o[1], x + o[2], y + o[3]]);
  }
  return { centres, h, w, maxScore: Math.max(...scores.data) };
}

function linesAgreement(a, b) {
  let inter = 0;
  for (const k of a.centres.keys()) if (b.centres.has(k)) inter += 1;
  const union = a.centres.size + b.centres.size - inter;
  const iou = union ? inter / union : 1;
  // Centres matched within one cell (each candidate centre used once).
  const near = (p, set, used) => {
    const x = p % a.w, y = Math.floor(p / a.w);
    for (let dy = -1; dy <= 1; ++dy) {
      for (let dx = -1; dx <= 1; ++dx) {
        const xx = x + dx, yy = y + dy;
        if (xx < 0 || yy < 0 || xx >= a.w || yy >= a.h) continue;
        const q = yy * a.w + xx;
        if (set.has(q) && !used.has(q)) { used.add(q); return true; }
      }
    }
    return false;
  };
  const used = new Set();
  let matched = 0;
  for (const p of a.centres.keys()) if (near(p, b.centres, used)) matched += 1;
  const f1 = a.centres.size + b.centres.size ? (2 * matched) / (a.centres.size + b.centres.size) : 1;
  let same = 0, shared = 0;
  for (const [k, e] of a.centres) {
    const f = b.centres.get(k);
    if (!f) continue;
    shared += 1;
    // Chebyshev distance between endpoint i of the original's line and endpoint j of the candidate's.
    const d = (i, j) => Math.max(Math.abs(e[2 * i] - f[2 * j]), Math.abs(e[2 * i + 1] - f[2 * j + 1]));
    if ((d(0, 0) <= 1 && d(1, 1) <= 1) || (d(0, 1) <= 1 && d(1, 0) <= 1)) same += 1;
  }
  return { iou, f1, same, shared };
}

// ---- recogniser (CTC) -------------------------------------------------------------------------

function decodeCtc(byName, list) {
  const out = list[0];
  const [, t, c] = out.dims;
  const seq = [];
  let prev = -1, conf = 0, steps = 0;
  for (let s = 0; s < t; ++s) {
    const row = out.data.subarray(s * c, (s + 1) * c);
    let arg = 0;
    for (let k = 1; k < c; ++k) if (row[k] > row[arg]) arg = k;
    if (arg !== 0 && arg !== prev) { seq.push(arg); conf += row[arg]; steps += 1; }
    prev = arg;
  }
  return { seq, conf: steps ? conf / steps : 0 };
}

function editDistance(a, b) {
  const d = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; ++i) {
    let prev = d[0];
    d[0] = i;
    for (let j = 1; j <= b.length; ++j) {
      const cur = d[j];
      d[j] = Math.min(d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return d[b.length];
}

// PaddleOCR's character list: blank, the dictionary's lines, then the space (use_space_char).
export function ctcCharacters(dictionaryPath) {
  const lines = readFileSync(dictionaryPath, 'utf8').split('\n');
  if (lines.at(-1) === '') lines.pop();
  return ['', ...lines.map((l) => l.replace(/\r$/, '')), ' '];
}

// ---- classifier -------------------------------------------------------------------------------

function decodeClass(byName, list) {
  const out = list[0];
  const row = out.data;
  let arg = 0;
  for (let k = 1; k < row.length; ++k) if (row[k] > row[arg]) arg = k;
  return { top: arg, prob: row[arg] };
}

// ---- the figure -------------------------------------------------------------------------------

const DECODERS = { face: decodeFace, textdet: decodeMap, lines: decodeLines, ctc: decodeCtc, classifier: decodeClass };

function readLabels(labels) {
  if (labels == null) return null;
  if (typeof labels === 'string') return JSON.parse(readFileSync(labels, 'utf8'));
  return labels;
}

const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
const round = (x, d = 4) => (Number.isFinite(x) ? Math.round(x * 10 ** d) / 10 ** d : x);

// The figures a model's decoded outputs give on their own, against the labels when known.
function sanity(kind, decoded, labels, chars) {
  const n = decoded.length;
  if (kind === 'face') {
    const found = decoded.filter((d) => d.face).length;
    const s = { faces: found, of: n, meanBestScore: round(mean(decoded.map((d) => d.bestScore))) };
    if (labels) {
      const pos = labels.slice(0, n).filter((l) => l).length;
      s.onFaceCrops = `${decoded.filter((d, i) => d.face && labels[i]).length}/${pos}`;
      s.onOtherCrops = `${decoded.filter((d, i) => d.face && !labels[i]).length}/${n - pos}`;
      s.accuracy = round(mean(decoded.map((d, i) => (d.face === Boolean(labels[i]) ? 1 : 0))));
    }
    return s;
  }
  if (kind === 'classifier') {
    const s = { meanTopProb: round(mean(decoded.map((d) => d.prob))), classes: {} };
    for (const d of decoded) s.classes[d.top] = (s.classes[d.top] ?? 0) + 1;
    if (labels) s.accuracy = round(mean(decoded.map((d, i) => (d.top === labels[i] ? 1 : 0))));
    return s;
  }
  if (kind === 'textdet') {
    const s = { meanPositiveShare: round(mean(decoded.map((d) => d.on / d.mask.length))) };
    if (labels) {
      // Of the rendered text boxes, the share with at least a third of their area above threshold.
      let hit = 0, total = 0;
      decoded.forEach((d, i) => {
        for (const [x0, y0, x1, y1] of labels[i] ?? []) {
          let on = 0, all = 0;
          for (let y = Math.max(0, Math.floor(y0)); y < Math.min(d.h, Math.ceil(y1)); ++y) {
            for (let x = Math.max(0, Math.floor(x0)); x < Math.min(d.w, Math.ceil(x1)); ++x) { on += d.mask[y * d.w + x]; all += 1; }
          }
          total += 1;
          if (all && on / all >= 1 / 3) hit += 1;
        }
      });
      s.textBoxesFound = `${hit}/${total}`;
      s.textBoxRecall = round(total ? hit / total : NaN);
    }
    return s;
  }
  if (kind === 'lines') {
    return { meanCentres: round(mean(decoded.map((d) => d.centres.size)), 1),
      imagesWithLines: decoded.filter((d) => d.centres.size).length, of: n,
      meanMaxScore: round(mean(decoded.map((d) => d.maxScore))) };
  }
  if (kind === 'ctc') {
    const s = { meanConfidence: round(mean(decoded.map((d) => d.conf))), meanLength: round(mean(decoded.map((d) => d.seq.length)), 2) };
    if (chars) {
      const texts = decoded.map((d) => d.seq.map((k) => chars[k] ?? '?').join(''));
      s.examples = texts.slice(0, 4);
      if (labels) {
        s.exactReads = round(mean(texts.map((t, i) => (t === labels[i] ? 1 : 0))));
        s.charAccuracy = round(mean(texts.map((t, i) => 1 - editDistance([...t], [...labels[i]]) / Math.max(1, labels[i].length))));
      }
    }
    return s;
  }
  return {};
}

export async function decodeAll(kind, modelPath, heldoutNpyPath, options = {}) {
  const decode = DECODERS[kind];
  if (!decode) throw new Error(`unknown task kind ${kind} (${Object.keys(DECODERS).join(', ')})`);
  const npy = typeof heldoutNpyPath === 'string' ? loadNpy(heldoutNpyPath) : heldoutNpyPath;
  const threshold = options.threshold ?? THRESHOLDS[kind];
  return runEach(modelPath, npy, options.inputName, options.limit, (byName, list, dims) => decode(byName, list, dims, threshold));
}

export async function taskFigure(kind, originalPath, candidatePath, heldoutNpyPath, options = {}) {
  const npy = loadNpy(heldoutNpyPath);
  const key = JSON.stringify([originalPath, heldoutNpyPath, kind, options.threshold ?? null, options.limit ?? null, options.inputName ?? null]);
  let a = options.cache?.get(key);
  if (!a) {
    a = await decodeAll(kind, originalPath, npy, options);
    options.cache?.set(key, a);
  }
  const b = candidatePath === originalPath ? a : await decodeAll(kind, candidatePath, npy, options);
  const labels = readLabels(options.labels);
  const chars = kind === 'ctc' && options.dictionary ? ctcCharacters(options.dictionary) : null;
  let perSample, extra = {};
  if (kind === 'face') {
    const ious = [];
    perSample = a.map((x, i) => {
      const y = b[i];
      if (x.face !== y.face) return 0;
      if (!x.face) return 1;
      const iou = boxIou(x.box, y.box);
      ious.push(iou);
      return iou >= 0.5 ? 1 : 0;
    });
    extra = { decisionAgreement: round(mean(a.map((x, i) => (x.face === b[i].face ? 1 : 0)))), meanBoxIouWhenBoth: round(mean(ious)) };
  } else if (kind === 'classifier') {
    perSample = a.map((x, i) => (x.top === b[i].top ? 1 : 0));
  } else if (kind === 'textdet') {
    perSample = a.map((x, i) => maskIou(x.mask, b[i].mask));
  } else if (kind === 'lines') {
    const agreements = a.map((x, i) => linesAgreement(x, b[i]));
    perSample = agreements.map((g) => g.iou);
    const shared = agreements.reduce((s, g) => s + g.shared, 0);
    extra = { tolerantF1: round(mean(agreements.map((g) => g.f1))),
      endpointAgreement: round(shared ? agreements.reduce((s, g) => s + g.same, 0) / shared : NaN) };
  } else if (kind === 'ctc') {
    perSample = a.map((x, i) => (x.seq.length === b[i].seq.length && x.seq.every((k, j) => k === b[i].seq[j]) ? 1 : 0));
    extra = { charAgreement: round(mean(a.map((x, i) => 1 - editDistance(x.seq, b[i].seq) / Math.max(1, x.seq.length)))) };
  }
  const agree = perSample.reduce((s, v) => s + v, 0);
  return {
    kind, figure: round(agree / perSample.length), samples: perSample.length, agree: round(agree, 3),
    description: FIGURES[kind], threshold: options.threshold ?? THRESHOLDS[kind] ?? null,
    original: sanity(kind, a, labels, chars), candidate: sanity(kind, b, labels, chars),
    outputDims: { original: a.outputDims, candidate: b.outputDims },
    extra, perSample: perSample.map((v) => round(v, 3)),
  };
}
