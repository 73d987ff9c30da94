// The parts of a model the repair runs (core/repair/part.h, through the repair session's `next`):
// cut at any tensor, the part up to it and the part after it, fed the first part's output,
// compute in onnxruntime exactly what the whole model computes, bit for bit, on models with an If
// reading an outer initializer from its branches, a sparse initializer and a model-local
// function, IR 3 (initializers listed as inputs), and the trained digits CNN. (Parts are never
// written anywhere: their outputs carry a name only, as the check's added outputs do, which
// onnxruntime takes and onnx's checker would not.)
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'node:test';

import { withOutputs } from '../../wasm/shared/check.mjs';
import { TRAINED, fixture } from './helpers.mjs';
import { feedsFor, session } from './ort.mjs';

const { createSyncConverter } = await import('../../wasm/index.mjs');
const lattice = await createSyncConverter();

const shapes = (tensors) => Object.fromEntries(Object.entries(tensors).map(([name, t]) => [name, { type: t.type, dims: t.dims }]));

async function cutEverywhere(bytes) {
  const whole = await session(bytes);
  const feeds = feedsFor(whole, 3, Object.fromEntries(whole.inputMetadata.map((m) => [m.name, m.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 2))])));
  const outputs = whole.outputNames;
  const nodes = lattice.describe(bytes).nodes;
  const cuts = [...new Set(nodes.flatMap((n) => n.outputs.map((o) => o.name)))].filter((name) => name && !outputs.includes(name));
  assert.ok(cuts.length > 0);
  const expected = await (await session(withOutputs(bytes, cuts))).run(feeds);
  const { session: id } = lattice.openRepairSession(bytes, bytes);
  const call = (method, ...args) => lattice.repairSession(id, method, args);
  try {
    for (const cut of cuts) {
      call('start', 'original', Object.keys(feeds), [cut, ...outputs]);
      const first = call('next', 'original', shapes(feeds), [cut], []);
      const upTo = await (await session(first.bytes)).run(Object.fromEntries(first.inputs.map((n) => [n, feeds[n]])));
      assert.deepEqual(upTo[cut].data, expected[cut].data, `the part up to '${cut}'`);
      // Held now: what the first step said to hold, and the inputs it did not let go.
      const held = { ...feeds, ...Object.fromEntries(first.hold.map((n) => [n, upTo[n]])) };
      for (const name of first.drop) delete held[name];
      assert.ok(cut in held, `'${cut}' is held: it was asked for`);
      const second = call('next', 'original', shapes(held), outputs, []);
      const after = await (await session(second.bytes)).run(Object.fromEntries(second.inputs.map((n) => [n, held[n]])));
      for (const name of outputs) assert.deepEqual(after[name].data, expected[name].data, `'${name}' from the part after '${cut}'`);
      assert.ok(second.nodes.every((n) => !first.nodes.includes(n)), `the part after '${cut}' runs nothing the first ran`);
    }
  } finally {
    call('close');
  }
}

for (const name of ['control_flow.onnx', 'everything.onnx', 'ir3_conv_bn.onnx', 'resnet_stem.onnx', 'sample.onnx']) {
  test(`${name}: cut at every tensor, the two parts compute what the whole does`, () => cutEverywhere(readFileSync(fixture(name))));
}

test('the trained digits CNN, cut at every tensor', { skip: !existsSync(join(TRAINED, 'digits.onnx')) && 'no trained models' },
  () => cutEverywhere(readFileSync(join(TRAINED, 'digits.onnx'))));

test('a part that needs a tensor it was not given, or a name no node computes, is refused in words', () => {
  const bytes = readFileSync(fixture('control_flow.onnx'));
  const { session: id } = lattice.openRepairSession(bytes, bytes);
  const call = (method, ...args) => lattice.repairSession(id, method, args);
  const refused = (fn, pattern) => assert.throws(fn, (e) => e.code === 'ERR_ONNX_LATTICE_OPTIONS' && pattern.test(e.message));
  refused(() => call('next', 'original', {}, ['y'], []), /runs were not started/);
  call('start', 'original', [], []);
  refused(() => call('next', 'original', {}, ['y'], []), /a part of the model needs 'x', which it was not given/);
  refused(() => call('next', 'original', { x: { type: 'float32', dims: [1, 4] } }, ['nope'], []), /no node of the model computes 'nope'/);
  refused(() => call('next', 'original', { x: { type: 'complex', dims: [1, 4] } }, ['y'], []), /a tensor of type complex cannot be given/);
  refused(() => call('next', 'theirs', {}, [], []), /'original' or 'converted'/);
  refused(() => call('resume'), /no method 'resume'/);
  call('close');
  refused(() => call('bytes'), /no repair session/);
  assert.throws(() => lattice.openRepairSession(bytes, new Uint8Array([1, 2, 3])), (e) => e.code === 'ERR_ONNX_LATTICE_MODEL' && /the converted model/.test(e.message));
});
