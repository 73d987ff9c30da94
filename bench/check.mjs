// The check's time, in the Node CLI and in the page, side by side in one run: the
// Node CLI's `convert MODEL -o OUT --check` as a whole process minus the same conversion without
// the check (so what is left is the check: the fold-only twin and both comparisons), and the page's
// "Check" from the press to the result (the same two comparisons, onnxruntime-web loaded on
// the press), served cross-origin isolated (the runtime on every core) and not (one thread).
// Medians of REPEATS, each page run in a fresh tab.
//   node bench/check.mjs SITE_DIR REPEATS MODEL.onnx
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

import { serve } from '../scripts/serve.mjs';

const [site, repeatsArg, model] = process.argv.slice(2);
const repeats = Number(repeatsArg);
if (!site || !(repeats >= 1) || !model) {
  console.error('usage: node bench/check.mjs SITE_DIR REPEATS MODEL.onnx');
  process.exit(2);
}
const cli = fileURLToPath(new URL('../wasm/cli.mjs', import.meta.url));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const scratch = mkdtempSync(join(tmpdir(), 'onnx-lattice-bench-check-'));

function timedCli(args) {
  const started = process.hrtime.bigint();
  const r = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${args.join(' ')}: ${r.stderr}`);
  return Number(process.hrtime.bigint() - started) / 1e6;
}

const servers = [await serve(site, 0), await serve(site, 0, { isolated: false })];
const bases = servers.map((server) => `http://127.0.0.1:${server.address().port}/`);
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
});

async function pageCheck(base) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(base);
  await page.setInputFiles('[data-testid="file-input"]', model);
  await page.waitForFunction(() => /^(Done|Failed)/.test(document.querySelector('[data-testid="status"]').textContent), null, { timeout: 600_000, polling: 50 });
  // The check compares the converted model's files, made after "Done": timed from when they are.
  await page.waitForFunction(() => document.body.dataset.downloads === 'ready', null, { timeout: 600_000, polling: 50 });
  const started = Date.now();
  await page.click('[data-testid="check"]');
  await page.waitForFunction(() => document.querySelector('[data-testid="check-result"]').textContent.length > 0, null, { timeout: 600_000, polling: 50 });
  const ms = Date.now() - started;
  const ok = await page.$eval('[data-testid="check-result"]', (b) => b.dataset.foldPass === 'true' && b.dataset.convertedRuns === 'true');
  await context.close();
  if (!ok) throw new Error('the page\'s check did not pass its fold-only twin or did not run the converted model');
  return ms;
}

const out = join(scratch, 'out.onnx');
const node = [], page = [], single = [];
timedCli(['convert', model, '-o', out, '--check', '--quiet']);  // warm-up: the file cache, V8's code cache
for (let i = 0; i < repeats; ++i) {
  const convert = timedCli(['convert', model, '-o', out, '--quiet']);
  node.push(timedCli(['convert', model, '-o', out, '--quiet', '--check']) - convert);
  page.push(await pageCheck(bases[0]));
  single.push(await pageCheck(bases[1]));
}
console.log(`check of ${basename(model)} (fold-only twin and converted model, each against the input), median of ${repeats}:`);
console.log(`  Node CLI (convert --check minus convert): ${median(node).toFixed(0)} ms`);
console.log(`  page ("Check" pressed -> result, runtime loaded on the press), cross-origin isolated: ${median(page).toFixed(0)} ms; ` +
  `not isolated, one thread: ${median(single).toFixed(0)} ms`);
console.log(`  page / Node CLI: ${(median(page) / median(node)).toFixed(2)} isolated, ${(median(single) / median(node)).toFixed(2)} on one thread`);
await browser.close();
for (const server of servers) server.close();
rmSync(scratch, { recursive: true, force: true });
