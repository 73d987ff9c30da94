// FPQ range fitting (FpqRangeFitPattern, wasm/shared/range_fit.mjs): on the digits CNN trained on real
// data, exported with its BatchNormalizations folded into the convs (stem weights beyond FPQ's
// [-0.5, 0.5), activations beyond [0, 2)), the fit measured on the calibration samples keeps the
// FPQ twin deciding as the float model on held-out samples, passes the float check and lowers the
// clipped shares; the same conversion without it is reported. Seeded, deterministic.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'node:test';

import { createConverter } from '../../wasm/index.mjs';
import { CLIS, FPQ_TRAINED, TRAINED, fixture, scratch } from './helpers.mjs';
import { compareOutputs } from './ort.mjs';

const dir = scratch();
const fused = join(TRAINED, 'digits_fused.onnx');
const skip = !existsSync(fused) && 'no trained models (tests/fixtures/make_trained.py)';

function convert(args, name, model = fused, data = TRAINED) {
  const out = join(dir, `${name}.onnx`), report = join(dir, `${name}.json`);
  const r = CLIS.node(['convert', model, '-o', out, '--report', report, '--target', 'none', '--fixed-point', 'fpq', '--check',
    '--simulate', 'fpq', '--inputs', join(data, 'heldout.npz'), ...args]);
  assert.equal(r.status, 0, r.stderr + r.stdout);
  return { stdout: r.stdout, report: JSON.parse(readFileSync(report, 'utf8')) };
}

test('range fit on calibration data: the FPQ twin agrees with the float model on > 95 % of held-out samples', { skip }, () => {
  const fitted = convert(['--calibration', join(TRAINED, 'calibration.npy')], 'fitted');
  const without = convert(['--skip', 'FpqRangeFitPattern'], 'without');
  const agreement = (r) => r.check.fpq.outputs[0].top1_agreement;
  console.log(`FPQ twin top-1 agreement on 400 held-out samples: without range fit ${(100 * agreement(without.report)).toFixed(1)} %, ` +
    `with it ${(100 * agreement(fitted.report)).toFixed(1)} %`);
  console.log(fitted.stdout.split('\n').filter((l) => l.startsWith('range fit')).join('\n'));
  assert.ok(agreement(fitted.report) > 0.95, `agreement ${agreement(fitted.report)}`);
  assert.equal(without.report.range_fit, undefined);
  assert.ok(!without.report.matches.some((m) => m.pattern === 'FpqRangeFitPattern'));

  const fit = fitted.report.range_fit;
  assert.equal(fit.data.source, 'calibration.npy');
  assert.equal(fit.data.samples, 128);
  assert.ok(fit.matches.filter((m) => m.applied).length >= 3, JSON.stringify(fit.matches.map((m) => m.id)));
  assert.ok(fit.matches.every((m) => m.numerically_equivalent && m.id.startsWith('FpqRangeFitPattern:')));
  // Exact in float: the fit against the model before it, and the whole conversion against the
  // original (the fold-only twin and the converted model's own check).
  assert.equal(fit.float_check.pass, true);
  assert.equal(fitted.report.check.fold_only.pass, true);
  assert.ok(fitted.report.check.converted.outputs[0].top1_agreement === 1);
  // The clipped shares it reports go down, overall and on every tensor it fitted.
  assert.ok(fit.clipped.after < fit.clipped.before, JSON.stringify(fit.clipped));
  // Its weights now within signed 0.7 with scale 0.5: the fit analysis of what was written.
  const stem = fitted.report.fixed_point.layers[0];
  assert.equal(stem.clipped, 0, JSON.stringify(stem));
  assert.ok(without.report.fixed_point.layers[0].clipped > 0.1);
  assert.match(fitted.stdout, /range fit: \d+ layers fitted to FPQ's ranges measured on calibration\.npy/);
});

test('range fit without calibration samples: seeded random inputs in [0, 2), said so; the API does the same', { skip }, async () => {
  const lattice = await createConverter();
  const converted = await lattice.convert(readFileSync(fused), { target: 'none', fixedPoint: 'fpq' });
  const a = await lattice.fitRanges(converted.model, { conversion: converted.report });
  const b = await lattice.fitRanges(converted.model, { conversion: converted.report });
  assert.deepEqual(a.model, b.model, 'seeded');
  assert.equal(a.report.data.source, '32 random inputs in [0, 2)');
  assert.match(a.report.data.note, /not your data/);
  assert.equal(a.report.float_check.pass, true);
  const c = await lattice.fitRanges(converted.model, { conversion: converted.report, calibration: join(TRAINED, 'calibration.npy') });
  assert.equal(c.report.data.samples, 128);
  assert.ok(c.report.clipped.after < c.report.clipped.before);
  // A skipped match id is left as it is.
  const id = c.report.matches.find((m) => m.applied).id;
  const skipped = await lattice.fitRanges(converted.model, {
    conversion: { ...converted.report, options: { ...converted.report.options, skip_matches: [id] } },
    calibration: join(TRAINED, 'calibration.npy'),
  });
  assert.match(skipped.report.matches.find((m) => m.id === id).reason, /skipped on request/);
});

// The rewrite under onnxruntime, on plain, depthwise and grouped convs (each conv's BatchNorm moved
// bias included): the fit without data (its estimate) leaves the outputs as they were.
test('range fit: exact in float under onnxruntime on plain, depthwise and grouped convs', async () => {
  const lattice = await createConverter();
  const input = readFileSync(fixture('fpq_biases.onnx'));
  const { model, report } = await lattice.convert(input, { target: 'none', fixedPoint: 'fpq' });
  const fits = report.matches.filter((m) => m.pattern === 'FpqRangeFitPattern' && m.applied);
  assert.ok(fits.length >= 2, JSON.stringify(report.matches.map((m) => [m.id, m.reason])));
  assert.ok(fits.every((m) => m.node_ops.join() === 'Conv,BatchNormalization'), JSON.stringify(fits.map((m) => m.node_ops)));
  assert.ok(report.fixed_point.findings.some((f) => f.rule === 'range-fit' && /without data/.test(f.message)));
  const { outputs } = await compareOutputs(input, model);
  for (const [name, { maxDiff, maxMag }] of Object.entries(outputs)) {
    assert.ok(maxDiff <= 1e-5 * maxMag, `${name}: max |diff| ${maxDiff} > 1e-5 x ${maxMag}`);
  }
});

// Below opset 11 the twin's model cannot be written (no Round, no Clip with its bounds as inputs),
// but what FPQ holds in which representation can: the fit measures its activations all the same,
// and the check's own twin comparison is the one that says the opset is too old.
test('range fit below opset 11: fitted and measured, the twin refused only where it is asked for', async () => {
  const model = fixture('conv_bn_opset7.onnx');
  const out = join(dir, 'opset7.onnx'), report = join(dir, 'opset7.json');
  const fitted = CLIS.node(['convert', model, '-o', out, '--report', report, '--fixed-point', 'fpq', '--check']);
  assert.equal(fitted.status, 0, fitted.stderr + fitted.stdout);
  const fit = JSON.parse(readFileSync(report, 'utf8')).range_fit;
  assert.equal(fit.float_check.pass, true);
  assert.deepEqual(fit.activations.map((a) => a.representation), ['unsigned 1.7', 'signed 5.10', 'signed 5.10', 'unsigned 1.7', 'unsigned 1.7']);
  const simulated = CLIS.node(['convert', model, '-o', join(dir, 'opset7_twin.onnx'), '--fixed-point', 'fpq', '--check', '--simulate', 'fpq']);
  assert.match(simulated.stdout + simulated.stderr, /the FPQ twin needs opset 11 or later .* opset 7/);
});

// Models the fit was not developed on (make_fpq_trained.py): a YOLO-style SPPF block, whose pools
// and Concat the scales move through, and residual blocks, whose Adds join every BatchNormalization
// of a stream under one scale; each as exported with BatchNorm kept and folded.
const FPQ_MODELS = { sppf: 0.97, residual: 0.97, sppf_fused: 0.95, residual_fused: 0.95 };
// Where the values the dense head reads are computed.
const lastBlock = { sppf: '/sppf/cv2', sppf_fused: '/sppf/cv2', residual: '/layers/layers.3', residual_fused: '/layers/layers.3' };
for (const [name, least] of Object.entries(FPQ_MODELS)) {
  const model = join(FPQ_TRAINED, `${name}.onnx`);
  test(`range fit through pools, Concat and Add: ${name}'s FPQ twin decides as the float model on >= ${100 * least} % of held-out samples`,
    { skip: !existsSync(model) && 'no FPQ trained models (tests/fixtures/make_fpq_trained.py)' }, () => {
      const { stdout, report } = convert(['--calibration', join(FPQ_TRAINED, 'calibration.npy')], `fpq_${name}`, model, FPQ_TRAINED);
      const agreement = report.check.fpq.outputs[0].top1_agreement;
      console.log(`${name}: ${stdout.split('\n').filter((l) => /FPQ twin decides|range fit: \d/.test(l)).join('; ')}`);
      assert.ok(agreement >= least, `${name}: FPQ twin top-1 agreement ${agreement}`);
      // Exact in float: the fit against the model before it, the conversion against the original.
      assert.equal(report.range_fit.float_check.pass, true);
      assert.equal(report.check.fold_only.pass, true);
      assert.equal(report.check.converted.outputs[0].top1_agreement, 1);
      // No weight leaves signed 0.7 with scale 0.5. The SPPF block's pools and the residual
      // streams' Adds fit, but for the values the dense head reads: its rows cannot shrink, so
      // there the activation clips by choice, and a warning says what it would need.
      assert.ok(report.fixed_point.layers.every((l) => l.clipped === 0), JSON.stringify(report.fixed_point.layers.filter((l) => l.clipped)));
      const pools = report.range_fit.activations.filter((a) => /MaxPool|Add/.test(a.tensor));
      assert.ok(pools.length > 0);
      const headWarned = report.range_fit.warnings.some((w) => w.message.includes("and '/fc/Gemm''s weights in range"));
      for (const a of pools) {
        assert.ok(a.clipped.after <= a.clipped.before, `${a.tensor}: clipped ${a.clipped.before} -> ${a.clipped.after}`);
        assert.ok(a.clipped.after <= 0.02 || (headWarned && a.tensor.startsWith(lastBlock[name])), `${a.tensor}: clipped ${a.clipped.after}`);
      }
      // What clips is chosen and said: each channel's clip below its largest value, with its cost.
      const clipped = report.range_fit.clips.flatMap((t) => t.channels.map((c) => ({ tensor: t.tensor, ...c })));
      assert.equal(clipped.length > 0, headWarned);
      for (const c of clipped) {
        assert.ok(c.tensor.startsWith(lastBlock[name]) && c.clip < c.largest && c.clipped > 0 && c.clipped < 1 && Number.isFinite(c.sqnr_db), JSON.stringify(c));
      }
      if (headWarned) assert.match(stdout, /range fit: \d+ channels? of \d+ activations? clip by choice/);
    });
}

// Under FPQ the stride-2 rewrite keeps each layer's trained BatchNormalization between the Conv
// and its Relu: the repair fits the Conv through it, so those layers are refitted, not left as
// converted. A residual block's 1x1 downsample (Conv -> BatchNormalization -> Add, no Relu) is
// pooled on its input instead, so that FPQ's unsigned MaxPool reads no signed value, and fitted as
// any layer is.
test('repair under FPQ refits the stride-2 layers through the BatchNormalization they kept', {
  skip: !existsSync(join(FPQ_TRAINED, 'residual.onnx')) && 'no FPQ trained models (tests/fixtures/make_fpq_trained.py)',
}, () => {
  const model = join(FPQ_TRAINED, 'residual.onnx');
  const out = join(dir, 'residual_repaired.onnx'), reportFile = join(dir, 'residual_repaired.json');
  const r = CLIS.node(['convert', model, '-o', out, '--report', reportFile, '--fixed-point', 'fpq', '--repair',
    '--calibration', join(FPQ_TRAINED, 'calibration.npy'), '--check', '--simulate', 'fpq', '--inputs', join(FPQ_TRAINED, 'heldout.npz')]);
  assert.equal(r.status, 0, r.stderr + r.stdout);
  const { repair, check, warnings } = JSON.parse(readFileSync(reportFile, 'utf8'));
  assert.deepEqual(repair.left, []);
  // Four stride-2 layers: two 3×3 convs before a Relu, fitted to the original's tensor after the
  // pool; two 1×1 downsamples after one, fitted to the original's own output.
  const stride2 = repair.layers.filter((l) => l.refitted && l.match_id?.startsWith('LatticeStride2ConvBnReLUPattern:'));
  assert.equal(stride2.length, 4, JSON.stringify(repair.layers.map((l) => [l.node, l.match_id])));
  assert.deepEqual(stride2.map((l) => l.through), [undefined, 'BatchNormalization → Relu → MaxPool', undefined, 'BatchNormalization → Relu → MaxPool']);
  assert.ok(stride2.every((l) => l.after.rel < l.before.rel), JSON.stringify(stride2.map((l) => [l.node, l.before.rel, l.after.rel])));
  assert.ok(!warnings.some((w) => w.message.includes('under FPQ the new MaxPool reads signed values')), JSON.stringify(warnings));
  // Measured: 98.0 % against the original's 99.25 %.
  const { accuracy } = check.converted.outputs[0];
  assert.ok(accuracy.candidate >= accuracy.original - 0.02, JSON.stringify(accuracy));
  // The twin of the repaired model: 98.0 %, within 2 points of the float original (92.3 % with
  // the downsamples pooled after their BatchNormalization, 86.8 % with the dense head fitted free
  // as well, 59.3 % with the stride-2 layers left as converted).
  const twin = check.fpq.outputs[0].accuracy.candidate;
  assert.ok(twin >= accuracy.original - 0.02, JSON.stringify({ twin, original: accuracy.original }));
});

// The dense head is refitted through the BatchNormalization FPQ gives it (its bias moved there),
// within the weights the range fit can then scale its input for and shrink its rows by: no refit
// weight clips, and the range fit finds no channel whose scale the head's weights stop. Fitted
// free, its weights left channels 4 bits short of range and the twin 5.7 points lower.
test('repair under FPQ holds the dense head to the weights the range fit can scale for', {
  skip: !existsSync(join(FPQ_TRAINED, 'residual.onnx')) && 'no FPQ trained models (tests/fixtures/make_fpq_trained.py)',
}, () => {
  const reportFile = join(dir, 'residual_repaired.json');
  assert.ok(existsSync(reportFile), 'the test before writes it');
  const { repair, fixed_point: fp, range_fit: fit } = JSON.parse(readFileSync(reportFile, 'utf8'));
  const head = repair.layers.find((l) => l.node === '/fc/Gemm');
  assert.ok(head.refitted && head.through === 'BatchNormalization' && head.weights_at_fpq_bound >= 0, JSON.stringify(head));
  // A conv fitted through its own BatchNormalization is not bounded: the range fit shrinks its
  // rows as it needs.
  assert.ok(repair.layers.filter((l) => l.through && l.node !== head.node).every((l) => l.weights_at_fpq_bound === undefined));
  assert.deepEqual(repair.fixed_point.weights_clip, []);
  assert.ok(fp.layers.every((l) => l.clipped === 0), JSON.stringify(fp.layers.filter((l) => l.clipped)));
  // The range fit no longer finds the head's weights in the way of any channel's scale.
  assert.ok(!fit.warnings.some((w) => w.message.includes("'/fc/Gemm''s weights")), JSON.stringify(fit.warnings));
});

// An SPPF CNN's head reads the GlobalAveragePool of values whose spatial maximum sizes their scale:
// held to signed 0.7 as they were, its weights cost the repaired float model most of its accuracy
// (54.3 %, 41.8 % exported with BatchNorm folded), and the twin followed (49.0 %, 30.0 %). With a
// BatchNormalization of its own, its rows shrink into signed 0.7 and the BatchNormalization's 16-bit
// scale takes them back (up to 32): twins at 81.5 % and 62.5 %. Each layer then fitted on its input
// as the twin computes it: 92.3 % and 70.3 %; and the folded export's convs fitted to the values
// before their Relu, as the other's are: 92.5 %. The original: 98.5 %.
for (const name of ['sppf', 'sppf_fused']) {
  test(`repair under FPQ: ${name}'s head is refitted through its own BatchNormalization, each layer on the twin's input`, {
    skip: !existsSync(join(FPQ_TRAINED, `${name}.onnx`)) && 'no FPQ trained models (tests/fixtures/make_fpq_trained.py)',
  }, () => {
    const out = join(dir, `${name}_repaired.onnx`), reportFile = join(dir, `${name}_repaired.json`);
    const r = CLIS.node(['convert', join(FPQ_TRAINED, `${name}.onnx`), '-o', out, '--report', reportFile, '--fixed-point', 'fpq', '--repair',
      '--calibration', join(FPQ_TRAINED, 'calibration.npy'), '--check', '--simulate', 'fpq', '--inputs', join(FPQ_TRAINED, 'heldout.npz')]);
    assert.equal(r.status, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /each layer fitted on its input as the FPQ twin computes it/);
    const { repair, check, matches, fixed_point: fp, range_fit: fit } = JSON.parse(readFileSync(reportFile, 'utf8'));
    assert.ok(matches.some((m) => m.id === 'FpqDenseBiasIntoBatchNormPattern:/fc/Gemm' && m.applied));
    assert.deepEqual(repair.left, []);
    assert.equal(repair.fixed_point.twin_inputs, true);
    const head = repair.layers.find((l) => l.node === '/fc/Gemm');
    assert.ok(head.refitted && head.through === 'BatchNormalization', JSON.stringify(head));
    // Every conv is fitted to the values before its Relu, whichever node computes them.
    for (const l of repair.layers.filter((l) => l.refitted && !l.through?.endsWith('MaxPool') && !l.node.includes('MaxPool.conv'))) {
      assert.ok(!l.target_tensor.includes('Relu'), JSON.stringify(l));
    }
    assert.deepEqual(repair.fixed_point.weights_clip, []);
    assert.ok(fp.layers.every((l) => l.clipped === 0), JSON.stringify(fp.layers.filter((l) => l.clipped)));
    assert.ok(fp.batch_norms.every((b) => b.fits), JSON.stringify(fp.batch_norms.filter((b) => !b.fits)));
    assert.equal(fit.float_check.pass, true, JSON.stringify(fit.float_check));
    const { accuracy } = check.converted.outputs[0];
    const twin = check.fpq.outputs[0].accuracy.candidate;
    console.log(`${name} repaired under FPQ: float ${accuracy.candidate}, twin ${twin}, original ${accuracy.original}`);
    assert.ok(accuracy.candidate >= 0.84, JSON.stringify(accuracy));
    assert.ok(twin >= 0.9, JSON.stringify({ twin }));
  });
}
