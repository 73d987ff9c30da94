// Lattice sensAI fixed point (--fixed-point fpq|lsq): FPQ's conv-bias rule applied and checked
// against onnxruntime, the fit analysis against numpy (tests/fixtures/make_fixed_point.py), the
// quantization section of a QDQ model, and both CLIs agreeing.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { roundHalfEven } from '../../wasm/shared/half.mjs';
import { createSyncConverter } from '../../wasm/index.mjs';
import { CLIS, fixture, scratch, stable } from './helpers.mjs';
import { compareOutputs } from './ort.mjs';

const RANGE_FIT = 'FpqRangeFitPattern';

const lattice = await createSyncConverter();
const dir = scratch();
const biases = readFileSync(fixture('fpq_biases.onnx'));
const scalesUp = readFileSync(fixture('bn_scales_up.onnx'));
const expected = JSON.parse(readFileSync(fixture('bn_scales_up.expected.json')));

const biasedConvs = (model) => lattice.describe(model).nodes.filter((n) => n.op === 'Conv' && n.inputs.length > 2 && n.inputs[2].name);

test('FPQ: every conv bias moves into a BatchNormalization, one match each, outputs equal under onnxruntime', async (t) => {
  assert.equal(biasedConvs(biases).length, 5, 'the fixture has five biased convs');
  // The bias move alone: the range fit (tests/node/range_fit.test.mjs) would rescale the same chains.
  const { model, report } = lattice.convert(biases, { target: 'none', fixedPoint: 'fpq', skip: [RANGE_FIT] });
  const moved = report.matches.filter((m) => m.pattern === 'FpqConvBiasIntoBatchNormPattern');
  assert.deepEqual(moved.map((m) => [m.id, m.applied, m.nodes.length]), [
    ['FpqConvBiasIntoBatchNormPattern:/conv1/Conv', true, 2],   // into bn1
    ['FpqConvBiasIntoBatchNormPattern:/dw2/Conv', true, 2],     // depthwise, into bn2
    ['FpqConvBiasIntoBatchNormPattern:/conv3/Conv', true, 1],   // a new BN
    ['FpqConvBiasIntoBatchNormPattern:/dw4/Conv', true, 1],     // depthwise, a new BN
    ['FpqConvBiasIntoBatchNormPattern:/group5/Conv', true, 1],  // grouped, writing the graph output
  ]);
  assert.equal(report.matches.length, 5, 'FPQ turns the BatchNorm fold off');
  assert.deepEqual(biasedConvs(model), []);
  assert.equal(report.output.op_counts.BatchNormalization, 5);
  assert.equal(report.options.fixed_point, 'fpq');
  assert.equal(report.options.fold_batch_norm, false);
  const { outputs } = await compareOutputs(biases, model);
  for (const [name, { maxDiff, maxMag }] of Object.entries(outputs)) {
    assert.ok(maxDiff <= 1e-5 * maxMag, `${name}: max |diff| ${maxDiff} > 1e-5 x ${maxMag}`);
    t.diagnostic(`fpq_biases ${name}: max |diff| / max |output| = ${(maxDiff / maxMag).toExponential(2)}`);
  }
  // The output is FPQ-clean: converting it again matches nothing, and the analysis finds no bias.
  assert.equal(lattice.convert(model, { target: 'none', fixedPoint: 'fpq', skip: [RANGE_FIT] }).report.matches.length, 0);
  assert.deepEqual(report.fixed_point.findings.filter((f) => f.rule === 'conv-bias-needs-batchnorm'), []);
});

test('FPQ composes with the lattice target: no biased conv in the output', () => {
  for (const target of ['lattice', 'lattice-advanced']) {
    for (const name of ['fpq_biases.onnx', 'sample.onnx', 'mobilenet_blocks.onnx']) {
      const { model, report } = lattice.convert(readFileSync(fixture(name)), { target, fixedPoint: 'fpq' });
      assert.deepEqual(biasedConvs(model).map((n) => n.name), [], `${target} ${name}`);
      assert.equal(report.matches.filter((m) => m.pattern === 'ConvBatchNormFoldPattern').length, 0);
    }
  }
});

test('FPQ with foldBatchNorm: each folded conv is warned about once, and its bias stays', () => {
  const { model, report } = lattice.convert(biases, { target: 'none', fixedPoint: 'fpq', foldBatchNorm: true });
  const folds = report.matches.filter((m) => m.pattern === 'ConvBatchNormFoldPattern' && m.applied);
  assert.equal(folds.length, 2);
  const warned = report.warnings.filter((w) => /FPQ will refuse it/.test(w.message));
  assert.deepEqual(warned.map((w) => w.match_id), folds.map((m) => m.id));
  // The three convs with no BN still get theirs; the two folded ones keep their bias.
  assert.equal(report.matches.filter((m) => m.pattern === 'FpqConvBiasIntoBatchNormPattern').length, 3);
  assert.deepEqual(biasedConvs(model).map((n) => n.name), ['/conv1/Conv', '/dw2/Conv']);
  assert.deepEqual(report.fixed_point.findings.filter((f) => f.rule === 'conv-bias-needs-batchnorm').map((f) => f.node),
    ['/conv1/Conv', '/dw2/Conv']);
});

test('FPQ fit: the clipped and vanished shares and the error match numpy, folded and not', () => {
  const close = (a, b, what) => assert.ok(Math.abs(a - b) <= 1e-12 + 1e-9 * Math.abs(b), `${what}: ${a} vs numpy ${b}`);
  for (const [fold, want] of [[true, expected.folded], [false, expected.unfolded]]) {
    // The weights as converted, not range-fitted: numpy's figures are of those.
    const { report } = lattice.convert(scalesUp, { target: 'none', fixedPoint: 'fpq', foldBatchNorm: fold, skip: [RANGE_FIT] });
    const layers = Object.fromEntries(report.fixed_point.layers.map((l) => [l.node, l]));
    assert.deepEqual(Object.keys(layers).sort(), Object.keys(want).sort());
    for (const [node, numbers] of Object.entries(want)) {
      for (const key of ['clipped', 'vanished', 'quantization_error', 'weight_min', 'weight_max']) {
        close(layers[node][key], numbers[key], `${node} ${key} (fold ${fold})`);
      }
      assert.equal(layers[node].fits, numbers.clipped === 0 && numbers.quantization_error < 0.1);
      const clips = report.fixed_point.findings.find((f) => f.node === node && f.rule === 'weights-clip');
      assert.equal(Boolean(clips), numbers.clipped > 0, `${node}: flagged when it clips`);
      if (clips) {
        const said = Number(clips.message.match(/([\d.]+) % of its weights/)[1]);
        assert.ok(Math.abs(said - 100 * numbers.clipped) <= 0.05, `${node}: says ${said} %`);
      }
      if (clips) assert.equal(clips.source, 'FPGA-UG-02228 Table 4.1');
    }
  }
  assert.ok(expected.folded['/conv_a/Conv'].clipped > 0.5 && expected.unfolded['/conv_a/Conv'].clipped === 0,
    'the BN is what makes conv_a clip');
});

test('FPQ fit: a BatchNorm left as a layer is measured against signed 5.10', () => {
  const { report } = lattice.convert(scalesUp, { target: 'none', fixedPoint: 'fpq' });
  const [bn] = report.fixed_point.batch_norms;
  assert.equal(bn.node, '/bn_a/BatchNormalization');
  assert.ok(bn.scale_min > 14 && bn.scale_max < 57 && bn.fits, JSON.stringify(bn));
  assert.equal(report.fixed_point.findings.filter((f) => f.rule === 'input-range').length, 1);
  assert.deepEqual(report.unsupported.filter((u) => u.op_type === 'BatchNormalization'), []);
});

test('LSQ: structural notes only; the conversion is the target\'s, unchanged', () => {
  const sample = readFileSync(fixture('sample.onnx'));
  const plain = lattice.convert(sample, {});
  const { model, report } = lattice.convert(sample, { fixedPoint: 'lsq' });
  assert.ok(Buffer.from(model).equals(Buffer.from(plain.model)), 'same bytes as without the scheme');
  assert.deepEqual(report.matches, plain.report.matches);
  assert.deepEqual(report.fixed_point.layers, []);
  const note = report.fixed_point.findings.find((f) => f.rule === 'lsq-snapping-not-needed');
  assert.match(note.message, /LatticeSPPFMaxPoolPattern/);
  assert.equal(note.source, 'FPGA-UG-02228 Table 4.2');
  const muls = report.fixed_point.findings.filter((f) => f.rule === 'not-on-fpga');
  assert.equal(muls.length, plain.report.output.op_counts.Mul ?? 0);
});

test('a QDQ model: its Q/DQ nodes are described in `quantization`, not audited as unsupported', () => {
  const qdq = readFileSync(fixture('qdq.onnx'));
  const { report } = lattice.convert(qdq, {});
  assert.deepEqual(report.unsupported.filter((u) => /Quantize/.test(u.op_type)), []);
  const q = report.quantization;
  assert.deepEqual(q.nodes, ['input_q', 'input_dq', 'w_dq', 'relu_q', 'relu_dq']);
  assert.equal(q.form, 'qdq');
  assert.equal(q.per_channel, true);
  assert.equal(q.power_of_two, null, 'only said under FPQ');
  assert.ok(q.scales.min === Math.fround(0.0029) && q.scales.max === Math.fround(0.05), JSON.stringify(q.scales));
  assert.match(q.message, /quantizes the float model itself/);
  // Folding through a DequantizeLinear weight stays refused, with its reason.
  const fold = report.matches.find((m) => m.pattern === 'ConvBatchNormFoldPattern');
  assert.equal(fold.applied, false);
  assert.match(fold.reason, /the weight 'w_dq' of 'conv' is not a constant: it is the output of DequantizeLinear 'w_dq'/);

  const fpq = lattice.convert(qdq, { fixedPoint: 'fpq' }).report.quantization;
  assert.equal(fpq.power_of_two, false);
  assert.match(fpq.message, /3 of its 8 scales are powers of two, 3 of them one of FPQ's fixed steps/);
});

test('no scheme: the report has neither fixed_point nor quantization for a float model', () => {
  const { report } = lattice.convert(biases, {});
  assert.equal('fixed_point' in report, false);
  assert.equal('quantization' in report, false);
  assert.equal('fixed_point' in report.options, false);
});

test('both CLIs: --fixed-point gives the same bytes and report; bad values are usage errors', () => {
  const out = {};
  for (const [cli, run] of Object.entries(CLIS)) {
    const model = join(dir, `${cli}.onnx`), report = join(dir, `${cli}.json`);
    const r = run(['convert', fixture('fpq_biases.onnx'), '-o', model, '--report', report, '--fixed-point', 'fpq', '--fold-bn']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /fixed point fpq/);
    out[cli] = { model: readFileSync(model), report: JSON.parse(readFileSync(report)), stdout: r.stdout.replaceAll(model, 'OUT') };
    for (const bad of [['--fixed-point', 'int8'], ['--fold-bn', '--no-fold-bn']]) {
      const e = run(['inspect', fixture('fpq_biases.onnx'), ...bad]);
      assert.equal(e.status, 2, `${cli} ${bad}: ${e.stderr}`);
    }
    const hw = run(['hardware']);
    assert.match(hw.stdout, /FPQ: weights signed 0\.7 scale 0\.5/);
    assert.match(hw.stdout, /FPGA-UG-02228 Table 4\.2/);
  }
  assert.ok(out.node.model.equals(out.native.model));
  assert.deepEqual(stable(out.node.report), stable(out.native.report));
  assert.equal(out.node.stdout, out.native.stdout);
});

// The JavaScript that measures FPQ's rounding (the check's activation fit) rounds as the core's
// std::nearbyint does: C's rint (numpy.rint), same rule, same sign of zero, at ties, near them and
// where doubles stop having fractions.
test('roundHalfEven is the core\'s nearbyint: C\'s rint on ties, near-ties, signed zeros and large values', () => {
  const values = [0, -0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, -1023.5, 1024.5, 0.49999999999999994, -0.49999999999999994,
    0.5000000000000001, -0.4, 2 ** 52 - 0.5, -(2 ** 52) + 1.5, 2 ** 52 + 1, 2 ** 53, -(2 ** 60), 1e300, Infinity, -Infinity, NaN];
  for (let i = 0; i < 200; ++i) values.push((i - 100) / 2, (i - 100) / 4 + 1e-9 * (i % 3 - 1));
  // As raw doubles both ways: JSON would lose -0.
  const r = spawnSync('/usr/bin/python3', ['-c', 'import numpy, sys\n' +
    'sys.stdout.buffer.write(numpy.rint(numpy.frombuffer(sys.stdin.buffer.read(), numpy.float64)).tobytes())'],
  { input: new Uint8Array(Float64Array.from(values).buffer), maxBuffer: 1 << 20 });
  assert.equal(r.status, 0, String(r.stderr));
  const rint = new Float64Array(r.stdout.buffer, r.stdout.byteOffset, values.length);
  const differ = values.map((v, i) => [v, roundHalfEven(v), rint[i]]).filter(([, mine, c]) => !Object.is(mine, c));
  assert.deepEqual(differ, []);
});
