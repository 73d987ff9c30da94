// The repair's time and peak memory, in the Node CLI and in the page, in one run: the digits CNN
// trained at set-up (its 128 calibration samples: 96 fitted, 32 checked) and ResNet-50 (85
// generated images at 224: 64 fitted, 21 checked). The same work on both sides:
//   Node CLI   `convert MODEL -o OUT --repair --calibration CALIB.npy --check` as a whole process,
//              under /usr/bin/time for its peak resident size (worker threads included); the
//              repair's own time is the report's repair.time_ms
//   page       the same .npy picked under "Your samples", "Repair from the samples, then check"
//              pressed, in Debian's headless Chromium, served cross-origin isolated (onnxruntime-web
//              on every core) and, for the threads' worth, not (one thread); the repair's time is
//              its report's, the press to the result the page's own figure; Chromium's processes'
//              resident size sampled every 500 ms (a comparison between runs, not an absolute figure)
// Trained models other people exported (tests/fixtures/make_wild.py's, the static ones: BlazeFace,
// M-LSD) on their calibration samples, by name, the same way.
// Medians of REPEATS, alternating Node and page runs so both see the same machine; the ratios
// page / Node, the targets (ResNet-50's repair <= 60 s in Node; the page's <= 2x Node's), and
// where the time went, layer by layer: onnxruntime's sessions and runs against the fit (the fit
// and the new weights written into the model), with each layer's fit size (P features, rows).
//   node bench/repair.mjs SITE_DIR REPEATS [digits] [resnet50] [blazeface] [mlsd]
//        (default: digits and resnet50)
// Against another checkout (built), the Node CLI alone: this tree's repair and the baseline's, run
// alternately in one run on the same machine, their medians and the ratios this / baseline, of the
// repair's time (the report's) and of the process's peak resident size:
//   node bench/repair.mjs --baseline OTHER_TREE REPEATS [digits] [resnet50] ...
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

import { serve } from '../scripts/serve.mjs';
import { createSyncConverter } from '../wasm/index.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const CACHE = process.env.ONNX_LATTICE_CACHE ?? join(homedir(), '.cache/onnx-lattice');
const NODE_TARGET_MS = 60_000;  // ResNet-50's repair in Node on this 2-core machine
const PAGE_RATIO = 2;

const baselineMode = process.argv[2] === '--baseline';
const [site, repeatsArg, ...named] = process.argv.slice(baselineMode ? 3 : 2);
const repeats = Number(repeatsArg);
const WILD = ['blazeface', 'mlsd'];
const known = ['digits', 'resnet50', ...WILD];
if (!site || !(repeats >= 1) || named.some((n) => !known.includes(n))) {
  console.error(`usage: node bench/repair.mjs SITE_DIR REPEATS [${known.join('] [')}]\n` +
    `       node bench/repair.mjs --baseline OTHER_TREE REPEATS [${known.join('] [')}]`);
  process.exit(2);
}

// A .npy of float32 values shaped `dims`.
function writeNpy(path, data, dims) {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${dims.join(', ')},), }`;
  header += ' '.repeat(63 - ((header.length + 10) % 64)) + '\n';
  const head = Buffer.concat([Buffer.from([0x93]), Buffer.from('NUMPY'), Buffer.from([1, 0]), Buffer.alloc(2), Buffer.from(header, 'latin1')]);
  head.writeUInt16LE(header.length, 8);
  writeFileSync(path, Buffer.concat([head, Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

// Images a convolutional network sees something in (random pixels are all edges): per sample and
// channel a few seeded gratings of random frequency, phase and direction, and some noise, in
// about [-2, 2] like ImageNet-normalised inputs.
function generatedImages(count, channels, size, seed = 1) {
  let s = seed >>> 0;
  const next = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
  const data = new Float32Array(count * channels * size * size);
  for (let n = 0; n < count; ++n) {
    for (let c = 0; c < channels; ++c) {
      const waves = Array.from({ length: 4 }, () => ({ fx: (next() - 0.5) * 0.3, fy: (next() - 0.5) * 0.3, phase: next() * 6.283, amp: 0.2 + 0.4 * next() }));
      const plane = (n * channels + c) * size * size;
      for (let y = 0; y < size; ++y) {
        for (let x = 0; x < size; ++x) {
          let v = 0.3 * (next() - 0.5);
          for (const w of waves) v += w.amp * Math.cos(w.fx * x + w.fy * y + w.phase);
          data[plane + y * size + x] = v;
        }
      }
    }
  }
  return data;
}

function models() {
  const list = [];
  const wanted = named.length ? named : ['digits', 'resnet50'];
  if (wanted.includes('digits')) {
    const dir = join(CACHE, 'trained');
    if (!existsSync(join(dir, 'digits.onnx'))) execFileSync('/usr/bin/python3', [join(ROOT, 'tests/fixtures/make_trained.py'), dir], { stdio: 'inherit' });
    list.push({ name: 'digits', model: join(dir, 'digits.onnx'), calibration: join(dir, 'calibration.npy'), samples: 128 });
  }
  if (wanted.includes('resnet50')) {
    const model = join(CACHE, 'zoo/resnet50.onnx');
    if (!existsSync(model)) execFileSync('/usr/bin/python3', [join(ROOT, 'tests/fixtures/make_fixtures.py'), 'zoo', join(CACHE, 'zoo'), 'resnet50'], { stdio: 'inherit' });
    // 85 samples: the check takes the last quarter (21), the repair fits 64.
    const calibration = join(CACHE, 'bench/resnet50_calibration_85.npy');
    if (!existsSync(calibration)) {
      mkdirSync(dirname(calibration), { recursive: true });
      writeNpy(calibration, generatedImages(85, 3, 224), [85, 3, 224, 224]);
    }
    list.push({ name: 'ResNet-50', model, calibration, samples: 85, target: NODE_TARGET_MS });
  }
  const wild = process.env.ONNX_LATTICE_WILD ?? join(CACHE, 'wild');
  for (const name of WILD.filter((n) => wanted.includes(n))) {
    if (!existsSync(join(wild, 'manifest.json'))) execFileSync('/usr/bin/python3', [join(ROOT, 'tests/fixtures/make_wild.py'), wild], { stdio: 'inherit' });
    const entry = JSON.parse(readFileSync(join(wild, 'manifest.json'), 'utf8')).models[name];
    list.push({ name: `${name} (${entry.package})`, model: join(wild, entry.path), calibration: join(wild, entry.calibration.path), samples: entry.calibration.count });
  }
  return list;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const s = (ms) => `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
const mib = (bytes) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
const scratch = mkdtempSync(join(tmpdir(), 'onnx-lattice-bench-repair-'));
const cli = join(ROOT, 'wasm/cli.mjs');

// The Node CLI (this tree's, or `cliPath`) as a whole process: its time, its peak resident size
// and the report it wrote.
function nodeRun(m, repair = true, cliPath = cli) {
  const out = join(scratch, 'out.onnx'), report = join(scratch, 'out.json');
  const args = ['convert', m.model, '-o', out, '--report', report, '--quiet', ...(repair ? ['--repair', '--calibration', m.calibration, '--check'] : [])];
  const started = process.hrtime.bigint();
  const r = spawnSync('/usr/bin/time', ['-f', 'peak-kib %M', process.execPath, cliPath, ...args], { encoding: 'utf8', maxBuffer: 1 << 26 });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (r.status !== 0) throw new Error(`the Node CLI failed on ${m.model}: ${r.stderr}`);
  const peak = 1024 * Number(/peak-kib (\d+)/.exec(r.stderr)[1]);
  return { ms, peak, report: JSON.parse(readFileSync(report, 'utf8')) };
}

if (baselineMode) {
  const other = join(site, 'wasm/cli.mjs');
  if (!existsSync(other)) throw new Error(`${other}: not a built checkout of onnx-lattice`);
  try {
    for (const m of models()) {
      const mine = [], theirs = [];
      for (let i = 0; i < repeats; ++i) {
        theirs.push(nodeRun(m, true, other));
        mine.push(nodeRun(m));
      }
      const repairMs = (runs) => median(runs.map((r) => r.report.repair.time_ms));
      const peak = (runs) => median(runs.map((r) => r.peak));
      console.log(`${m.name}, Node CLI convert --repair --check, median of ${repeats}: repair ${s(repairMs(theirs))} -> ${s(repairMs(mine))} ` +
        `(${(repairMs(mine) / repairMs(theirs)).toFixed(2)}x); peak resident ${mib(peak(theirs))} -> ${mib(peak(mine))} ` +
        `(${(peak(mine) / peak(theirs)).toFixed(2)}x); all repairs: baseline ${theirs.map((r) => s(r.report.repair.time_ms)).join(' ')}, ` +
        `this tree ${mine.map((r) => s(r.report.repair.time_ms)).join(' ')}`);
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  process.exit(0);
}

// The resident size of every Chromium process together, in bytes.
const chromiumRss = () => execFileSync('ps', ['-C', 'chromium', '-o', 'rss='], { encoding: 'utf8' })
  .split('\n').reduce((sum, kib) => sum + 1024 * (Number(kib) || 0), 0);

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
});
const servers = {};
for (const isolated of [true, false]) servers[isolated] = await serve(site, 0, { isolated });
const baseOf = (isolated) => `http://127.0.0.1:${servers[isolated].address().port}/`;

// The page in a fresh tab: the model converted, the calibration picked, "Repair" pressed; the
// press to the result by the page's own clock (its status line), the repair's report.
async function pageRun(m, isolated) {
  const context = await browser.newContext({ acceptDownloads: true });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(baseOf(isolated));
  const crossOriginIsolated = await page.evaluate(() => self.crossOriginIsolated);
  if (crossOriginIsolated !== isolated) throw new Error(`the page is ${crossOriginIsolated ? '' : 'not '}cross-origin isolated`);
  await page.setInputFiles('[data-testid="file-input"]', m.model);
  await page.waitForFunction(() => document.body.dataset.downloads === 'ready', null, { timeout: 600_000, polling: 100 });
  await page.setInputFiles('[data-testid="data-input"]', m.calibration);
  const rssBefore = chromiumRss();
  let rssPeak = rssBefore;
  const sampler = setInterval(() => { rssPeak = Math.max(rssPeak, chromiumRss()); }, 500);
  await page.click('[data-testid="repair"]');
  await page.waitForFunction(() => document.querySelector('[data-testid="check-result"]').dataset.foldPass !== undefined ||
    document.querySelector('[data-testid="check-result"] .error'), null, { timeout: 3_600_000, polling: 250 });
  clearInterval(sampler);
  rssPeak = Math.max(rssPeak, chromiumRss());
  const status = await page.innerText('[data-testid="status"]');
  const pressed = /Repaired and checked(?: \(inconclusive\))? in (\d+) ms/.exec(status);
  if (!pressed) throw new Error(`the page's repair of ${m.model} did not finish: ${status} ${await page.textContent('[data-testid="check-result"]')}`);
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid="download-report"]')]);
  const report = JSON.parse(readFileSync(await download.path(), 'utf8'));
  await context.close();
  if (errors.length) throw new Error(`the page reported errors: ${errors.join('; ')}`);
  return { ms: Number(pressed[1]), grew: rssPeak - rssBefore, report };
}

// Each layer's fit size: P = C/group·kh·kw features (Gemm: K), from the repair's plan (core/repair/plan.h).
const lattice = await createSyncConverter();
function fitSizes(m, converted) {
  const { session } = lattice.openRepairSession(readFileSync(m.model), readFileSync(converted.path));
  try {
    const plan = lattice.repairSession(session, 'plan', [converted.report.matches ?? [], {}]);
    return new Map(plan.layers.map((l) => [l.node, l.weightShape.slice(1).reduce((a, b) => a * b, 1)]));
  } finally {
    lattice.repairSession(session, 'close');
  }
}

function whereTheTimeWent(label, repair, features, table = true) {
  const runtime = repair.layers.reduce((n, l) => n + (l.runtime_ms ?? 0), 0), fit = repair.layers.reduce((n, l) => n + (l.fit_ms ?? 0), 0);
  console.log(`  where the time went, ${label} (${s(repair.time_ms)}): onnxruntime ${s(runtime)} (${(100 * runtime / repair.time_ms).toFixed(0)} %), ` +
    `fit and new weights ${s(fit)} (${(100 * fit / repair.time_ms).toFixed(0)} %), the rest ${s(repair.time_ms - runtime - fit)}`);
  if (!table) return;
  console.log(`    ${'layer'.padEnd(48)} ${'P'.padStart(5)} ${'rows'.padStart(6)} ${'runtime'.padStart(8)} ${'fit'.padStart(8)}`);
  for (const l of repair.layers) {
    console.log(`    ${l.node.slice(-48).padEnd(48)} ${String(features.get(l.node) ?? '').padStart(5)} ${String(l.rows ?? '-').padStart(6)} ` +
      `${(l.runtime_ms ?? 0).toFixed(0).padStart(6)} ms ${(l.fit_ms ?? 0).toFixed(0).padStart(5)} ms${l.refitted ? '' : '  (unchanged)'}`);
  }
}

try {
  for (const m of models()) {
    const fitted = m.samples - Math.max(1, Math.floor(m.samples / 4));
    console.log(`repair of ${basename(m.model)} (${m.name}) on ${basename(m.calibration)}: ${fitted} of ${m.samples} samples fitted, ` +
      `${m.samples - fitted} checked; median of ${repeats}`);
    const convertOnly = nodeRun(m, false);
    const converted = { path: join(scratch, 'converted.onnx'), report: convertOnly.report };
    spawnSync(process.execPath, [cli, 'convert', m.model, '-o', converted.path, '--quiet']);
    const features = fitSizes(m, converted);
    const node = [], isolated = [], single = [];
    for (let i = 0; i < repeats; ++i) {
      node.push(nodeRun(m));
      isolated.push(await pageRun(m, true));
      single.push(await pageRun(m, false));
    }
    const repairMs = (runs) => median(runs.map((r) => r.report.repair.time_ms));
    const nodeRepair = repairMs(node), nodeWhole = median(node.map((r) => r.ms));
    const verdict = (ratio, target) => (ratio <= target ? `met, ${((1 - ratio / target) * 100).toFixed(0)} % margin` : 'MISSED');
    console.log(`  Node CLI: repair ${s(nodeRepair)}` +
      (m.target ? ` (target <= ${s(m.target)}: ${verdict(nodeRepair / m.target, 1)})` : '') +
      `; the whole convert --repair --check ${s(nodeWhole)} (convert alone ${s(convertOnly.ms)}); peak resident ${mib(median(node.map((r) => r.peak)))}`);
    for (const [label, runs] of [['cross-origin isolated, onnxruntime-web on every core', isolated], ['not isolated, one thread', single]]) {
      const ratio = repairMs(runs) / nodeRepair;
      console.log(`  page, ${label}: repair ${s(repairMs(runs))}, page / Node ${ratio.toFixed(2)}x (target <= ${PAGE_RATIO}: ${verdict(ratio, PAGE_RATIO)}); ` +
        `"Repair" pressed -> result ${s(median(runs.map((r) => r.ms)))} against the Node CLI's ${s(nodeWhole - convertOnly.ms)} (whole minus convert alone), ` +
        `${(median(runs.map((r) => r.ms)) / (nodeWhole - convertOnly.ms)).toFixed(2)}x; Chromium grew ${mib(median(runs.map((r) => r.grew)))}`);
    }
    console.log(`  threads in the page: repair ${s(repairMs(single))} on one thread, ${s(repairMs(isolated))} isolated (${(repairMs(single) / repairMs(isolated)).toFixed(2)}x)`);
    console.log(`  all runs, repair: Node ${node.map((r) => s(r.report.repair.time_ms)).join(' ')}; page isolated ${isolated.map((r) => s(r.report.repair.time_ms)).join(' ')}; ` +
      `page one thread ${single.map((r) => s(r.report.repair.time_ms)).join(' ')}`);
    const layersRefitted = node[0].report.repair.layers.filter((l) => l.refitted).length;
    // The check's first figure of the first output: top-1 agreement, or the task's (a detector's).
    const agreement = (r) => {
      const t = r.report.check.converted.outputs.find((o) => o.task)?.task;
      const [name, figure] = Object.entries(t ?? {}).find(([k]) => /_(agreement|iou)$/.test(k)) ?? ['no task figure', NaN];
      return `${(100 * figure).toFixed(1)} % (${name})`;
    };
    console.log(`  ${layersRefitted} of ${node[0].report.repair.layers.length} layers refitted; held-out agreement after the repair: Node ` +
      `${agreement(node[0])}, page ${agreement(isolated[0])}`);
    const middle = (runs) => runs.find((r) => r.report.repair.time_ms === repairMs(runs));
    whereTheTimeWent('Node, the median run', middle(node).report.repair, features);
    whereTheTimeWent('page isolated, the median run', middle(isolated).report.repair, features);
    whereTheTimeWent('page on one thread, the median run', middle(single).report.repair, features, false);
  }
} finally {
  await browser.close();
  for (const server of Object.values(servers)) server.close();
  rmSync(scratch, { recursive: true, force: true });
}
