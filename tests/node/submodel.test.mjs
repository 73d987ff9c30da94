// The parts of a model the repair runs (wasm/submodel.mjs): cut at any tensor, the part up to it
// and the part after it, fed the first part's output, compute in onnxruntime exactly what the
// whole model computes, bit for bit, on models with an If reading an outer initializer from its
// branches, a sparse initializer and a model-local function, IR 3 (initializers listed as
// inputs), and the trained digits CNN. (Parts are never written anywhere: their outputs carry a
// name only, as the check's added outputs do, which onnxruntime takes and onnx's checker would not.)
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'node:test';

import { withOutputs } from '../../wasm/check.mjs';
import { indexModel, submodel } from '../../wasm/submodel.mjs';
import { TRAINED, fixture } from './helpers.mjs';
import { feedsFor, session } from './ort.mjs';

const tensor = (t) => ({ type: t.type, dims: t.dims });

async function cutEverywhere(bytes) {
  const model = indexModel(bytes);
  const whole = await session(bytes);
  const feeds = feedsFor(whole, 3, Object.fromEntries(whole.inputMetadata.map((m) => [m.name, m.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 2))])));
  const outputs = whole.outputNames;
  const cuts = [...new Set(model.nodes.flatMap((n) => n.outputs))].filter((name) => name && !outputs.includes(name));
  assert.ok(cuts.length > 0);
  const expected = await (await session(withOutputs(bytes, cuts))).run(feeds);
  for (const cut of cuts) {
    const given = new Map(Object.entries(feeds).map(([name, t]) => [name, tensor(t)]));
    const first = submodel(model, given, [cut]);
    const upTo = await (await session(first.bytes)).run(Object.fromEntries(first.inputs.map((n) => [n, feeds[n]])));
    assert.deepEqual(upTo[cut].data, expected[cut].data, `the part up to '${cut}'`);
    given.set(cut, tensor(upTo[cut]));
    const second = submodel(model, given, outputs);
    const held = { ...feeds, [cut]: upTo[cut] };
    const after = await (await session(second.bytes)).run(Object.fromEntries(second.inputs.map((n) => [n, held[n]])));
    for (const name of outputs) assert.deepEqual(after[name].data, expected[name].data, `'${name}' from the part after '${cut}'`);
    assert.ok(second.nodes.length < model.nodes.length || !first.nodes.length, `the part after '${cut}' leaves out what comes before it`);
  }
}

for (const name of ['control_flow.onnx', 'everything.onnx', 'ir3_conv_bn.onnx', 'resnet_stem.onnx', 'sample.onnx']) {
  test(`${name}: cut at every tensor, the two parts compute what the whole does`, () => cutEverywhere(readFileSync(fixture(name))));
}

test('the trained digits CNN, cut at every tensor', { skip: !existsSync(join(TRAINED, 'digits.onnx')) && 'no trained models' },
  () => cutEverywhere(readFileSync(join(TRAINED, 'digits.onnx'))));

test('a part that needs a tensor it was not given, or a name no node computes, is refused in words', () => {
  const model = indexModel(readFileSync(fixture('control_flow.onnx')));
  assert.throws(() => submodel(model, new Map(), ['y']), /a part of the model needs 'x', which it was not given/);
  assert.throws(() => submodel(model, new Map([['x', { type: 'float32', dims: [1, 4] }]]), ['nope']), /no node of the model computes 'nope'/);
});
