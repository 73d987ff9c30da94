// The check never passes what it did not test: the sizes it feeds (a dynamic batch is 1, other
// dynamic dimensions given, with a size the model suggests), inconclusive verdicts said as such,
// usage errors found before anything is written, and every failure in words.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { checkModels } from '../../wasm/shared/check.mjs';
import { bytesText, checkShapes, deepestStride, missingSizesMessage, proposeShape, sizesTooLarge } from '../../wasm/shared/check_sizes.mjs';
import { createSyncConverter } from '../../wasm/index.mjs';
import { CLIS, fixture, scratch } from './helpers.mjs';

const lattice = await createSyncConverter();
const dir = scratch();
const DETECTOR = fixture('detector_dynamic_hw.onnx');

const conv = (name, input, output, strides, extra = {}) => ({
  name, op: 'Conv', inputs: [{ name: input }, { name: `${name}.w`, shape: [8, 3, 3, 3], constant: true }],
  outputs: [{ name: output }], attributes: { strides, ...extra },
});

test('proposeShape: 4 × the deepest stride a side (at least 32), the batch 1, channels from the first Conv; NHWC seen', () => {
  // Two branches: the deeper one (stride 2 · 2 · 8) decides; a ConvTranspose divides.
  const nodes = [
    conv('a', 'x', 'a', [2, 2]), conv('b', 'a', 'b', [2, 2]),
    { name: 'p', op: 'MaxPool', inputs: [{ name: 'b' }], outputs: [{ name: 'p' }], attributes: { strides: [8, 8] } },
    { name: 't', op: 'ConvTranspose', inputs: [{ name: 'p' }], outputs: [{ name: 't' }], attributes: { strides: [4, 4] } },
    conv('c', 'a', 'c', [1, 1]),
  ];
  const description = { inputs: [{ name: 'x', type: 'float', shape: ['N', 'C', 'H', 'W'] }], nodes };
  assert.equal(deepestStride(description), 32);
  const proposed = proposeShape(description, description.inputs[0]);
  assert.deepEqual(proposed.dims, [1, 3, 128, 128]);
  assert.match(proposed.rule, /deepest stride is 32, so its coarsest feature map keeps 4×4 pixels/);
  assert.match(proposed.rule, /3 channels, what its first Conv takes/);
  // Grouped: the weight's dim 1 times the groups.
  const grouped = { ...description, nodes: [conv('g', 'x', 'g', [1, 1], { group: 4 })] };
  assert.deepEqual(proposeShape(grouped, description.inputs[0]).dims, [1, 12, 32, 32], 'at least 32 a side');
  // NHWC: a fixed channel count last, the image in axes 1 and 2.
  const nhwc = { inputs: [{ name: 'x', type: 'float', shape: ['N', 'H', 'W', 3] }], nodes: [] };
  assert.deepEqual(proposeShape(nhwc, nhwc.inputs[0]).dims, [1, 32, 32, 3]);
  // No rule for a dynamic feature axis of a rank-2 input: nothing is proposed.
  const flat = { inputs: [{ name: 'v', type: 'float', shape: ['N', 'F'] }], nodes: [] };
  assert.equal(proposeShape(flat, flat.inputs[0]), null);
});

test('checkShapes: a dynamic batch is 1, other dynamic dimensions are missing unless given; the message in each shell\'s words', () => {
  const description = { inputs: [{ name: 'x', type: 'float', shape: ['N', 3, 'H', 'W'] }, { name: 'k', type: 'int64', shape: ['N', 4] }], nodes: [] };
  const { shapes, missing } = checkShapes(description, {});
  assert.deepEqual(shapes, { k: [1, 4] });
  assert.deepEqual(missing.map((m) => [m.input.name, m.axes, m.proposed.dims]), [['x', [2, 3], [1, 3, 32, 32]]]);
  assert.deepEqual(checkShapes(description, { x: [2, 3, 40, 48] }).shapes, { x: [2, 3, 40, 48], k: [1, 4] });
  assert.match(missingSizesMessage(missing, 'api'), /e\.g\. inputShapes: \{'x': \[1, 3, 32, 32\]\}/);
  assert.match(missingSizesMessage(missing, 'cli'), /e\.g\. --check-shape x:1,3,32,32 \(/);
  assert.match(missingSizesMessage([{ input: { name: 'v', shape: ['N', 'F'] }, axes: [1], proposed: null }], 'cli'),
    /input 'v' \[N, F\] has 'F' \(axis 1\).*with --check-shape \(no size can be derived from the model for it\)/);
});

test('sizes too large are refused with the bytes they need, however absurd (no wrapped 64-bit figure)', () => {
  const description = { inputs: [{ name: 'x', type: 'float', shape: ['N', 3, 'H', 'W'] }], nodes: [] };
  assert.equal(bytesText(2 ** 64), '16384.0 PiB');
  assert.equal(bytesText(1536), '1.5 KiB');
  assert.equal(bytesText(4 * 3 * 2 ** 80), "1.3e+10 PiB");
  const huge = sizesTooLarge(description, { x: [1, 3, 2 ** 40, 2 ** 40] });
  assert.match(huge, /the check's inputs at x \[1, 3, 1099511627776, 1099511627776\] would need 1\.3e\+10 PiB, more than the 2\.0 GiB a check holds: lower these sizes/);
  assert.doesNotMatch(huge, /18446744073709551616/);
  assert.match(sizesTooLarge(description, { x: [1, 3, 100000, 100000] }), /would need 111\.8 GiB/);
  assert.equal(sizesTooLarge(description, { x: [1, 3, 64, 64] }), null);
  // The activations count at the check's sizes, against the limit given.
  const sized = { ...description, nodes: [{ name: 'c', op: 'Conv', inputs: [], outputs: [{ name: 'y', shape: [1, 64, 1024, 1024] }] }] };
  assert.match(sizesTooLarge(sized, { x: [1, 3, 1024, 1024] }, { weightBytes: 2 ** 20, limit: 2 ** 28, where: 'this test allows' }),
    /would need about 270\.0 MiB \(twice the weights, the inputs and every activation\), more than the 256\.0 MiB this test allows/);
});

// A runtime of our own making: each model gives the outputs `outputs(name)` returns, or throws.
function fakeRuntime(outputs) {
  return {
    name: 'fake', version: '0', Tensor: class { constructor(type, data, dims) { Object.assign(this, { type, data, dims }); } },
    session: async (bytes) => ({ run: async () => outputs(bytes[0]), release: async () => {} }),
  };
}
const model = (id, outputs, nodes = []) => ({
  bytes: Uint8Array.of(id), description: { inputs: [{ name: 'x', type: 'float', shape: [1, 2] }], outputs: outputs.map((name) => ({ name })), nodes },
});
const float = (dims, values) => ({ type: 'float32', dims, data: Float32Array.from(values) });

test('an output the original computes as one value is inconclusive, never a pass; a change shown in it is still a change', async () => {
  const same = fakeRuntime(() => ({ y: float([1, 4], [0.5, 0.5, 0.5, 0.5]) }));
  const report = await checkModels(same, model(1, ['y']), model(2, ['y']));
  assert.equal(report.pass, false);
  assert.equal(report.verdict, 'inconclusive');
  assert.match(report.inconclusive[0], /output 'y': the original's output holds one value \(0\.5\) in all its 4 elements, so no change could show/);
  assert.equal(report.outputs[0].pass, false);
  const changed = fakeRuntime((id) => ({ y: float([1, 4], id === 1 ? [0.5, 0.5, 0.5, 0.5] : [0.7, 0.7, 0.7, 0.7]) }));
  assert.equal((await checkModels(changed, model(1, ['y']), model(2, ['y']))).verdict, 'fail');
  const varying = fakeRuntime(() => ({ y: float([1, 4], [0.1, 0.5, 0.5, 0.5]) }));
  const passed = await checkModels(varying, model(1, ['y']), model(2, ['y']));
  assert.equal(passed.verdict, 'pass');
  assert.equal(passed.pass, true);
  assert.equal(passed.inconclusive, undefined);
});

test('a rewritten layer whose output has no elements at the sizes fed makes the comparison inconclusive', async () => {
  const nodes = [{ name: 'new', op: 'Conv', inputs: [{ name: 'x' }], outputs: [{ name: 't' }] }, { name: 'out', op: 'Relu', inputs: [{ name: 't' }], outputs: [{ name: 'y' }] }];
  const conversion = { matches: [{ id: 'P:new', pattern: 'P', applied: true, nodes: ['new'], new_nodes: ['new'] }] };
  const runtime = fakeRuntime((id) => ({ y: float([1, 2], [0.1, 0.2]), ...(id === 2 ? { t: float([1, 0], []) } : {}) }));
  const report = await checkModels(runtime, model(1, ['y']), model(2, ['y'], nodes), { conversion });
  assert.equal(report.verdict, 'inconclusive');
  assert.match(report.inconclusive.join(), /the rewritten layer's output 't' has no elements at these sizes \(1×0\)/);
});

test('a runtime out of memory is said as such in the report', async () => {
  const runtime = fakeRuntime((id) => {
    if (id === 2) throw new Error('failed to call OrtRun(). ERROR_CODE: 6, ERROR_MESSAGE: std::bad_alloc');
    return { y: float([1, 2], [0.1, 0.2]) };
  });
  const report = await checkModels(runtime, model(1, ['y']), model(2, ['y']));
  assert.equal(report.verdict, 'fail');
  assert.match(report.error, /^the candidate model failed to run in fake: it ran out of memory at these sizes: lower them \(failed to call OrtRun/);
});

// The detector converted with every rewrite but the asymmetric padding (which a 1×1 input reduces
// to nothing): at 1×1 each rewrite computes what the original does.
const converted = join(dir, 'detector.lattice.onnx');
const made = CLIS.node(['convert', DETECTOR, '-o', converted, '--quiet', '--skip', 'LatticeStride2AsymPadConvMaxPoolPattern']);
assert.equal(made.status, 0, made.stderr);

test('Node CLI check: a 1×1 input that reduces the detector to one value is inconclusive (exit 5); at the size proposed, the change shows', () => {
  const tiny = CLIS.node(['check', DETECTOR, converted, '--check-shape', 'input:1,3,1,1']);
  assert.equal(tiny.status, 5, tiny.stdout + tiny.stderr);
  assert.match(tiny.stdout, /input 1×3×1×1, uniform in \[-1, 1\), seed 0/);
  assert.match(tiny.stdout, /inconclusive: output 'output': the original's output holds one value/);
  assert.match(tiny.stdout, /^check INCONCLUSIVE/m);
  assert.doesNotMatch(tiny.stdout, /check passed/);
  // --input-shape sizes `check` the same way (it converts nothing).
  assert.equal(CLIS.node(['check', DETECTOR, converted, '--input-shape', 'input:1,3,1,1']).status, 5);
  const asked = CLIS.node(['check', DETECTOR, converted]);
  assert.equal(asked.status, 2);
  const proposed = asked.stderr.match(/--check-shape (input:[\d,]+)/)[1];
  assert.equal(proposed, 'input:1,3,128,128');
  const real = CLIS.node(['check', DETECTOR, converted, '--check-shape', proposed, '--json']);
  assert.equal(real.status, 1, real.stderr);
  const report = JSON.parse(real.stdout);
  assert.equal(report.verdict, 'fail');
  assert.deepEqual(report.inputs.batch_shapes, { input: [1, 3, 128, 128] });
  assert.ok(report.outputs[0].max_abs > 1e-3, `the rewrites change the map: ${report.outputs[0].max_abs}`);
});

test('Node CLI convert --check: sizes are the check\'s (the model keeps its dynamic dims); usage errors before anything is written', () => {
  const out = join(dir, 'd.onnx'), report = join(dir, 'd.json');
  // A dynamic batch: checked at 1, written with its batch still dynamic.
  const batch = CLIS.node(['convert', fixture('yolo_dynamic_batch.onnx'), '-o', out, '--check', '--quiet']);
  assert.equal(batch.status, 0, batch.stderr);
  assert.match(batch.stdout, /^check: fed input 1×3×64×64, uniform in \[-1, 1\), seed 0$/m);
  assert.equal(lattice.describe(readFileSync(out)).inputs[0].shape[0], 'N');
  // A dynamic height and width: no size, a usage error naming the flag and a size, and no file.
  for (const args of [[], ['--check-shape', 'input:1,3,100000,100000']]) {
    const r = CLIS.node(['convert', DETECTOR, '-o', join(dir, 'never.onnx'), '--report', join(dir, 'never.json'), '--check', ...args]);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, args.length ? /would need 111\.8 GiB/ : /e\.g\. --check-shape input:1,3,128,128/);
    assert.equal(r.stdout, '', 'no summary: nothing was converted');
    assert.ok(!existsSync(join(dir, 'never.onnx')) && !existsSync(join(dir, 'never.json')), 'nothing written');
  }
  // Samples that do not read are the caller's to correct: nothing stays written either.
  const bad = join(dir, 'bad.npy');
  writeFileSync(bad, 'not an array');
  const r = CLIS.node(['convert', DETECTOR, '-o', join(dir, 'never.onnx'), '--check', '--inputs', bad]);
  assert.equal(r.status, 2, r.stderr);
  assert.ok(!existsSync(join(dir, 'never.onnx')), 'nothing stays written');
  // Given, the check's sizes leave the model's shape alone.
  const sized = CLIS.node(['convert', DETECTOR, '-o', out, '--report', report, '--check', '--check-shape', 'input:1,3,128,128']);
  assert.equal(sized.status, 0, sized.stderr);
  assert.deepEqual(lattice.describe(readFileSync(out)).inputs[0].shape, ['N', 3, 'H', 'W']);
  assert.match(sized.stdout, /^check: the Lattice rewrites change output 'output' by up to/m);
  assert.match(sized.stdout, /^check: fed input 1×3×128×128/m);
  // --check-shape is the check's: without --check, a usage error.
  assert.match(CLIS.node(['convert', DETECTOR, '-o', out, '--check-shape', 'input:1,3,8,8']).stderr, /are the check's: add --check/);
});
