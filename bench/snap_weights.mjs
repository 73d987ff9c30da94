// Issue 24's table: per snapped Conv, the change the snap introduces at that conv's own output,
// with --snap-weights reinit against transfer, under onnxruntime-node.
//   node bench/snap_weights.mjs MODEL.onnx ... [--target lattice|lattice-advanced]
// Each snapped Conv is measured on its own: the model converted without folding (the conv keeps
// its output tensor) and with every other match skipped
// except those on the same node (a stride-2 depthwise conv is also made stride 1 + MaxPool, and is
// then compared at the end of that chain), the compared tensor made a graph output of both. Two
// inputs per model: white noise (uniform in [-1, 1), tests/node/ort.mjs) and the same noise
// smoothed by a 5x5 box filter, a stand-in for natural images whose neighbouring pixels
// correlate (rho ~ 0.8). Printed: ||y' - y|| / ||y|| (relative RMS change) of each method, and
// transfer / reinit.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

import ort from 'onnxruntime-node';

import { createSyncConverter } from '../wasm/index.mjs';
import { feedsFor, session } from '../tests/node/ort.mjs';

const args = process.argv.slice(2);
const target = args.includes('--target') ? args[args.indexOf('--target') + 1] : 'lattice';
const models = args.filter((a, i) => !a.startsWith('--') && args[i - 1] !== '--target');
const lattice = await createSyncConverter();

// The model with the float tensors `tensors` added as graph outputs.
function withOutputs(bytes, tensors) {
  const code = `import sys, onnx
m = onnx.load_from_string(sys.stdin.buffer.read())
have = {o.name for o in m.graph.output}
m.graph.output.extend(onnx.helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None) for n in sys.argv[1:] if n not in have)
sys.stdout.buffer.write(m.SerializeToString())`;
  const r = spawnSync('/usr/bin/python3', ['-c', code, ...tensors], { input: bytes, maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error(r.stderr.toString());
  return r.stdout;
}

// Each float input's noise, box-filtered 5x5 per channel (NCHW) and rescaled to unit RMS.
function smoothed(feeds) {
  const out = {};
  for (const [name, t] of Object.entries(feeds)) {
    const [n, c, h, w] = t.dims;
    const x = t.data, y = new Float32Array(x.length);
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
    out[name] = new ort.Tensor('float32', y.map((v) => v / rms), t.dims);
  }
  return out;
}

function relativeChange(a, b) {
  let d = 0, s = 0;
  for (let i = 0; i < a.length; ++i) { d += (a[i] - b[i]) ** 2; s += a[i] ** 2; }
  return Math.sqrt(d / s);
}

const rows = [];
for (const path of models) {
  const bytes = readFileSync(path);
  const { report } = lattice.convert(bytes, { target, snapWeights: 'transfer', foldBatchNorm: false, dryRun: true });
  const outputOf = new Map(lattice.describe(bytes).nodes.map((n) => [n.name, n.outputs[0].name]));
  for (const m of report.matches.filter((m) => m.applied && m.weights)) {
    const conv = m.nodes[0];
    const skipMatches = report.matches.filter((o) => o.applied && o.nodes[0] !== conv).map((o) => o.id);
    // Where the rewrites of this node end: the conv's output, or, when a stride-2 chain became
    // stride 1 + MaxPool (which changes the conv's own output shape), the chain's output.
    const chain = report.matches.filter((o) => o.applied && o.nodes[0] === conv).reduce((a, b) => (b.nodes.length > a.nodes.length ? b : a));
    const tensor = outputOf.get(chain.nodes.at(-1));
    const original = await session(withOutputs(bytes, [tensor]));
    const feeds = { white: feedsFor(original) };
    feeds.smooth = smoothed(feeds.white);
    const row = { model: basename(path), conv, snap: '', kept: m.weights.kept_energy };
    for (const method of ['reinit', 'transfer']) {
      const { model, report: r } = lattice.convert(bytes, { target, snapWeights: method, foldBatchNorm: false, skipMatches });
      const w = r.warnings.find((x) => x.match_id === m.id && x.message.includes('snapped'));
      if (method === 'transfer') row.snap = w?.message.match(/weights transferred (?:exactly )?\((.*?), (?:[\d.]+ %|every)/)?.[1] ?? '';
      const converted = await session(withOutputs(Buffer.from(model), [tensor]));
      for (const [kind, f] of Object.entries(feeds)) {
        const [a, b] = [await original.run(f), await converted.run(f)];
        if (a[tensor].data.length !== b[tensor].data.length) throw new Error(`${conv}: its output changes shape`);
        row[`${method}_${kind}`] = relativeChange(a[tensor].data, b[tensor].data);
      }
    }
    rows.push(row);
  }
}

const f = (x) => x.toFixed(2);
console.log(`target ${target}; relative RMS change at the snapped conv's output, ||y' - y|| / ||y||`);
console.log('| model | conv | transfer keeps | kept_energy | reinit (white) | transfer (white) | ratio | reinit (smooth) | transfer (smooth) | ratio |');
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows) {
  console.log(`| ${r.model} | \`${r.conv}\` | ${r.snap} | ${f(r.kept)} | ${f(r.reinit_white)} | ${f(r.transfer_white)} | ${f(r.transfer_white / r.reinit_white)} | ${f(r.reinit_smooth)} | ${f(r.transfer_smooth)} | ${f(r.transfer_smooth / r.reinit_smooth)} |`);
}
