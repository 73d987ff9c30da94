// --snap-weights under onnxruntime: transfer keeps what a snapped kernel's trained weights can
// give (an exact embedding changes nothing; a 5x5 -> 3x3 moves the output far less than
// re-initialising), kept_energy is numpy's, and both CLIs and convertFile take the option.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { createSyncConverter } from '../../wasm/index.mjs';
import { CLIS, ROOT, scratch } from './helpers.mjs';
import { compareOutputs } from './ort.mjs';

const lattice = await createSyncConverter();
const dir = scratch();
const made = spawnSync('/usr/bin/python3', [join(ROOT, 'tests/fixtures/make_snap_weights.py'), dir], { encoding: 'utf8' });
assert.equal(made.status, 0, made.stderr);
const expected = JSON.parse(readFileSync(join(dir, 'expected.json'), 'utf8'));
const model = (name) => readFileSync(join(dir, name));

// The largest change of the one output, over the original output's range.
async function change(bytes, converted) {
  const { outputs } = await compareOutputs(bytes, converted);
  const { maxDiff, maxMag } = outputs.output;
  return { maxDiff, maxMag };
}

for (const [name, target, only] of [
  ['factorised.onnx', 'lattice-advanced', undefined],  // 1x7 and 7x1 into 7x7, the whole conversion
  ['conv1x1_s2.onnx', 'lattice', ['LatticeConv2dPattern']],  // 1x1 stride 2 into 3x3 stride 2 pads 1
]) {
  test(`${name}: an exact embedding gives the original outputs and is reported numerically equivalent`, async () => {
    const bytes = model(name);
    const { model: out, report } = lattice.convert(bytes, { target, only, snapWeights: 'transfer' });
    const snapped = report.matches.filter((m) => m.weights);
    assert.ok(snapped.length > 0);
    for (const m of snapped) {
      assert.equal(m.applied, true);
      assert.equal(m.numerically_equivalent, true, m.id);
      assert.deepEqual(m.weights, { method: 'transfer', kept_energy: 1 });
      const warnings = report.warnings.filter((w) => w.match_id === m.id);
      assert.equal(warnings.length, 1, 'one warning, and it is not "output will differ"');
      assert.match(warnings[0].message, /weights transferred exactly .* output unchanged \(numerically equivalent\)\.$/);
    }
    const { maxDiff, maxMag } = await change(bytes, out);
    assert.ok(maxDiff <= 1e-5 * maxMag, `max |Δ| ${maxDiff} over max |y| ${maxMag}`);
  });
}

test('a 5x5 -> 3x3 snap of a trained-like kernel: transfer moves the output at most 0.6x what reinit does', async () => {
  const bytes = model('conv5x5.onnx');
  const transfer = lattice.convert(bytes, { snapWeights: 'transfer' });
  const reinit = lattice.convert(bytes, { snapWeights: 'reinit' });
  const t = await change(bytes, transfer.model), r = await change(bytes, reinit.model);
  assert.ok(t.maxDiff <= 0.6 * r.maxDiff, `transfer ${t.maxDiff}, reinit ${r.maxDiff}`);
  assert.equal(reinit.report.matches[0].weights.method, 'reinit');
  assert.match(transfer.report.warnings[0].message, /weights transferred \(centre 3×3 of 5×5, 87 % of the kernel's energy\)/);
});

test('kept_energy is what numpy computes from the weights (float32, float16, the stride-2 asymmetric pad)', () => {
  for (const [name, convs] of Object.entries(expected)) {
    const target = name === 'factorised.onnx' ? 'lattice-advanced' : 'lattice';
    const { report } = lattice.convert(model(name), { target, snapWeights: 'transfer', only: name === 'conv1x1_s2.onnx' ? ['LatticeConv2dPattern'] : undefined });
    for (const [conv, energy] of Object.entries(convs)) {
      const m = report.matches.find((m) => m.nodes[0] === conv && m.weights);
      assert.ok(m, `${name}: ${conv} was snapped`);
      assert.ok(Math.abs(m.weights.kept_energy - energy) <= 1e-12 * energy, `${name} ${conv}: ${m.weights.kept_energy} vs numpy ${energy}`);
    }
  }
});

test('both CLIs and convertFile take --snap-weights / snapWeights and write the same bytes as convert', () => {
  const path = join(dir, 'conv5x5_s2_pool.onnx');
  const { model: wanted, report } = lattice.convert(model('conv5x5_s2_pool.onnx'), { snapWeights: 'transfer' });
  assert.equal(report.options.snap_weights, 'transfer');
  for (const [cli, run] of Object.entries(CLIS)) {
    const out = join(dir, `cli-${cli}.onnx`);
    const r = run(['convert', path, '-o', out, '--snap-weights', 'transfer', '--quiet']);
    assert.equal(r.status, 0, r.stderr);
    assert.ok(readFileSync(out).equals(Buffer.from(wanted)), `${cli} CLI`);
    const bad = run(['convert', path, '-o', out, '--snap-weights', 'keep']);
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--snap-weights 'keep' is not reinit or transfer/);
  }
  const out = join(dir, 'file.onnx');
  lattice.convertFile(path, out, { snapWeights: 'transfer' });
  assert.ok(readFileSync(out).equals(Buffer.from(wanted)), 'convertFile');
  assert.throws(() => lattice.convert(model('conv5x5.onnx'), { snapWeights: 'keep' }),
    { code: 'ERR_ONNX_LATTICE_OPTIONS', message: /snapWeights 'keep' is not one of reinit, transfer/ });
});
