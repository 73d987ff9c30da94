// ConvBatchNormFoldPattern against onnxruntime: folded models compute what the originals do,
// on the fixtures and on torchvision architectures exported with BatchNorm kept — measured by the
// product's own check (converter.check, per element, with the fold-only twin's tolerance: atol
// scaled by each output's largest |value|, as `convert --check` judges folds).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { createSyncConverter } from '../../wasm/index.mjs';
import { ZOO, fixture } from './helpers.mjs';
import { checkModel } from './onnx_checker.mjs';

const lattice = await createSyncConverter();
const FOLD_ONLY = { target: 'none' };
const FOLD_TOLERANCE = { scaleAtol: true };

// Every output of the folded model passes the check (a dynamic batch fed as 1, as the check does).
async function assertFoldExact(t, name, bytes, model, folded) {
  await checkModel(model);
  const check = await lattice.check(bytes, model, FOLD_TOLERANCE);
  assert.equal(check.pass, true, JSON.stringify(check.outputs));
  for (const o of check.outputs) {
    assert.deepEqual(o.shape_candidate, o.shape_original);
    t?.diagnostic(`${name} ${o.name}: ${folded} folded, max |Δ| ${o.max_abs.toExponential(2)}, max rel ${o.max_rel.toExponential(2)}`);
  }
}

const models = [
  ...['conv_bn_relu', 'conv_bn_opset7', 'conv_bn_opset15', 'conv_bn_opset17', 'resnet_stem', 'resnet_stem_opset9', 'linear_bn', 'grouped_decoder', 'shared_weight', 'sample', 'identity_shared']
    .map((name) => [name, fixture(`${name}.onnx`)]),
  ...['resnet18', 'resnet50', 'mobilenet_v2', 'mobilenet_v3_small', 'efficientnet_b0', 'densenet121', 'googlenet',
    'regnet_x_400mf'].map((name) => [name, join(ZOO, `${name}.onnx`)]),
];

for (const [name, path] of models) {
  test(`${name}: every BatchNorm is folded and outputs match onnxruntime within float rounding`, { skip: !existsSync(path) && `no ${path}: run scripts/test.sh` }, async (t) => {
    const bytes = readFileSync(path);
    const { model, report } = lattice.convert(bytes, FOLD_ONLY);
    const bnBefore = report.input.op_counts.BatchNormalization ?? 0;
    assert.ok(bnBefore > 0, 'the fixture has BatchNorm to fold');
    const folded = report.matches.filter((m) => m.applied).length;
    assert.ok(folded > 0, 'something was folded');
    // Every BN that follows a Conv/ConvTranspose/Gemm read only by it is folded in these models;
    // every BN left (DenseNet's, after a Concat) is in the audit with the reason.
    assert.deepEqual(report.matches.filter((m) => !m.applied), []);
    const left = report.output.op_counts.BatchNormalization ?? 0;
    assert.equal(left, bnBefore - folded);
    const audited = report.unsupported.filter((u) => u.op_type === 'BatchNormalization');
    assert.equal(audited.length, left);
    for (const u of audited) assert.match(u.reason, /not folded: it follows \w+ '.*', not a Conv, ConvTranspose or Gemm/);

    await assertFoldExact(t, name, bytes, model, folded);
  });
}

test('converting a folded model again applies nothing and returns it byte for byte', () => {
  const { model } = lattice.convert(readFileSync(fixture('resnet_stem.onnx')), FOLD_ONLY);
  const again = lattice.convert(model, FOLD_ONLY);
  assert.equal(again.report.matches.length, 0);
  assert.ok(Buffer.from(again.model).equals(Buffer.from(model)));
});

test('two conversions of the same model give identical bytes', () => {
  const bytes = readFileSync(fixture('sample.onnx'));
  const a = lattice.convert(bytes, FOLD_ONLY).model, b = lattice.convert(bytes, FOLD_ONLY).model;
  assert.ok(Buffer.from(a).equals(Buffer.from(b)));
});

test('a BatchNorm whose bias is read through Identity folds while the first block, which shares it, keeps its own', async () => {
  const bytes = readFileSync(fixture('identity_shared.onnx'));
  const { model, report } = lattice.convert(bytes, { ...FOLD_ONLY, skipMatches: ['ConvBatchNormFoldPattern:/conv1/Conv'] });
  assert.deepEqual(report.matches.map((m) => [m.id, m.applied]),
    [['ConvBatchNormFoldPattern:/conv1/Conv', false], ['ConvBatchNormFoldPattern:/conv2/Conv', true]]);
  await assertFoldExact(null, 'identity_shared', bytes, model, 1);
});

test('scale_shift: Conv -> Mul -> Add by per-channel constants folds and outputs match onnxruntime within float rounding', async (t) => {
  const bytes = readFileSync(fixture('scale_shift.onnx'));
  const { model, report } = lattice.convert(bytes, FOLD_ONLY);
  assert.deepEqual(report.matches.map((m) => [m.pattern, m.applied]), Array(3).fill(['ConvScaleShiftFoldPattern', true]));
  assert.equal(report.output.op_counts.Add ?? 0, 0);
  assert.equal(report.output.op_counts.Mul, 1, 'the Mul along the width stays');
  await assertFoldExact(t, 'scale_shift', bytes, model, 3);
});

for (const name of ['opset18_ir9', 'opset21_ir10']) {
  test(`${name}: the new exporters' graph folds its BatchNorm and its Mul/Add and matches onnxruntime`, async (t) => {
    const bytes = readFileSync(fixture(`${name}.onnx`));
    const { model, report } = lattice.convert(bytes, FOLD_ONLY);
    assert.deepEqual(report.matches.map((m) => [m.id, m.applied]),
      [['ConvBatchNormFoldPattern:node_Conv_0', true], ['ConvScaleShiftFoldPattern:node_Conv_3', true]]);
    assert.equal(report.output.op_counts.BatchNormalization ?? 0, 0);
    await assertFoldExact(t, name, bytes, model, 2);
  });
}
