// The audit a user can act on: activations written as several nodes are reported by name, as
// units, and the summary groups the audit by group and reason with counts.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { createSyncConverter } from '../../wasm/index.mjs';
import { CLIS, ZOO, fixture } from './helpers.mjs';

const lattice = await createSyncConverter();

const groups = (report) => {
  const out = {};
  for (const u of report.unsupported) out[u.group] = (out[u.group] ?? 0) + 1;
  return out;
};

test('the YOLO-style sample: its SiLU head is one activation, named, with both nodes', () => {
  const report = lattice.inspect(readFileSync(fixture('yolo_dynamic_batch.onnx')));
  assert.deepEqual(groups(report), { SiLU: 2 });
  for (const u of report.unsupported) assert.deepEqual(u.unit, ['/head/head.1/Sigmoid', '/head/head.1/Mul']);
  for (const run of Object.values(CLIS)) {
    const r = run(['inspect', fixture('yolo_dynamic_batch.onnx')]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /unsupported on lattice \(2 nodes\)\n {2}SiLU x 1 \(2 nodes\): part of a SiLU activation \(x\*Sigmoid\(x\)\), which the accelerator does not run\n {6}\/head\/head.1\/Sigmoid \+ \/head\/head.1\/Mul\n/);
  }
});

for (const [name, expected] of [['mobilenet_v3_small', { HardSwish: 38, HardSigmoid: 9, Mul: 9 }], ['efficientnet_b0', null]]) {
  const path = join(ZOO, `${name}.onnx`);
  test(`${name}: the audit groups its activations by name`, { skip: !existsSync(path) && `no ${path}: run scripts/test.sh` }, (t) => {
    const report = lattice.inspect(readFileSync(path));
    const counts = groups(report);
    if (expected) assert.deepEqual(counts, expected);
    else assert.ok(counts.SiLU > 0, JSON.stringify(counts));
    for (const u of report.unsupported) {
      if (u.unit) assert.ok(u.unit.includes(u.node), `${u.node} is one of its unit's nodes`);
    }
    const r = CLIS.native(['inspect', path]);
    t.diagnostic(r.stdout.slice(r.stdout.indexOf('unsupported on')).split('\n').filter((l) => !l.startsWith('      ')).join(' | '));
  });
}
