// Issue 9, "tensor data stays where it is" (scripts/bench.sh): ratios measured in one run, on
// ResNet-50 as one file and as an external-data copy (model.onnx + model.onnx.data, made into the
// cache once by onnx's save_model; converted keeping the layout: OUT.onnx + OUT.onnx.data).
//   - native CLI no-op (--target none --no-fold-bn) and fold (--target none), wall / `cp` of the input;
//   - Node CLI / native CLI, the default conversion (lattice target, fold), and the Node CLI's
//     start-up alone (`--version`: Node and the wasm module loaded), to see what is left;
//   - peak wasm heap / model size: the Node API's convert(), folding with --target none, in a
//     fresh process (a fresh module); the heap only grows, so its size after the conversion minus
//     its size right after loading is the peak.
// Times are wall times of whole spawned processes (cp too), the median of REPEATS, after one
// unmeasured warm-up of each; every run writes into a fresh folder under CACHE/bench, deleted
// after the run, so all outputs go to the same file system. Any failing run stops the bench.
//   node bench/data_stays.mjs NATIVE_CLI RESNET50.onnx CACHE [REPEATS]
//   node bench/data_stays.mjs --heap TARGET MODEL.onnx [DATA_FILE]   (one heap measurement, JSON)
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';

const here = import.meta.dirname;
const MiB = 2 ** 20;

if (process.argv[2] === '--heap') {
  // The package's internal engine: the documented API does not expose the heap's size.
  const { createEngine } = await import('../wasm/node/engine.mjs');
  const [target, modelPath, dataPath] = process.argv.slice(3);
  const bytes = readFileSync(modelPath);
  const data = dataPath ? readFileSync(dataPath) : null;
  const lattice = await createEngine();
  if (typeof lattice._heapBytes !== 'function') {
    throw new Error('wasm/node/engine.mjs: createEngine() has no _heapBytes() (the wasm heap size) to measure with');
  }
  const loaded = lattice._heapBytes();
  const asked = [];
  const resolver = (location) => { asked.push(location); return data && location === basename(dataPath) ? data : null; };
  const result = lattice.convert(bytes, { target, ...(data ? { resolver, dataFile: 'out.onnx.data' } : {}) });
  const after = lattice._heapBytes();
  console.log(JSON.stringify({
    loaded, after, input: bytes.length + (data?.length ?? 0), asked,
    model: result.model?.length ?? 0, data: result.data?.length ?? 0,
  }));
  process.exit(0);
}

const [native, resnet50, cache, repeatsArg] = process.argv.slice(2);
const repeats = Number(repeatsArg ?? 5);
if (!native || !resnet50 || !cache || !(repeats >= 1)) {
  console.error('usage: node bench/data_stays.mjs NATIVE_CLI RESNET50.onnx CACHE [REPEATS]');
  process.exit(2);
}
for (const f of [native, resnet50]) if (!existsSync(f)) throw new Error(`${f} is missing`);

// The external-data copy, once: written into a side folder and renamed, so a half-written copy
// is never taken for a whole one.
const extDir = join(cache, 'zoo-external', 'resnet50');
const extModel = join(extDir, 'resnet50.onnx');
const extData = `${extModel}.data`;
if (!existsSync(extData)) {
  const partial = `${extDir}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  console.log(`making ${extModel} + ${basename(extData)} (onnx save_model, external data, threshold 256)`);
  execFileSync('/usr/bin/python3', ['-c', `
import sys, onnx
model = onnx.load(sys.argv[1])
onnx.save_model(model, sys.argv[2], save_as_external_data=True, all_tensors_to_one_file=True,
                location="resnet50.onnx.data", size_threshold=256)
`, resnet50, join(partial, 'resnet50.onnx')], { stdio: 'inherit' });
  rmSync(extDir, { recursive: true, force: true });
  renameSync(partial, extDir);
}

const nodeCli = [process.execPath, join(here, '..', 'wasm', 'cli.mjs')];
const cases = [
  { name: 'one file', input: [resnet50] },
  { name: 'external data', input: [extModel, extData] },
];
const commands = {
  cp: (c, out) => ['cp', ...c.input, c.input.length > 1 ? out : join(out, 'out.onnx')],
  noop: (c, out) => [native, 'convert', c.input[0], '-o', join(out, 'out.onnx'), '--target', 'none', '--no-fold-bn'],
  fold: (c, out) => [native, 'convert', c.input[0], '-o', join(out, 'out.onnx'), '--target', 'none'],
  native: (c, out) => [native, 'convert', c.input[0], '-o', join(out, 'out.onnx')],
  node: (c, out) => [...nodeCli, 'convert', c.input[0], '-o', join(out, 'out.onnx')],
  // What the Node CLI costs before converting anything: Node itself and the wasm module loaded.
  startup: () => [...nodeCli, '--version'],
};

mkdirSync(join(cache, 'bench'), { recursive: true });
const tmp = mkdtempSync(join(cache, 'bench', 'data-stays-'));
const fsType = execFileSync('stat', ['-f', '-c', '%T', tmp]).toString().trim();

// One run of make(folder) in a fresh folder: wall milliseconds, and what it wrote (name -> bytes).
let runs = 0;
function run(make) {
  const out = join(tmp, `run-${runs++}`);
  mkdirSync(out);
  const argv = make(out);
  const start = performance.now();
  const r = spawnSync(argv[0], argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 16 * MiB });
  const ms = performance.now() - start;
  const files = Object.fromEntries(readdirSync(out).map((f) => [f, statSync(join(out, f)).size]));
  rmSync(out, { recursive: true, force: true });
  if (r.error || r.status !== 0) {
    throw new Error(`${argv.join(' ')} failed (${r.error?.message ?? `exit status ${r.status ?? r.signal}`}):\n${r.stderr ?? ''}`);
  }
  return { ms, files };
}

// One heap measurement in a fresh Node process.
function heap(c) {
  const args = [join(here, 'data_stays.mjs'), '--heap', 'none', ...c.input];
  const r = spawnSync(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.error || r.status !== 0) {
    throw new Error(`node ${args.join(' ')} failed (${r.error?.message ?? `exit status ${r.status ?? r.signal}`}):\n${r.stderr}`);
  }
  return JSON.parse(r.stdout.toString());
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
try {
  for (const c of cases) {
    c.bytes = c.input.reduce((sum, f) => sum + statSync(f).size, 0);
    c.times = Object.fromEntries(Object.keys(commands).map((k) => [k, []]));
    // The warm-up: the input in the page cache, Node's code cache; what each command writes.
    c.outputs = Object.fromEntries(Object.entries(commands).map(([k, make]) => [k, run((out) => make(c, out)).files]));
    for (let i = 0; i < repeats; ++i) {
      for (const [k, make] of Object.entries(commands)) c.times[k].push(run((out) => make(c, out)).ms);
    }
    c.ms = Object.fromEntries(Object.entries(c.times).map(([k, xs]) => [k, median(xs)]));
    c.heap = heap(c);
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

const rows = [
  // The copy floor: a conversion that changes nothing as near a file copy as can be, a fold within 2×.
  ['native CLI no-op (`--target none --no-fold-bn`), wall / `cp`', (c) => c.ms.noop / c.ms.cp, 1.2, '×'],
  ['native CLI fold (`--target none`), wall / `cp`', (c) => c.ms.fold / c.ms.cp, 2, '×'],
  ['Node CLI / native CLI, default conversion (lattice, fold), wall', (c) => c.ms.node / c.ms.native, 1.5, '×'],
  ['peak wasm heap / model size, fold (`target: none`), Node API convert()', (c) => (c.heap.after - c.heap.loaded) / c.bytes, 1.2, ''],
];
const [one, ext] = cases;
const cell = (v, limit, unit) => `${v.toFixed(2)}${unit} ${v <= limit ? 'met' : 'MISSED'}`;
console.log(`ResNet-50, median of ${repeats} whole-process wall times each, outputs under ${join(cache, 'bench')} (${fsType})`);
console.log(`| measure | one file (${(one.bytes / MiB).toFixed(1)} MiB) | external data (${(ext.bytes / MiB).toFixed(1)} MiB) | target |`);
console.log('| --- | --- | --- | --- |');
for (const [label, value, limit, unit] of rows) {
  console.log(`| ${label} | ${cell(value(one), limit, unit)} | ${cell(value(ext), limit, unit)} | ≤ ${limit}${unit} |`);
}
console.log();
const size = (b) => (b < MiB ? `${(b / 1024).toFixed(1)} KiB` : `${(b / MiB).toFixed(1)} MiB`);
const files = (f) => Object.entries(f).map(([n, b]) => `${n} ${size(b)}`).join(' + ') || 'nothing';
for (const c of cases) {
  console.log(`${c.name}: Node CLI start-up (\`--version\`) ${c.ms.startup.toFixed(0)} ms = ${(c.ms.startup / c.ms.native).toFixed(2)}× ` +
    `the native conversion; (Node CLI − start-up) / native CLI ${((c.ms.node - c.ms.startup) / c.ms.native).toFixed(2)}×`);
}
for (const c of cases) {
  const ms = Object.entries(c.ms).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ');
  console.log(`${c.name}: medians in ms: ${ms}`);
  console.log(`  wrote: cp ${files(c.outputs.cp)}; native no-op ${files(c.outputs.noop)}; native fold ${files(c.outputs.fold)}; ` +
    `native ${files(c.outputs.native)}; Node CLI ${files(c.outputs.node)}`);
  const h = c.heap;
  console.log(`  wasm heap: ${(h.loaded / MiB).toFixed(0)} MiB after loading, ${(h.after / MiB).toFixed(0)} MiB after convert(); ` +
    `it returned model ${size(h.model)} + data ${size(h.data)}` +
    (h.asked.length ? `; resolver asked for ${[...new Set(h.asked)].join(', ')} (${h.asked.length}×)` : ''));
}
