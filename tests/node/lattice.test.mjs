// The Lattice targets end to end: every converted model loads and runs in onnxruntime, keeps its
// graph outputs, changes an output shape only with a warning saying so, converts to itself, and
// is the same byte for byte from the native CLI and from WebAssembly.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { createSyncConverter } from '../../wasm/index.mjs';
import { CLIS, ZOO, fixture, fixtures, scratch } from './helpers.mjs';
import { compareOutputs, proposedSizes } from './ort.mjs';

const lattice = await createSyncConverter();
const dir = scratch();
const models = [
  ...fixtures().map((name) => [name, fixture(name)]),
  ...['resnet18', 'mobilenet_v2', 'mobilenet_v3_small', 'efficientnet_b0', 'googlenet', 'regnet_x_400mf']
    .map((name) => [`${name}.onnx`, join(ZOO, `${name}.onnx`)]),
];

for (const target of ['lattice', 'lattice-advanced']) {
  for (const [name, path] of models) {
    test(`${target} ${name}: runs in onnxruntime, outputs kept, idempotent, native = wasm`, { skip: !existsSync(path) && `no ${path}: run scripts/test.sh` }, async () => {
      const bytes = readFileSync(path);
      const { model, report } = lattice.convert(bytes, { target });

      const { outputs, originalNames, convertedNames } = await compareOutputs(bytes, model, proposedSizes(lattice.describe(bytes)));
      assert.deepEqual(convertedNames, originalNames, 'graph outputs keep their names and order');
      for (const [output, { dims, convertedDims }] of Object.entries(outputs)) {
        if (JSON.stringify(dims) !== JSON.stringify(convertedDims)) {
          const said = report.warnings.some((w) => w.message.includes(`graph output '${output}' changes shape`));
          assert.ok(said, `${output} changed from ${dims} to ${convertedDims} without a warning`);
        }
      }
      for (const m of report.matches.filter((m) => !m.applied)) assert.ok(m.reason, `${m.id} says why`);
      // A warning names the node it is about (an SPPF block's, each MaxPool it replaced), as its message does.
      for (const w of report.warnings) assert.ok(w.message.startsWith(`${w.node}: `), `${w.node} against '${w.message}'`);
      for (const m of report.matches.filter((m) => m.applied && !m.numerically_equivalent)) {
        assert.ok(report.warnings.some((w) => w.match_id === m.id), `${m.id} is not equivalent and warns`);
      }

      const again = lattice.convert(model, { target });
      assert.deepEqual(again.report.matches.filter((m) => m.applied), [], 'converting the output again applies nothing');
      assert.ok(Buffer.from(again.model).equals(Buffer.from(model)));

      const out = join(dir, `${target}-${name}`);
      const r = CLIS.native(['convert', path, '-o', out, '--target', target, '--quiet']);
      assert.equal(r.status, 0, r.stderr);
      assert.ok(readFileSync(out).equals(Buffer.from(model)), 'native CLI and wasm write the same bytes');
    });
  }
}

test('rewriting global average pools is numerically equivalent under onnxruntime', async () => {
  const bytes = readFileSync(fixture('global_pools.onnx'));
  const { model, report } = lattice.convert(bytes, { only: ['LatticeGlobalAvgPoolPattern'], foldBatchNorm: false });
  assert.equal(report.matches.filter((m) => m.applied).length, 2);
  assert.equal(report.output.op_counts.GlobalAveragePool, 2);
  const { outputs } = await compareOutputs(bytes, model);
  for (const { maxDiff, maxMag } of Object.values(outputs)) assert.ok(maxDiff <= 1e-6 * maxMag, `${maxDiff}`);
});

test('the sample model: every pattern family of the lattice target matches', () => {
  const { report } = lattice.convert(readFileSync(fixture('sample.onnx')));
  const applied = new Set(report.matches.filter((m) => m.applied).map((m) => m.pattern));
  for (const p of ['LatticeSPPFMaxPoolPattern', 'LatticeStride2AsymPadConvMaxPoolPattern',
    'LatticeStride2ConvBnReLUPattern', 'LatticeMaxPool2dPattern', 'ConvBatchNormFoldPattern']) {
    assert.ok(applied.has(p), p);
  }
  assert.equal(report.output.op_counts.BatchNormalization ?? 0, 0);
});
