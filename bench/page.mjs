// The page against the Node CLI, in one run (issue 23's target: page <= 2x the Node CLI). The page
// runs in Debian's headless Chromium, timed as a user sees it: from the file pick to the "Done"
// status (report, graph descriptions and the download ready), in fresh tabs after one unmeasured
// warm-up. The Node CLI is timed as a whole process (`node wasm/cli.mjs convert MODEL -o OUT`,
// start-up included), alternating with the page runs so both see the same machine. Medians of
// REPEATS, and the ratio.
// The breakdown is the conversion worker's own profile (web/worker.js, read in the worker after
// each run): the wait for the worker, its reads ahead, each core stage with the synchronous reads
// made in it, the output's parts (folded data computed, Blobs made), the descriptions parsed, the
// page's rendering up to "Done", and, after "Done" and outside the timed window, the graph's layout
// and drawing. The core's describe pass (inside "save") is timed apart, in Node on the same
// .wasm: the conversion with and without `describe`.
// Memory is measured in a separate run per model, after the timed ones, so that sampling `ps`
// every 50 ms does not steal a core from Chromium in the timed window: the peak wasm heap and how
// much all Chromium processes together grew in resident size from the pick to "Done" (shared
// pages count once per process: a comparison between versions, not an absolute figure).
//   node bench/page.mjs SITE_DIR REPEATS [MODEL.onnx...]
// Without models: ResNet-50 from the zoo and VGG-11-BN (507 MiB), exported into the cache on
// first use.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir, tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

import { serve } from '../scripts/serve.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const CACHE = process.env.ONNX_LATTICE_CACHE ?? join(homedir(), '.cache/onnx-lattice');
const TARGET_RATIO = 2;

const [site, repeatsArg, ...given] = process.argv.slice(2);
const repeats = Number(repeatsArg);
if (!site || !(repeats >= 1)) {
  console.error('usage: node bench/page.mjs SITE_DIR REPEATS [MODEL.onnx...]');
  process.exit(2);
}

// The default models, made once into the cache (make_fixtures.py exports them with torch).
function defaultModels() {
  const made = [['zoo', join(CACHE, 'zoo'), 'resnet50'], ['bench', join(CACHE, 'bench'), 'vgg11_bn']];
  return made.map(([kind, dir, name]) => {
    const model = join(dir, `${name}.onnx`);
    if (!existsSync(model)) {
      console.log(`exporting ${name} into ${dir} (once)`);
      execFileSync('/usr/bin/python3', [join(ROOT, 'tests/fixtures/make_fixtures.py'), kind, dir, name], { stdio: 'inherit' });
    }
    return model;
  });
}
const models = given.length ? given : defaultModels();

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mib = (bytes) => (bytes / 2 ** 20).toFixed(1);
const server = await serve(site, 0);
const base = `http://127.0.0.1:${server.address().port}/`;
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
});

// The resident size of every Chromium process together, in bytes.
const chromiumRss = () => execFileSync('ps', ['-C', 'chromium', '-o', 'rss='], { encoding: 'utf8' })
  .split('\n').reduce((sum, kib) => sum + 1024 * (Number(kib) || 0), 0);

// One conversion in a fresh tab whose converter has loaded: pick -> "Done", then the worker's
// profile and the time to the drawn graph. `sampleMemory`: the memory run.
async function pageRun(model, sampleMemory = false) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(base);
  await page.waitForFunction(() => document.body.dataset.converter === 'ready', null, { polling: 100 });
  const worker = page.workers().find((w) => /\/worker\.js$/.test(w.url()));
  let rssBefore = 0, rssPeak = 0, sampler = null;
  if (sampleMemory) {
    rssBefore = rssPeak = chromiumRss();
    sampler = setInterval(() => { rssPeak = Math.max(rssPeak, chromiumRss()); }, 50);
  }
  const started = Date.now();
  await page.setInputFiles('[data-testid="file-input"]', model);
  await page.waitForFunction(() => /^(Done|Failed)/.test(document.querySelector('[data-testid="status"]').textContent),
    null, { timeout: 600_000, polling: 20 });
  const ms = Date.now() - started;
  if (sampler) {
    clearInterval(sampler);
    rssPeak = Math.max(rssPeak, chromiumRss());
  }
  const status = await page.textContent('[data-testid="status"]');
  if (!status.startsWith('Done')) throw new Error(`${model}: ${status} ${await page.textContent('[data-testid="error"]')}`);
  await page.waitForSelector('[data-testid="graph"][data-ready="true"]', { timeout: 600_000 });
  const drawn = Date.now() - started;
  const heap = Number(await page.evaluate(() => document.body.dataset.wasmHeap));
  const profile = await worker.evaluate(() => self.profile);
  await context.close();
  return { ms, drawn, heap, rssGrowth: rssPeak - rssBefore, profile, received: profile.receivedAt - started };
}

// The Node CLI converting `model`, as a whole process.
function nodeCli(model) {
  const dir = mkdtempSync(join(tmpdir(), 'onnx-lattice-bench-'));
  try {
    const started = process.hrtime.bigint();
    const r = spawnSync(process.execPath, [join(ROOT, 'wasm/cli.mjs'), 'convert', model, '-o', join(dir, 'out.onnx'), '--quiet']);
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    if (r.status !== 0) throw new Error(`the Node CLI failed: ${r.stderr}`);
    return ms;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// The core's describe pass: the conversion in Node on the same .wasm with and without it.
async function describeMs(model) {
  const factory = createRequire(import.meta.url)(join(ROOT, 'wasm/dist/onnx_lattice.js'));
  const module = await factory({ wasmBinary: readFileSync(join(ROOT, 'wasm/dist/onnx_lattice.wasm')), printErr: () => {} });
  const bytes = readFileSync(model);
  const time = (describe) => {
    const started = performance.now();
    const r = module.convert(bytes, { describe }, undefined);
    if (r.error) throw new Error(r.error);
    return performance.now() - started;
  };
  time(true);  // compiled and warm before timing
  const runs = { with: [], without: [] };
  for (let i = 0; i < repeats; ++i) {
    runs.with.push(time(true));
    runs.without.push(time(false));
  }
  return median(runs.with) - median(runs.without);
}

// The profile's stages as consecutive spans: [{name, ms, counts}], counts being what the module
// counted in the span (synchronous reads, reads found held, Blobs made), then the spans after the
// core.
function spans(run) {
  const p = run.profile;
  const out = [{ name: 'pick -> the worker has the file', ms: run.received }];
  out.push({ name: 'worker: reads ahead (and their plan)', ms: p.stages[0].at - p.started, ahead: p.ahead,
    counts: diff(p.planned, zero) });
  const merged = [];
  for (const s of p.stages) {
    const name = s.stage.startsWith('conversion pass') || s.stage.startsWith('fusion pass') ? 'passes' : s.stage;
    if (merged.at(-1)?.name !== name) merged.push({ name, start: s });
  }
  for (let i = 0; i < merged.length - 1; ++i) {
    const from = merged[i].start, to = merged[i + 1].start;
    out.push({ name: `core: ${merged[i].name}`, ms: to.at - from.at, counts: diff(to.counts, from.counts) });
  }
  const done = p.stages.at(-1);
  out.push({ name: 'output parts (folds computed, Blobs made)', ms: p.converted - done.at, counts: diff(p.counts, done.counts) });
  out.push({ name: 'worker: one Blob of the parts', ms: p.blobs - p.converted });
  out.push({ name: 'worker: descriptions parsed, result posted', ms: p.posted - p.blobs });
  out.push({ name: 'page: result shown -> "Done"', ms: run.ms - run.received - p.posted });
  return out;
}
const zero = { reads: 0, readBytes: 0, readMs: 0, held: 0, heldBytes: 0, blobs: 0, blobMs: 0 };
const diff = (a, b) => Object.fromEntries(Object.keys(zero).map((k) => [k, a[k] - b[k]]));

function printBreakdown(runs) {
  const all = runs.map(spans);
  console.log('  breakdown (medians, ms):');
  for (let i = 0; i < all[0].length; ++i) {
    const s = all[0][i];
    const at = (get) => median(all.map((x) => get(x[i])));
    let extra = '';
    if (s.ahead) {
      if (at((x) => x.ahead.planMs)) extra += `; the plan ${at((x) => x.ahead.planMs).toFixed(0)} ms`;
      extra += `; ${at((x) => x.ahead.reads)} reads ahead, ${mib(at((x) => x.ahead.bytes))} MiB in ${at((x) => x.ahead.ms).toFixed(0)} ms`;
    }
    if (s.counts) {
      const c = (key) => at((x) => x.counts[key]);
      if (c('reads')) extra += `; ${c('reads')} synchronous reads, ${mib(c('readBytes'))} MiB in ${c('readMs').toFixed(0)} ms`;
      if (c('held')) extra += `; ${c('held')} reads found held, ${mib(c('heldBytes'))} MiB`;
      if (c('blobs')) extra += `; ${c('blobs')} Blobs made in ${c('blobMs').toFixed(0)} ms`;
    }
    console.log(`    ${s.name.padEnd(44)} ${at((x) => x.ms).toFixed(0).padStart(6)}${extra}`);
  }
  console.log(`    ${'after "Done": graph laid out and drawn'.padEnd(44)} ${median(runs.map((r) => r.drawn - r.ms)).toFixed(0).padStart(6)}`);
}

try {
  for (const model of models) {
    await pageRun(model);
    nodeCli(model);
    const runs = [];
    const cli = [];
    for (let i = 0; i < repeats; ++i) {
      runs.push(await pageRun(model));
      cli.push(nodeCli(model));
    }
    const ms = median(runs.map((r) => r.ms));
    const node = median(cli);
    const ratio = ms / node;
    const verdict = ratio <= TARGET_RATIO ? `met, ${((1 - ratio / TARGET_RATIO) * 100).toFixed(0)} % margin` : 'MISSED';
    console.log(`page ${basename(model)} (${mib(statSync(model).size)} MiB): pick -> done ${ms} ms, Node CLI ${node.toFixed(0)} ms, ` +
      `page / Node CLI ${ratio.toFixed(2)}x (target <= ${TARGET_RATIO}: ${verdict})`);
    console.log(`  all runs: page ${runs.map((r) => r.ms).join(' ')}; Node CLI ${cli.map((x) => x.toFixed(0)).join(' ')}`);
    printBreakdown(runs);
    console.log(`    ${'core describe pass (in "save"; Node, same .wasm)'.padEnd(44)} ${(await describeMs(model)).toFixed(0).padStart(6)}`);
    const memory = await pageRun(model, true);
    const size = statSync(model).size / 2 ** 20;
    console.log(`  memory (a separate run): peak wasm heap ${mib(memory.heap)} MiB, Chromium grew ${mib(memory.rssGrowth)} MiB ` +
      `(${(memory.rssGrowth / 2 ** 20 / size).toFixed(2)} of the model)`);
  }
} finally {
  await browser.close();
  server.close();
}
