// The page in Debian's headless Chromium, timed as a user sees it: from the file pick to the
// "Done" status (report, graph descriptions and the download ready), the median of REPEATS
// conversions in fresh tabs after one unmeasured warm-up, beside `cp` of the same file (the
// machine's speed in the same run), the peak wasm heap, and how much the browser's memory grew:
// the resident size of all Chromium processes together, sampled every 50 ms from the pick to
// "Done", peak minus the size just before the pick (shared pages count once per process, so this
// is a comparison between runs and versions, not an absolute figure). Issue 9's target:
// VGG-11-BN (507 MiB) in at most 4 s.
//   node bench/page.mjs SITE_DIR REPEATS MODEL.onnx...
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

import { chromium } from 'playwright-core';

import { serve } from '../scripts/serve.mjs';

const [site, repeatsArg, ...models] = process.argv.slice(2);
const repeats = Number(repeatsArg);
if (!site || !(repeats >= 1) || !models.length) {
  console.error('usage: node bench/page.mjs SITE_DIR REPEATS MODEL.onnx...');
  process.exit(2);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const server = await serve(site, 0);
const base = `http://127.0.0.1:${server.address().port}/`;
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
});

// The resident size of every Chromium process together, in bytes.
const chromiumRss = () => execFileSync('ps', ['-C', 'chromium', '-o', 'rss='], { encoding: 'utf8' })
  .split('\n').reduce((sum, kib) => sum + 1024 * (Number(kib) || 0), 0);

// One conversion in a fresh tab whose converter has loaded: pick -> "Done".
async function pageRun(model) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(base);
  await page.waitForFunction(() => document.body.dataset.converter === 'ready', null, { polling: 100 });
  const rssBefore = chromiumRss();
  let rssPeak = rssBefore;
  const sampler = setInterval(() => { rssPeak = Math.max(rssPeak, chromiumRss()); }, 50);
  const started = Date.now();
  await page.setInputFiles('[data-testid="file-input"]', model);
  await page.waitForFunction(() => /^(Done|Failed)/.test(document.querySelector('[data-testid="status"]').textContent),
    null, { timeout: 600_000, polling: 50 });
  const ms = Date.now() - started;
  clearInterval(sampler);
  rssPeak = Math.max(rssPeak, chromiumRss());
  const status = await page.textContent('[data-testid="status"]');
  if (!status.startsWith('Done')) throw new Error(`${model}: ${status} ${await page.textContent('[data-testid="error"]')}`);
  const heap = Number(await page.evaluate(() => document.body.dataset.wasmHeap));
  await context.close();
  return { ms, heap, rssGrowth: rssPeak - rssBefore };
}

function cp(model) {
  const dir = mkdtempSync(join(tmpdir(), 'onnx-lattice-bench-'));
  const started = process.hrtime.bigint();
  const r = spawnSync('cp', [model, join(dir, 'copy.onnx')]);
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  rmSync(dir, { recursive: true, force: true });
  if (r.status !== 0) throw new Error(`cp failed: ${r.stderr}`);
  return ms;
}

try {
  for (const model of models) {
    await pageRun(model);
    cp(model);
    const runs = [];
    const copies = [];
    for (let i = 0; i < repeats; ++i) {
      runs.push(await pageRun(model));
      copies.push(cp(model));
    }
    const ms = median(runs.map((r) => r.ms));
    const copy = median(copies);
    const size = statSync(model).size / 2 ** 20;
    const heap = Math.max(...runs.map((r) => r.heap)) / 2 ** 20;
    const rss = median(runs.map((r) => r.rssGrowth)) / 2 ** 20;
    const target = basename(model).startsWith('vgg11_bn') ? '  (target <= 4000 ms)' : '';
    console.log(`page ${basename(model)} (${size.toFixed(0)} MiB): pick -> done ${ms} ms${target}, ` +
      `cp ${copy.toFixed(0)} ms, page / cp ${(ms / copy).toFixed(1)}x, peak wasm heap ${heap.toFixed(0)} MiB ` +
      `(${(heap / size).toFixed(2)} of the model), Chromium grew ${rss.toFixed(0)} MiB (${(rss / size).toFixed(2)} of the model)`);
  }
} finally {
  await browser.close();
  server.close();
}
