// The static page in a real headless Chromium (Debian's), served from 127.0.0.1 like any static
// host would: the sample and dropped/picked files convert to exactly the CLI's bytes and report.
import assert from 'node:assert/strict';
import { closeSync, existsSync, ftruncateSync, mkdirSync, openSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { gzipSync } from 'node:zlib';

import { chromium } from 'playwright-core';

import { serve } from '../../scripts/serve.mjs';
import { CLIS, ROOT, ZOO, fixture, scratch, stable } from './helpers.mjs';

const SITE = join(ROOT, 'build/web');
const ARTIFACTS = join(ROOT, 'test-artifacts');
const dir = scratch();
let server, browser, base;
const requests = [];

before(async () => {
  server = await serve(SITE, 0);
  base = `http://127.0.0.1:${server.address().port}/`;
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  await browser?.close();
  server?.close();
});

async function openPage() {
  const context = await browser.newContext({ acceptDownloads: true });
  const page = await context.newPage();
  page.on('request', (r) => requests.push(r.url()));
  context.on('request', (r) => requests.push(r.url()));
  const consoleErrors = [];
  page.on('pageerror', (e) => consoleErrors.push(e.message));
  await page.goto(base);
  return { page, context, consoleErrors };
}

async function waitDone(page) {
  await page.waitForFunction(() => {
    const status = document.querySelector('[data-testid="status"]').textContent;
    return status.startsWith('Done') || status.startsWith('Failed');
  }, null, { timeout: 120_000, polling: 250 });  // a timer, not animation frames: a busy page may skip those
  return page.textContent('[data-testid="status"]');
}

async function downloadBytes(page, testid) {
  const [download] = await Promise.all([page.waitForEvent('download'), page.click(`[data-testid="${testid}"]`)]);
  const path = join(dir, `${Date.now()}-${download.suggestedFilename()}`);
  await download.saveAs(path);
  return { bytes: readFileSync(path), name: download.suggestedFilename() };
}

// The CLI's output and JSON report for the same file and options.
function cli(input, extra = []) {
  const out = join(dir, `cli-${Date.now()}.onnx`);
  const r = CLIS.native(['convert', input, '-o', out, '--report', `${out}.json`, '--quiet', ...extra]);
  assert.equal(r.status, 0, r.stderr);
  return { bytes: readFileSync(out), report: JSON.parse(readFileSync(`${out}.json`)) };
}

async function pageReport(page) {
  const { bytes } = await downloadBytes(page, 'download-report');
  return JSON.parse(bytes);
}

async function checkAgainstCli(page, input, extra = []) {
  const expected = cli(input, extra);
  const report = await pageReport(page);
  assert.deepEqual(stable(report), stable(expected.report));
  const rows = await page.$$eval('[data-testid="match-row"]', (rs) => rs.map((r) => r.dataset.matchId));
  assert.deepEqual(rows, expected.report.matches.map((m) => m.id));
  const warnings = await page.$$eval('[data-testid="warning-row"]', (rs) => rs.map((r) => r.textContent));
  assert.deepEqual(warnings, expected.report.warnings.map((w) => w.message));
  const audit = await page.textContent('[data-testid="audit"]');
  for (const u of expected.report.unsupported) assert.ok(audit.includes(u.reason), u.reason);
  const { bytes, name } = await downloadBytes(page, 'download');
  assert.ok(bytes.equals(expected.bytes), 'the downloaded model is byte-identical to the CLI output');
  return { name, report };
}

test('the sample model converts in the page exactly as the CLI converts it', async () => {
  const { page, context, consoleErrors } = await openPage();
  await page.click('[data-testid="sample-model"]');
  assert.match(await waitDone(page), /^Done/);
  const { name, report } = await checkAgainstCli(page, join(SITE, 'sample.onnx'));
  assert.equal(name, 'sample.lattice.onnx');
  assert.ok(report.matches.length >= 10);
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.setViewportSize({ width: 1100, height: 1400 });
  await page.screenshot({ path: join(ARTIFACTS, 'page-sample.png'), fullPage: false });
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

test('unticking a match and converting again skips exactly that match', async () => {
  const { page, context } = await openPage();
  await page.click('[data-testid="sample-model"]');
  await waitDone(page);
  const id = 'LatticeMaxPool2dPattern:/down/down.1/MaxPool';
  await page.uncheck(`[data-match-id="${id}"] input`);
  await page.click('[data-testid="convert"]');
  await waitDone(page);
  const { report } = await checkAgainstCli(page, join(SITE, 'sample.onnx'), ['--skip-match', id]);
  const skipped = report.matches.find((m) => m.id === id);
  assert.equal(skipped.applied, false);
  assert.match(skipped.reason, /skipped on request/);
  assert.equal(await page.isChecked(`[data-match-id="${id}"] input`), false);
  await context.close();
});

test('a picked file, a dropped file and the target and fold-bn controls match the CLI', async () => {
  const { page, context } = await openPage();
  await page.setInputFiles('[data-testid="file-input"]', fixture('resnet_stem.onnx'));
  await waitDone(page);
  await checkAgainstCli(page, fixture('resnet_stem.onnx'));

  await page.selectOption('[data-testid="target-select"]', 'lattice-advanced');
  await waitDone(page);
  await page.uncheck('[data-testid="fold-bn"]');
  await waitDone(page);
  await checkAgainstCli(page, fixture('resnet_stem.onnx'), ['--target', 'lattice-advanced', '--no-fold-bn']);

  // A real drop: a DataTransfer carrying the file, dispatched on the drop zone.
  const bytes = [...readFileSync(fixture('odd_convs.onnx'))];
  await page.selectOption('[data-testid="target-select"]', 'lattice');
  await waitDone(page);
  await page.check('[data-testid="fold-bn"]');
  await waitDone(page);
  const transfer = await page.evaluateHandle((data) => {
    const dt = new DataTransfer();
    dt.items.add(new File([new Uint8Array(data)], 'odd_convs.onnx'));
    return dt;
  }, bytes);
  await page.dispatchEvent('[data-testid="drop-zone"]', 'drop', { dataTransfer: transfer });
  await waitDone(page);
  const { name } = await checkAgainstCli(page, fixture('odd_convs.onnx'));
  assert.equal(name, 'odd_convs.lattice.onnx');
  await context.close();
});

test('an invalid file shows the error panel in words', async () => {
  const { page, context } = await openPage();
  await page.setInputFiles('[data-testid="file-input"]', { name: 'notes.onnx', mimeType: 'application/octet-stream',
    buffer: Buffer.from('these are my notes, not a model') });
  assert.match(await waitDone(page), /^Failed/);
  assert.equal(await page.isVisible('[data-testid="error"]'), true);
  assert.match(await page.textContent('[data-testid="error"]'), /not an ONNX model/);
  // The page still works afterwards.
  await page.click('[data-testid="sample-model"]');
  assert.match(await waitDone(page), /^Done/);
  assert.equal(await page.isVisible('[data-testid="error"]'), false);
  await context.close();
});

test('the largest fixture converts in the page; time compared with the Node CLI', { skip: !existsSync(join(ZOO, 'resnet50.onnx')) && 'no zoo' }, async () => {
  const model = join(ZOO, 'resnet50.onnx');
  const { page, context } = await openPage();
  const started = Date.now();
  await page.setInputFiles('[data-testid="file-input"]', model);
  const status = await waitDone(page);
  const pageMs = Date.now() - started;
  assert.match(status, /^Done/);
  const { bytes } = await downloadBytes(page, 'download');
  const nodeStart = Date.now();
  const out = join(dir, 'resnet50-node.onnx');
  const r = CLIS.node(['convert', model, '-o', out, '--quiet']);
  const nodeMs = Date.now() - nodeStart;
  assert.equal(r.status, 0, r.stderr);
  assert.ok(bytes.equals(readFileSync(out)));
  console.log(`# resnet50 (${(statSync(model).size / 2 ** 20).toFixed(1)} MiB): page ${pageMs} ms from file pick to report ` +
    `(worker: ${status.match(/Done in (\d+) ms/)[1]} ms), Node CLI ${nodeMs} ms end to end`);
  await context.close();
});

test('once loaded, the page works offline', async () => {
  const { page, context } = await openPage();
  await page.waitForFunction(() => document.querySelector('[data-testid="status"]').textContent.startsWith('Ready'), null,
    { polling: 250 });
  await context.setOffline(true);
  await page.click('[data-testid="sample-model"]');
  assert.match(await waitDone(page), /^Done/);
  await page.setInputFiles('[data-testid="file-input"]', fixture('inception.onnx'));
  assert.match(await waitDone(page), /^Done/);
  await context.close();
});

// The cause of this test's old time-outs on loaded machines: the refusal came before the
// worker had started, and the worker's late "loading the converter" message overwrote "Failed".
// Holding the converter's loader back until after the refusal makes that order certain.
test('a file over 2 GiB is refused in words before it is read, whenever the converter starts', async () => {
  const huge = join(dir, 'huge.onnx');
  const fd = openSync(huge, 'w');
  ftruncateSync(fd, 2 ** 31 + 16);  // sparse: no disk used, and nothing reads it
  closeSync(fd);
  const context = await browser.newContext();
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  await context.route('**/onnx_lattice.js', async (route) => {
    await held;
    await route.continue();
  });
  const page = await context.newPage();
  await page.goto(base);
  await page.setInputFiles('[data-testid="file-input"]', huge);
  assert.match(await waitDone(page), /^Failed/);
  release();
  await page.waitForFunction(() => document.body.dataset.converter === 'ready', null, { polling: 250 });
  assert.match(await page.textContent('[data-testid="status"]'), /^Failed/, 'the start-up did not overwrite it');
  assert.match(await page.textContent('[data-testid="error"]'), /limited to 2 GiB/);
  await context.close();
});

test('an external-data model picked with its data file converts to the CLI\'s single file; a missing one is named', async () => {
  const folder = join(dir, 'external');
  mkdirSync(folder);
  const model = join(folder, 'stem.onnx');
  const made = spawnSync('/usr/bin/python3', ['-c', 'import onnx, sys\nonnx.save_model(onnx.load(sys.argv[1]), sys.argv[2], ' +
    'save_as_external_data=True, location="stem.onnx.data", size_threshold=256)', fixture('resnet_stem.onnx'), model], { encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
  const { page, context } = await openPage();
  await page.setInputFiles('[data-testid="file-input"]', [`${model}.data`, model]);
  assert.match(await waitDone(page), /^Done/);
  const { bytes, name } = await downloadBytes(page, 'download');
  assert.equal(name, 'stem.lattice.onnx');
  assert.deepEqual(bytes, cli(model, ['--inline']).bytes);
  await context.close();

  const alone = await openPage();
  await alone.page.setInputFiles('[data-testid="file-input"]', model);
  assert.match(await waitDone(alone.page), /^Failed/);
  assert.match(await alone.page.textContent('[data-testid="error"]'), /keeps its data in an external file \('stem\.onnx\.data'\)/);
  await alone.context.close();
});

test('no request left 127.0.0.1', () => {
  assert.ok(requests.length > 0);
  const elsewhere = requests.filter((u) => !u.startsWith(base) && !u.startsWith('blob:') && !u.startsWith('data:'));
  assert.deepEqual(elsewhere, []);
});

test('the page weighs at most 400 KB gzipped (HTML, JS, CSS, wasm)', () => {
  let total = 0;
  const sizes = {};
  for (const name of readdirSync(SITE).filter((f) => /\.(html|js|css|wasm)$/.test(f))) {
    sizes[name] = gzipSync(readFileSync(join(SITE, name)), { level: 9 }).length;
    total += sizes[name];
  }
  console.log(`# page weight gzipped: ${(total / 1024).toFixed(1)} KB ${JSON.stringify(sizes)}`);
  assert.ok(total <= 400 * 1024, `${total} bytes`);
});
