// Issue 24's table: per snapped Conv, the change the snap introduces at that conv's own output,
// with --snap-weights reinit against transfer, measured by the check's layerwise comparison.
//   node bench/snap_weights.mjs MODEL.onnx ... [--target lattice|lattice-advanced]
// Each snapped Conv is measured on its own: the model converted without folding and with every
// match skipped except those on that conv, then checked layer by layer against the original
// (converter.check with layerwise and the conversion's report, wasm/shared/check.mjs). The figure is the
// check's per-rewrite change: max |Δ| at the last tensor the rewrite hands on (the conv's output;
// a stride-2 chain made stride 1 + MaxPool: the chain's end), and what reached its inputs
// (max_abs_in), which must be 0 — else another rewrite is in the figure and the bench stops.
// Two inputs per model: the check's own seeded noise (uniform in [-1, 1), seed 0) and the same
// noise smoothed by a 5x5 box filter, a stand-in for natural images whose neighbouring pixels
// correlate (rho ~ 0.8).
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

import { inputFeeds } from '../wasm/shared/check.mjs';
import { createSyncConverter } from '../wasm/index.mjs';

const args = process.argv.slice(2);
const target = args.includes('--target') ? args[args.indexOf('--target') + 1] : 'lattice';
const models = args.filter((a, i) => !a.startsWith('--') && args[i - 1] !== '--target');
const lattice = await createSyncConverter();

// The check's white inputs, each box-filtered 5x5 per channel (NCHW) and rescaled to unit RMS:
// the input model the white-noise choice of `transfer` does not assume.
function smoothed(inputs) {
  const values = {};
  for (const [name, { dims, data: x }] of Object.entries(inputFeeds({ inputs, nodes: [] }))) {
    const [n, c, h, w] = dims;
    const y = new Float32Array(x.length);
    for (let p = 0; p < n * c; ++p) {
      for (let i = 0; i < h; ++i) {
        for (let j = 0; j < w; ++j) {
          let s = 0, k = 0;
          for (let di = -2; di <= 2; ++di) {
            for (let dj = -2; dj <= 2; ++dj) {
              const a = i + di, b = j + dj;
              if (a >= 0 && a < h && b >= 0 && b < w) { s += x[p * h * w + a * w + b]; ++k; }
            }
          }
          y[p * h * w + i * w + j] = s / k;
        }
      }
    }
    const rms = Math.sqrt(y.reduce((s, v) => s + v * v, 0) / y.length);
    values[name] = y.map((v) => v / rms);
  }
  return values;
}

const rows = [];
for (const path of models) {
  const bytes = readFileSync(path);
  const { report } = lattice.convert(bytes, { target, snapWeights: 'transfer', foldBatchNorm: false, dryRun: true });
  const inputs = { white: {}, smooth: { inputValues: smoothed(lattice.describe(bytes).inputs) } };
  const nodes = new Map(lattice.describe(bytes).nodes.map((n) => [n.name, n]));
  for (const m of report.matches.filter((x) => x.applied && x.weights)) {
    const conv = m.nodes[0];
    const mine = report.matches.filter((o) => o.applied && o.nodes[0] === conv);
    const skipMatches = report.matches.filter((o) => o.applied && !mine.includes(o)).map((o) => o.id);
    // Where this conv's rewrites end: its output, or the end of the longest chain taken with it.
    const chain = mine.reduce((a, b) => (b.nodes.length > a.nodes.length ? b : a));
    const tensor = nodes.get(chain.nodes.at(-1)).outputs[0].name;
    const row = { model: basename(path), conv, tensor, snap: '', kept: m.weights.kept_energy };
    for (const method of ['reinit', 'transfer']) {
      // Skipping the other matches can unmake some of them (a chain that needed a skipped one).
      const { model, report: conversion } = lattice.convert(bytes, { target, snapWeights: method, foldBatchNorm: false, skipMatches, ignoreUnknownSkips: true });
      const w = conversion.warnings.find((x) => x.match_id === m.id && x.message.includes('snapped'));
      if (method === 'transfer') row.snap = w?.message.match(/weights transferred (?:exactly )?\((.*?), (?:[\d.]+ %|every)/)?.[1] ?? '';
      for (const [kind, options] of Object.entries(inputs)) {
        const checked = await lattice.check(bytes, model, { layerwise: true, conversion, ...options });
        if (checked.error) throw new Error(`${conv}, ${method}: ${checked.error}`.slice(0, 300));
        // The check's change for the chain's rewrite at that tensor (a graph output included).
        const change = checked.rewrites.find((r) => r.match_id === chain.id && r.tensor === tensor);
        if (!change) throw new Error(`${conv}, ${method}: the check ranked no rewrite ${chain.id} at '${tensor}'`);
        if (change.max_abs_in !== 0) throw new Error(`${conv}, ${method}: its inputs changed by ${change.max_abs_in} (another rewrite is in the figure)`);
        row[`${method}_${kind}`] = change.max_abs;
      }
    }
    rows.push(row);
    console.error(`# ${row.model} ${conv}: done`);
  }
}

const f = (x) => (x >= 0.01 ? x.toFixed(2) : x.toExponential(1));
console.log(`target ${target}; the check's max |Δ| at each snapped conv's rewrite output (its inputs unchanged: max_abs_in 0)`);
console.log('| model | conv | compared tensor | transfer keeps | kept_energy | reinit (white) | transfer (white) | ratio | reinit (smooth) | transfer (smooth) | ratio |');
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows) {
  console.log(`| ${r.model} | \`${r.conv}\` | \`${r.tensor}\` | ${r.snap} | ${f(r.kept)} | ${f(r.reinit_white)} | ${f(r.transfer_white)} | ` +
    `${f(r.transfer_white / r.reinit_white)} | ${f(r.reinit_smooth)} | ${f(r.transfer_smooth)} | ${f(r.transfer_smooth / r.reinit_smooth)} |`);
}
