#!/usr/bin/env node
// Measures FPQ's fixed point on CNNs trained on real data: for each model, the FPQ twin's held-out
// top-1 agreement with the float model (`node wasm/cli.mjs convert … --fixed-point fpq --check
// --simulate fpq --inputs heldout.npz`) without the range fit (--skip FpqRangeFitPattern), with
// it fitted on the calibration samples, and on seeded random inputs; the share of FPQ's
// activations that clip, before → after the fit; and, with --repair, the same after the default
// Lattice conversion and its repair (every refitted weight's fit, the twin against the repaired
// model, and both accuracies). Prints a Markdown table.
//
//   node bench/fpq.mjs [--models sppf,residual] [--repair] [--target none]
//
// Models: make_fpq_trained.py's (sppf, sppf_fused, residual, residual_fused) in
// $ONNX_LATTICE_FPQ_TRAINED and make_trained.py's (digits, digits_fused) in $ONNX_LATTICE_TRAINED,
// each with its folder's calibration.npy and heldout.npz.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CACHE = process.env.ONNX_LATTICE_CACHE ?? join(homedir(), '.cache/onnx-lattice');
const FOLDERS = {
  fpq_trained: process.env.ONNX_LATTICE_FPQ_TRAINED ?? join(CACHE, 'fpq_trained'),
  trained: process.env.ONNX_LATTICE_TRAINED ?? join(CACHE, 'trained'),
};
const MODELS = { sppf: 'fpq_trained', sppf_fused: 'fpq_trained', residual: 'fpq_trained', residual_fused: 'fpq_trained', digits: 'trained', digits_fused: 'trained' };

const args = process.argv.slice(2);
const option = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
const models = option('--models')?.split(',') ?? Object.keys(MODELS);
const repair = args.includes('--repair');
const out = mkdtempSync(join(tmpdir(), 'onnx-lattice-fpq-'));
process.on('exit', () => rmSync(out, { recursive: true, force: true }));

function convert(name, extra) {
  const dir = FOLDERS[MODELS[name]];
  const report = join(out, `${name}.json`);
  const started = performance.now();
  const r = spawnSync(process.execPath, [join(ROOT, 'wasm/cli.mjs'), 'convert', join(dir, `${name}.onnx`), '-o', join(out, `${name}.onnx`),
    '--report', report, '--fixed-point', 'fpq', '--check', '--simulate', 'fpq', '--inputs', join(dir, 'heldout.npz'), ...extra], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${name} ${extra.join(' ')}: exit ${r.status}\n${r.stderr}${r.stdout}`);
  return { ...JSON.parse(readFileSync(report, 'utf8')), seconds: (performance.now() - started) / 1000 };
}

const pct = (v) => (v === undefined ? '–' : `${(100 * v).toFixed(1)} %`);
const twin = (r) => r.check.fpq.outputs[0];
const calibration = (name) => ['--calibration', join(FOLDERS[MODELS[name]], 'calibration.npy')];

console.log(repair
  ? '| model | repaired float: agreement with the original, accuracy | FPQ twin: agreement with the repaired model, accuracy | refitted weights that clip | activations clipped before → after the fit |\n| --- | --- | --- | --- | --- |'
  : '| model | FPQ twin agrees with the float model, without the fit | fitted on calibration.npy | on random inputs | twin accuracy (float) | activations clipped before → after the fit |\n| --- | --- | --- | --- | --- | --- |');
for (const name of models) {
  if (!existsSync(join(FOLDERS[MODELS[name]], `${name}.onnx`))) { console.log(`| ${name} | not made (tests/fixtures/make_*trained.py) |`); continue; }
  if (repair) {
    const r = convert(name, ['--repair', ...calibration(name)]);
    const clipping = (r.repair.layers ?? []).filter((l) => l.refitted && r.fixed_point.layers.find((f) => f.node === l.node)?.clipped > 0).length;
    console.log(`| ${name} | ${pct(r.check.converted.outputs[0].top1_agreement)}, ${pct(r.check.converted.outputs[0].accuracy?.candidate)} | ` +
      `${pct(twin(r).top1_agreement)}, ${pct(twin(r).accuracy?.candidate)} | ${clipping} of ${r.repair.layers.filter((l) => l.refitted).length} | ` +
      `${pct(r.range_fit.clipped.before)} → ${pct(r.range_fit.clipped.after)} |`);
    continue;
  }
  const target = ['--target', option('--target') ?? 'none'];
  const without = convert(name, [...target, '--skip', 'FpqRangeFitPattern']);
  const fitted = convert(name, [...target, ...calibration(name)]);
  const random = convert(name, target);
  console.log(`| ${name} | ${pct(twin(without).top1_agreement)} | **${pct(twin(fitted).top1_agreement)}** | ${pct(twin(random).top1_agreement)} | ` +
    `${pct(twin(fitted).accuracy?.candidate)} (${pct(fitted.check.converted.outputs[0].accuracy?.candidate)}) | ` +
    `${pct(fitted.range_fit.clipped.before)} → ${pct(fitted.range_fit.clipped.after)} |`);
}
