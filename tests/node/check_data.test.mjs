// The check on the user's own samples: a CNN trained on real handwritten digits during the test
// set-up (tests/fixtures/make_trained.py), converted for Lattice, checked on held-out samples it
// never saw, as .npy, .npz, a folder of PNG images and in-memory tensors. Every figure the check
// reports (top-1 agreement, both accuracies) is recomputed here independently: numpy writes the
// raw values, onnxruntime-node runs both models directly.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import ort from 'onnxruntime-node';

import { createSyncConverter } from '../../wasm/index.mjs';
import { CLIS, TRAINED, numpyValues, scratch } from './helpers.mjs';

const lattice = await createSyncConverter();
const dir = scratch();
const MODEL = join(TRAINED, 'digits.onnx');
const CONVERTED = join(dir, 'digits.lattice.onnx');
const converted = CLIS.node(['convert', MODEL, '-o', CONVERTED, '--quiet']);
assert.equal(converted.status, 0, converted.stderr);

// numpy's own values, as raw little-endian bytes: no reader of ours in between.
const images = numpyValues(join(TRAINED, 'heldout.npy'), Float32Array, dir);
const labels = Array.from(numpyValues(join(TRAINED, 'heldout_labels.npy'), BigInt64Array, dir), Number);
const N = labels.length;

// Each model's top-1 class per sample, run here sample by sample.
async function classes(path, count = N) {
  const session = await ort.InferenceSession.create(path, { graphOptimizationLevel: 'disabled', intraOpNumThreads: 1 });
  const each = 32 * 32;
  const out = [];
  for (let i = 0; i < count; ++i) {
    const { logits } = await session.run({ image: new ort.Tensor('float32', images.slice(i * each, (i + 1) * each), [1, 1, 32, 32]) });
    out.push(logits.data.indexOf(Math.max(...logits.data)));
  }
  await session.release();
  return out;
}
const share = (xs) => xs.filter(Boolean).length / xs.length;
const before = await classes(MODEL), after = await classes(CONVERTED);
const expected = {
  agreement: share(before.map((c, i) => c === after[i])),
  original: share(before.map((c, i) => c === labels[i])),
  candidate: share(after.map((c, i) => c === labels[i])),
};

function logits(report) {
  const o = report.outputs.find((x) => x.name === 'logits');
  assert.ok(o, 'the logits are compared');
  return o;
}

test('the trained model does its job, and the default conversion takes it to chance (the reason for this data)', () => {
  assert.ok(expected.original > 0.97, `held-out accuracy ${expected.original}`);
  assert.ok(expected.agreement < 0.5, `top-1 agreement after conversion ${expected.agreement}`);
});

test('convert --check --inputs FILE.npz: top-1 agreement and both accuracies, as onnxruntime computes them', () => {
  const report = join(dir, 'npz.json');
  const r = CLIS.node(['convert', MODEL, '-o', join(dir, 'npz.onnx'), '--report', report, '--check', '--inputs', join(TRAINED, 'heldout.npz')]);
  assert.equal(r.status, 0, r.stderr);
  const { check } = JSON.parse(readFileSync(report, 'utf8'));
  const o = logits(check.converted);
  assert.equal(o.top1_agreement, expected.agreement);
  assert.deepEqual(o.accuracy, { original: expected.original, candidate: expected.candidate });
  assert.deepEqual(check.converted.inputs.source, 'heldout.npz');
  assert.equal(check.converted.inputs.samples, N);
  assert.equal(check.converted.inputs.labels, N);
  assert.equal(check.converted.inputs.batches, Math.ceil(N / 32), 'a dynamic batch runs in batches of up to 32');
  // The folds are exact on real data too, and decide every sample the same.
  assert.equal(check.fold_only.pass, true);
  assert.equal(logits(check.fold_only).top1_agreement, 1);
  // The summary's first word on the output is the agreement, before any distance.
  const lines = r.stdout.split('\n').filter((l) => l.includes("'logits'") && l.startsWith('check: '));
  const pct = (x) => `${(100 * x).toFixed(1)} %`;
  assert.match(lines.at(-2), new RegExp(`decides as the original on ${pct(expected.agreement)} of ${N} samples of heldout.npz \\(accuracy ${pct(expected.original)} → ${pct(expected.candidate)}\\)`));
  assert.match(lines.at(-1), /the Lattice rewrites change output 'logits' by up to/);
});

test('check --inputs FILE.npy --labels FILE.npy: the same figures, printed first', () => {
  const r = CLIS.node(['check', MODEL, CONVERTED, '--inputs', join(TRAINED, 'heldout.npy'), '--labels', join(TRAINED, 'heldout_labels.npy'), '--json']);
  assert.equal(r.status, 1, 'the rewrites change the output');
  const report = JSON.parse(r.stdout);
  assert.equal(logits(report).top1_agreement, expected.agreement);
  assert.deepEqual(logits(report).accuracy, { original: expected.original, candidate: expected.candidate });
  const text = CLIS.node(['check', MODEL, CONVERTED, '--inputs', join(TRAINED, 'heldout.npy')]);
  assert.match(text.stdout.split('\n')[0], new RegExp(`\\(${N} samples of heldout.npy in ${Math.ceil(N / 32)} batches like image 32×1×32×32, rtol`));
  assert.match(text.stdout.split('\n')[1], /^ {2}top-1 logits: the same class on [\d.]+ % of 400 samples$/);
});

test('the API takes tensors in memory, and a model with a fixed batch of 1 runs them one at a time', async () => {
  const report = await lattice.check(MODEL, CONVERTED, { inputs: { image: { data: images, dims: [N, 1, 32, 32] } }, labels });
  assert.equal(logits(report).top1_agreement, expected.agreement);
  assert.equal(report.inputs.source, '(in memory)');
  // Pinned to a batch of 1, the conversion runs each sample alone; the figures are the same.
  const pinned = join(dir, 'pinned.onnx');
  assert.equal(CLIS.node(['convert', MODEL, '-o', pinned, '--quiet', '--input-shape', 'image:1,1,32,32']).status, 0);
  const one = await lattice.check(MODEL, pinned, { inputs: join(TRAINED, 'heldout.npz') });
  assert.equal(one.inputs.batches, N);
  assert.deepEqual(one.inputs.batch_shapes, { image: [1, 1, 32, 32] });
  assert.equal(logits(one).top1_agreement, expected.agreement);
});

test('a folder of PNG images with the [0, 2) scale gives the .npy figures for the same samples', async () => {
  const pngs = readdirSync(join(TRAINED, 'heldout_png')).sort();
  const count = pngs.length;
  const fromImages = await lattice.check(MODEL, CONVERTED, { inputs: join(TRAINED, 'heldout_png'), preprocessing: { scale: '0,2' } });
  const fromArrays = await lattice.check(MODEL, CONVERTED, { inputs: { image: { data: images.slice(0, count * 1024), dims: [count, 1, 32, 32] } } });
  assert.equal(fromImages.inputs.samples, count);
  assert.equal(fromImages.inputs.preprocessing.scale, '0,2');
  assert.equal(logits(fromImages).top1_agreement, logits(fromArrays).top1_agreement);
  assert.equal(logits(fromImages).max_abs, logits(fromArrays).max_abs, 'the same tensors, to the bit');
  // The CLI's flags say the same.
  const r = CLIS.node(['check', MODEL, CONVERTED, '--inputs', join(TRAINED, 'heldout_png'), '--image-scale', '0,2', '--json']);
  assert.equal(JSON.parse(r.stdout).outputs[0].top1_agreement, logits(fromArrays).top1_agreement);
});

test('the original\'s own accuracy on the samples comes first: under a scale it was not trained for, the verdict says so', () => {
  // The held-out PNGs and their labels (each file is named INDEX_LABEL.png).
  const folder = join(dir, 'labelled_png');
  mkdirSync(folder);
  const pngs = readdirSync(join(TRAINED, 'heldout_png')).sort();
  for (const f of pngs) cpSync(join(TRAINED, 'heldout_png', f), join(folder, f));
  // Their labels in the folder with them, under a name of their own.
  const labelsFile = join(folder, 'digit_classes.npy');
  const py = spawnSync('/usr/bin/python3', ['-c', 'import numpy, sys; numpy.save(sys.argv[1], numpy.array([int(a) for a in sys.argv[2:]], numpy.int64))',
    labelsFile, ...pngs.map((f) => f.slice(5, -4))]);
  assert.equal(py.status, 0, py.stderr);
  const run = (scale) => {
    const r = CLIS.node(['convert', MODEL, '-o', join(dir, `scale-${scale}.onnx`), '--check', '--inputs', folder, '--image-scale', scale]);
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.split('\n').find((l) => l.startsWith('check: data: '));
  };
  // Trained on u8 / 128 (Lattice's [0, 2)): read as [0, 1) it fails its own labels, and is told.
  const wrong = run('0,1'), right = run('0,2');
  const accuracyOf = (line) => Number(/the original gets ([\d.]+) %/.exec(line)[1]);
  assert.ok(accuracyOf(wrong) < 90 && accuracyOf(right) > 95, `${wrong} / ${right}`);
  assert.match(wrong, /: if it does better on its own data, these samples are not read as it expects \(images scaled to 0,1\)/);
  assert.doesNotMatch(right, /not read as it expects/);
  // Labels in the folder and given too: one of them.
  const both = CLIS.node(['check', MODEL, CONVERTED, '--inputs', folder, '--labels', labelsFile]);
  assert.equal(both.status, 2);
  assert.match(both.stderr, /holds its images' labels \(digit_classes.npy\) and labels are given too: give one of them/);
});

test('colour images into a one-channel model: fed their luma, and said', () => {
  const folder = join(dir, 'colour_png');
  mkdirSync(folder);
  const py = spawnSync('/usr/bin/python3', ['-c', `import sys
from PIL import Image
for i, colour in enumerate([(200, 30, 30), (30, 200, 30), (128, 128, 128)]):
    Image.new('RGB', (32, 32), colour).save(f'{sys.argv[1]}/{i}.png')`, folder], { encoding: 'utf8' });
  assert.equal(py.status, 0, py.stderr);
  const r = CLIS.node(['convert', MODEL, '-o', join(dir, 'colour.onnx'), '--check', '--inputs', folder]);
  assert.equal(r.status, 0, r.stderr);
  // Two of the three are in colour (the grey one is not), and the summary no longer says RGB.
  assert.match(r.stdout, /check: data: 2 of the 3 images are in colour, and the model takes one channel: it was fed their luma/);
  assert.match(r.stdout, /scaled to 0,1, one channel \(the luma of 2 colour images\)/);
  assert.doesNotMatch(r.stdout, /, RGB/);
});

test('bad samples are usage errors naming the file and what is wrong; nothing is compared', () => {
  const wrong = join(dir, 'rgb.npy');
  const py = spawnSync('/usr/bin/python3', ['-c', 'import numpy, sys; numpy.save(sys.argv[1], numpy.zeros((4, 3, 32, 32), numpy.float32))', wrong]);
  assert.equal(py.status, 0);
  const r = CLIS.node(['check', MODEL, CONVERTED, '--inputs', wrong]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /rgb\.npy: shape \[4, 3, 32, 32\] does not fit input 'image'/);
  assert.equal(r.stdout, '');
  const missing = CLIS.node(['check', MODEL, CONVERTED, '--inputs', join(dir, 'nowhere.npy')]);
  assert.equal(missing.status, 2);
  assert.match(missing.stderr, /nowhere\.npy/);
  const text = join(dir, 'notes.npy');
  writeFileSync(text, 'not numpy at all');
  const bad = CLIS.node(['check', MODEL, CONVERTED, '--inputs', text]);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /notes\.npy: not a \.npy file/);
  const labelsWrong = CLIS.node(['check', MODEL, CONVERTED, '--inputs', join(TRAINED, 'heldout.npy'), '--labels', join(TRAINED, 'calibration.npy')]);
  assert.equal(labelsWrong.status, 2);
  assert.match(labelsWrong.stderr, /calibration\.npy/);
  // The image flags take only their words, in both CLIs, before any work.
  for (const cli of ['native', 'node']) {
    const word = CLIS[cli](['check', MODEL, CONVERTED, '--image-scale', '0,255']);
    assert.equal(word.status, 2);
    assert.match(word.stderr, /--image-scale takes 0,1, 0,2, -1,1, imagenet, not '0,255'/);
    const orphan = CLIS[cli](['convert', MODEL, '-o', join(dir, 'x.onnx'), '--inputs', join(TRAINED, 'heldout.npy')]);
    assert.equal(orphan.status, 2);
    assert.match(orphan.stderr, /are the check's: add --check/);
  }
});
