// Crafted models (tests/fixtures/make_crafted.py): no invalid model in, no invalid model out,
// and no message a name in the model can forge. Both CLIs and the Node API agree.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { createSyncConverter } from '../../wasm/index.mjs';
import { CLIS, FIXTURES, fixture, scratch } from './helpers.mjs';
import { checkModel } from './onnx_checker.mjs';
import { compareOutputs } from './ort.mjs';

const lattice = await createSyncConverter();
const crafted = (name) => join(FIXTURES, 'crafted', `${name}.onnx`);
const dir = scratch();

// Refused by both CLIs (exit 1, the same single line, no file) and by the API (code MODEL).
function assertRefused(name, message) {
  const lines = Object.entries(CLIS).map(([cli, run]) => {
    const out = join(dir, `${cli}-${name}.onnx`);
    const r = run(['convert', crafted(name), '-o', out, '--report', `${out}.json`]);
    assert.equal(r.status, 1, `${cli} ${name}: ${r.stderr}`);
    assert.equal(r.stderr.split('\n').length, 2, `${cli} ${name}: one line`);
    assert.match(r.stderr, message, `${cli} ${name}`);
    assert.ok(!existsSync(out) && !existsSync(`${out}.json`), `${cli} ${name}: nothing written`);
    return r.stderr;
  });
  assert.equal(lines[0], lines[1]);
  assert.throws(() => lattice.convert(readFileSync(crafted(name))),
    (e) => e.code === 'ERR_ONNX_LATTICE_MODEL' && message.test(e.message));
}

const attributeCases = {
  conv_strides_0: /node 'conv' \(Conv\): attribute 'strides' is \[0, 1\]; every value must be at least 1/,
  conv_strides_negative: /node 'conv' \(Conv\): attribute 'strides' is \[-1, 1\]/,
  conv_dilations_0: /node 'conv' \(Conv\): attribute 'dilations' is \[0, 1\]/,
  conv_kernel_0: /node 'conv' \(Conv\): attribute 'kernel_shape' is \[0, 3\]/,
  conv_kernel_vs_weight: /node 'conv' \(Conv\): attribute 'kernel_shape' is \[5, 5\], but weight 'w' has shape \[4, 3, 3, 3\]/,
  conv_pads_length: /node 'conv' \(Conv\): attribute 'pads' has 2 values \[1, 1\], the window has rank 2 \(needs 4\)/,
  conv_pads_negative: /node 'conv' \(Conv\): attribute 'pads' is \[1, -1, 1, 1\]; every value must be at least 0/,
  conv_group: /node 'conv' \(Conv\): input 'x' has 3 channels, but weight 'w' \[4, 3, 3, 3\] with group 2 takes 6/,
  maxpool_strides_0: /node 'pool' \(MaxPool\): attribute 'strides' is \[1, 0\]/,
};
for (const [name, message] of Object.entries(attributeCases)) {
  test(`${name}: refused before any pattern runs, naming the node and the attribute`, () => assertRefused(name, message));
}

test('If-subgraphs nested past protobuf\'s recursion limit are refused in those words', () => {
  assertRefused('nested_ifs', /nested more than 100 deep \(protobuf's recursion limit/);
});

test('a tensor name cannot forge a line of output: the error is one line, the newline escaped', () => {
  assertRefused('forged_names', /reads 'K\\nonnx-lattice: ok, converted'/);
});

test('node names in the summary and the report are escaped', () => {
  for (const [cli, run] of Object.entries(CLIS)) {
    const r = run(['convert', crafted('forged_summary'), '-o', join(dir, `${cli}-forged.onnx`)]);
    assert.equal(r.status, 0, r.stderr);
    assert.ok(!r.stdout.split('\n').some((line) => line.startsWith('onnx-lattice: ok')), `${cli}: no forged line`);
    assert.ok(!r.stdout.includes('\0'), `${cli}: no NUL byte`);
    assert.match(r.stdout, /\n {6}sin\\nonnx-lattice: ok, converted\\0\n/, `${cli}: the audit names it escaped`);
  }
});

const foldRefusals = {
  bn_negative_epsilon: /BatchNormalization 'bn' channel 0: scale \/ sqrt\(var \+ epsilon\) = .* are not both finite/,
  bn_nan_variance: /BatchNormalization 'bn' channel 1: .*sqrt\(nan \+ .* are not both finite/,
  bn_float16_overflow: /folding BatchNormalization 'bn' into 'conv' would give the value .*, which float16 cannot hold/,
};
for (const [name, reason] of Object.entries(foldRefusals)) {
  test(`${name}: the fold is refused with the reason, the model is left as it is`, () => {
    const bytes = readFileSync(crafted(name));
    const { model, report } = lattice.convert(bytes, { target: 'none' });
    const [match] = report.matches;
    assert.equal(match.id, 'ConvBatchNormFoldPattern:conv');
    assert.equal(match.applied, false);
    assert.match(match.reason, reason);
    assert.ok(Buffer.from(model).equals(bytes), 'nothing applied: the input, byte for byte');
    assert.ok(report.unsupported.some((u) => u.node === 'bn'), 'the BatchNorm left is in the audit');
  });
}

test('nodes sharing a name get distinct match ids and every match is attempted', async () => {
  const bytes = readFileSync(crafted('duplicate_names'));
  const { model, report } = lattice.convert(bytes, { target: 'none' });
  assert.deepEqual(report.matches.map((m) => [m.id, m.applied]),
    [['ConvBatchNormFoldPattern:conv', true], ['ConvBatchNormFoldPattern:conv#2', true]]);
  assert.deepEqual(report.matches[1].nodes, ['conv#2', 'bn#2']);
  assert.equal(report.output.op_counts.BatchNormalization ?? 0, 0);
  // onnxruntime refuses repeated node names (ONNX asks names to be unique), so the input cannot
  // be run; the output keeps the names it was given and passes onnx's checker.
  assert.equal(await checkModel(model), 'ok');
  const skipped = lattice.convert(bytes, { target: 'none', skipMatches: ['ConvBatchNormFoldPattern:conv#2'] });
  assert.deepEqual(skipped.report.matches.map((m) => m.applied), [true, false]);
});

test('an IR-3 model stays valid for IR 3 after folding: new initializers are graph inputs too', async () => {
  const bytes = readFileSync(fixture('ir3_conv_bn.onnx'));
  const { model, report } = lattice.convert(bytes, { target: 'none' });
  assert.equal(report.matches.filter((m) => m.applied).length, 1);
  assert.equal(await checkModel(model), 'ok');
  const { outputs } = await compareOutputs(bytes, model);
  for (const { maxDiff, maxMag } of Object.values(outputs)) assert.ok(maxDiff <= 1e-5 * maxMag);
});

test('Node API errors carry a code: options, model, and the message names the fault', () => {
  const sample = readFileSync(fixture('sample.onnx'));
  const cases = [
    [() => lattice.convert(sample, { target: 'xilinx' }), 'ERR_ONNX_LATTICE_OPTIONS', /unknown target 'xilinx'/],
    [() => lattice.convert(sample, { fold: true }), 'ERR_ONNX_LATTICE_OPTIONS', /unknown option 'fold'/],
    [() => lattice.convert(sample, { skipMatches: ['NoSuch:id'] }), 'ERR_ONNX_LATTICE_OPTIONS',
      /no match has the id 'NoSuch:id' \(this model's matches: LatticeSPPFMaxPoolPattern/],
    [() => lattice.convert('not bytes'), 'ERR_ONNX_LATTICE_OPTIONS', /must be a Uint8Array/],
    [() => lattice.convert(Buffer.from('GIF89a')), 'ERR_ONNX_LATTICE_MODEL', /not an ONNX model/],
  ];
  for (const [call, code, message] of cases) {
    assert.throws(call, (e) => e instanceof Error && e.code === code && message.test(e.message), String(message));
  }
});
