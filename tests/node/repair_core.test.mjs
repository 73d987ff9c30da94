// Repair's core through the package's module (fitLayer, fitBytes, the repair session,
// fpqWeightBounds): the session's plan of a conversion, one layer of a converted model refitted
// from onnxruntime's activations, written back through the session, and run again.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import test from 'node:test';

import { withOutputs } from '../../wasm/shared/check.mjs';
import { fixture } from './helpers.mjs';
import { feedsFor, session } from './ort.mjs';

const { createSyncConverter } = await import('../../wasm/index.mjs');
const lattice = await createSyncConverter();

async function tensors(bytes, names, feeds) {
  const sess = await session(withOutputs(bytes, names));
  const out = await sess.run(feeds, names);
  return Object.fromEntries(names.map((n) => [n, out[n]]));
}

const relative = (out, target) => {
  const channels = target.dims[1], per = target.data.length / (target.dims[0] * channels);
  let err = 0, spread = 0;
  for (let c = 0; c < channels; ++c) {
    let mean = 0, count = 0;
    for (let n = 0; n < target.dims[0]; ++n) {
      for (let i = 0; i < per; ++i) mean += target.data[(n * channels + c) * per + i], ++count;
    }
    mean /= count;
    for (let n = 0; n < target.dims[0]; ++n) {
      for (let i = 0; i < per; ++i) {
        const at = (n * channels + c) * per + i;
        err += (out.data[at] - target.data[at]) ** 2;
        spread += (target.data[at] - mean) ** 2;
      }
    }
  }
  return Math.sqrt(err / spread);
};

test('a converted layer refitted from activations reproduces the original tensor in onnxruntime', async () => {
  const original = readFileSync(fixture('sample.onnx'));
  const { model: converted, report } = lattice.convert(original, { target: 'lattice' });
  const described = lattice.describe(converted);
  const shapes = new Map(lattice.describe(original).nodes.flatMap((n) => n.outputs.map((o) => [o.name, JSON.stringify(o.shape)])));
  // The first Conv a rewrite changed whose output the original also computes, in the same shape.
  const changed = new Set(report.matches.filter((m) => m.applied).flatMap((m) => m.new_nodes ?? []));
  const conv = described.nodes.find((n) => n.op === 'Conv' && changed.has(n.name) &&
    shapes.get(n.outputs[0].name) === JSON.stringify(n.outputs[0].shape));
  assert.ok(conv, 'a rewritten Conv');
  console.log(`refitting ${conv.name} (${JSON.stringify(conv.attributes)}, weight ${JSON.stringify(conv.inputs[1].shape)})`);
  const [input, weight] = conv.inputs;
  const output = conv.outputs[0].name;

  const feeds = feedsFor(await session(original), 3);
  const graphInput = Object.hasOwn(feeds, input.name);
  const x = graphInput ? feeds[input.name] : (await tensors(converted, [input.name], feeds))[input.name];
  const target = (await tensors(original, [output], feeds))[output];
  const before = (await tensors(converted, [output], feeds))[output];

  const spec = {
    op: 'Conv',
    attributes: conv.attributes,
    weightShape: weight.shape,
    input: { data: x.data, dims: x.dims },
    target: { data: target.data, dims: target.dims },
    maxRows: 1 << 20,
  };
  assert.ok(lattice.fitBytes(spec) > target.data.length * 4);
  const fit = lattice.fitLayer(spec);
  assert.ok(fit.weights instanceof Float32Array && fit.bias instanceof Float32Array);
  assert.equal(fit.weights.length, weight.shape.reduce((a, b) => a * b, 1));
  assert.equal(fit.rows, target.dims[0] * target.dims[2] * target.dims[3]);

  const { session: id } = lattice.openRepairSession(original, converted);
  lattice.repairSession(id, 'setWeights', [[{ node: conv.name, weights: fit.weights, bias: fit.bias }]]);
  const repaired = lattice.repairSession(id, 'bytes');
  lattice.repairSession(id, 'close');
  assert.ok(repaired instanceof Uint8Array);
  const after = (await tensors(repaired, [output], feeds))[output];
  const measured = relative(after, target);
  console.log(`relative residual: converted ${relative(before, target).toFixed(3)}, refitted ${measured.toFixed(4)} ` +
    `(onnxruntime) / ${fit.residualAfter.toFixed(4)} (the core's), ${fit.rows} rows`);
  // The residual the core computed from its normal equations is the one onnxruntime shows.
  assert.ok(Math.abs(measured - fit.residualAfter) < 1e-3 + 1e-3 * fit.residualAfter, `${measured} vs ${fit.residualAfter}`);
  assert.ok(measured < relative(before, target), `refit ${measured} is no better than converted ${relative(before, target)}`);
  // The repaired model converts again.
  lattice.convert(repaired, { target: 'lattice' });
});

test('the repair calls refuse bad input with coded errors', () => {
  const spec = {
    op: 'Conv', attributes: { pads: [1, 1, 1, 1] }, weightShape: [2, 1, 3, 3],
    input: { data: new Float32Array(16), dims: [1, 1, 4, 4] }, target: { data: new Float32Array(32), dims: [1, 2, 4, 4] },
  };
  const fit = lattice.fitLayer(spec);
  assert.equal(fit.rows, 16);
  assert.deepEqual([...fit.weights], new Array(18).fill(0));  // an all-zero input: zero weights
  const refused = (fn, pattern) => assert.throws(fn, (e) => e.code === 'ERR_ONNX_LATTICE_OPTIONS' && pattern.test(e.message));
  refused(() => lattice.fitLayer({ ...spec, op: 'Relu' }), /only Conv and Gemm/);
  refused(() => lattice.fitLayer({ ...spec, input: { data: [1, 2], dims: [1, 1, 4, 4] } }), /spec.input.data must be a Float32Array/);
  refused(() => lattice.fitLayer({ ...spec, weightShape: [2, 1, 3] }), /only 2-D Conv/);
  refused(() => lattice.fitLayer({ ...spec, attributes: { padding: 1 } }), /unknown attribute 'padding'/);
  refused(() => lattice.fitLayer({ ...spec, ridge: -1 }), /ridge must be/);
  refused(() => lattice.fitLayer({ ...spec, extra: 1 }), /unknown field 'spec.extra'/);
  refused(() => lattice.fitLayer({ ...spec, rectified: 1 }), /spec.rectified must be true or false/);
  refused(() => lattice.fitBytes({ ...spec, target: { dims: [1, 2, 3, 3] } }), /not the Conv's output/);
  const model = readFileSync(fixture('sample.onnx'));
  const { session: id } = lattice.openRepairSession(model, model);
  const setWeights = (layers) => lattice.repairSession(id, 'setWeights', [layers]);
  const before = lattice.repairSession(id, 'bytes');
  refused(() => setWeights([{ node: 'nope', weights: new Float32Array(1), bias: new Float32Array(1) }]), /no node is labelled 'nope'/);
  refused(() => setWeights([{ node: 'nope' }]), /layers\[0\].weights must be a Float32Array/);
  refused(() => setWeights({}), /layers must be an array/);
  // A refused entry leaves the session's model as it was.
  assert.deepEqual(lattice.repairSession(id, 'bytes'), before);
  lattice.repairSession(id, 'close');
  assert.throws(() => lattice.openRepairSession(new Uint8Array([1, 2, 3]), model), (e) => e.code === 'ERR_ONNX_LATTICE_MODEL');
  refused(() => lattice.fpqWeightBounds(model, 'nope', {}, {}), /no node is labelled 'nope'/);
  refused(() => lattice.fpqWeightBounds(model, '/stem/stem.0/Conv', { x: 'a' }, {}), /ranges\['x'\] must be an array of numbers/);
  refused(() => lattice.fpqWeightBounds(model, '/stem/stem.0/Conv', {}, null), /clips must be an object/);
  refused(() => lattice.fitLayer({ ...spec, weightBounds: new Float32Array(1) }), /the weight bounds hold 1 values where the weight shape needs/);
});

test('the session plans the repair: which layers, what each reproduces, which are left, the bytes a sample holds', () => {
  const plan = (model, options, matches, sizes) => {
    const converted = lattice.convert(model, options);
    const { session: id } = lattice.openRepairSession(model, converted.model);
    try {
      return lattice.repairSession(id, 'plan', [matches === undefined ? converted.report.matches : matches, sizes]);
    } finally {
      lattice.repairSession(id, 'close');
    }
  };
  const sample = readFileSync(fixture('sample.onnx'));
  const { layers, left, bytesPerSample } = plan(sample, {}, undefined, {});
  assert.deepEqual(left, []);
  assert.equal(layers.length, 14);
  // The stem's stride-2 rewrite: the Conv at stride 1, its output reproduced through the pool.
  const stem = layers[0];
  assert.deepEqual({ node: stem.node, through: stem.through, unpooled: stem.unpooled, target: stem.target, rectified: stem.rectified },
    { node: '/stem/stem.0/Conv', through: 'Relu → MaxPool', target: '/stem/stem.2/Relu_output_0', rectified: true,
      unpooled: { kernel: [2, 2], strides: [2, 2], fine: [1, 8, 64, 64], tensor: '/stem/stem.1/BatchNormalization_output_0' } });
  assert.equal(stem.rewritten, true);
  assert.deepEqual(stem.weightShape, [8, 3, 3, 3]);
  // An SPPF pool redrawn as a Conv reproduces the pool's output through its Relu; a fold alone
  // rewrote nothing.
  const sppf = layers.find((l) => l.node === '/sppf5/m/MaxPool.conv');
  assert.deepEqual([sppf.through, sppf.target, sppf.rewritten], ['Relu', '/sppf5/m/MaxPool_output_0', true]);
  const folded = layers.find((l) => l.node === '/sppf5/cv1/cv1.0/Conv');
  assert.deepEqual([folded.rewritten, folded.match_id], [false, 'ConvBatchNormFoldPattern:/sppf5/cv1/cv1.0/Conv']);
  assert.equal(bytesPerSample.layers.length, layers.length);
  assert.deepEqual(bytesPerSample.layers[0], { input: 4 * 3 * 64 * 64, target: 4 * 8 * 32 * 32, originalTarget: 4 * 8 * 32 * 32 });
  assert.ok(bytesPerSample.converted > bytesPerSample.original);
  // Without the conversion's report every layer counts as rewritten.
  assert.ok(plan(sample, {}, null, {}).layers.every((l) => l.rewritten && l.match_id === undefined));
  // A dynamic model converted pinned matches at the samples' sizes, and only there.
  const dynamic = readFileSync(fixture('detector_dynamic_hw.onnx'));
  const pinned = { inputShapes: { input: [1, 3, 64, 64] } };
  const sized = plan(dynamic, pinned, undefined, { input: [1, 3, 64, 64] });
  assert.deepEqual([sized.layers.length, sized.left.length], [5, 0]);
  const symbolic = plan(dynamic, pinned, undefined, {});
  assert.deepEqual([symbolic.layers.length, symbolic.left.length], [0, 5]);
  assert.match(symbolic.left[0].reason, /the original computes no tensor of the same name and shape/);
  const refused = (fn, pattern) => assert.throws(fn, (e) => e.code === 'ERR_ONNX_LATTICE_OPTIONS' && pattern.test(e.message));
  refused(() => plan(sample, {}, {}, {}), /matches must be an array, or null/);
  refused(() => plan(sample, {}, [{ applied: true }], {}), /matches\[0\] must be an object \{id: string/);
  refused(() => plan(sample, {}, [{ id: 'm', applied: true, new_nodes: 'c' }], {}), /matches\[0\].new_nodes must be an array of strings/);
  refused(() => plan(sample, {}, null, { input: 'a' }), /sizes\['input'\] must be an array of numbers/);
});

test('fitLayer runs a 3x3 64 -> 64 layer on 16384 rows in seconds', () => {
  const [n, c, h, w] = [4, 64, 64, 64];
  const data = new Float32Array(n * c * h * w);
  let s = 1;
  for (let i = 0; i < data.length; ++i) data[i] = ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32) - 0.5;
  const target = new Float32Array(n * c * h * w).map((_, i) => data[i] * 0.5);
  const started = performance.now();
  const fit = lattice.fitLayer({
    op: 'Conv', attributes: { pads: [1, 1, 1, 1] }, weightShape: [c, c, 3, 3],
    input: { data, dims: [n, c, h, w] }, target: { data: target, dims: [n, c, h, w] },
  });
  const ms = performance.now() - started;
  assert.equal(fit.rows, 16384);
  assert.ok(fit.residualAfter < 1e-2);
  console.log(`fitLayer 3x3 ${c}->${c}, ${fit.rows} rows (P = ${c * 9}): ${ms.toFixed(0)} ms`);
});
