// The Node API's onProgress and describe(), which the page's progress bar and graph view use.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { createSyncConverter } from '../../wasm/index.mjs';
import { ZOO, fixture, fixtures } from './helpers.mjs';

const lattice = await createSyncConverter();

test('onProgress hears every stage once, in order, with a fraction that only grows to 1', () => {
  const events = [];
  const bytes = readFileSync(fixture('sample.onnx'));
  const { model } = lattice.convert(bytes, { onProgress: (e) => events.push(e) });
  const stages = events.map((e) => e.stage);
  assert.deepEqual(stages.filter((s) => !s.startsWith('conversion pass')),
    ['parse', 'validate', 'fusion pass', 'audit', 'save', 'writing', 'done']);
  assert.equal(stages.indexOf('conversion pass 1'), 2);
  const fractions = events.map((e) => e.fraction);
  assert.deepEqual(fractions, [...fractions].sort((a, b) => a - b));
  assert.equal(fractions[0], 0);
  assert.equal(fractions.at(-1), 1);
  // The callback changes nothing: same bytes as without it.
  assert.deepEqual(Buffer.from(model), Buffer.from(lattice.convert(bytes).model));
});

test('a rejected model ends its progress without "done", and onProgress must be a function', () => {
  const events = [];
  assert.throws(() => lattice.convert(Buffer.from('not a model'), { onProgress: (e) => events.push(e.stage) }), /ONNX/);
  assert.ok(!events.includes('done'), events.join());
  assert.throws(() => lattice.convert(readFileSync(fixture('sample.onnx')), { onProgress: 5 }), /onProgress must be a function/);
});

test('describe() names nodes as the report does, with shapes, attributes and the model card facts', () => {
  const bytes = readFileSync(fixture('sample.onnx'));
  const description = lattice.describe(bytes);
  const { report } = lattice.convert(bytes);
  assert.equal(description.nodes.length, report.input.nodes);
  assert.equal(description.opset, report.input.opset);
  assert.equal(description.ir_version, report.input.ir_version);
  assert.equal(description.bytes, bytes.length);
  const names = new Set(description.nodes.map((n) => n.name));
  for (const m of report.matches) for (const n of m.nodes) assert.ok(names.has(n) || report.matches.some((o) => o.new_nodes.includes(n)), n);
  assert.deepEqual(description.inputs.map((i) => [i.name, i.type, i.shape]), [['input', 'float', [1, 3, 64, 64]]]);
  const pool = description.nodes.find((n) => n.op === 'MaxPool');
  assert.ok(Array.isArray(pool.attributes.kernel_shape));
  assert.equal(pool.outputs[0].shape.length, 4);
  const conv = description.nodes.find((n) => n.op === 'Conv');
  assert.equal(conv.inputs[1].constant, true);
  assert.ok(description.parameters > 0);
});

test('describe() gives a symbolic dimension by its name through the graph, and a size derived from one by its expression', () => {
  const description = lattice.describe(readFileSync(fixture('detector_dynamic_hw.onnx')));
  const first = description.nodes.find((n) => n.op === 'Conv');
  assert.deepEqual(first.outputs[0].shape, ['N', 8, 'ceil(H/2)', 'ceil(W/2)']);
  // Through the backbone, a chain of strides is one division: the head reads a 1/32 grid.
  const head = description.nodes.find((n) => n.op === 'Conv' && n.outputs[0].shape[1] === 1);
  assert.deepEqual(head.outputs[0].shape, ['N', 1, 'ceil(H/32)', 'ceil(W/32)']);
  // A warning says a size change in the same words; a Pad's offset joins the window after it.
  const { report } = lattice.convert(readFileSync(fixture('detector_dynamic_hw.onnx')));
  assert.ok(report.warnings.some((w) => w.message.endsWith("changes shape from [N, 16, ceil(H/8), ceil(W/8)] to " +
    '[N, 16, ceil(floor(ceil(H/2)/2)/2), ceil(floor(ceil(W/2)/2)/2)]')), report.warnings.map((w) => w.message).join('\n'));
  const relu = description.nodes.find((n) => n.op === 'Relu');
  assert.equal(relu.outputs[0].shape[0], 'N', 'the batch by its name, never "?"');
});

test('a conversion asked to describe gives the input as describe() does, its tensor data read only where needed', () => {
  const zoo = existsSync(join(ZOO, 'resnet50.onnx')) ? [join(ZOO, 'resnet50.onnx')] : [];
  for (const path of [...fixtures().map(fixture), ...zoo]) {
    const bytes = readFileSync(path);
    let converted;
    try {
      converted = lattice.convert(bytes, { describe: true });
    } catch {
      continue;  // the fixtures the tool refuses on purpose
    }
    assert.deepEqual(converted.inputDescription, lattice.describe(bytes), path);
  }
});
