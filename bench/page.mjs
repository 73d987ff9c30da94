// The page against the Node CLI, in one run (the target: the page <= 2x the Node CLI). The page
// runs in Debian's headless Chromium, timed as a user sees it, by the page's own clock: from the
// file pick (the input's change event) to the "Done" status (the report and the graph
// descriptions shown), and on to the downloads being ready (the worker computes the folded data
// and makes the files after it posts the report), in fresh tabs after one unmeasured warm-up. The Node CLI is timed as a whole process (`node wasm/cli.mjs
// convert MODEL -o OUT`, start-up and writing the file included), alternating with the page runs
// so both see the same machine. Medians of REPEATS, and the ratios.
// The breakdown is the conversion worker's own profile (web/worker.js, read in the worker after
// each run): the wait for the worker, its reads ahead, each core stage with the synchronous reads
// made in it, the report posted, the page's rendering up to "Done"; then, after "Done", the
// downloads' parts (folded data computed, Blobs made), and the graph's layout and drawing. The
// core's describe pass (inside "save") is timed apart, in Node on the same .wasm: the conversion
// with and without `describe`.
// Memory is measured in a separate run per model, after the timed ones, so that sampling `ps`
// every 50 ms does not steal a core from Chromium in the timed window: the peak wasm heap and how
// much all Chromium processes together grew in resident size from the pick to the downloads being
// ready (shared pages count once per process: a comparison between versions, not an absolute
// figure).
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
  const context = await browser.newContext({ acceptDownloads: true });
  const page = await context.newPage();
  await page.goto(base);
  await page.waitForFunction(() => document.body.dataset.converter === 'ready', null, { polling: 100 });
  const worker = page.workers().find((w) => /\/worker\.js$/.test(w.url()));
  let rssBefore = 0, rssPeak = 0, sampler = null;
  if (sampleMemory) {
    rssBefore = rssPeak = chromiumRss();
    sampler = setInterval(() => { rssPeak = Math.max(rssPeak, chromiumRss()); }, 50);
  }
  // The page's own clock: from the input's change event (the pick, as the page sees it) to the
  // status saying "Done" and to the downloads being offered, noted as each happens. Playwright's
  // own round trips before the change event are printed apart.
  await page.evaluate(() => {
    const now = () => performance.timeOrigin + performance.now();
    const times = window.benchTimes = {};
    const status = document.querySelector('[data-testid="status"]');
    document.querySelector('[data-testid="file-input"]').addEventListener('change', () => { times.picked = now(); }, { capture: true });
    new MutationObserver(() => { if (/^(Done|Failed)/.test(status.textContent)) times.done ??= now(); })
      .observe(status, { childList: true, characterData: true, subtree: true });
    new MutationObserver(() => { if (document.body.dataset.downloads === 'ready') times.ready ??= now(); })
      .observe(document.body, { attributes: true, attributeFilter: ['data-downloads'] });
    const graph = document.querySelector('[data-testid="graph"]');
    new MutationObserver(() => { if (graph.dataset.ready === 'true') times.drawn ??= now(); })
      .observe(graph, { attributes: true, attributeFilter: ['data-ready'] });
  });
  const started = Date.now();
  await page.setInputFiles('[data-testid="file-input"]', model);
  await page.waitForFunction(() => window.benchTimes.ready || /^Failed/.test(document.querySelector('[data-testid="status"]').textContent),
    null, { timeout: 600_000, polling: 20 });
  const times = await page.evaluate(() => window.benchTimes);
  if (sampler) {
    clearInterval(sampler);
    rssPeak = Math.max(rssPeak, chromiumRss());
  }
  const status = await page.textContent('[data-testid="status"]');
  if (!status.startsWith('Done')) throw new Error(`${model}: ${status} ${await page.textContent('[data-testid="error"]')}`);
  await page.waitForFunction(() => window.benchTimes.drawn, null, { timeout: 600_000, polling: 100 });
  const { drawn: drawnAt } = await page.evaluate(() => window.benchTimes);
  // The browser may take a Blob's bytes only when they are read: the download, from the click to
  // the file saved, is part of what the page costs.
  const clicked = Date.now();
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid="download"]')]);
  await download.path();
  const saved = Date.now() - clicked;
  const heap = Number(await page.evaluate(() => document.body.dataset.wasmHeap));
  const profile = await worker.evaluate(() => self.profile);
  await context.close();
  const ms = Math.round(times.done - times.picked), ready = Math.round(times.ready - times.picked);
  const harness = Math.round(times.picked - started);
  return { ms, ready, saved, harness, drawn: Math.round(drawnAt - times.picked), heap, rssGrowth: rssPeak - rssBefore, profile,
    received: profile.receivedAt - times.picked };
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
  // Up to the report, as the page's "Done": stopped before the output's parts, whose copies out
  // of the heap would bury the difference in noise. The fastest of each, for the same reason.
  const time = (describe) => {
    const started = performance.now();
    const r = module.convert(bytes, { describe, onConverted: () => false }, undefined);
    if (r.error) throw new Error(r.error);
    return performance.now() - started;
  };
  time(true);  // compiled and warm before timing
  const runs = { with: [], without: [] };
  for (let i = 0; i < Math.max(repeats, 5); ++i) {
    runs.with.push(time(true));
    runs.without.push(time(false));
  }
  return Math.min(...runs.with) - Math.min(...runs.without);
}

// The profile up to "Done" as consecutive spans: [{name, ms, counts}], counts being what the
// module counted in the span (synchronous reads, reads found held, Blobs made): the core's stages
// end with the report, which the worker posts before it writes the downloads' parts.
function spans(run) {
  const p = run.profile;
  const out = [{ name: 'pick (change event) -> the worker has it', ms: run.received }];
  out.push({ name: 'worker: reads ahead (and their plan)', ms: p.stages[0].at - p.started, ahead: p.ahead,
    counts: diff(p.planned, zero) });
  const merged = [];
  for (const s of p.stages.filter((x) => x.at <= p.converted)) {
    const name = s.stage.startsWith('conversion pass') || s.stage.startsWith('fusion pass') ? 'passes' : s.stage;
    if (merged.at(-1)?.name !== name) merged.push({ name, start: s });
  }
  const report = { at: p.converted, counts: p.countsAtReport };
  merged.forEach(({ name, start }, i) => {
    const end = merged[i + 1]?.start ?? report;
    out.push({ name: `core: ${name}`, ms: end.at - start.at, counts: diff(end.counts, start.counts) });
  });
  out.push({ name: 'worker: report parsed, result posted', ms: p.posted - p.converted });
  out.push({ name: 'page: result shown -> "Done"', ms: run.ms - run.received - p.posted });
  return out;
}

// What comes after "Done", while the page shows the report: the downloads' parts and the graph.
function afterDone(run) {
  const p = run.profile;
  return [
    { name: 'worker: folds computed, Blobs made', ms: p.written - p.posted, counts: diff(p.counts, p.countsAtReport) },
    { name: 'worker: one Blob of the parts, posted', ms: p.joined - p.written },
    { name: 'page: downloads offered', ms: run.ready - run.received - p.joined },
  ];
}
const zero = { reads: 0, readBytes: 0, readMs: 0, held: 0, heldBytes: 0, blobs: 0, blobMs: 0 };
const diff = (a, b) => Object.fromEntries(Object.keys(zero).map((k) => [k, a[k] - b[k]]));

function printSpans(runs, spansOf) {
  const all = runs.map(spansOf);
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
}

function printBreakdown(runs) {
  console.log('  breakdown to "Done" (medians, ms):');
  printSpans(runs, spans);
  console.log(`  after "Done", as the page shows the report (downloads ready ${median(runs.map((r) => r.ready))} ms from the pick):`);
  printSpans(runs, afterDone);
  console.log(`    ${'graph laid out and drawn'.padEnd(44)} ${median(runs.map((r) => r.drawn - r.ms)).toFixed(0).padStart(6)}`);
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
    const ready = median(runs.map((r) => r.ready));
    console.log(`  downloads ready ${ready} ms from the pick: ${(ready / node).toFixed(2)}x the Node CLI (whose time includes ` +
      'writing its file)');
    console.log(`  all runs: page ${runs.map((r) => r.ms).join(' ')}; downloads ready ${runs.map((r) => r.ready).join(' ')}; ` +
      `Node CLI ${cli.map((x) => x.toFixed(0)).join(' ')}`);
    console.log(`  not counted: Playwright's setInputFiles until the change event, ${median(runs.map((r) => r.harness))} ms; ` +
      `after the graph is drawn, the model's download from the click to the file saved, ${median(runs.map((r) => r.saved))} ms`);
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
