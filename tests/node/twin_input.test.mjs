// The repair under FPQ fits each layer on its input as the FPQ twin computes it (twin_input.mjs):
// the twin's values of a tensor, taken back into the model's own units from those of the range fit,
// which divided each channel by its scale.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'node:test';
import ort from 'onnxruntime-node';

import { createEngine, joinParts } from '../../wasm/node/engine.mjs';
import { fpqTwin } from '../../wasm/node/fpq.mjs';
import { feedBatches, runModel } from '../../wasm/shared/check.mjs';
import { TWIN_INPUT_LEAST_SQNR_DB, twinInput, twinInputsRefused } from '../../wasm/shared/twin_input.mjs';
import { CLIS, FPQ_TRAINED } from './helpers.mjs';
import { readNpy } from '../../wasm/shared/npy.mjs';

// The converter as the check's worker hands it to the repair: the module's own conversion, which
// takes the measured ranges the public options do not.
const lattice = await createEngine();
const runtime = { Tensor: ort.Tensor, session: (bytes) => ort.InferenceSession.create(bytes) };
const converter = {
  settleFixedPoint: (bytes, options) => {
    const r = lattice._module.convert(bytes, { ...options, describe: true }, undefined);
    assert.equal(r.error, undefined, r.error);
    return { bytes: joinParts(r.model), report: JSON.parse(r.report), description: JSON.parse(r.description) };
  },
  fpqTwin,
};

test('the twin\'s input to a layer is in the model\'s units, with FPQ\'s rounding in it', {
  skip: !existsSync(join(FPQ_TRAINED, 'sppf.onnx')) && 'no FPQ trained models (tests/fixtures/make_fpq_trained.py)',
}, async () => {
  const { model, report } = lattice.convert(readFileSync(join(FPQ_TRAINED, 'sppf.onnx')), { fixedPoint: 'fpq' });
  const description = lattice.describe(model);
  const calibration = readNpy(new Uint8Array(readFileSync(join(FPQ_TRAINED, 'calibration.npy'))), 'calibration.npy');
  const samples = 32;
  const feeds = { image: { type: 'float32', dims: [samples, ...calibration.shape.slice(1)], data: calibration.data.slice(0, samples * 64 * 64) } };
  const batches = feedBatches(feeds, description.inputs, samples);
  // The values the head's GlobalAveragePool reads: the range fit divides them by 2 to 5 per channel.
  const name = '/sppf/cv2/cv2.2/Relu_output_0';
  const parts = [];
  await runModel(runtime, { bytes: model, externalData: [] }, batches, [name], { load: 0, run: 0 }, (i, out) => parts.push(out[name]));
  const own = { data: Float32Array.from(parts.flatMap((p) => [...p.data])), dims: [samples, ...parts[0].dims.slice(1)] };
  const held = await twinInput(runtime, converter, { bytes: model, externalData: [], description }, report, batches, name, own);
  assert.deepEqual(held.dims, own.dims);
  let dot = 0, norm = 0, err = 0;
  for (let i = 0; i < own.data.length; ++i) {
    dot += own.data[i] * held.data[i];
    norm += own.data[i] ** 2;
    err += (own.data[i] - held.data[i]) ** 2;
  }
  // In the model's units (left in the fit's, the values would be 2-5 times smaller) ...
  assert.ok(Math.abs(dot / norm - 1) < 0.05, `ratio ${dot / norm}`);
  // ... and the fixed point's, not the float's: near, not equal.
  const sqnr = 10 * Math.log10(norm / err);
  assert.ok(sqnr > 15 && sqnr < 60, `SQNR ${sqnr} dB`);
});

test('samples beyond FPQ\'s input range [0, 2) keep every fit on the float input, and say why', () => {
  const feed = (values) => ({ image: { type: 'float32', dims: [values.length], data: Float32Array.from(values) } });
  assert.equal(twinInputsRefused(feed([0, 0.5, 2 - 1 / 128])), '');
  assert.match(twinInputsRefused(feed([-1, 0, 1])), /'image' spans \[-1\.00, 1\.00\], beyond FPQ's input range \[0, 2\)/);
  assert.match(twinInputsRefused(feed([0, 2])), /spans \[0\.00, 2\.00\]/);
  // Integer inputs (token ids, say) are not what FPQ's input layer holds: not asked.
  assert.equal(twinInputsRefused({ ids: { type: 'int64', dims: [1], data: BigInt64Array.from([5n]) } }), '');
});

// A paddle2onnx-style CNN with SE blocks (HardSwish as Clip, Mul, Div: none of them FPQ's) whose
// twin destroys its values (0-3.8 dB SQNR at the layers' inputs; the twin decides as it on 8.5 %):
// fitted on those, its repaired float model fell from 97.0 to 10.8 % accuracy. Such layers are
// fitted on the float input, and the report says which and why.
const EXPORTERS = process.env.ONNX_LATTICE_EXPORTERS ?? join(process.env.ONNX_LATTICE_CACHE ?? join(process.env.HOME, '.cache/onnx-lattice'), 'exporters');
test('a layer whose input the FPQ twin destroys is fitted on the float input, and said so', {
  skip: !existsSync(join(EXPORTERS, 'paddle_style.onnx')) && 'no exporter models (tests/fixtures/make_exporters.py)',
}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'onnx-lattice-twin-input-'));
  try {
    const report = join(dir, 'p.json');
    const r = CLIS.node(['convert', join(EXPORTERS, 'paddle_style.onnx'), '-o', join(dir, 'p.onnx'), '--report', report, '--input-shape', 'x:1,1,32,32',
      '--fixed-point', 'fpq', '--repair', '--calibration', join(EXPORTERS, 'calibration.npy'), '--check', '--inputs', join(EXPORTERS, 'heldout.npy')]);
    assert.equal(r.status, 0, r.stderr + r.stdout);
    const { repair, check } = JSON.parse(readFileSync(report, 'utf8'));
    const floats = repair.layers.filter((l) => l.fit_input === 'float');
    assert.ok(floats.length > 0 && floats.every((l) => l.twin_input_sqnr_db < TWIN_INPUT_LEAST_SQNR_DB), JSON.stringify(repair.layers));
    assert.ok(repair.layers.filter((l) => l.fit_input === 'fpq twin').every((l) => l.twin_input_sqnr_db >= TWIN_INPUT_LEAST_SQNR_DB));
    assert.match(r.stdout, new RegExp(`${floats.length} layers fitted on their float input, where the FPQ twin's is under 6 dB SQNR: ${floats[0].node} \\(`));
    // The float repair is what it is without FPQ's twin: measured 96.5 % agreement.
    assert.ok(check.converted.outputs[0].top1_agreement >= 0.9, JSON.stringify(check.converted.outputs[0].top1_agreement));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
