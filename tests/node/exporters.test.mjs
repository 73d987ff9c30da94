// CNNs trained on real digits in the graph shapes other exporters write
// (tests/fixtures/make_exporters.py): tf2onnx's (an NHWC input behind a Transpose, TF-SAME
// asymmetric pads, biases in every Conv, a stride-2 depthwise conv, a Pad whose pads are a Concat
// of constants, a Concat of two paths) and paddle2onnx's (weights in Constant nodes, BatchNorm not
// folded, SE blocks with HardSwish and HardSigmoid, a (2, 1) stride, a batch of dim_value -1).
// Each converts, repairs from 128 samples and is judged by the Node CLI's check on 400 held-out
// samples, whose accuracy this test reads back from an independent onnxruntime run.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import ort from 'onnxruntime-node';

import { readNpy } from '../../wasm/shared/npy.mjs';
import { CLIS, scratch } from './helpers.mjs';

const DIR = process.env.ONNX_LATTICE_EXPORTERS ?? join(process.env.ONNX_LATTICE_CACHE ?? join(process.env.HOME, '.cache/onnx-lattice'), 'exporters');
const meta = JSON.parse(readFileSync(join(DIR, 'exporters.json'), 'utf8'));
const dir = scratch();
const npy = (file) => readNpy(new Uint8Array(readFileSync(join(DIR, file))), file);
const labels = Array.from(npy(meta.files.labels).data, Number);

// Held-out accuracy of a model on the samples of its layout, in onnxruntime.
async function accuracy(model, layout, inputName) {
  const { data, shape: dims } = npy(meta.files[layout].heldout);
  const session = await ort.InferenceSession.create(model, { graphOptimizationLevel: 'disabled', intraOpNumThreads: 1 });
  let right = 0;
  const each = data.length / dims[0];
  for (let i = 0; i < dims[0]; ++i) {
    const out = Object.values(await session.run({ [inputName]: new ort.Tensor('float32', data.slice(i * each, (i + 1) * each), [1, ...dims.slice(1)]) }))[0];
    const row = Array.from(out.data);
    if (row.indexOf(Math.max(...row)) === labels[i]) right += 1;
  }
  await session.release();
  return right / dims[0];
}

for (const [file, model] of Object.entries(meta.models)) {
  test(`${file} (${model.style}): converted and repaired from 128 samples, within 2 points of the original's held-out accuracy`, async () => {
    const { layout, name } = model.input;
    const out = join(dir, file.replace('.onnx', '.repaired.onnx')), report = `${out}.json`;
    const r = CLIS.node(['convert', join(DIR, file), '-o', out, '--report', report, '--repair',
      '--calibration', join(DIR, meta.files[layout].calibration), '--check', '--inputs', join(DIR, meta.files[layout].heldout),
      '--labels', join(DIR, meta.files.labels)]);
    assert.equal(r.status, 0, r.stderr);
    const original = await accuracy(join(DIR, file), layout, name);
    const repaired = await accuracy(out, layout, name);
    assert.ok(repaired >= original - 0.02, `held-out accuracy ${original} → ${repaired}`);
    const written = JSON.parse(readFileSync(report, 'utf8'));
    assert.equal(written.check.converted.outputs[0].accuracy.candidate, repaired, 'the check says what onnxruntime says');
    // Every layer is refitted or kept (tf2onnx's Pad -> stride-2 Conv pair is the target's as it is).
    assert.deepEqual(written.repair.left, []);
  });
}

test('a dynamic model pinned with --input-shape repairs as well as its static twin (within 1 point)', async () => {
  // A model whose height and width are dynamic (a dynamic batch alone changes no shape the plan compares).
  const [file, model] = Object.entries(meta.models).find(([, m]) => m.input.shape.slice(1).some((d) => typeof d !== 'number' || d < 0));
  const { layout, name } = model.input;
  const pin = ['--input-shape', `${name}:${layout === 'NHWC' ? '1,32,32,1' : '1,1,32,32'}`];
  const calibration = ['--calibration', join(DIR, meta.files[layout].calibration)];
  // The static twin: the original with its input pinned and nothing else changed, then converted.
  const twin = join(dir, `static.${file}`);
  assert.equal(CLIS.node(['convert', join(DIR, file), '-o', twin, '--target', 'none', '--no-fold-bn', '--quiet', ...pin]).status, 0);
  const repairs = {};
  for (const [label, source, extra] of [['pinned', join(DIR, file), pin], ['static', twin, []]]) {
    const out = join(dir, `${label}.repaired.onnx`);
    const r = CLIS.node(['convert', source, '-o', out, '--report', `${out}.json`, '--quiet', '--repair', ...calibration, ...extra]);
    assert.equal(r.status, 0, r.stderr);
    repairs[label] = { accuracy: await accuracy(out, layout, name), report: JSON.parse(readFileSync(`${out}.json`, 'utf8')).repair };
  }
  assert.ok(Math.abs(repairs.pinned.accuracy - repairs.static.accuracy) <= 0.01, `pinned ${repairs.pinned.accuracy}, static ${repairs.static.accuracy}`);
  // Pinning costs no refit: the same layers refitted, none left for want of a shape.
  const refitted = (label) => repairs[label].report.layers.filter((l) => l.refitted).map((l) => l.node);
  assert.deepEqual(refitted('pinned'), refitted('static'));
  assert.deepEqual(repairs.pinned.report.left, repairs.static.report.left);
});
