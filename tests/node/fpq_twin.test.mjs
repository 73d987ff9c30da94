// The FPQ twin (core/fixed_point/twin.h): on a small model it computes, element for element, what
// numpy computes of FPQ's representations (tests/fixtures/make_fpq_twin.py: the input in unsigned
// 1.7, weights in signed 0.7 with scale 0.5, conv, BatchNormalization and dense outputs in signed
// 5.10, ReLU, MaxPool and Add outputs in unsigned 1.7, rounding to nearest even); the CLIs' flags
// (`--simulate fpq`, `--fpq-twin`), the API's, and on a CNN trained on real digits the held-out
// top-1 agreement between the float model and its twin.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import ort from 'onnxruntime-node';

import { withOutputs } from '../../wasm/shared/check.mjs';
import { createConverter } from '../../wasm/index.mjs';
import { CLIS, TRAINED, fixture, scratch } from './helpers.mjs';
import { checkModel } from './onnx_checker.mjs';

const lattice = await createConverter();
const dir = scratch();
const expected = JSON.parse(readFileSync(fixture('fpq_twin.expected.json'), 'utf8'));

for (const [file, sixteenBits] of [['fpq_twin.onnx', 'Mul/Round/Clip/Mul'], ['fpq_twin_opset21.onnx', 'QuantizeLinear/DequantizeLinear (int16)']]) test(`the FPQ twin computes what numpy computes of FPQ's representations, element for element (${file}: 16 bits as ${sixteenBits})`, async () => {
  const { model, twin } = await lattice.fpqTwin(readFileSync(fixture(file)));
  assert.deepEqual(twin.not_simulated, []);
  if (file === 'fpq_twin.onnx') assert.equal(await checkModel(model), 'ok', 'onnx\'s checker takes the twin');
  assert.equal(twin.forms['signed 5.10'], sixteenBits);
  assert.equal(twin.forms['unsigned 1.7'], 'QuantizeLinear/DequantizeLinear (uint8)');
  assert.equal(twin.forms['signed 0.7 with scale 0.5'], 'QuantizeLinear/DequantizeLinear (int8)');
  const inner = Object.keys(expected.tensors);
  const session = await ort.InferenceSession.create(withOutputs(model, inner), { graphOptimizationLevel: 'disabled', intraOpNumThreads: 1 });
  const { input } = expected;
  const out = await session.run({ [input.name]: new ort.Tensor('float32', Float32Array.from(input.data), input.dims) });
  await session.release();
  for (const [name, want] of [...Object.entries(expected.outputs), ...Object.entries(expected.tensors)]) {
    assert.deepEqual(out[name].dims, want.dims, name);
    const differing = [];
    out[name].data.forEach((v, i) => { if (v !== want.data[i]) differing.push(`[${i}] ${v} != ${want.data[i]}`); });
    assert.deepEqual(differing, [], `${name}: every element as numpy's`);
  }
  // The fixture plants rounding ties and values beyond each range: the reference is not trivial.
  assert.ok(expected.tensors.relu.data.some((v) => v === 255 / 128), 'some ReLU output saturates at 2 - 1/128');
  assert.ok(expected.tensors.c1.data.some((v) => v < 0), 'the conv output is signed');
});

test('convert --check --simulate fpq: check.fpq compares the output with its twin; --fpq-twin writes the twin', () => {
  const out = join(dir, 'twin_fixture.onnx'), report = join(dir, 'twin_fixture.json'), twinPath = join(dir, 'twin_fixture.fpq.onnx');
  // The fixture's input as a sample, written by numpy.
  const npy = join(dir, 'twin_input.npy');
  const saved = spawnSync('/usr/bin/python3', ['-c', 'import json, sys, numpy as np\ne = json.load(open(sys.argv[1]))["input"]\n' +
    'np.save(sys.argv[2], np.array(e["data"], np.float32).reshape(e["dims"]))', fixture('fpq_twin.expected.json'), npy], { encoding: 'utf8' });
  assert.equal(saved.status, 0, saved.stderr);
  const r = CLIS.node(['convert', fixture('fpq_twin.onnx'), '-o', out, '--report', report, '--fixed-point', 'fpq', '--check',
    '--simulate', 'fpq', '--layerwise', '--fpq-twin', twinPath, '--inputs', npy]);
  assert.equal(r.status, 0, r.stderr);
  const { check, fixed_point: fit } = JSON.parse(readFileSync(report, 'utf8'));
  // The activations' fit on the data, in the fit analysis: the input's own figures, counted here.
  const step = 1 / 128, inputFit = fit.activations.find((a) => a.tensor === 'x');
  const rounded = expected.input.data.map((v) => { const k = Math.round(v / step); return (Math.abs((v / step) % 1) === 0.5 && k % 2 ? k - 1 : k) * step; });
  assert.equal(inputFit.representation, 'unsigned 1.7');
  assert.equal(inputFit.clipped, rounded.filter((q) => q < 0 || q > 2 - step).length / rounded.length);
  assert.ok(inputFit.clipped > 0 && inputFit.sqnr_db > 0);
  assert.deepEqual(fit.activations, check.fpq.activations);
  assert.match(r.stdout, /check: FPQ activations on the data: \d+ of \d+ tensors clip in their representation, most '/);
  assert.equal(check.fpq.schema, 'onnx-lattice-check/1');
  assert.deepEqual(check.fpq.outputs.map((o) => o.name), ['sum', 'logits']);
  assert.ok(check.fpq.outputs.every((o) => o.comparable && o.max_abs > 0), 'the fixed point moves every output');
  assert.ok(check.fpq.first_failing, 'layerwise names where the fixed point parts from the float');
  assert.equal(check.fpq.simulation.source, 'FPGA-UG-02228 Table 4.1');
  assert.match(r.stdout, /check: FPQ's fixed point moves output 'logits' by up to/);
  assert.match(r.stdout, /check: FPQ twin: the first tensor where the fixed point parts from the float is '/);
  // The fold-only and converted comparisons are as without --simulate.
  assert.ok(check.fold_only.pass && check.converted);
  assert.ok(existsSync(twinPath));
});

test('--fpq-twin alone writes the twin of the output, the bytes fpqTwin() makes of it', async () => {
  const out = join(dir, 'alone.onnx'), twinPath = join(dir, 'alone.fpq.onnx');
  const r = CLIS.node(['convert', fixture('conv_bn_relu.onnx'), '-o', out, '--fixed-point', 'fpq', '--fpq-twin', twinPath]);
  assert.equal(r.status, 0, r.stderr);
  const { model } = await lattice.fpqTwin(readFileSync(out));
  assert.deepEqual(new Uint8Array(readFileSync(twinPath)), model);
  // `check A B --simulate fpq`: B against its twin after the check's own lines; the exit status is the check's.
  const checked = CLIS.node(['check', out, out, '--simulate', 'fpq']);
  assert.equal(checked.status, 0, checked.stderr);
  assert.match(checked.stdout, /check passed\nfpq: FPQ's fixed point moves output '[^']+' by up to/);
  // The native CLI has no twin's builder: it says so before converting anything.
  const native = CLIS.native(['convert', fixture('conv_bn_relu.onnx'), '-o', join(dir, 'native.onnx'), '--fpq-twin', join(dir, 'native.fpq.onnx')]);
  assert.equal(native.status, 2);
  assert.match(native.stderr, /--fpq-twin is written by the Node CLI/);
  assert.ok(!existsSync(join(dir, 'native.onnx')));
});

test('usage errors before anything is written; a model the twin cannot be made of writes nothing', () => {
  const sub = join(dir, 'usage');
  const cases = [
    [['--simulate', 'fpq'], /--simulate are the check's: add --check/],
    [['--check', '--simulate', 'lsq'], /--simulate takes fpq, not 'lsq'/],
    [['--dry-run', '--fpq-twin', join(sub, 't.onnx')], /--fpq-twin is made from the converted model/],
    [['--fpq-twin', join(sub, 'o.onnx')], /would overwrite the converted model/],
    [['--fpq-twin', '-'], /--fpq-twin needs a file name/],
  ];
  for (const [flags, message] of cases) {
    const r = CLIS.node(['convert', fixture('conv_bn_relu.onnx'), '-o', join(sub, 'o.onnx'), ...flags]);
    assert.equal(r.status, 2, `${flags.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
    assert.ok(!existsSync(sub), 'nothing written');
  }
  // Opset 7: no Round. The conversion's files are taken back.
  const out = join(dir, 'opset7.onnx'), twinPath = join(dir, 'opset7.fpq.onnx');
  const r = CLIS.node(['convert', fixture('conv_bn_opset7.onnx'), '-o', out, '--fpq-twin', twinPath]);
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /the FPQ twin needs opset 11 or later .* opset 7/);
  assert.deepEqual(readdirSync(dir).filter((f) => f.startsWith('opset7')), []);
});

test('check(..., {simulate: \'fpq\'}) adds the candidate against its twin; other values are refused', async () => {
  const converted = await lattice.convert(readFileSync(fixture('fpq_twin.onnx')), { target: 'none', fixedPoint: 'fpq' });
  const report = await lattice.check(fixture('fpq_twin.onnx'), converted.model, { simulate: 'fpq', inputRange: [0, 2] });
  assert.equal(report.pass, true);
  assert.equal(report.fpq.schema, 'onnx-lattice-check/1');
  assert.equal(report.fpq.outputs.length, 2);
  await assert.rejects(lattice.check(fixture('fpq_twin.onnx'), converted.model, { simulate: 'lsq' }), { code: 'ERR_ONNX_LATTICE_OPTIONS', message: /options.simulate takes 'fpq'/ });
});

// The figure docs/fixed-point.md gives: the trained digits CNN converted with --fixed-point fpq
// (BatchNorm kept), its 400 held-out samples, the float output against the FPQ twin.
test('on a CNN trained on real digits: the held-out top-1 agreement of the FPQ twin is reported', { skip: !existsSync(join(TRAINED, 'digits.onnx')) && 'no trained models' }, () => {
  const out = join(dir, 'digits.onnx'), report = join(dir, 'digits.json');
  const r = CLIS.node(['convert', join(TRAINED, 'digits.onnx'), '-o', out, '--report', report, '--fixed-point', 'fpq', '--check',
    '--simulate', 'fpq', '--layerwise', '--inputs', join(TRAINED, 'heldout.npz')]);
  assert.equal(r.status, 0, r.stderr);
  const { check } = JSON.parse(readFileSync(report, 'utf8'));
  const [logits] = check.fpq.outputs;
  assert.equal(logits.name, 'logits');
  assert.equal(check.fpq.inputs.samples, 400);
  assert.ok(logits.top1_agreement >= 0 && logits.top1_agreement <= 1);
  assert.match(r.stdout, /check: the FPQ twin decides as the float model on [\d.]+ % of 400 samples of heldout.npz/);
  // The head's GlobalAveragePool is held in its input's representation: nothing is left in float.
  assert.deepEqual(check.fpq.simulation.not_simulated, []);
  assert.ok(check.fpq.simulation.activations.some((a) => /GlobalAveragePool/.test(a.tensor) && a.representation === 'unsigned 1.7'));
  // After each ReLU, activations beyond [0, 2) clip: the fit analysis says how many, on the data.
  assert.ok(check.fpq.activations.some((a) => a.representation === 'unsigned 1.7' && a.role === 'output' && a.clipped > 0));
  console.log(r.stdout.split('\n').filter((l) => l.includes('FPQ')).join('\n'));
});
