// The check's task figures (wasm/shared/check.mjs, decisions and the verdict): whether a candidate still
// does the original's task, for outputs whose shape says what they are. A probability map's IoU
// above the threshold, per-anchor detect decisions, greedy CTC sequences, and top-1 of class
// scores; first in the verdict on samples, after the distance on random inputs. The models
// (tests/fixtures/make_task_outputs.py) have an output of each kind; the candidate is the same
// graph with noisy weights. Every figure is recomputed here from onnxruntime-node's own outputs,
// by a reading of the rules written apart from the check's.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import ort from 'onnxruntime-node';

import { compareTensor, decisions, verdict } from '../../wasm/shared/check.mjs';
import { holdOut } from '../../wasm/shared/repair.mjs';
import { CLIS, FIXTURES, fixture, numpyValues, scratch } from './helpers.mjs';

const dir = scratch();
const TASKS = join(FIXTURES, 'tasks');
const ORIGINAL = join(TASKS, 'task_outputs.onnx');
const CANDIDATE = join(TASKS, 'task_outputs_perturbed.onnx');
const SAMPLES = join(TASKS, 'task_samples.npy');
const samples = numpyValues(SAMPLES, Float32Array, dir);
const N = 32;

// Each model's outputs on all samples, run here in one batch.
async function outputsOf(path) {
  const session = await ort.InferenceSession.create(path, { graphOptimizationLevel: 'disabled', intraOpNumThreads: 1 });
  const out = await session.run({ x: new ort.Tensor('float32', samples, [N, 3, 8, 8]) });
  await session.release();
  return Object.fromEntries(Object.entries(out).map(([name, t]) => [name, { values: Array.from(t.data), dims: [...t.dims] }]));
}
const original = await outputsOf(ORIGINAL), candidate = await outputsOf(CANDIDATE);

// The rules of docs/check.md, read apart from check.mjs: sets of marked pixels, indexOf(max).
const rows = (values, size) => Array.from({ length: values.length / size }, (_, i) => values.slice(i * size, (i + 1) * size));
const top = (row) => row.indexOf(Math.max(...row));

// A float32 map is compared with the threshold in float32, as numpy compares it.
function expectedMap(name, given) {
  const a = original[name], b = candidate[name], threshold = Math.fround(given);
  const size = a.values.length / a.dims[0];
  let iou = 0, alike = 0;
  const sa = rows(a.values, size), sb = rows(b.values, size);
  for (let s = 0; s < sa.length; ++s) {
    const x = new Set(sa[s].flatMap((v, i) => (v > threshold ? [i] : [])));
    const y = new Set(sb[s].flatMap((v, i) => (v > threshold ? [i] : [])));
    const both = [...x].filter((i) => y.has(i)).length, either = new Set([...x, ...y]).size;
    iou += either ? both / either : 1;
    alike += size - (either - both);
  }
  return { mean_iou: iou / sa.length, pixel_agreement: alike / a.values.length };
}

function expectedAnchors(name, logits) {
  const a = rows(original[name].values, 16), b = rows(candidate[name].values, 16);
  // A logit detects above 0 (a sigmoid above 0.5), a probability above 0.5.
  const detects = (v) => (logits ? v > 0 : v > 0.5);
  const count = (test) => a.filter((_, s) => test(a[s], b[s])).length;
  let alike = 0;
  for (let s = 0; s < N; ++s) for (let i = 0; i < 16; ++i) alike += detects(a[s][i]) === detects(b[s][i]);
  return {
    decision_agreement: count((x, y) => detects(Math.max(...x)) === detects(Math.max(...y))) / N,
    top_anchor_agreement: count((x, y) => top(x) === top(y)) / N,
    anchor_agreement: alike / (N * 16),
    detected: [a.filter((x) => detects(Math.max(...x))).length / N, b.filter((y) => detects(Math.max(...y))).length / N],
  };
}

// Greedy CTC: each step's top class; a class equal to the previous step's is the same symbol; 0 is the blank.
const ctc = (steps) => steps.filter((k, t) => k !== 0 && k !== steps[t - 1]).join(' ');
function expectedSequence(name) {
  const [, T, C] = original[name].dims;
  const a = rows(original[name].values, T * C).map((s) => rows(s, C).map(top));
  const b = rows(candidate[name].values, T * C).map((s) => rows(s, C).map(top));
  let steps = 0;
  for (let s = 0; s < N; ++s) for (let t = 0; t < T; ++t) steps += a[s][t] === b[s][t];
  return { sequence_agreement: a.filter((x, s) => ctc(x) === ctc(b[s])).length / N, step_agreement: steps / (N * T) };
}

const expectedTop1 = (name) => rows(original[name].values, 4).filter((x, s) => top(x) === top(rows(candidate[name].values, 4)[s])).length / N;

// The figures must be neither all nor nothing, or they could not show a rule broken.
const between = (x, what) => assert.ok(x > 0 && x < 1, `${what}: ${x}`);

const tensor = (values, dims) => ({ type: 'float32', dims, data: Float32Array.from(values) });
const taskOf = (a, b, dims, options) => decisions(compareTensor('y', tensor(a, dims), tensor(b, dims)), tensor(a, dims), tensor(b, dims), undefined, options).task;

test('a map: the mean IoU of the pixels above the threshold (1 where neither marks any), the pixels decided alike', () => {
  // Sample 0 marks {1, 2} against {2, 3}: IoU 1/3; sample 1 marks nothing in either (0.3 is not
  // above 0.3, in float32 too): 1.
  const a = [0.1, 0.5, 0.9, 0.2, 0, 0.1, 0.2, 0.3], b = [0.1, 0.2, 0.9, 0.4, 0, 0.3, 0.1, 0.25];
  const map = taskOf(a, b, [2, 1, 2, 2]);
  assert.deepEqual(map, { kind: 'map', samples: 2, layout: 'nchw', threshold: 0.3, mean_iou: (1 / 3 + 1) / 2, pixel_agreement: 6 / 8, marked: [2 / 8, 2 / 8] });
  // The threshold given is the one applied: above 0.45 sample 0 marks {1, 2} against {2}.
  assert.equal(taskOf(a, b, [2, 1, 2, 2], { mapThreshold: 0.45 }).mean_iou, (1 / 2 + 1) / 2);
  assert.equal(taskOf(a, b, [2, 2, 2, 1]).layout, 'nhwc');
  // Values outside [0, 1] are not a probability map; more than one channel is not one map.
  assert.equal(taskOf([...a.slice(0, 7), 1.5], b, [2, 1, 2, 2]), undefined);
  assert.equal(taskOf(a, b, [1, 2, 2, 2]), undefined);
});

test('anchors: the best anchor decides a sample; logits go through a sigmoid, probabilities do not', () => {
  // Probabilities: sample 0 detects in both (0.7, 0.9) at other anchors; sample 1 in the candidate only.
  const p = taskOf([0.7, 0.2, 0.1, 0.4, 0.3, 0.2], [0.1, 0.9, 0.1, 0.6, 0.3, 0.2], [2, 3, 1]);
  assert.deepEqual(p, {
    kind: 'anchors', samples: 2, threshold: 0.5, sigmoid: false, decision_agreement: 0.5, top_anchor_agreement: 0.5,
    anchor_agreement: 3 / 6, detected: [0.5, 1],
  });
  // Logits (values outside [0, 1]): 0.3 is a probability of 0.57, a detection; as a probability it is not.
  const l = taskOf([-2, 0.3, -1, -3, -2, -5], [-2, -0.3, -1, -3, -2, -5], [2, 3, 1]);
  assert.equal(l.sigmoid, true);
  assert.deepEqual([l.decision_agreement, l.top_anchor_agreement, l.detected], [0.5, 1, [0.5, 0]]);
});

test('a sequence: greedy CTC (repeats collapsed, then blanks removed) and each step\'s top class', () => {
  const steps = (classes, C = 3) => classes.flatMap((k) => Array.from({ length: C }, (_, c) => (c === k ? 1 : 0)));
  // 1 1 0 1 reads "1 1"; 1 1 1 1 reads "1"; 2 0 0 2 and 2 2 0 2 both read "2 2".
  const s = taskOf(steps([1, 1, 0, 1, 2, 0, 0, 2]), steps([1, 1, 1, 1, 2, 2, 0, 2]), [2, 4, 3]);
  assert.deepEqual(s, { kind: 'sequence', samples: 2, blank: 0, sequence_agreement: 0.5, step_agreement: 6 / 8 });
});

test('the check on samples: every output\'s task figures are what the models\' own outputs give', async () => {
  // converter.check() itself: createConverter() and createSyncConverter() both hand it over.
  const { check } = await import('../../wasm/node/check_node.mjs');
  const lattice = { check };
  const report = await lattice.check(ORIGINAL, CANDIDATE, { inputs: SAMPLES });
  const out = (name) => report.outputs.find((o) => o.name === name);
  for (const name of ['maps', 'maps_nhwc']) {
    const { task } = out(name);
    assert.equal(task.kind, 'map', name);
    assert.equal(task.samples, N);
    assert.equal(task.threshold, 0.3);
    assert.equal(task.layout, name === 'maps' ? 'nchw' : 'nhwc');
    const expected = expectedMap(name, 0.3);
    assert.ok(Math.abs(task.mean_iou - expected.mean_iou) < 1e-12, `${name}: ${task.mean_iou} against ${expected.mean_iou}`);
    assert.equal(task.pixel_agreement, expected.pixel_agreement, name);
    between(task.mean_iou, `${name} IoU`);
  }
  assert.equal(out('raw_map').task, undefined, 'a map of values outside [0, 1] has no task figures');
  for (const [name, logits] of [['scores', true], ['probs', false]]) {
    const { task } = out(name);
    assert.equal(task.kind, 'anchors', name);
    assert.equal(task.sigmoid, logits, name);
    const expected = expectedAnchors(name, logits);
    for (const [key, value] of Object.entries(expected)) assert.deepEqual(task[key], value, `${name}.${key}`);
    between(task.decision_agreement, `${name} decisions`);
    between(task.top_anchor_agreement, `${name} best anchors`);
  }
  const { task: sequence } = out('ctc');
  assert.equal(sequence.kind, 'sequence');
  const expected = expectedSequence('ctc');
  assert.equal(sequence.sequence_agreement, expected.sequence_agreement);
  assert.equal(sequence.step_agreement, expected.step_agreement);
  between(sequence.sequence_agreement, 'sequences');
  assert.ok(sequence.step_agreement > sequence.sequence_agreement, 'a sequence differs where any of its steps does');
  const logits = out('logits');
  // The original's mean top-1 probability (its softmax: these are logits), for the data's line.
  const classes = original.logits.dims[1];
  const confidence = rows(original.logits.values, classes).reduce((sum, row) => {
    const top = Math.max(...row);
    return sum + 1 / row.reduce((z, v) => z + Math.exp(v - top), 0);
  }, 0) / N;
  const { original_confidence: given, ...task } = logits.task;
  assert.deepEqual(task, { kind: 'classes', samples: N, top1_agreement: expectedTop1('logits') });
  assert.ok(Math.abs(given - confidence) < 1e-12, `${given} against ${confidence}`);
  assert.equal(logits.top1_agreement, logits.task.top1_agreement, 'top1_agreement stays where it was');

  // On samples, each output's task figures are its first line, before the distance.
  const lines = verdict(report, 'converted');
  const first = (name) => lines.find((l) => l.includes(`output '${name}'`));
  assert.match(first('maps'), new RegExp(`^output 'maps' marks the regions the original marks \\(pixels above 0\\.3\\) with a mean IoU of [\\d.]+ on ${N} samples of task_samples\\.npy; [\\d.]+ % of pixels decided alike$`));
  assert.match(first('scores'), new RegExp(`^output 'scores' detects as the original on ${(100 * out('scores').task.decision_agreement).toFixed(1)} % of ${N} samples of task_samples\\.npy \\(the best anchor's score, after a sigmoid, above 0\\.5 or not\\); the same best anchor on`));
  assert.match(first('ctc'), new RegExp(`^output 'ctc' reads the same sequence as the original on ${(100 * sequence.sequence_agreement).toFixed(1)} % of ${N} samples of task_samples\\.npy \\(greedy CTC, blank 0\\); [\\d.]+ % of steps take the same class$`));
  assert.match(first('logits'), /^output 'logits' decides as the original on [\d.]+ % of 32 samples of task_samples\.npy$/);
  assert.match(first('raw_map'), /^the Lattice rewrites change output 'raw_map' by up to/);

  // The threshold given is the one applied and reported.
  const strict = await lattice.check(ORIGINAL, CANDIDATE, { inputs: SAMPLES, mapThreshold: 0.6 });
  const map = strict.outputs.find((o) => o.name === 'maps').task;
  assert.equal(map.threshold, 0.6);
  const at = expectedMap('maps', 0.6);
  assert.ok(Math.abs(map.mean_iou - at.mean_iou) < 1e-12 && map.pixel_agreement === at.pixel_agreement, JSON.stringify(map));
  assert.notEqual(map.pixel_agreement, out('maps').task.pixel_agreement);
  for (const bad of [1.5, -0.1, '0.3']) {
    await assert.rejects(lattice.check(ORIGINAL, CANDIDATE, { mapThreshold: bad }), { code: 'ERR_ONNX_LATTICE_OPTIONS', message: /mapThreshold must be a number from 0 to 1/ });
  }

  // On random inputs the figures are computed, but say nothing of the task: the distance comes first.
  const random = await lattice.check(ORIGINAL, CANDIDATE, { inputShapes: { x: [4, 3, 8, 8] } });
  const said = verdict(random, 'converted');
  for (const name of ['maps', 'scores', 'ctc', 'logits']) {
    const o = random.outputs.find((x) => x.name === name);
    assert.equal(o.task.samples, 4, name);
    const mine = said.filter((l) => l.includes(`output '${name}'`));
    assert.equal(mine.length, 2, name);
    assert.match(mine[0], /^the Lattice rewrites change output/, name);
    assert.match(mine[1], / 4 random inputs.*; random inputs say nothing of the task$/, name);
  }
});

test('Node CLI: --map-threshold sets the threshold of the map figures; out of [0, 1] it is a usage error', () => {
  const r = CLIS.node(['check', ORIGINAL, CANDIDATE, '--inputs', SAMPLES, '--map-threshold', '0.6', '--json']);
  assert.equal(r.status, 1, r.stderr);
  const map = JSON.parse(r.stdout).outputs.find((o) => o.name === 'maps').task;
  assert.equal(map.threshold, 0.6);
  assert.equal(map.pixel_agreement, expectedMap('maps', 0.6).pixel_agreement);
  const text = CLIS.node(['check', ORIGINAL, CANDIDATE, '--inputs', SAMPLES]);
  assert.match(text.stdout, /^ {2}map maps: mean IoU [\d.]+ above 0\.3, [\d.]+ % of pixels alike; 32 samples$/m);
  assert.match(text.stdout, /^ {2}sequence ctc: the same CTC sequence on [\d.]+ %, [\d.]+ % of steps alike; 32 samples$/m);
  for (const value of ['1.5', '-1', 'x']) {
    const bad = CLIS.node(['check', ORIGINAL, CANDIDATE, '--map-threshold', value]);
    assert.equal(bad.status, 2, `${value}: ${bad.stderr}`);
    assert.match(bad.stderr, /--map-threshold needs a number/);
  }
});

test('after a repair: samples held out of the fit are said to be; the advice to check on such samples only when they were not', () => {
  const calibration = { feeds: { x: { type: 'float32', dims: [8, 1], data: new Float32Array(8) } }, samples: 8, source: 'cal.npy' };
  const [fit, held] = holdOut(calibration);
  assert.equal(fit.heldOut, undefined);
  assert.equal(held.heldOut, true);
  const output = { name: 'y', comparable: true, pass: false, max_abs: 3, shape_original: [2, 4], stats_original: { min: 0, max: 10 } };
  const withTask = { ...output, top1_agreement: 0.5, task: { kind: 'classes', samples: 2, top1_agreement: 0.5 } };
  const line = (o, inputs) => verdict({ inputs: { batch_shapes: {}, ...inputs }, outputs: [o] }, 'repaired').find((l) => l.startsWith('after the repair'));
  const heldOut = { source: 'cal.npy [6, 8), held out from the repair', samples: 2, held_out: true };
  assert.equal(line(withTask, heldOut), 'after the repair, output \'y\' differs from the original\'s by up to 3 (30 % of its range): the agreement above, on 2 held-out samples the repair did not fit, is what counts');
  assert.equal(line(output, heldOut), 'after the repair, output \'y\' differs from the original\'s by up to 3 (30 % of its range) on 2 held-out samples the repair did not fit');
  assert.equal(line(withTask, { source: 'mine.npy', samples: 2 }), 'after the repair, output \'y\' differs from the original\'s by up to 3 (30 % of its range): the agreement above is what counts, if the repair did not fit these samples');
  for (const inputs of [{ source: 'mine.npy', samples: 2 }, { source: 'random', samples: 2, seed: 0, range: [-1, 1] }]) {
    assert.match(line(output, inputs), /: check it on samples the repair did not fit$/);
  }
  // On random inputs top-1 does not count either.
  assert.match(line(withTask, { source: 'random', samples: 2, seed: 0, range: [-1, 1] }), /: check it on samples the repair did not fit$/);
});

test('Node CLI: convert --repair --check says when its samples were held out of the fit, and advises only when not', () => {
  const calibration = join(dir, 'calibration.npy'), other = join(dir, 'other.npy');
  const py = spawnSync('/usr/bin/python3', ['-c', `import numpy as np
rng = np.random.default_rng(0)
np.save('${calibration}', rng.uniform(-1, 1, (8, 3, 64, 64)).astype(np.float32))
np.save('${other}', rng.uniform(-1, 1, (4, 3, 64, 64)).astype(np.float32))`], { encoding: 'utf8' });
  assert.equal(py.status, 0, py.stderr);
  const run = (...extra) => {
    const out = join(dir, 'repaired.onnx'), report = join(dir, 'repaired.json');
    const r = CLIS.node(['convert', fixture('sample.onnx'), '-o', out, '--report', report, '--repair', '--calibration', calibration, '--check', ...extra]);
    assert.equal(r.status, 0, r.stderr);
    const line = r.stdout.split('\n').find((l) => l.startsWith('check: after the repair'));
    return { line, inputs: JSON.parse(readFileSync(report, 'utf8')).check.converted.inputs };
  };
  // The calibration's last quarter, which the fit never saw.
  const quarter = run();
  assert.equal(quarter.inputs.held_out, true);
  assert.match(quarter.line, /^check: after the repair, output 'output' differs from the original's by up to [\d.e+-]+ \(\d+ % of its range\) on 2 held-out samples the repair did not fit$/);
  // Samples of the check's own, none of the calibration's files.
  const apart = run('--inputs', other);
  assert.equal(apart.inputs.held_out, true);
  assert.match(apart.line, / on 4 held-out samples the repair did not fit$/);
  // The calibration itself: the repair fitted these samples, and the advice stays.
  const fitted = run('--inputs', calibration);
  assert.equal(fitted.inputs.held_out, undefined);
  assert.match(fitted.line, /: check it on samples the repair did not fit$/);
});
