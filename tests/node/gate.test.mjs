// The gate a CI job sets on the check (--min-agreement, --min-accuracy; the API's minAgreement,
// minAccuracy): `check` and `convert --check` pass and fail the same converted model at the same
// share, exit 6 below it whatever the distances, and refuse a gate that random inputs would have
// to judge. The figures gated on are read here from the report by the rule docs/check.md states
// (each task kind's headline figure), and the edge is found from them: the gate passes at the
// lowest figure and fails just above it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { createSyncConverter } from '../../wasm/index.mjs';
import { CLIS, FIXTURES, TRAINED, scratch } from './helpers.mjs';

const lattice = await createSyncConverter();
const dir = scratch();
const ORIGINAL = join(FIXTURES, 'tasks/task_outputs.onnx');
const SAMPLES = join(FIXTURES, 'tasks/task_samples.npy');
const HEADLINE = { classes: 'top1_agreement', map: 'mean_iou', anchors: 'decision_agreement', sequence: 'sequence_agreement' };
const BELOW_GATE = 6;

// The model converted for Lattice (its rewrites change every output), written once.
const CONVERTED = join(dir, 'converted.onnx');
{
  const r = CLIS.node(['convert', ORIGINAL, '-o', CONVERTED, '--quiet']);
  assert.equal(r.status, 0, r.stderr);
}

test('--min-agreement: check and convert --check pass at the lowest task figure and exit 6 just above it, whatever the distances', () => {
  const plain = CLIS.node(['check', ORIGINAL, CONVERTED, '--inputs', SAMPLES, '--json']);
  assert.equal(plain.status, 1, 'without a gate the distances decide, and the rewrites are beyond the tolerance');
  const report = JSON.parse(plain.stdout);
  assert.equal(report.gate, undefined);
  const tasks = report.outputs.filter((o) => o.task?.samples);
  assert.equal(new Set(tasks.map((o) => o.task.kind)).size, 4, 'outputs of each task kind');
  const figures = tasks.map((o) => o.task[HEADLINE[o.task.kind]]);
  const lowest = Math.min(...figures);
  assert.ok(lowest > 0 && lowest < 1, `the lowest figure ${lowest} leaves room on both sides`);
  const above = lowest + 1e-9;
  for (const [share, status] of [[lowest, 0], [above, BELOW_GATE]]) {
    const checked = CLIS.node(['check', ORIGINAL, CONVERTED, '--inputs', SAMPLES, '--min-agreement', String(share)]);
    assert.equal(checked.status, status, `check at ${share}: ${checked.stdout}${checked.stderr}`);
    assert.match(checked.stdout, status ? /check: gate FAILED \(agreement ≥ .*\): output '/ : /check: gate passed/);
    const out = join(dir, `gated-${status}.onnx`), reportPath = `${out}.json`;
    const converted = CLIS.node(['convert', ORIGINAL, '-o', out, '--report', reportPath, '--check', '--inputs', SAMPLES, '--min-agreement', String(share)]);
    assert.equal(converted.status, status, `convert --check at ${share}: ${converted.stdout}${converted.stderr}`);
    const gate = JSON.parse(readFileSync(reportPath, 'utf8')).check.converted.gate;
    assert.equal(gate.pass, status === 0);
    assert.equal(gate.min_agreement, share);
    assert.equal(gate.below.length, status ? figures.filter((f) => f < above).length : 0);
  }
});

test('a gate needs samples: random inputs say nothing of a task (exit 2, the API rejects)', async () => {
  for (const args of [['check', ORIGINAL, CONVERTED], ['convert', ORIGINAL, '-o', join(dir, 'random.onnx'), '--check']]) {
    const r = CLIS.node([...args, '--min-agreement', '0.5']);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /--min-agreement gates on your samples' figures, and random inputs say nothing of a task: give --inputs/);
  }
  const percent = CLIS.node(['check', ORIGINAL, CONVERTED, '--inputs', SAMPLES, '--min-agreement', '95']);
  assert.equal(percent.status, 2);
  assert.match(percent.stderr, /--min-agreement needs a number from 0 to 1 \(a share: 0.95 for 95 %\), not '95'/);
  await assert.rejects(lattice.check(ORIGINAL, CONVERTED, { minAgreement: 0.5 }), { code: 'ERR_ONNX_LATTICE_OPTIONS', message: /give options.inputs/ });
  await assert.rejects(lattice.check(ORIGINAL, CONVERTED, { inputs: SAMPLES, minAccuracy: 2 }), { code: 'ERR_ONNX_LATTICE_OPTIONS' });
  const report = await lattice.check(ORIGINAL, CONVERTED, { inputs: SAMPLES, minAgreement: 0 });
  assert.deepEqual(report.gate, { min_agreement: 0, pass: true, below: [] });
});

test('--min-accuracy: the converted model\'s accuracy on labelled digits gates; samples without labels are below it', () => {
  const digits = join(TRAINED, 'digits.onnx'), held = join(TRAINED, 'heldout.npz');
  const out = join(dir, 'digits.onnx'), reportPath = `${out}.json`;
  const r = CLIS.node(['convert', digits, '-o', out, '--report', reportPath, '--check', '--inputs', held]);
  assert.equal(r.status, 0, r.stderr);
  const { accuracy } = JSON.parse(readFileSync(reportPath, 'utf8')).check.converted.outputs[0];
  assert.ok(accuracy.candidate < accuracy.original, `the conversion costs accuracy: ${JSON.stringify(accuracy)}`);
  for (const [share, status] of [[accuracy.candidate, 0], [accuracy.candidate + 1e-9, BELOW_GATE]]) {
    const gated = CLIS.node(['check', digits, out, '--inputs', held, '--min-accuracy', String(share)]);
    assert.equal(gated.status, status, gated.stdout + gated.stderr);
  }
  const unlabelled = CLIS.node(['check', ORIGINAL, CONVERTED, '--inputs', SAMPLES, '--min-accuracy', '0']);
  assert.equal(unlabelled.status, BELOW_GATE);
  assert.match(unlabelled.stdout, /no output has an accuracy: the samples came without labels/);
});
