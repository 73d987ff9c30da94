// The Node.js API of the npm package (wasm/index.mjs).
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { loadModule } from '../../wasm/node/engine.mjs';
import { createSyncConverter } from '../../wasm/index.mjs';
import { ZOO, fixture, fixtures } from './helpers.mjs';

const lattice = await createSyncConverter();

test('with no pattern and no folding, convert returns the input bytes for every fixture and zoo model', () => {
  const zoo = existsSync(ZOO) ? readdirSync(ZOO).filter((f) => f.endsWith('.onnx')).map((f) => join(ZOO, f)) : [];
  for (const name of [...fixtures().map(fixture), ...zoo]) {
    const bytes = readFileSync(name);
    const { model, report } = lattice.convert(bytes, { target: 'none', foldBatchNorm: false });
    assert.ok(model instanceof Uint8Array, name);
    assert.deepEqual(Buffer.from(model), bytes, name);
    assert.equal(report.schema, 'onnx-lattice-report/1');
    assert.equal(report.input.bytes, bytes.length);
  }
});

test('the report carries the options and the input statistics', () => {
  const bytes = readFileSync(fixture('conv_bn_relu.onnx'));
  const { report } = lattice.convert(bytes, { target: 'none', foldBatchNorm: false });
  assert.equal(report.target, 'none');
  assert.deepEqual(report.options, {
    target: 'none', fold_batch_norm: false, only: [], skip: [], skip_matches: [], dry_run: false, data_layout: 'keep', snap_weights: 'reinit',
  });
  assert.equal(report.input.opset, 13);
  assert.equal(report.input.op_counts.Conv, 1);
  assert.equal(report.input.op_counts.BatchNormalization, 1);
  assert.equal(report.tool.name, 'onnx-lattice');
  assert.equal(report.tool.version, lattice.version);
});

test('inspect returns the report and no model; a dry run returns model null', () => {
  const bytes = readFileSync(fixture('sample.onnx'));
  const report = lattice.inspect(bytes);
  assert.equal(report.options.dry_run, true);
  assert.equal(lattice.convert(bytes, { dryRun: true }).model, null);
});

test('bad input throws an Error with a readable message, never a number', () => {
  const cases = [
    [new Uint8Array(0), /empty/],
    [new TextEncoder().encode('definitely not a model'), /not an ONNX model/],
    [readFileSync(fixture('sample.onnx')).subarray(0, 1000), /not an ONNX model/],
  ];
  for (const [bytes, message] of cases) {
    assert.throws(() => lattice.convert(bytes), (e) => e instanceof Error && message.test(e.message));
  }
});

test('bad options throw an Error naming the option', () => {
  const bytes = readFileSync(fixture('conv_bn_relu.onnx'));
  assert.throws(() => lattice.convert(bytes, { target: 'xilinx' }), /unknown target 'xilinx'/);
  assert.throws(() => lattice.convert(bytes, { foldBN: false }), /unknown option 'foldBN'/);
  assert.throws(() => lattice.convert(bytes, { foldBatchNorm: 'no' }), /foldBatchNorm has the wrong type/);
  assert.throws(() => lattice.convert(bytes, { skipMatches: 'a' }), /skipMatches must be an array/);
  assert.throws(() => lattice.convert(bytes, { only: ['NoSuchPattern'] }), /unknown pattern 'NoSuchPattern'/);
  assert.throws(() => lattice.convert('a string'), TypeError);
  // The page worker's own options are not the package's: the report-first callback would leave
  // `model` unwritten.
  assert.throws(() => lattice.convert(bytes, { onConverted: () => false }), /unknown option 'onConverted'/);
  assert.throws(() => lattice.convertFile(fixture('conv_bn_relu.onnx'), null, { held: new Map() }), /unknown option 'held'/);
});

// The binding's `onConverted` and `outputStem`, which only the page's worker gives (web/worker.js):
// the report and the descriptions before the output's parts are made, and the output named by the
// core from what the conversion did, its data file after it, in the one conversion.
test('the binding hands the report over before writing, and names the output and its data file from what the skips left out', async () => {
  const module = await loadModule();
  const bytes = readFileSync(fixture('resnet_stem.onnx'));
  const plain = lattice.convert(bytes, { dataLayout: 'external', dataFile: 'x.onnx.data' });
  const id = plain.report.matches.find((m) => m.applied && m.pattern.startsWith('Lattice')).id;
  const options = { describe: true, dataLayout: 'external', outputStem: 'stem', ignoreUnknownSkips: true };
  let early = null;
  const skipped = module.convert(bytes, { ...options, skipMatches: [id], onConverted: (e) => { early = { ...e }; } }, undefined);
  assert.match(skipped.name, /^stem\.lattice\.skip-[0-9a-f]{4}\.onnx$/);
  assert.equal(early.name, skipped.name);
  assert.deepEqual(JSON.parse(early.report), JSON.parse(skipped.report));
  assert.ok(JSON.parse(early.description).nodes.length > 0 && JSON.parse(early.inputDescription).nodes.length > 0);
  // The files are those the package writes under that name.
  const expected = lattice.convert(bytes, { dataLayout: 'external', dataFile: `${skipped.name}.data`, skipMatches: [id] });
  assert.ok(Buffer.concat(skipped.model).equals(Buffer.from(expected.model)));
  assert.ok(Buffer.concat(skipped.data).equals(Buffer.from(expected.data)));
  assert.ok(Buffer.from(expected.model).includes(Buffer.from(`${skipped.name}.data`)), 'the data file is named in the model');
  // A skip that matches nothing here (another target's) names nothing.
  const stale = module.convert(bytes, { ...options, target: 'none', skipMatches: [id] }, undefined);
  assert.equal(stale.name, 'stem.none.onnx');
  assert.ok(Buffer.concat(stale.model).includes(Buffer.from('stem.none.onnx.data')));
});

test('patterns() lists the targets of SPEC section 2', () => {
  const catalogue = lattice.patterns();
  assert.deepEqual(catalogue.targets.map((t) => t.name), ['lattice', 'lattice-advanced', 'none']);
  assert.ok(Array.isArray(catalogue.patterns));
});

test('an ArrayBuffer and a Buffer slice are accepted as input', () => {
  const file = readFileSync(fixture('control_flow.onnx'));
  const copy = file.buffer.slice(file.byteOffset, file.byteOffset + file.length);
  const options = { target: 'none', foldBatchNorm: false };
  assert.deepEqual(Buffer.from(lattice.convert(copy, options).model), file);
  assert.deepEqual(Buffer.from(lattice.convert(file, options).model), file);
});

test('inputShapes pins a graph input: analysed and written with those dims, recorded in the report', () => {
  const bytes = readFileSync(fixture('yolo_dynamic_batch.onnx'));
  const { model, report } = lattice.convert(bytes, { target: 'none', foldBatchNorm: false, inputShapes: { input: [1, 3, 64, 64] } });
  assert.deepEqual(report.input_shapes, { input: [1, 3, 64, 64] });
  assert.ok(!Buffer.from(model).equals(bytes), 'the pinned model is written, not the input');
  const again = lattice.convert(model, { target: 'none', foldBatchNorm: false, inputShapes: { input: [1, 3, 64, 64] } });
  assert.ok(Buffer.from(again.model).equals(Buffer.from(model)), 'pinning a pinned model changes nothing');
  assert.deepEqual(lattice.convert(bytes, { target: 'none' }).report.input_shapes, {});
  assert.throws(() => lattice.convert(bytes, { inputShapes: { input: [2, 3, 32, 64] } }),
    (e) => e.code === 'ERR_ONNX_LATTICE_OPTIONS' &&
      /the shape \[2, 3, 32, 64\] pinned for 'input' contradicts graph input 'input' \[N, 3, 64, 64\]: its dimension 2 is fixed at 64/.test(e.message) &&
      !/--/.test(e.message), 'the API\'s caller gave no flag');
  assert.throws(() => lattice.convert(bytes, { inputShapes: { input: [1, 3, 64.5, 64] } }), /inputShapes.input must be an array of positive whole numbers/);
  assert.throws(() => lattice.convert(bytes, { inputShapes: [[1, 3]] }), /options.inputShapes must be an object/);
});
