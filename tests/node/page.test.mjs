// The static page in a real headless Chromium (Debian's), served from 127.0.0.1 like any static
// host would: the sample and dropped/picked files convert to exactly the CLI's bytes and report.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, createReadStream, existsSync, ftruncateSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, join } from 'node:path';
import { after, before, test } from 'node:test';
import { gzipSync } from 'node:zlib';

import { chromium } from 'playwright-core';

import { serve } from '../../scripts/serve.mjs';
import { createSyncConverter } from '../../wasm/index.mjs';
import { CLIS, FIXTURES, ROOT, TRAINED, ZOO, fixture, numpyValues, scratch, stable } from './helpers.mjs';

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

async function openPage(contextOptions = {}, url = base) {
  const context = await browser.newContext({ acceptDownloads: true, ...contextOptions });
  const page = await context.newPage();
  page.on('request', (r) => requests.push(r.url()));
  context.on('request', (r) => requests.push(r.url()));
  const consoleErrors = [];
  page.on('pageerror', (e) => consoleErrors.push(e.message));
  await page.goto(url);
  return { page, context, consoleErrors };
}

async function waitDone(page) {
  await page.waitForFunction(() => {
    const status = document.querySelector('[data-testid="status"]').textContent;
    return status.startsWith('Done') || status.startsWith('Failed');
  }, null, { timeout: 120_000, polling: 250 });  // a timer, not animation frames: a busy page may skip those
  return page.textContent('[data-testid="status"]');
}

// The status as shown, line by line: the conversion's summary, then what came after it (a check).
async function statusLines(page) {
  return (await page.innerText('[data-testid="status"]')).split('\n');
}

// The converted model's files come after "Done" (the report is shown while the worker computes
// them); until then its links lead nowhere.
async function waitDownloads(page) {
  await page.waitForFunction(() => document.body.dataset.downloads === 'ready', null, { timeout: 600_000, polling: 250 });
}

// Where the browser saved a download (deleted when its context closes), and its name.
async function downloadFile(page, testid) {
  await waitDownloads(page);
  const [download] = await Promise.all([page.waitForEvent('download'), page.click(`[data-testid="${testid}"]`)]);
  return { path: await download.path(), name: download.suggestedFilename() };
}

async function downloadBytes(page, testid) {
  const { path, name } = await downloadFile(page, testid);
  return { bytes: readFileSync(path), name };
}

// Files too big to hold, compared by size and SHA-256 (read in 16 MiB pieces).
async function sameFile(actual, expected) {
  assert.equal(statSync(actual).size, statSync(expected).size);
  const digest = async (path) => {
    const hash = createHash('sha256');
    for await (const piece of createReadStream(path, { highWaterMark: 1 << 24 })) hash.update(piece);
    return hash.digest('hex');
  };
  assert.equal(await digest(actual), await digest(expected), `${actual} differs from ${expected}`);
}

// The CLI's output and JSON report for the same file and options.
function cli(input, extra = []) {
  const out = join(dir, `cli-${Date.now()}.onnx`);
  const r = CLIS.native(['convert', input, '-o', out, '--report', `${out}.json`, '--quiet', ...extra]);
  assert.equal(r.status, 0, r.stderr);
  return { bytes: readFileSync(out), report: JSON.parse(readFileSync(`${out}.json`)) };
}

// The page's conversion worker, once its module is loaded.
async function converterWorker(page) {
  await page.waitForFunction(() => document.body.dataset.converter === 'ready', null, { polling: 250 });
  return page.workers().find((w) => /\/worker\.js$/.test(w.url()));
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

// web/messages.js: a kind its receiver has no handler for is said, on the console and on the page.
test('a message of a kind its receiver does not know, either way between the page and the converter, is an error in words', async () => {
  const { page, context } = await openPage();
  const logged = [];
  page.on('console', (m) => { if (m.type() === 'error') logged.push(m.text()); });
  const worker = await converterWorker(page);
  await worker.evaluate(() => self.postMessage({ type: 'reddy' }));
  assert.match(await waitDone(page), /^Failed/);
  assert.equal(await page.textContent('[data-testid="error"]'),
    "This model could not be converted: the converter sent an unknown message kind 'reddy'");
  assert.ok(logged.some((t) => t.includes("unknown message kind 'reddy'")), logged.join('\n'));
  // The page still works, and a kind the converter does not know comes back said so.
  await page.click('[data-testid="sample-model"]');
  assert.match(await waitDone(page), /^Done/);
  await worker.evaluate(() => self.onmessage({ data: { type: 'lod' } }));
  await page.waitForFunction(() => !document.querySelector('[data-testid="error"]').hidden, null, { polling: 100 });
  assert.equal(await page.textContent('[data-testid="error"]'),
    "This model could not be converted: the page sent an unknown message kind 'lod'");
  await context.close();
});

test('of several models picked, the first by name converts and the others are named as not taken; the result names its file', async () => {
  const { page, context } = await openPage();
  const notice = () => page.textContent('[data-testid="pick-notice"]');
  const stem = join(dir, 'several', 'stem.onnx');
  mkdirSync(join(dir, 'several'));
  const made = spawnSync('/usr/bin/python3', ['-c', 'import onnx, sys\nonnx.save_model(onnx.load(sys.argv[1]), sys.argv[2], ' +
    'save_as_external_data=True, location="stem.onnx.data", size_threshold=256)', fixture('resnet_stem.onnx'), stem], { encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
  // Picked in another order than their names': the first by name is taken, its data file with it.
  await page.setInputFiles('[data-testid="file-input"]', [stem, `${stem}.data`, fixture('resnet_stem.onnx'), fixture('odd_convs.onnx')]);
  assert.match(await waitDone(page), /^Done/);
  assert.equal(await page.textContent('#results-heading'), 'Result: odd_convs.onnx');
  assert.equal(await notice(), 'One model at a time: this is odd_convs.onnx, the first by name. ' +
    'Not converted: resnet_stem.onnx, stem.onnx with stem.onnx.data. Pick each on its own, with its data files.');
  await checkAgainstCli(page, fixture('odd_convs.onnx'));
  // A model with its data file is one model: no notice, and the result names the model.
  await page.setInputFiles('[data-testid="file-input"]', [`${stem}.data`, stem]);
  assert.match(await waitDone(page), /^Done/);
  assert.ok(await page.isHidden('[data-testid="pick-notice"]'));
  assert.equal(await page.textContent('#results-heading'), 'Result: stem.onnx');
  await page.click('[data-testid="sample-model"]');
  assert.match(await waitDone(page), /^Done/);
  assert.equal(await page.textContent('#results-heading'), 'Result: sample.onnx');
  await context.close();
});

test('a file whose first bytes say it is no ONNX model is named for what it is by the converter, as in the CLIs; a data file by its name', async () => {
  const { page, context } = await openPage();
  const worker = await converterWorker(page);
  // numpy's own files, and ZIP archives whose first entry is a pickle (as torch.save writes) or not.
  const [npz, npy, pt, zip] = ['arrays.npz', 'array.npy', 'model.pt', 'notes.zip'].map((f) => join(dir, f));
  const saved = spawnSync('/usr/bin/python3', ['-c', 'import numpy, sys, zipfile\nx = numpy.zeros((2, 3), "float32")\n' +
    'numpy.savez(sys.argv[1], x=x)\nnumpy.save(sys.argv[2], x)\n' +
    'zipfile.ZipFile(sys.argv[3], "w").writestr("model/data.pkl", b"\\x80\\x02}q\\x00.")\n' +
    'zipfile.ZipFile(sys.argv[4], "w").writestr("notes.txt", "not a model")', npz, npy, pt, zip], { encoding: 'utf8' });
  assert.equal(saved.status, 0, saved.stderr);
  const floats = Buffer.from(new Float32Array([0.5, -1.25, 3, 7]).buffer);
  const lfs = Buffer.from('version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 1234\n');
  const cases = [
    ['photo.onnx', readFileSync(join(ROOT, 'docs/page-graph-390.png')), 'not an ONNX model: it is a PNG image'],
    ['photo.onnx', Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46, 0]), 'not an ONNX model: it is a JPEG image'],
    ['arrays.onnx', readFileSync(npz), 'not an ONNX model: it is a NumPy archive (.npz)'],
    ['array.onnx', readFileSync(npy), 'not an ONNX model: it is a NumPy array (.npy)'],
    ['model.onnx', readFileSync(pt), 'not an ONNX model: it is a PyTorch checkpoint (torch.save\'s ZIP archive: export the model to ONNX first)'],
    ['notes.onnx', readFileSync(zip), 'not an ONNX model: it is a ZIP archive'],
    ['model.onnx.data', floats, 'model.onnx.data holds a model\'s external tensor data, not the model: pick the model (.onnx) and it together'],
    ['notes.onnx', lfs, 'not an ONNX model: it is a Git LFS pointer, not the file it points to (fetch it with git lfs pull)'],
  ];
  for (const [name, buffer, words] of cases) {
    await page.setInputFiles('[data-testid="file-input"]', { name, mimeType: 'application/octet-stream', buffer });
    assert.match(await waitDone(page), /^Failed/);
    assert.equal(await page.textContent('[data-testid="error"]'), `This model could not be converted: ${words}`);
    // Both CLIs say the same of the same bytes: the judgement is the core's.
    if (name.endsWith('.onnx')) {
      const file = join(dir, `kind-${name}`);
      writeFileSync(file, buffer);
      for (const cli of [CLIS.native, CLIS.node]) {
        const r = cli(['inspect', file]);
        assert.equal(r.stderr, `onnx-lattice: error: ${file}: ${words}\n`);
        assert.equal(r.status, 1);
      }
    }
  }
  assert.equal(await worker.evaluate(() => self.profile?.converted), undefined, 'no conversion got as far as a report');
  // The module survived them: a model whose bytes say nothing of the kind still converts.
  await page.setInputFiles('[data-testid="file-input"]', fixture('resnet_stem.onnx'));
  assert.match(await waitDone(page), /^Done/);
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

// The CLI's output for `model` in a folder of its own, named as the page names its download (a
// model names its data file): the model's path; its data file, if any, is that + '.data'.
function cliOutput(model, name, extra = [], parent = dir) {
  const out = join(mkdtempSync(join(parent, 'cli-')), name);
  const r = CLIS.native(['convert', model, '-o', out, '--quiet', ...extra]);
  assert.equal(r.status, 0, r.stderr);
  return out;
}

function cliTwoFiles(model, name, extra = []) {
  const out = cliOutput(model, name, extra);
  return { model: readFileSync(out), data: readFileSync(`${out}.data`) };
}

test('an external-data model picked with its data file gives the CLI\'s two files, or one on request; a missing one is named', async () => {
  const folder = join(dir, 'external');
  mkdirSync(folder);
  const model = join(folder, 'stem.onnx');
  const made = spawnSync('/usr/bin/python3', ['-c', 'import onnx, sys\nonnx.save_model(onnx.load(sys.argv[1]), sys.argv[2], ' +
    'save_as_external_data=True, location="stem.onnx.data", size_threshold=256)', fixture('resnet_stem.onnx'), model], { encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
  const { page, context } = await openPage();
  await page.setInputFiles('[data-testid="file-input"]', [`${model}.data`, model]);
  assert.match(await waitDone(page), /^Done/);
  const expected = cliTwoFiles(model, 'stem.lattice.onnx');
  const downloaded = await downloadBytes(page, 'download');
  const data = await downloadBytes(page, 'download-data');
  assert.deepEqual([downloaded.name, data.name], ['stem.lattice.onnx', 'stem.lattice.onnx.data']);
  assert.ok(downloaded.bytes.equals(expected.model), 'the model file is the CLI\'s');
  assert.ok(data.bytes.equals(expected.data), 'the data file is the CLI\'s');

  // A skip names the downloads, and so the data file written into the model, in the one
  // conversion a change makes: also when the target changes and the skip stops matching, which
  // is known only once converted.
  const converts = async () => (await converterWorker(page)).evaluate(() => self.converts);
  const before = await converts();
  const id = (await pageReport(page)).matches.find((m) => m.applied && m.pattern.startsWith('Lattice')).id;
  await page.uncheck(`[data-match-id="${id}"] input`);
  await page.click('[data-testid="convert"]');
  assert.match(await waitDone(page), /^Done/);
  const skipped = await downloadBytes(page, 'download');
  assert.match(skipped.name, /^stem\.lattice\.skip-[0-9a-f]{4}\.onnx$/);
  assert.equal((await downloadBytes(page, 'download-data')).name, `${skipped.name}.data`);
  assert.ok(skipped.bytes.equals(cliTwoFiles(model, skipped.name, ['--skip-match', id]).model), 'named and written as the CLI does');
  await page.selectOption('[data-testid="target-select"]', 'none');
  assert.match(await waitDone(page), /^Done/);
  const stale = await downloadBytes(page, 'download');
  assert.equal(stale.name, 'stem.none.onnx', 'a skip that matches nothing does not name the output');
  assert.ok(stale.bytes.equals(cliTwoFiles(model, 'stem.none.onnx', ['--target', 'none']).model), 'its data file named in it as downloaded');
  assert.equal(await converts() - before, 2, 'one conversion for each of the two changes');
  await page.selectOption('[data-testid="target-select"]', 'lattice');
  assert.match(await waitDone(page), /^Done/);
  await page.check(`[data-match-id="${id}"] input`);
  await page.click('[data-testid="convert"]');
  assert.match(await waitDone(page), /^Done/);

  await page.selectOption('[data-testid="layout-select"]', 'inline');
  assert.match(await waitDone(page), /^Done/);
  assert.ok(await page.isHidden('[data-testid="download-data"]'), 'one file: no data file to download');
  assert.deepEqual((await downloadBytes(page, 'download')).bytes, cli(model, ['--inline']).bytes);
  await context.close();

  const alone = await openPage();
  await alone.page.setInputFiles('[data-testid="file-input"]', model);
  assert.match(await waitDone(alone.page), /^Failed/);
  assert.match(await alone.page.textContent('[data-testid="error"]'), /keeps its data in an external file \('stem\.onnx\.data'\)/);
  await alone.context.close();
});

test('a single-file model can be split into the model and a data file, as the CLI\'s --external-data', async () => {
  const { page, context } = await openPage();
  await page.selectOption('[data-testid="layout-select"]', 'external');
  await page.setInputFiles('[data-testid="file-input"]', fixture('resnet_stem.onnx'));
  assert.match(await waitDone(page), /^Done/);
  const expected = cliTwoFiles(fixture('resnet_stem.onnx'), 'resnet_stem.lattice.onnx', ['--external-data']);
  assert.ok((await downloadBytes(page, 'download')).bytes.equals(expected.model));
  assert.ok((await downloadBytes(page, 'download-data')).bytes.equals(expected.data));
  await context.close();
});

// --- Models the wasm heap could never hold whole -----------------------------------------------
// Weights of zeros left as holes in sparse files (make_huge.py): gigabytes on the page's side,
// nothing on the disk until the downloads and the CLI write theirs; all deleted afterwards.
const HEAP_LIMIT = 256 * 2 ** 20;

// A model made by make_huge.py (`kind`, then `sizes`) in a fresh folder, converted in a fresh page
// with the files `pick(model)` and the "Tensor data" choice `layout`, after `prepare(page)`: the
// wasm heap must stay under HEAP_LIMIT; then `check({page, model, folder, ms, heap, preparing})`,
// `ms` from the pick to the downloads being ready, `preparing` whether they were still being made
// at "Done". The folder goes either way.
async function convertHuge(name, kind, sizes, { pick = (model) => [model], layout, prepare, check }) {
  const folder = mkdtempSync(join(dir, 'huge-'));
  const model = join(folder, name);
  try {
    const made = spawnSync('/usr/bin/python3', [join(FIXTURES, 'make_huge.py'), kind, model, ...sizes.map(String)],
      { encoding: 'utf8' });
    assert.equal(made.status, 0, made.stderr);
    const { page, context } = await openPage();
    if (layout) await page.selectOption('[data-testid="layout-select"]', layout);
    await prepare?.(page);
    const started = Date.now();
    await page.setInputFiles('[data-testid="file-input"]', pick(model));
    assert.match(await waitDone(page), /^Done/);
    const preparing = await page.evaluate(() => document.body.dataset.downloads === 'preparing' &&
      !document.querySelector('[data-testid="download"]').hasAttribute('href'));
    await waitDownloads(page);
    const ms = Date.now() - started;
    const heap = Number(await page.evaluate(() => document.body.dataset.wasmHeap));
    assert.ok(heap > 0 && heap <= HEAP_LIMIT, `wasm heap ${heap} bytes`);
    await check({ page, model, folder, ms, heap, preparing });
    await context.close();
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
const mib = (bytes) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
const gib = (path) => `${(statSync(path).size / 2 ** 30).toFixed(2)} GiB`;

test('a 1.9 GiB single-file model converts in the page in a heap under 256 MiB, to the CLI\'s bytes', async () => {
  await convertHuge('huge.onnx', 'single', [Math.floor(1.9 * 2 ** 30)], {
    check: async ({ page, model, folder, ms, heap }) => {
      const download = await downloadFile(page, 'download');
      await sameFile(download.path, cliOutput(model, 'huge.lattice.onnx', [], folder));
      console.log(`# ${gib(model)} single file: page ${ms} ms from pick to downloads, wasm heap ${mib(heap)}`);
    },
  });
});

test('a 1 GiB weight folds in the page in a heap under 256 MiB, to the CLI\'s bytes', async () => {
  // Every folded value is computed in the worker's heap block by block and leaves it as a Blob.
  // That takes seconds, after the report: "Done" comes with the model's link still leading nowhere.
  await convertHuge('huge_fold.onnx', 'fold', [2 ** 30], {
    check: async ({ page, model, folder, ms, heap, preparing }) => {
      const matched = await page.$$eval('[data-testid="match-row"]', (rs) => rs.map((r) => r.dataset.matchId));
      assert.deepEqual(matched, ['ConvBatchNormFoldPattern:conv']);
      assert.ok(preparing, 'the report is shown before the 1 GiB of folded weights is computed');
      assert.ok(await page.isHidden('[data-testid="downloads-preparing"]'), 'the note goes once the files are made');
      const download = await downloadFile(page, 'download');
      await sameFile(download.path, cliOutput(model, 'huge_fold.lattice.onnx', [], folder));
      console.log(`# ${gib(model)}, folded: page ${ms} ms from pick to downloads, wasm heap ${mib(heap)}`);
    },
  });
});

test('a 4.2 GiB external-data model converts in the page to the CLI\'s two files', async () => {
  await convertHuge('huge.onnx', 'external', [3, Math.floor(1.4 * 2 ** 30)], {
    pick: (model) => [model, `${model}.data`],
    check: async ({ page, model, folder, ms, heap }) => {
      const expected = cliOutput(model, 'huge.lattice.onnx', [], folder);
      const downloaded = await downloadFile(page, 'download');
      await sameFile(downloaded.path, expected);
      const data = await downloadFile(page, 'download-data');
      assert.equal(data.name, 'huge.lattice.onnx.data');
      await sameFile(data.path, `${expected}.data`);
      // onnxruntime-web (32-bit) could not hold it: the check says so before loading anything.
      const before = requests.length;
      await page.click('[data-testid="check"]');
      await page.waitForSelector('[data-testid="check-result"][data-refused="true"]');
      assert.match(await page.textContent('[data-testid="check-result"]'), /too large to check in the browser: .* Check it with the Node CLI/);
      assert.deepEqual(requests.slice(before).filter((u) => u.includes('/ort/')), [], 'the runtime was not loaded');
      console.log(`# ${gib(`${model}.data`)} of external data: page ${ms} ms from pick to downloads, wasm heap ${mib(heap)}`);
    },
  });
});

test('a 1.5 GiB external-data model is written inline in a heap under 256 MiB, to the CLI\'s --inline bytes', async () => {
  // The data file's ranges are spliced into the one model file as it is downloaded, never read.
  await convertHuge('huge.onnx', 'external', [1, Math.floor(1.5 * 2 ** 30)], {
    pick: (model) => [model, `${model}.data`],
    layout: 'inline',
    check: async ({ page, model, folder, ms, heap }) => {
      assert.ok(await page.isHidden('[data-testid="download-data"]'), 'one file');
      const download = await downloadFile(page, 'download');
      await sameFile(download.path, cliOutput(model, 'huge.lattice.onnx', ['--inline'], folder));
      console.log(`# ${gib(`${model}.data`)} of external data written inline: page ${ms} ms from pick to downloads, ` +
        `wasm heap ${mib(heap)}`);
    },
  });
});

// Issue 23: the core reads synchronously, one slow FileReaderSync call per range; the worker reads
// what it will need ahead, in large asynchronous reads (web/read-ahead.js). A model over the size
// read whole is planned: the weight the fold reads is read ahead once, and the core reads nothing
// of the File itself, neither to check the fold nor to write it. The size read whole is lowered
// in the worker here, so that a small model goes the way of one over the memory budget
// (converterWorker, above, reaches into the worker).

test('a fold\'s weight is read once, ahead, and the core reads nothing synchronously; the CLI\'s bytes', async () => {
  await convertHuge('fold.onnx', 'fold', [24 * 2 ** 20], {
    prepare: async (page) => (await converterWorker(page)).evaluate(() => { READ_AHEAD.whole = 0; }),
    check: async ({ page, model, folder }) => {
      const { ahead, planned, counts } = await (await converterWorker(page)).evaluate(() => self.profile);
      assert.ok(ahead.planMs > 0, 'planned, not read whole');
      assert.equal(ahead.reads, 1, 'one read ahead');
      assert.ok(ahead.bytes >= 24 * 2 ** 20 - 2 ** 20 && ahead.bytes < statSync(model).size, `${ahead.bytes} bytes read ahead`);
      assert.equal(counts.reads - planned.reads, 0, 'no synchronous read in the conversion, after its plan');
      assert.ok(counts.heldBytes >= 2 * ahead.bytes, 'the weight read twice (checked, written) from what was read ahead');
      const download = await downloadFile(page, 'download');
      await sameFile(download.path, cliOutput(model, 'fold.lattice.onnx', [], folder));
    },
  });
});

// A model that fits the memory budget is read whole in one read, without the plan's dry run.
test('a model within the read-ahead budget is read whole, once, without a plan; the CLI\'s bytes', async () => {
  await convertHuge('fold.onnx', 'fold', [24 * 2 ** 20], {
    check: async ({ page, model, folder }) => {
      const { ahead, counts } = await (await converterWorker(page)).evaluate(() => self.profile);
      assert.equal(ahead.planMs, 0, 'no plan');
      assert.equal(ahead.reads, 1, 'one read ahead');
      assert.equal(ahead.bytes, statSync(model).size, 'the whole file');
      assert.equal(counts.reads, 0, 'no synchronous read at all');
      assert.ok(counts.heldBytes >= 2 * 24 * 2 ** 20 - 2 ** 20, 'the weight read twice (checked, written) from what was read ahead');
      const download = await downloadFile(page, 'download');
      await sameFile(download.path, cliOutput(model, 'fold.lattice.onnx', [], folder));
    },
  });
});

test('no request left 127.0.0.1', () => {
  assert.ok(requests.length > 0);
  const elsewhere = requests.filter((u) => !u.startsWith(base) && !u.startsWith('blob:') && !u.startsWith('data:'));
  assert.deepEqual(elsewhere, []);
});


test('what loads before the first conversion weighs at most 420 KB gzipped', async () => {
  const { page, context } = await openPage();
  const loaded = [];
  page.on('requestfinished', (r) => loaded.push(new URL(r.url()).pathname.slice(1) || 'index.html'));
  await page.reload();
  await page.waitForFunction(() => document.querySelector('[data-testid="status"]').textContent.startsWith('Ready'), null,
    { polling: 250 });
  await page.waitForTimeout(500);  // anything fetched just after "Ready" counts too
  await context.close();
  const sizes = {};
  for (const name of [...new Set(loaded)].sort()) sizes[name] = gzipSync(readFileSync(join(SITE, name)), { level: 9 }).length;
  const total = Object.values(sizes).reduce((a, b) => a + b, 0);
  console.log(`# page weight before the first conversion, gzipped: ${(total / 1024).toFixed(1)} KB: ` +
    Object.entries(sizes).map(([n, b]) => `${n} ${(b / 1024).toFixed(1)} KB`).join(', '));
  for (const part of ['index.html', 'app.js', 'worker.js', 'onnx_lattice.wasm']) assert.ok(part in sizes, `${part} was loaded`);
  // Loaded on first use: the side-by-side view, the gathering of a deep graph into boxes, the check
  // and the repair.
  for (const part of ['compare.js', 'compare.css', 'distance-overlay.js', 'collapse.js', 'check-run.js']) assert.ok(!(part in sizes), `${part} was loaded`);
  assert.ok(total <= 420 * 1024, `${total} bytes`);
});

// --- The graph view, plan state, progress, keyboard and accessibility -------------

const api = await createSyncConverter();
const STATES = ['applied', 'refused', 'unsupported', 'plain'];
const require = createRequire(import.meta.url);

// How many nodes of a view each state must have, counted per state from the report's own fields
// with docs/page.md's precedence (cannot run > rewritten > refused > untouched):
// unsupported = the audit's nodes; applied = nodes an applied match took (input view) or emitted
// (converted view), less those; refused = nodes of unapplied matches, less both; plain = the rest.
function expectedCounts(report, description, view) {
  const names = new Set(description.nodes.map((n) => n.name));
  const inView = (list) => new Set(list.filter((n) => names.has(n)));
  const unsupported = inView(report.unsupported.map((u) => u.node));
  const rewritten = inView(report.matches.filter((m) => m.applied).flatMap((m) => (view === 'input' ? m.nodes : m.new_nodes)));
  const refused = inView(report.matches.filter((m) => !m.applied).flatMap((m) => m.nodes));
  const less = (set, ...others) => [...set].filter((n) => !others.some((o) => o.has(n)));
  const applied = less(rewritten, unsupported).length, refusedOnly = less(refused, unsupported, rewritten).length;
  return { applied, refused: refusedOnly, unsupported: unsupported.size,
    plain: names.size - unsupported.size - applied - refusedOnly };
}

const legendCounts = (page) => page.$$eval('#legend [data-state]', (ls) => Object.fromEntries(ls.map((l) =>
  [l.dataset.state, Number(l.querySelector('.count').textContent)])));

async function graphReady(page) {
  await page.waitForSelector('[data-testid="graph"][data-ready="true"]', { timeout: 60_000 });
  return page.$eval('[data-testid="graph"]', (g) => ({
    layoutMs: Number(g.dataset.layoutMs), workerLayoutMs: Number(g.dataset.workerLayoutMs), renderMs: Number(g.dataset.renderMs),
    nodes: [...g.querySelectorAll('[data-testid="graph-node"]')].map((n) => ({ name: n.dataset.node, state: n.dataset.state })),
  }));
}

// The graph drawn one box per node, as the tests of single nodes want it: a deep graph (the sample
// too) opens collapsed.
async function everyNode(page) {
  await page.uncheck('[data-testid="graph-collapse"]');
  return graphReady(page);
}

async function switchGraph(page, view) {
  await page.check(`[data-testid="graph-switch"] input[value="${view}"]`);
  return graphReady(page);
}

const countStates = (nodes) => nodes.reduce((c, n) => ({ ...c, [n.state]: c[n.state] + 1 }),
  { applied: 0, refused: 0, unsupported: 0, plain: 0 });

// Converts `model` in the page, then checks both views' nodes and states against the CLI's report
// and model; prints the layout and render times.
async function checkGraph(label, model) {
  const { page, context, consoleErrors } = await openPage();
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.setInputFiles('[data-testid="file-input"]', model);
  assert.match(await waitDone(page), /^Done/);
  await everyNode(page);
  const expected = cli(model);
  const views = { converted: api.describe(expected.bytes), input: api.describe(readFileSync(model)) };
  const times = {};
  for (const view of ['converted', 'input']) {
    const shown = view === 'converted' ? await graphReady(page) : await switchGraph(page, view);
    times[view] = shown;
    assert.equal(shown.nodes.length, view === 'input' ? expected.report.input.nodes : expected.report.output.nodes, view);
    assert.deepEqual(shown.nodes.map((n) => n.name).sort(), views[view].nodes.map((n) => n.name).sort(), view);
    assert.deepEqual(countStates(shown.nodes), expectedCounts(expected.report, views[view], view), view);
    assert.deepEqual(await legendCounts(page), countStates(shown.nodes), `the legend counts the ${view} view`);
  }
  // Every node the audit names is drawn as such in the converted model: the status's count.
  assert.equal(countStates(times.converted.nodes).unsupported, expected.report.unsupported.length);
  const t = times.converted;
  const line = (v) => `${v.nodes.length} nodes, layout ${v.layoutMs} ms (dagre ${v.workerLayoutMs} ms of it in its worker) + ` +
    `render ${v.renderMs} ms = ${v.layoutMs + v.renderMs} ms`;
  console.log(`# graph of ${label}: converted view ${line(t)}; input view ${line(times.input)}`);
  assert.deepEqual(consoleErrors, []);
  await context.close();
  return countStates(t.nodes);
}

test('the graph shows every node of the sample in the state the report gives it', async () => {
  const counts = await checkGraph('the sample', join(SITE, 'sample.onnx'));
  assert.ok(counts.applied > 0 && counts.plain > 0, JSON.stringify(counts));
});

test('the graph of ResNet-50 shows every node in its state', { skip: !existsSync(join(ZOO, 'resnet50.onnx')) && 'no zoo' }, async () => {
  await checkGraph('ResNet-50', join(ZOO, 'resnet50.onnx'));
});

test('the graph of a ~1,000-node model shows every node in its state', async () => {
  const model = join(dir, 'large_graph.onnx');
  const r = spawnSync('/usr/bin/python3', [join(FIXTURES, 'make_large_graph.py'), model], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const counts = await checkGraph('a 1,007-node model (make_large_graph.py)', model);
  assert.ok(counts.applied > 0 && counts.unsupported > 0, JSON.stringify(counts));
});

// lattice-advanced without folding, with the stem's rewrite and the MaxPool snap left out: every
// state shows, and nodes the target cannot run include ones a rewrite emitted and one a skipped
// match took.
const STEM = 'LatticeStride2ConvBnReLUPattern:/stem/stem.0/Conv', POOL = 'LatticeMaxPool2dPattern:/down/down.1/MaxPool';
async function sampleAllStates(page) {
  await page.click('[data-testid="sample-model"]');
  await waitDone(page);
  await page.selectOption('[data-testid="target-select"]', 'lattice-advanced');
  await waitDone(page);
  await page.uncheck('[data-testid="fold-bn"]');
  await waitDone(page);
  await page.uncheck(`[data-match-id="${STEM}"] input`);
  await page.uncheck(`[data-match-id="${POOL}"] input`);
  await page.click('[data-testid="convert"]');
  assert.match(await waitDone(page), /^Done/);
  return everyNode(page);
}

test('a node the target cannot run is drawn so whatever its match did, and the legend counts the report\'s', async () => {
  const { page, context } = await openPage({ viewport: { width: 1280, height: 800 } });
  const shown = await sampleAllStates(page);
  const report = await pageReport(page);
  const state = (name) => shown.nodes.find((n) => n.name === name)?.state;
  // Emitted by an applied rewrite, and cannot run: unsupported (a BatchNorm SPPF's rewrite adds).
  assert.ok(report.matches.some((m) => m.applied && m.new_nodes.includes('/sppf5/m/MaxPool.bn')));
  assert.equal(state('/sppf5/m/MaxPool.bn'), 'unsupported');
  // Taken by the skipped snap (and by an applied rewrite), and cannot run: unsupported.
  assert.ok(report.unsupported.some((u) => u.node === '/down/down.1/MaxPool'));
  assert.equal(state('/down/down.1/MaxPool'), 'unsupported');
  assert.equal(state('/sppf5/m/MaxPool.conv'), 'applied');
  assert.equal(state('/stem/stem.0/Conv'), 'refused');  // the skipped stem rewrite's Conv
  assert.equal(state('/head/head.1/Sigmoid'), 'unsupported');
  assert.equal(state('/neck/neck.0/Conv'), 'plain');
  const counts = countStates(shown.nodes);
  assert.deepEqual(await legendCounts(page), counts);
  assert.equal(counts.unsupported, report.unsupported.length);
  assert.match(await page.textContent('[data-testid="status"]'), new RegExp(`, ${report.unsupported.length} nodes the hardware cannot run`));
  assert.ok(STATES.every((s) => counts[s] > 0), JSON.stringify(counts));
  // A refused match's node the target cannot run still lists the match in its properties.
  await page.click('[data-testid="graph-node"][data-node="/stem/stem.1/BatchNormalization"]');
  const props = await page.textContent('[data-testid="node-props"]');
  assert.ok(props.includes(`${STEM}: not applied`), props);
  assert.match(props, /Cannot run/);
  await context.close();
});

test('a match row brings its nodes into view highlighted, and a node opens its properties', async () => {
  const { page, context } = await openPage();
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.click('[data-testid="sample-model"]');
  await waitDone(page);
  await everyNode(page);
  await graphReady(page);
  const report = await pageReport(page);
  const m = report.matches.find((x) => x.applied && x.pattern === 'LatticeSPPFMaxPoolPattern');
  assert.ok(m, 'the sample has an applied SPPF match');
  await page.click(`[data-match-id="${m.id}"] .meta`);
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="graph-node"].hl').length > 0);
  const highlighted = await page.$$eval('[data-testid="graph-node"].hl', (ns) => ns.map((n) => n.dataset.node).sort());
  const present = await page.$$eval('[data-testid="graph-node"]', (ns) => ns.map((n) => n.dataset.node));
  assert.deepEqual(highlighted, m.new_nodes.filter((n) => present.includes(n)).sort());
  // Each highlighted node is inside the visible graph box.
  const box = await page.$eval('[data-testid="graph"]', (g) => g.getBoundingClientRect().toJSON());
  for (const name of highlighted) {
    const r = await page.$eval(`[data-testid="graph-node"][data-node="${name}"]`, (n) => n.getBoundingClientRect().toJSON());
    assert.ok(r.left >= box.left && r.right <= box.right && r.top >= box.top && r.bottom <= box.bottom, name);
  }
  // A click on a node (a real pointer click in the SVG) opens its properties.
  const conv = highlighted.find((n) => present.includes(n));
  await page.click(`[data-testid="graph-node"][data-node="${conv}"]`);
  const props = await page.textContent('[data-testid="node-props"]');
  assert.ok(props.includes(conv), props);
  assert.match(props, /Attributes/);
  assert.match(props, /Outputs/);
  assert.ok(props.includes(m.id), 'the match that emitted the node is named');
  // The drawing carries the change: SPPF's new convs with kernel and channel counts, and no
  // BatchNorm in the "after" row once folding has removed them; a snapped MaxPool says 2×2 s2.
  const after = await page.textContent(`[data-match-id="${m.id}"] .after`);
  assert.match(after, /Conv 3×3 s1 p1 · (\d+)→\1/);
  assert.doesNotMatch(after, /BatchNorm/);
  const pool = await page.textContent('[data-match-id="LatticeMaxPool2dPattern:/down/down.1/MaxPool"] .drawing');
  assert.match(pool, /before.*MaxPool \d×\d.*after.*MaxPool 2×2 s2/);
  // The model card: inputs with shapes, opset, IR version, producer, parameters, sizes.
  const card = await page.textContent('[data-testid="model-card"]');
  for (const fact of ['input: float [1, 3, 64, 64]', 'Opset13', 'IR version7', 'pytorch', 'Parameters', 'KiB →']) {
    assert.ok(card.includes(fact), `${fact} in ${card}`);
  }
  await context.close();
});

test('"Show in graph" looks in each view for that view\'s nodes of the match', async () => {
  const { page, context } = await openPage({ viewport: { width: 1280, height: 800 } });
  await page.click('[data-testid="sample-model"]');
  await waitDone(page);
  await everyNode(page);
  await graphReady(page);
  const report = await pageReport(page);
  const m = report.matches.find((x) => x.applied && x.pattern === 'LatticeSPPFMaxPoolPattern');
  // A node of the input model opens its properties; then the view changes to the converted model.
  await switchGraph(page, 'input');
  await page.click('#zoom-fit');  // the whole graph in the box, so the node can be clicked
  await page.click(`[data-testid="graph-node"][data-node="${m.nodes[0]}"]`);
  assert.ok((await page.textContent('#props-heading')).includes(m.nodes[0]));
  const converted = await switchGraph(page, 'converted');
  // The panel's "Show in graph" for the match shows, in the converted view, the nodes it emitted.
  await page.click(`[data-testid="node-props"] button[aria-label="Show in graph: the nodes of ${m.id}"]`);
  await page.waitForFunction(() => document.querySelector('[data-testid="graph-node"].hl'));
  assert.equal(await page.isChecked('[data-testid="graph-switch"] input[value="converted"]'), true, 'the view stays');
  const present = new Set(converted.nodes.map((n) => n.name));
  assert.deepEqual(await page.$$eval('[data-testid="graph-node"].hl', (ns) => ns.map((n) => n.dataset.node).sort()),
    m.new_nodes.filter((n) => present.has(n)).sort());
  // And in the input view, the nodes it took.
  await switchGraph(page, 'input');
  await page.click(`[data-match-id="${m.id}"] .meta`);
  await page.waitForFunction(() => document.querySelector('[data-testid="graph-node"].hl'));
  assert.deepEqual(await page.$$eval('[data-testid="graph-node"].hl', (ns) => ns.map((n) => n.dataset.node).sort()), [...m.nodes].sort());
  await context.close();
});

// The graph's boxes as drawn: how many, the zoom, and each label's size in the window's pixels
// (its font size times the zoom: the SVG's user unit is a CSS pixel), the smallest first.
const drawnLabels = (page) => page.$eval('[data-testid="graph"]', (host) => {
  const box = host.getBoundingClientRect();
  const k = Number(host.querySelector('.viewport').getAttribute('transform').match(/scale\(([-\d.e]+)\)/)[1]);
  const labels = [...host.querySelectorAll('.node > text')].map((t) => ({
    text: t.textContent, px: parseFloat(getComputedStyle(t).fontSize) * k, height: t.getBoundingClientRect().height }));
  const inside = [...host.querySelectorAll('.node')].every((n) => {
    const r = n.getBoundingClientRect();
    return r.left >= box.left && r.right <= box.right && r.top >= box.top && r.bottom <= box.bottom;
  });
  return { k, boxes: labels.length, groups: host.querySelectorAll('[data-testid="graph-group"]').length, inside,
    smallest: labels.reduce((a, b) => (b.px < a.px ? b : a)) };
});

for (const [width, height] of [[1280, 800], [390, 844]]) {
  test(`ResNet-50 at ${width}×${height}: Fit shows the whole graph collapsed, every label at 9 px or more; no horizontal scroll, axe finds nothing serious`, { skip: !existsSync(join(ZOO, 'resnet50.onnx')) && 'no zoo' }, async () => {
    const { page, context, consoleErrors } = await openPage({ viewport: { width, height }, bypassCSP: true });
    await page.setInputFiles('[data-testid="file-input"]', join(ZOO, 'resnet50.onnx'));
    assert.match(await waitDone(page), /^Done/);
    await graphReady(page);
    await page.click('#zoom-fit');
    const fitted = await drawnLabels(page);
    const nodes = (await pageReport(page)).output.nodes;
    // Each box at 9 px: 12 px text at a zoom of 0.75 or more.
    assert.ok(fitted.inside, 'Fit shows every box');
    assert.ok(fitted.smallest.px >= 9 && fitted.smallest.height >= 9, JSON.stringify(fitted));
    assert.ok(fitted.boxes < nodes / 4 && fitted.groups > 0, JSON.stringify(fitted));
    // Every node is held by a box: the boxes' members and the single nodes add up to the model's.
    const held = await page.$$eval('[data-testid="graph"] .node', (gs) => gs.map((g) => (g.dataset.node ? 1 : Number(g.getAttribute('aria-label').match(/\((\d+) nodes\):/)[1]))));
    assert.equal(held.reduce((a, b) => a + b, 0), nodes);
    assert.equal(Object.values(await legendCounts(page)).reduce((a, b) => a + b, 0), nodes, 'the legend counts nodes, not boxes');
    // The same Fit with every node its own box, for the record (docs/page.md).
    await everyNode(page);
    await page.click('#zoom-fit');
    const whole = await drawnLabels(page);
    console.log(`# ResNet-50 at ${width}×${height}, Fit: ${fitted.boxes} boxes (${fitted.groups} collapsed) for ${nodes} nodes, ` +
      `labels ${fitted.smallest.px.toFixed(1)} px (zoom ${fitted.k.toFixed(2)}); every node its own box: ` +
      `${whole.boxes} boxes, labels ${whole.smallest.px.toFixed(1)} px (zoom ${whole.k.toFixed(2)})`);
    await page.check('[data-testid="graph-collapse"]');
    await graphReady(page);
    const { overflow, bad } = await phoneState(page);
    assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow} px`);
    assert.deepEqual(bad, []);
    assert.deepEqual(consoleErrors, []);
    await context.close();
  });
}

test('a node inside a collapsed box: "Show in graph" and a selection mark the box, which wears its members\' worst state and count; a click or Enter opens it, down to the node', { skip: !existsSync(join(ZOO, 'resnet50.onnx')) && 'no zoo' }, async () => {
  const { page, context, consoleErrors } = await openPage({ viewport: { width: 1280, height: 800 } });
  await page.setInputFiles('[data-testid="file-input"]', join(ZOO, 'resnet50.onnx'));
  assert.match(await waitDone(page), /^Done/);
  await graphReady(page);
  const report = await pageReport(page);
  const converted = new Set(api.describe(cli(join(ZOO, 'resnet50.onnx')).bytes).nodes.map((n) => n.name));
  const m = report.matches.find((x) => x.applied && x.new_nodes.some((n) => n.startsWith('/layer3/')));
  const name = m.new_nodes.find((n) => converted.has(n));
  assert.ok(name.startsWith('/layer3/'), name);
  await page.click(`[data-match-id="${m.id}"] .meta`);
  await page.waitForFunction(() => document.querySelector('[data-testid="graph"] .node.hl'));
  const marked = () => page.$$eval('[data-testid="graph"] .node', (gs) => gs.filter((g) => g.matches('.hl, .selected')).map((g) => ({
    group: g.dataset.group, node: g.dataset.node, count: [...document.querySelectorAll('[data-testid="graph"] .counts text')]
      .find((t) => { const a = t.getBoundingClientRect(), b = g.querySelector('.glyph').getBoundingClientRect(); return Math.abs(a.top - b.top) < 8 && a.left > b.left; })?.textContent, hl: g.classList.contains('hl'), selected: g.classList.contains('selected'),
    state: g.dataset.state, label: g.getAttribute('aria-label') })));
  let boxes = await marked();
  // The box holding the node is highlighted and selected, its properties shown.
  assert.ok(boxes.some((b) => b.group === '/layer3' && b.hl && b.selected), JSON.stringify(boxes));
  assert.ok((await page.textContent('#props-heading')).includes(name));
  // It wears the worst of its members' states (rewritten here: none the target cannot run) with
  // their count, and says the count of each (checked against every node's own box below).
  const layer3 = boxes.find((b) => b.group === '/layer3');
  assert.equal(layer3.state, 'applied');
  assert.equal(report.unsupported.length, 0);
  // A click opens it: what it held is drawn in its place, the selection kept on the box holding
  // the node; Enter opens that one, and so on down to the node itself, selected.
  await page.click('[data-testid="graph"] [data-group="/layer3"]');
  await page.waitForSelector('[data-testid="graph"][data-ready="true"] [data-group^="/layer3/"]');
  for (let steps = 0; !(await page.$(`[data-testid="graph"] [data-node="${name}"]`)) && steps < 5; ++steps) {
    await page.waitForSelector('[data-testid="graph"][data-ready="true"] .node.selected');
    await page.focus('[data-testid="graph"] .node.selected');
    await page.keyboard.press('Enter');
    await page.waitForSelector('[data-testid="graph"][data-ready="true"]');
  }
  await page.waitForSelector(`[data-testid="graph"] [data-node="${name}"].selected`);
  assert.equal(await page.$('[data-testid="graph"] [data-group="/layer3"]'), null, 'opened');
  assert.ok(await page.$('[data-testid="graph"] [data-group="/layer4"]'), 'the others stay closed');
  // Unticked, every node is drawn; ticked again, every box is closed again.
  const shown = (await everyNode(page)).nodes.filter((n) => n.name.startsWith('/layer3/'));
  assert.equal(await page.$('[data-testid="graph-group"]'), null);
  const rewritten = shown.filter((n) => n.state === 'applied').length;
  assert.equal(layer3.label, `layer3 (${shown.length} nodes): ${rewritten} rewritten, ${shown.length - rewritten} untouched`);
  assert.equal(layer3.count, String(rewritten), 'the count beside its glyph');
  await page.check('[data-testid="graph-collapse"]');
  await graphReady(page);
  assert.ok(await page.$('[data-testid="graph"] [data-group="/layer3"]'));
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

// --- Side by side: the input and the converted model, synced through the report's node map ----

// What each node of a view is, read from the report's node map alone (docs/page.md): an input node
// with an entry, or a converted node an entry names, is an exact rewrite when every entry naming it
// is exact, else lossy; any other node is unchanged.
function expectedChanges(report, description, view) {
  const entries = (name) => report.node_map.filter((e) => (view === 'input' ? e.node === name : e.new_nodes.includes(name)));
  return Object.fromEntries(description.nodes.map(({ name }) => {
    const found = entries(name);
    return [name, !found.length ? 'unchanged' : found.every((e) => e.exact) ? 'exact' : 'lossy'];
  }));
}

const paneNodes = (page, testid) => page.$$eval(`[data-testid="${testid}"] [data-testid="graph-node"]`, (gs) => gs.map((g) => ({
  name: g.dataset.node, change: g.dataset.change, selected: g.classList.contains('selected'),
  box: (({ fill, strokeWidth, strokeDasharray }) => `${fill} ${strokeWidth} ${strokeDasharray}`)(getComputedStyle(g.querySelector('.box'))),
  glyph: g.querySelector('.change-glyph')?.getAttribute('href') ?? null,
})));

// A click on a node wherever its pane has panned it (a node out of the pane's box is hidden by it).
const clickNode = (page, testid, name) => page.$eval(`[data-testid="${testid}"] [data-node="${name}"]`,
  (g) => g.dispatchEvent(new MouseEvent('click', { bubbles: true })));

// The sample converted with the defaults, shown side by side at 1280×800.
async function sampleSideBySide() {
  const opened = await openPage({ viewport: { width: 1280, height: 800 } });
  await opened.page.click('[data-testid="sample-model"]');
  assert.match(await waitDone(opened.page), /^Done/);
  await sideBySide(opened.page);
  return opened;
}

async function sideBySide(page) {
  await everyNode(page);
  await page.check('[data-testid="graph-switch"] input[value="both"]');
  await page.waitForSelector('[data-testid="graph-converted"][data-ready="true"]', { timeout: 60_000 });
  await page.waitForSelector('[data-testid="graph"][data-ready="true"] [data-change]', { timeout: 60_000 });
}

test('side by side: a stride-2 Conv picked in the input selects its Conv and MaxPool in the converted model and back; three styles, named in the legend', async () => {
  const { page, context, consoleErrors } = await sampleSideBySide();
  const report = await pageReport(page);
  const expected = cli(join(SITE, 'sample.onnx'));
  assert.deepEqual(report.node_map, expected.report.node_map, 'the page\'s node map is the CLI\'s');
  const views = { input: api.describe(readFileSync(join(SITE, 'sample.onnx'))), converted: api.describe(expected.bytes) };
  const ops = Object.fromEntries([...views.input.nodes, ...views.converted.nodes].map((n) => [n.name, n.op]));
  // Every node of both models in its pane, each wearing what the node map says of it.
  const panes = { input: await paneNodes(page, 'graph'), converted: await paneNodes(page, 'graph-converted') };
  const styles = {};
  for (const view of ['input', 'converted']) {
    const want = expectedChanges(report, views[view], view);
    assert.deepEqual(Object.fromEntries(panes[view].map((n) => [n.name, n.change])), want, view);
    for (const n of panes[view]) (styles[n.change] ??= new Set()).add(n.box);
    for (const n of panes[view]) assert.equal(n.glyph, n.change === 'unchanged' ? null : `#glyph-${n.change}`, n.name);
  }
  // Three kinds present, and told apart by their boxes (fill, border width, dashes) besides the glyph.
  assert.deepEqual(Object.keys(styles).sort(), ['exact', 'lossy', 'unchanged']);
  const untouchedBoxes = [...styles.unchanged].filter((b) => !/dash/.test(b));
  for (const [a, b] of [['exact', 'lossy'], ['exact', 'unchanged'], ['lossy', 'unchanged']]) {
    for (const x of styles[a]) assert.ok(![...styles[b]].includes(x), `${a} and ${b} share the style ${x}`);
  }
  assert.ok(untouchedBoxes.length > 0);
  // The legend names the three kinds with each pane's count.
  const legend = await page.$$eval('#legend [data-change]', (ls) => Object.fromEntries(ls.map((l) => [l.dataset.change, l.textContent])));
  for (const change of ['unchanged', 'exact', 'lossy']) {
    const count = (view) => panes[view].filter((n) => n.change === change).length;
    assert.match(legend[change], new RegExp(`input ${count('input')}, converted ${count('converted')}`), change);
  }
  for (const state of ['applied', 'plain']) assert.equal(await page.isVisible(`#legend [data-state="${state}"]`), false, `the single view's ${state} gives way to the three kinds`);
  // One-to-many: the stem's stride-2 Conv selects what it became, its Conv at stride 1 and a MaxPool.
  const stem = report.node_map.find((e) => e.node === '/stem/stem.0/Conv');
  assert.ok(stem.new_nodes.some((n) => ops[n] === 'Conv') && stem.new_nodes.some((n) => ops[n] === 'MaxPool'), JSON.stringify(stem));
  await page.click('[data-testid="graph"] [data-node="/stem/stem.0/Conv"]');
  const selectedIn = async (testid) => (await paneNodes(page, testid)).filter((n) => n.selected).map((n) => n.name).sort();
  assert.deepEqual(await selectedIn('graph-converted'), [...stem.new_nodes].sort());
  assert.deepEqual(await selectedIn('graph'), ['/stem/stem.0/Conv']);
  const props = await page.textContent('[data-testid="counterparts"]');
  assert.match(props, /In the converted model: lossy rewrite/);
  for (const n of stem.new_nodes) assert.ok(props.includes(n), n);
  // And back, many-to-one: the MaxPool selects every input node whose entry names it.
  const pool = stem.new_nodes.find((n) => ops[n] === 'MaxPool');
  await clickNode(page, 'graph-converted', pool);
  assert.deepEqual(await selectedIn('graph'), report.node_map.filter((e) => e.new_nodes.includes(pool)).map((e) => e.node).sort());
  assert.deepEqual(await selectedIn('graph-converted'), [pool]);
  assert.match(await page.textContent('[data-testid="node-props"] h3'), /MaxPool/);
  // A fold, many-to-one and exact: its BatchNorm selects the one Conv it folded into.
  const fold = report.node_map.find((e) => e.exact && ops[e.node] === 'BatchNormalization');
  await clickNode(page, 'graph', fold.node);
  assert.deepEqual(await selectedIn('graph-converted'), fold.new_nodes);
  assert.match(await page.textContent('[data-testid="counterparts"]'), /exact rewrite/);
  // A counterpart in the properties selects it in its pane.
  await page.click(`[data-testid="counterparts"] button:text-is("${fold.new_nodes[0]}")`);
  assert.deepEqual(await selectedIn('graph-converted'), fold.new_nodes);
  assert.deepEqual(await selectedIn('graph'), report.node_map.filter((e) => e.new_nodes.includes(fold.new_nodes[0])).map((e) => e.node).sort());
  // Hovering marks the counterparts in the other pane.
  await page.$eval('[data-testid="graph"] [data-node="/stem/stem.0/Conv"]', (g) => g.dispatchEvent(new PointerEvent('pointerover', { bubbles: true })));
  const hovered = await page.$$eval('[data-testid="graph-converted"] .node.counterpart', (gs) => gs.map((g) => g.dataset.node).sort());
  assert.deepEqual(hovered, [...stem.new_nodes].sort());
  // Back to one view: one pane, the "rewritten" legend again.
  await switchGraph(page, 'converted');
  assert.equal(await page.$('[data-testid="graph-converted"]'), null);
  assert.equal(await page.isVisible('#legend [data-state="applied"]'), true);
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

test('side by side, "Show in graph" highlights each pane\'s own nodes, those only the converted model has too, and stays side by side; collapsed, the boxes holding them', async () => {
  const { page, context, consoleErrors } = await sampleSideBySide();
  const report = await pageReport(page);
  const m = report.matches.find((x) => x.id === 'LatticeStride2ConvBnReLUPattern:/stem/stem.0/Conv');
  const inPane = async (testid) => new Set((await paneNodes(page, testid)).map((n) => n.name));
  const panes = { graph: await inPane('graph'), 'graph-converted': await inPane('graph-converted') };
  const pool = '/stem/stem.0/Conv.pool';  // the MaxPool the rewrite added: only in the converted model
  assert.ok(panes['graph-converted'].has(pool) && !panes.graph.has(pool));
  const lit = (testid) => page.$$eval(`[data-testid="${testid}"] .node.hl`, (gs) => gs.map((g) => g.dataset.node ?? g.dataset.group).sort());
  await page.click(`[data-match-id="${m.id}"] .meta`);
  await page.waitForFunction(() => document.querySelector('[data-testid="graph-converted"] .node.hl'));
  assert.equal(await page.isChecked('[data-testid="graph-switch"] input[value="both"]'), true, 'still side by side');
  assert.deepEqual(await lit('graph'), m.nodes.filter((n) => panes.graph.has(n)).sort());
  assert.deepEqual(await lit('graph-converted'), m.new_nodes.filter((n) => panes['graph-converted'].has(n)).sort());
  // Each highlighted node is inside its pane's box.
  for (const testid of ['graph', 'graph-converted']) {
    const inside = await page.$eval(`[data-testid="${testid}"]`, (host) => {
      const box = host.getBoundingClientRect();
      return [...host.querySelectorAll('.node.hl')].every((g) => { const r = g.getBoundingClientRect(); return r.left >= box.left && r.right <= box.right && r.top >= box.top && r.bottom <= box.bottom; });
    });
    assert.ok(inside, testid);
  }
  // An audit entry is about the converted model: its node is highlighted there.
  const unsupported = report.unsupported[0].node;
  await page.$eval(`[data-testid="audit"] button[aria-label="Show in graph: ${unsupported}"]`, (b) => b.click());  // in a closed group
  await page.waitForFunction((n) => document.querySelector(`[data-testid="graph-converted"] [data-node="${n}"].hl`), unsupported);
  assert.equal(await page.isChecked('[data-testid="graph-switch"] input[value="both"]'), true, 'still side by side');
  // Collapsed, the box holding the MaxPool is highlighted in the converted pane.
  await page.check('[data-testid="graph-collapse"]');
  await page.waitForSelector('[data-testid="graph-converted"][data-ready="true"] [data-testid="graph-group"]');
  await page.waitForSelector('[data-testid="graph"][data-ready="true"] [data-testid="graph-group"]');
  assert.equal(await page.$(`[data-testid="graph-converted"] [data-node="${pool}"]`), null, 'the MaxPool is in a collapsed box');
  await page.click(`[data-match-id="${m.id}"] .meta`);
  await page.waitForFunction(() => document.querySelector('[data-testid="graph-converted"] .node.hl'));
  const holding = await page.$$eval('[data-testid="graph-converted"] .node.hl', (gs) => gs.map((g) => g.getAttribute('aria-label')));
  assert.ok(holding.length > 0 && holding.every((l) => /\(\d+ nodes\):/.test(l)), JSON.stringify(holding));
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

test('side by side: dragging one pane brings the counterparts of the node at its centre to the other pane\'s centre; a selection moves only the other pane', async () => {
  const { page, context, consoleErrors } = await sampleSideBySide();
  const report = await pageReport(page);
  await page.$eval('#graph-heading', (h) => window.scrollTo(0, window.scrollY + h.getBoundingClientRect().top - 8));
  // Each pane's centre in graph coordinates, and where its nodes lie.
  const state = (testid) => page.$eval(`[data-testid="${testid}"]`, (host) => {
    const box = host.querySelector('svg').getBoundingClientRect();
    const [, x, y, k] = host.querySelector('.viewport').getAttribute('transform').match(/translate\(([-\d.e]+),([-\d.e]+)\) scale\(([-\d.e]+)\)/).map(Number);
    const nodes = Object.fromEntries([...host.querySelectorAll('[data-testid="graph-node"]')].map((g) => {
      const [, tx, ty] = g.getAttribute('transform').match(/translate\(([-\d.e]+),([-\d.e]+)\)/).map(Number);
      const r = g.querySelector('.box');
      return [g.dataset.node, { x: tx + Number(r.getAttribute('width')) / 2, y: ty + Number(r.getAttribute('height')) / 2 }];
    }));
    return { centre: { x: (box.width / 2 - x) / k, y: (box.height / 2 - y) / k }, transform: `${x} ${y} ${k}`, nodes };
  });
  const before = await state('graph-converted');
  const box = await page.$eval('[data-testid="graph"]', (h) => { const r = h.getBoundingClientRect(); return { x: r.left + r.width / 2, y: r.top + r.height / 2 }; });
  await page.mouse.move(box.x, box.y);
  await page.mouse.down();
  await page.mouse.move(box.x - 20, box.y - 150, { steps: 5 });
  await page.mouse.move(box.x - 20, box.y - 300, { steps: 5 });
  await page.mouse.up();
  const input = await state('graph'), converted = await state('graph-converted');
  assert.notEqual(converted.transform, before.transform, 'the converted pane moved with the input pane');
  const nearest = Object.entries(input.nodes).reduce((a, b) => (Math.hypot(b[1].x - input.centre.x, b[1].y - input.centre.y) < Math.hypot(a[1].x - input.centre.x, a[1].y - input.centre.y) ? b : a))[0];
  const entry = report.node_map.find((e) => e.node === nearest);
  const counterparts = (entry ? entry.new_nodes : [nearest]).map((n) => converted.nodes[n]).filter(Boolean);
  assert.ok(counterparts.length > 0, nearest);
  const cx = counterparts.reduce((a, n) => a + n.x, 0) / counterparts.length, cy = counterparts.reduce((a, n) => a + n.y, 0) / counterparts.length;
  assert.ok(Math.hypot(cx - converted.centre.x, cy - converted.centre.y) < 2, `${nearest}'s counterparts at the converted pane's centre`);
  // A click on a node selects it: its counterparts come into the other pane's view, this pane stays.
  const stayed = (await state('graph')).transform;
  const visible = await page.$$eval('[data-testid="graph"] [data-testid="graph-node"]', (gs) => {
    const box = document.querySelector('[data-testid="graph"]').getBoundingClientRect();
    return gs.find((g) => { const r = g.getBoundingClientRect(); return r.top > box.top + 10 && r.bottom < box.bottom - 10 && r.left > box.left && r.right < box.right; })?.dataset.node;
  });
  await page.click(`[data-testid="graph"] [data-node="${visible}"]`);
  assert.equal((await state('graph')).transform, stayed);
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

// Also retakes docs/page.md's screenshots of the view (docs/page-side-by-side-1280.png, -390.png):
// the sample, the stem's stride-2 Conv selected in the input pane; on the desktop after a
// layer-by-layer check.
for (const [width, height] of [[1280, 800], [390, 844]]) {
  test(`side by side at ${width}×${height}: both panes in the width and usable, no horizontal scroll, axe finds nothing serious`, async () => {
    // bypassCSP: axe is injected as an inline script, which the page's own policy refuses.
    const { page, context, consoleErrors } = await openPage({ viewport: { width, height }, bypassCSP: true });
    await page.click('[data-testid="sample-model"]');
    assert.match(await waitDone(page), /^Done/);
    await page.waitForFunction(() => document.body.dataset.downloads === 'ready', null, { polling: 100 });
    await sideBySide(page);
    const boxes = await page.$$eval('[data-testid="graph"], [data-testid="graph-converted"]', (hosts) => hosts.map((h) => {
      const r = h.getBoundingClientRect();
      return { left: r.left, right: r.right, top: r.top, width: r.width, height: r.height };
    }));
    for (const b of boxes) assert.ok(b.left >= 0 && b.right <= width && b.width >= Math.min(300, width - 40) && b.height >= 300, JSON.stringify(b));
    // Side by side on a wide screen, one above the other on a narrow one.
    if (width > 760) assert.ok(boxes[1].left >= boxes[0].right, JSON.stringify(boxes));
    else assert.ok(boxes[1].top >= boxes[0].top + boxes[0].height, JSON.stringify(boxes));
    // Each pane takes a real click on a node it shows in its box, and zooms with its own buttons.
    await page.click('[data-testid="graph"] [data-node="/stem/stem.0/Conv"]');
    const stem = (await pageReport(page)).node_map.find((e) => e.node === '/stem/stem.0/Conv');
    await page.waitForSelector(`[data-testid="graph-converted"] [data-node="${stem.new_nodes.at(-1)}"].selected`);
    const converted = '[data-testid="graph-converted"]';
    const target = await page.$$eval(`${converted} [data-testid="graph-node"]`, (gs, host) => {
      const box = document.querySelector(host).getBoundingClientRect();
      const inside = gs.find((g) => { const r = g.getBoundingClientRect(); return r.left > box.left && r.right < box.right && r.top > box.top && r.bottom < box.bottom; });
      return inside?.dataset.node;
    }, converted);
    assert.ok(target, 'a node of the converted pane is in its box');
    await page.click(`${converted} [data-node="${target}"]`);
    assert.ok((await page.textContent('[data-testid="node-props"]')).includes(target));
    const transform = () => page.$eval(`${converted} .viewport`, (v) => v.getAttribute('transform'));
    const before = await transform();
    await page.click('button[aria-label="Zoom the converted model in"]');
    assert.notEqual(await transform(), before);
    // The desktop picture shows a layer-by-layer check's colours too.
    if (width > 760) {
      await runCheckInPage(page, { layerwise: true });
      await page.waitForSelector('[data-testid="graph-converted"][data-ready="true"] [data-distance-step]', { timeout: 60_000 });
    }
    await page.click('[data-testid="graph"] [data-node="/stem/stem.0/Conv"]').catch(() => {});
    await page.$eval('#graph-heading', (h) => window.scrollTo(0, window.scrollY + h.getBoundingClientRect().top - 8));
    await page.mouse.move(0, 0);
    await page.screenshot({ path: join(ROOT, `docs/page-side-by-side-${width}.png`) });
    const { overflow, bad } = await phoneState(page);
    assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow} px`);
    assert.deepEqual(bad, []);
    assert.deepEqual(consoleErrors, []);
    await context.close();
  });
}

test('when the layout worker fails, the graph area says so and the rest of the page works', async () => {
  const { page, context, consoleErrors } = await openPage({ viewport: { width: 1280, height: 800 } });
  await context.route('**/dagre.min.js', (route) => route.fulfill({ status: 404, body: 'not here' }));
  await page.reload();  // the layout worker starts with the page: now without its library
  await page.click('[data-testid="sample-model"]');
  assert.match(await waitDone(page), /^Done/);
  await page.waitForFunction(() => document.querySelector('[data-testid="graph"] .graph-message'), null, { timeout: 10_000 });
  assert.match(await page.textContent('[data-testid="graph"]'), /^The graph could not be laid out: the layout worker stopped/);
  // The plan, its "Show in graph", the switch and another conversion still work.
  const rows = await page.$$('[data-testid="match-row"]');
  assert.ok(rows.length > 0);
  await page.click('[data-testid="match-row"] .meta');
  await page.check('[data-testid="graph-switch"] input[value="input"]');
  await page.waitForFunction(() => document.querySelector('[data-testid="graph"] .graph-message'));
  await page.selectOption('[data-testid="target-select"]', 'lattice-advanced');
  assert.match(await waitDone(page), /^Done/);
  assert.match(await page.textContent('[data-testid="graph"]'), /could not be laid out/);
  assert.ok((await downloadBytes(page, 'download')).bytes.length > 0);
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

test('the page scrolls over the graph; ctrl + wheel and pinch zoom, drag and two fingers pan, keys too', async () => {
  const { page, context } = await openPage({ hasTouch: true, viewport: { width: 1280, height: 800 } });
  await page.click('[data-testid="sample-model"]');
  await waitDone(page);
  await everyNode(page);
  await graphReady(page);
  assert.match(await page.textContent('#graph-hint'), /Ctrl\/⌘ \+ wheel.*pinch.*drag.*two fingers/s);
  assert.equal(await page.isVisible('#graph-hint'), true);
  const view = () => page.$eval('[data-testid="graph"] .viewport', (g) => {
    const [, x, y, k] = g.getAttribute('transform').match(/translate\(([-\d.e]+),([-\d.e]+)\) scale\(([-\d.e]+)\)/).map(Number);
    return { x, y, k };
  });
  const scrollY = () => page.evaluate(() => window.scrollY);
  // The graph's box in the middle of the window, with page to scroll both ways.
  const box = await page.$eval('[data-testid="graph"]', (g) => {
    window.scrollTo(0, window.scrollY + g.getBoundingClientRect().top - 120);
    return g.getBoundingClientRect().toJSON();
  });
  const cx = box.left + box.width / 2, cy = box.top + box.height / 2;
  // Mouse: a drag pans by the distance moved.
  let before = await view();
  await page.mouse.move(cx, cy);
  await page.mouse.down();
  await page.mouse.move(cx + 40, cy + 30, { steps: 4 });
  await page.mouse.up();
  let after = await view();
  assert.deepEqual([Math.round(after.x - before.x), Math.round(after.y - before.y), after.k], [40, 30, before.k]);
  // The plain wheel scrolls the page and leaves the graph alone.
  before = await view();
  let y0 = await scrollY();
  await page.mouse.wheel(0, 200);
  await page.waitForFunction((y) => window.scrollY > y, y0);
  assert.deepEqual(await view(), before, 'the plain wheel does not zoom');
  // Ctrl + wheel zooms (what a trackpad pinch sends).
  const graphBox = await page.$eval('[data-testid="graph"]', (g) => g.getBoundingClientRect().toJSON());
  await page.mouse.move(graphBox.left + graphBox.width / 2, graphBox.top + graphBox.height / 2);
  y0 = await scrollY();
  await page.keyboard.down('Control');
  await page.mouse.wheel(0, -200);
  await page.keyboard.up('Control');
  await page.waitForFunction((k) => !document.querySelector('[data-testid="graph"] .viewport').getAttribute('transform').endsWith(`scale(${k})`), before.k);
  assert.ok((await view()).k > before.k, 'ctrl + wheel zooms in');
  assert.equal(await scrollY(), y0, 'ctrl + wheel does not scroll the page');
  // Touch, through the browser's own input pipeline (CDP).
  const cdp = await context.newCDPSession(page);
  const g = await page.$eval('[data-testid="graph"]', (e) => e.getBoundingClientRect().toJSON());
  const tx = g.left + g.width / 2, ty = g.top + g.height / 2;
  const touch = (type, points) => cdp.send('Input.dispatchTouchEvent', { type, touchPoints: points });
  // Two fingers moving apart zoom in; moving together they pan.
  const g2 = await page.$eval('[data-testid="graph"]', (e) => e.getBoundingClientRect().toJSON());
  const px = g2.left + g2.width / 2, py = g2.top + g2.height / 2;
  const two = (type, spread, dy = 0) => touch(type, [{ x: px - spread, y: py + dy, id: 1 }, { x: px + spread, y: py + dy, id: 2 }]);
  before = await view();
  y0 = await scrollY();
  await two('touchStart', 20);
  for (const spread of [30, 45, 60, 80]) await two('touchMove', spread);
  await touch('touchEnd', []);
  after = await view();
  assert.ok(after.k > before.k * 2, `pinch zoom: ${before.k} -> ${after.k}`);
  before = after;
  await two('touchStart', 40);
  for (const dy of [10, 20, 30, 40]) await two('touchMove', 40, dy);
  await touch('touchEnd', []);
  after = await view();
  assert.deepEqual([Math.round(after.y - before.y), after.k], [40, before.k], 'two fingers pan');
  assert.equal(await scrollY(), y0, 'two fingers leave the page where it was');
  // One finger swipes the page, not the graph (last: the page may glide on a while).
  before = await view();
  y0 = await scrollY();
  await touch('touchStart', [{ x: tx, y: ty, id: 1 }]);
  for (let i = 1; i <= 8; ++i) await touch('touchMove', [{ x: tx, y: ty - i * 20, id: 1 }]);
  await touch('touchEnd', []);
  await page.waitForFunction((y) => window.scrollY > y, y0, { timeout: 5000 });
  assert.deepEqual(await view(), before, 'one finger does not pan the graph');
  // Keyboard, on the graph's tab stop: + and − zoom, 0 fits, Shift + arrows pan.
  await page.focus('[data-testid="graph-node"][tabindex="0"]');
  let last = JSON.stringify(await view());
  for (const key of ['Shift+ArrowRight', 'Shift+ArrowDown', '-', '+', '0']) {
    await page.keyboard.press(key);
    const now = JSON.stringify(await view());
    assert.notEqual(now, last, key);
    last = now;
  }
  await context.close();
});

// Where the graph is drawn, in the window's pixels: the zoom, the top rank's first node (the
// model's inputs) and its text, and whether every node is inside the graph's box.
const graphGeometry = (page) => page.$eval('[data-testid="graph"]', (host) => {
  const box = host.getBoundingClientRect();
  const nodes = [...host.querySelectorAll('[data-testid="graph-node"]')];
  const laidY = (n) => Number(n.getAttribute('transform').match(/translate\([-\d.e]+,([-\d.e]+)\)/)[1]);
  const top = nodes.reduce((a, b) => (laidY(b) < laidY(a) ? b : a));
  const inside = (r) => r.left >= box.left - 0.5 && r.right <= box.right + 0.5 && r.top >= box.top - 0.5 && r.bottom <= box.bottom + 0.5;
  const rect = top.querySelector('.box').getBoundingClientRect(), text = top.querySelector('text').getBoundingClientRect();
  return {
    k: Number(host.querySelector('.viewport').getAttribute('transform').match(/scale\(([-\d.e]+)\)/)[1]),
    transform: host.querySelector('.viewport').getAttribute('transform'), boxHeight: box.height,
    top: { name: top.dataset.node, inside: inside(rect), fromTop: rect.top - box.top, height: rect.height, textHeight: text.height,
      offCentre: (rect.left + rect.right) / 2 - (box.left + box.right) / 2 },
    wider: nodes.some((n) => { const r = n.querySelector('.box').getBoundingClientRect(); return r.left < box.left || r.right > box.right; }),
    allInside: nodes.every((n) => inside(n.querySelector('.box').getBoundingClientRect())),
  };
});

for (const [width, height] of [[1280, 800], [390, 844]]) {
  test(`at ${width}×${height} the graph opens readable at the model's inputs, after a view switch too; Fit shows it whole`, async () => {
    const { page, context } = await openPage({ viewport: { width, height } });
    await page.click('[data-testid="sample-model"]');
    await waitDone(page);
    await everyNode(page);
    await graphReady(page);
    const readableAtTop = async (view) => {
      const g = await graphGeometry(page);
      // Box text 12 px at zoom ≥ 0.8: its line box at least 10 px tall, the 28 px box at least 22 px.
      assert.ok(g.k >= 0.8 && g.k <= 1, `${view}: zoom ${g.k}`);
      assert.ok(g.top.textHeight >= 10 && g.top.height >= 22, `${view}: ${JSON.stringify(g.top)}`);
      assert.ok(g.top.inside && g.top.fromTop <= 40, `${view}: the first node ${JSON.stringify(g.top)} at the top of the box`);
      // A graph wider than its box at that zoom (on a phone) opens centred on its first node (to the
      // box's 1 px border).
      if (g.wider) assert.ok(Math.abs(g.top.offCentre) <= 1.5, `${view}: the first node ${g.top.offCentre} px off the box's centre`);
      if (width < 760) assert.ok(g.wider, `${view}: wider than a phone's box`);
      // The sample is too long to show whole at that zoom: the start view is not the fitted one.
      assert.equal(g.allInside, false, `${view}: a part of the graph is below the box`);
      return g;
    };
    const start = await readableAtTop('converted');
    if (width >= 1280) assert.ok(start.boxHeight >= 0.75 * height - 1, `the graph's box grows with the window: ${start.boxHeight} px`);
    // Fit (the button, and 0 on the graph) shows every node, smaller than the start view.
    await page.click('#zoom-fit');
    const fitted = await graphGeometry(page);
    assert.ok(fitted.allInside && fitted.k < start.k, JSON.stringify(fitted));
    await page.focus('[data-testid="graph-node"][tabindex="0"]');
    await page.keyboard.press('Shift+ArrowDown');
    assert.notEqual((await graphGeometry(page)).transform, fitted.transform);
    await page.keyboard.press('0');
    assert.equal((await graphGeometry(page)).transform, fitted.transform, '0 fits as the button does');
    // A view switch starts again readable at the top, after Fit too.
    await switchGraph(page, 'input');
    await readableAtTop('input');
    await switchGraph(page, 'converted');
    assert.equal((await readableAtTop('converted again')).transform, start.transform);
    await context.close();
  });
}

// The window resized (a phone turned, a desktop window narrowed): a graph at its start view starts
// again there, a fitted one is fitted again, one the user moved keeps the point at its centre.
test('after a resize from 1280 to 390 px and back the graph keeps its nodes in view: start view, Fit, or the centre', async () => {
  const { page, context } = await openPage({ viewport: { width: 1280, height: 800 } });
  await page.click('[data-testid="sample-model"]');
  await waitDone(page);
  await everyNode(page);
  await graphReady(page);
  const settled = () => page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  const resize = async (width, height) => {
    await page.setViewportSize({ width, height });
    await settled();
    return graphGeometry(page);
  };
  const start = await graphGeometry(page);
  assert.ok(start.top.inside, JSON.stringify(start.top));
  // The start view, at each size: readable, the first node at the top of the box.
  for (const [width, height] of [[390, 844], [1280, 800]]) {
    const g = await resize(width, height);
    assert.ok(g.top.inside && g.top.fromTop <= 40 && g.k >= 0.8, `${width} px: ${JSON.stringify(g)}`);
  }
  // Fitted: every node in the box at each size.
  await page.click('#zoom-fit');
  for (const [width, height] of [[390, 844], [1280, 800]]) {
    const g = await resize(width, height);
    assert.ok(g.allInside, `${width} px, fitted: ${JSON.stringify(g)}`);
  }
  // Zoomed in by the user: the graph's point at the box's centre stays there.
  await page.click('#zoom-in');
  const centre = () => page.$eval('[data-testid="graph"]', (host) => {
    const { width, height } = host.getBoundingClientRect();
    const [, x, y, k] = host.querySelector('.viewport').getAttribute('transform').match(/translate\(([-\d.e]+),([-\d.e]+)\) scale\(([-\d.e]+)\)/).map(Number);
    return [Math.round((width / 2 - x) / k), Math.round((height / 2 - y) / k)];
  });
  const before = await centre();
  await resize(390, 844);
  assert.deepEqual(await centre(), before);
  await context.close();
});

test('the graph is one tab stop: arrow keys move between named nodes, Enter and clicks select one', async () => {
  const { page, context } = await openPage({ viewport: { width: 1280, height: 800 } });
  await page.click('[data-testid="sample-model"]');
  await waitDone(page);
  await everyNode(page);
  const shown = await graphReady(page);
  const label = await page.$eval('[data-testid="graph"] svg', (s) => ({ role: s.getAttribute('role'), name: s.getAttribute('aria-label') }));
  assert.equal(label.role, 'group');
  assert.match(label.name, new RegExp(`^Model graph, ${shown.nodes.length} nodes in ${shown.nodes.length} boxes: `));
  const stops = await page.$$eval('[data-testid="graph-node"]', (ns) => ns.filter((n) => n.tabIndex === 0).length);
  assert.equal(stops, 1, 'one node holds the tab stop');
  const focused = () => page.evaluate(() => ({ name: document.activeElement.dataset.node, label: document.activeElement.getAttribute('aria-label'),
    tabIndex: document.activeElement.tabIndex }));
  await page.focus('#zoom-fit');
  await page.keyboard.press('Tab');
  const first = await focused();
  assert.equal(first.name, '/stem/stem.0/Conv');
  // Its name: the box's own text (what is seen is what is heard), the node's name, its state.
  const text = await page.$eval('[data-node="/stem/stem.0/Conv"] text', (t) => t.textContent);
  assert.match(text, /^Conv 3×3 s1 p1 · 3→8$/);  // snapped to stride 1 by the stem rewrite
  assert.equal(first.label, `${text} /stem/stem.0/Conv, rewritten`);
  // Down goes to the next node below; its name says op, node and state.
  await page.keyboard.press('ArrowDown');
  const second = await focused();
  assert.notEqual(second.name, first.name);
  assert.equal(second.tabIndex, 0);
  const node = shown.nodes.find((n) => n.name === second.name);
  const spoken = { applied: 'rewritten', refused: 'match refused or skipped', unsupported: 'the target cannot run it', plain: 'untouched' };
  assert.match(second.label, new RegExp(` ${second.name.replace(/[/.]/g, '\\$&')}, ${spoken[node.state]}$`));
  await page.keyboard.press('ArrowUp');
  assert.equal((await focused()).name, first.name);
  await page.keyboard.press('ArrowDown');
  // Enter opens its properties and marks it selected; focus stays on the node.
  await page.keyboard.press('Enter');
  assert.ok((await page.textContent('#props-heading')).includes(second.name));
  assert.deepEqual(await page.$$eval('[data-testid="graph-node"].selected', (ns) => ns.map((n) => [n.dataset.node, n.getAttribute('aria-current')])),
    [[second.name, 'true']]);
  assert.equal((await focused()).name, second.name);
  // The next Tab leaves the graph.
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.closest('[data-testid="graph"]')), null);
  // A click selects too.
  await page.click('[data-testid="graph-node"][data-node="/stem/stem.0/Conv"]');
  assert.deepEqual(await page.$$eval('[data-testid="graph-node"].selected', (ns) => ns.map((n) => n.dataset.node)), ['/stem/stem.0/Conv']);
  await context.close();
});

// Where the properties panel's lines wrap inside one heading, definition or list item: each wrap
// with the character before and after it, whether white space lay between, and the word around it
// (its run of letters and digits) and whether that is wider than its block (then nothing else
// could be done). "Show in graph" buttons are left out.
const propsWraps = (page) => page.$eval('[data-testid="node-props"]', (aside) => {
  const wraps = [];
  const blocks = [...aside.querySelectorAll('h3, dd, li')].filter((b) => !b.querySelector('li'));
  for (const block of blocks) {
    const width = block.getBoundingClientRect().width;
    const walker = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
    let prev = null, gap = false;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.parentElement.closest('button')) { prev = null; continue; }
      for (let i = 0; i < node.length; ++i) {
        const ch = node.data[i];
        if (/\s/.test(ch)) { gap = true; continue; }
        const range = document.createRange();
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const { top, bottom } = range.getBoundingClientRect();
        if (prev && top >= prev.bottom - 1) {
          const separated = (c) => !/[A-Za-z0-9]/.test(c);
          let start = i, end = i;
          while (start > 0 && !separated(node.data[start - 1])) start -= 1;
          while (end < node.length && !separated(node.data[end])) end += 1;
          range.setStart(node, start);
          range.setEnd(node, end);
          const wordWidth = [...range.getClientRects()].reduce((w, r) => w + r.width, 0);
          wraps.push({ before: prev.ch, after: ch, gap, word: node.data.slice(start, end), wider: wordWidth > width });
        }
        prev = { ch, bottom };
        gap = false;
      }
    }
  }
  return wraps;
});

// Declared dimensions by name: an input 'p2o.DynamicDimension.1' high, two 2x2 pools, the output
// declared as paddle2onnx writes it: the size's expression.
const EXPRESSION = 'floor((floor((p2o.DynamicDimension.1+0)/2)+1)/2)';
const SYMBOLIC = `nodes = [helper.make_node('MaxPool', ['x'], ['p'], name='/pool/MaxPool', kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node('MaxPool', ['p'], ['y'], name='/pool_1/MaxPool', kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)]
graph = helper.make_graph(nodes, 'symbolic', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 3, 'p2o.DynamicDimension.1', 8])],
    [helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 3, '${EXPRESSION}', 2])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)], ir_version=7)`;

test('the properties panel breaks names after / . _ only, never inside a word that fits; dimensions show by name, expressions as "?" with a tooltip', async () => {
  for (const [width, height] of [[1280, 800], [390, 844]]) {
    const { page, context } = await openPage({ viewport: { width, height } });
    await page.click('[data-testid="sample-model"]');
    await waitDone(page);
    await everyNode(page);
    await graphReady(page);
    await page.click('#zoom-fit');
    let inNames = 0;
    for (const node of ['/sppf5/cv2/cv2.0/Conv', '/sppf5/m/MaxPool.conv']) {
      await page.click(`[data-testid="graph-node"][data-node="${node}"]`);
      await page.waitForFunction((n) => document.getElementById('props-heading').textContent.includes(n), node);
      const wraps = await propsWraps(page);
      // Between two letters or digits: inside a word ("C|onv"), only when the word cannot fit a line.
      const inside = wraps.filter((w) => !w.gap && /[A-Za-z0-9]/.test(w.before) && /[A-Za-z0-9]/.test(w.after));
      assert.deepEqual(inside.filter((w) => !w.wider), [], `${width} px, ${node}: wraps inside words that fit a line`);
      inNames += wraps.filter((w) => !w.gap && /[/._]/.test(w.before)).length;
    }
    assert.ok(inNames > 0, `${width} px: some name was long enough to wrap`);
    await context.close();
  }

  // The model card and the panel name a dynamic dimension alike.
  const { page, context, consoleErrors } = await openPage({ viewport: { width: 1280, height: 800 } });
  await page.setInputFiles('[data-testid="file-input"]', fixture('yolo_dynamic_batch.onnx'));
  await waitDone(page);
  await everyNode(page);
  assert.match(await page.textContent('[data-testid="model-card"]'), /input: float \[N, 3, 64, 64\]/);
  await switchGraph(page, 'input');
  await page.click('#zoom-fit');
  await page.click('[data-testid="graph-node"][data-node="/stem/stem.0/Conv"]');
  const tensors = (term) => page.$$eval('[data-testid="node-props"] dt', (dts, t) =>
    [...dts.find((dt) => dt.textContent === t).nextElementSibling.querySelectorAll('li')].map((li) => li.textContent), term);
  assert.equal((await tensors('Inputs'))[0], 'input [N, 3, 64, 64]');

  // A size's expression reads "?", the expression in its tooltip; a name stays a name.
  await page.setInputFiles('[data-testid="file-input"]', pythonModel('symbolic.onnx', SYMBOLIC));
  await waitDone(page);
  const card = await page.textContent('[data-testid="model-card"]');
  assert.ok(card.includes('x: float [1, 3, p2o.DynamicDimension.1, 8]') && card.includes('y: float [1, 3, ?, 2]'), card);
  assert.deepEqual(await page.$$eval('[data-testid="model-card"] abbr', (as) => as.map((a) => [a.textContent, a.title])), [['?', EXPRESSION]]);
  await page.click('[data-testid="graph-node"][data-node="/pool_1/MaxPool"]');
  assert.deepEqual(await tensors('Outputs'), ['y [1, 3, ?, 2]']);
  // The tensor between the pools: its size's expression as the converter infers it, from the name.
  assert.deepEqual(await tensors('Inputs'), ['p [1, 3, ?, 4]']);
  assert.deepEqual(await page.$$eval('[data-testid="node-props"] abbr', (as) => as.map((a) => a.title)),
    ['floor(p2o.DynamicDimension.1/2)', EXPRESSION]);
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

test('on a phone, a node clicked in the graph scrolls its properties into view', async () => {
  const { page, context } = await openPage({ viewport: { width: 390, height: 844 }, hasTouch: true });
  await page.click('[data-testid="sample-model"]');
  await waitDone(page);
  await everyNode(page);
  await graphReady(page);
  const props = () => page.$eval('[data-testid="node-props"]', (p) => p.getBoundingClientRect().toJSON());
  // The graph's bottom at the window's bottom: the panel, below the graph, is out of sight.
  await page.$eval('[data-testid="graph"]', (g) => window.scrollBy(0, g.getBoundingClientRect().bottom - window.innerHeight));
  assert.ok((await props()).top >= 844, 'the panel starts below the window');
  await page.tap('[data-testid="graph-node"][data-node="/stem/stem.0/Conv"]');
  await page.waitForFunction(() => document.getElementById('props-heading').textContent.includes('/stem/stem.0/Conv'));
  await page.waitForFunction(() => {
    const r = document.querySelector('[data-testid="node-props"]').getBoundingClientRect();
    return r.top >= 0 && r.top < window.innerHeight;
  }, null, { timeout: 5000 });
  await context.close();
});

test('each state has a mark besides colour that a highlight does not hide; the legend shows the highlight', async () => {
  const { page, context } = await openPage({ viewport: { width: 1280, height: 800 } });
  await sampleAllStates(page);
  const cues = () => page.$$eval('[data-testid="graph-node"]', (ns) => {
    const out = {};
    for (const n of ns) {
      const box = getComputedStyle(n.querySelector('.box'));
      const cue = { dash: box.strokeDasharray, width: box.strokeWidth, glyph: n.querySelector('.glyph')?.getAttribute('href') ?? null };
      (out[n.dataset.state] ??= new Set()).add(JSON.stringify(cue));
    }
    return Object.fromEntries(Object.entries(out).map(([s, set]) => [s, [...set]]));
  });
  const plain = await cues();
  for (const s of STATES) assert.equal(plain[s].length, 1, `one look for ${s}: ${plain[s]}`);
  const looks = STATES.map((s) => JSON.parse(plain[s][0]));
  for (let i = 0; i < looks.length; ++i) {
    for (let j = i + 1; j < looks.length; ++j) {
      const [a, b] = [looks[i], looks[j]];
      assert.ok(a.dash !== b.dash || a.width !== b.width, `${STATES[i]} and ${STATES[j]} borders differ`);
      assert.notEqual(a.glyph, b.glyph, `${STATES[i]} and ${STATES[j]} glyphs differ`);
    }
  }
  // Highlight every node: the borders and glyphs stay what they were.
  await page.evaluate(() => document.querySelectorAll('[data-testid="graph-node"]').forEach((n) => n.classList.add('hl', 'selected')));
  assert.deepEqual(await cues(), plain);
  assert.ok(await page.isVisible('#legend [data-mark="hl"]'));
  assert.match(await page.textContent('#legend'), /highlighted\s+selected/);
  await context.close();
});

test('an unticked match is skipped, and stays unticked across target and fold switches; downloads say what was done', async () => {
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
  await page.selectOption('[data-testid="target-select"]', 'lattice-advanced');
  await waitDone(page);
  assert.equal(await page.isChecked(`[data-match-id="${id}"] input`), false);
  await page.uncheck('[data-testid="fold-bn"]');
  await waitDone(page);
  assert.equal(await page.isChecked(`[data-match-id="${id}"] input`), false);
  const sample = join(SITE, 'sample.onnx');
  const { name } = await checkAgainstCli(page, sample, ['--skip-match', id, '--target', 'lattice-advanced', '--no-fold-bn']);
  const variant = name.match(/^sample\.lattice-advanced\.no-fold\.skip-([0-9a-f]{4})\.onnx$/);
  assert.ok(variant, name);
  assert.equal((await downloadBytes(page, 'download-report')).name, `sample.lattice-advanced.no-fold.skip-${variant[1]}.report.json`);
  // Target "none" has no such match: the skip is named once as no longer matched, and kept.
  await page.selectOption('[data-testid="target-select"]', 'none');
  await waitDone(page);
  assert.equal(await page.$(`[data-match-id="${id}"]`), null);
  assert.match(await page.textContent('#stale-skips'), new RegExp(`^No longer matched.*${id.replace(/[/.]/g, '\\$&')}$`));
  // A skip that no longer matches changes nothing, and so not the name either.
  assert.equal((await downloadBytes(page, 'download')).name, 'sample.none.no-fold.onnx');
  // Back to the defaults with the skip kept; ticking the row again brings the match back.
  await page.selectOption('[data-testid="target-select"]', 'lattice');
  await waitDone(page);
  await page.check('[data-testid="fold-bn"]');
  await waitDone(page);
  assert.equal(await page.isChecked(`[data-match-id="${id}"] input`), false);
  await checkAgainstCli(page, sample, ['--skip-match', id]);
  await page.check(`[data-match-id="${id}"] input`);
  await page.click('[data-testid="convert"]');
  await waitDone(page);
  const { name: plain } = await checkAgainstCli(page, sample);
  assert.equal(plain, 'sample.lattice.onnx');
  assert.equal((await downloadBytes(page, 'download-report')).name, 'sample.lattice.report.json');
  // A new file starts with nothing skipped.
  await page.uncheck(`[data-match-id="${id}"] input`);
  await page.setInputFiles('[data-testid="file-input"]', sample);
  await waitDone(page);
  assert.equal(await page.isChecked(`[data-match-id="${id}"] input`), true);
  await context.close();
});

test('download names tell skip sets apart by a hash of the skipped ids, whatever the order they were unticked in', async () => {
  const { page, context } = await openPage();
  await page.click('[data-testid="sample-model"]');
  await waitDone(page);
  const nameAfter = async (untick, tick = []) => {
    for (const id of tick) await page.check(`[data-match-id="${id}"] input`);
    for (const id of untick) await page.uncheck(`[data-match-id="${id}"] input`);
    await page.click('[data-testid="convert"]');
    assert.match(await waitDone(page), /^Done/);
    const { name } = await downloadBytes(page, 'download');
    return { name, skips: (await pageReport(page)).options.skip_matches };
  };
  const { name: pool } = await nameAfter([POOL]);
  const { name: stem } = await nameAfter([STEM], [POOL]);
  assert.match(pool, /^sample\.lattice\.skip-[0-9a-f]{4}\.onnx$/);
  assert.match(stem, /^sample\.lattice\.skip-[0-9a-f]{4}\.onnx$/);
  assert.notEqual(pool, stem, 'one skip each, different skips: different names');
  const both = await nameAfter([POOL]);  // STEM still unticked: STEM, then POOL
  const again = await nameAfter([POOL, STEM], [STEM, POOL]);  // ticked again, then unticked POOL first
  assert.deepEqual([both.skips, again.skips], [[STEM, POOL], [POOL, STEM]]);
  assert.ok(![pool, stem].includes(both.name), both.name);
  assert.equal(again.name, both.name, 'the same set in another order: the same name');
  await context.close();
});

test('the plan\'s rows show their content whether or not they were scrolled into view', async () => {
  const { page, context } = await openPage({ viewport: { width: 1280, height: 800 } });
  await page.click('[data-testid="sample-model"]');
  assert.match(await waitDone(page), /^Done/);
  await page.evaluate(() => window.scrollTo(0, 0));
  const rows = await page.$$eval('[data-testid="match-row"]', (rs) => rs.map((r) => ({
    below: r.getBoundingClientRect().top > window.innerHeight,
    // false when the browser skips rendering the row's content until it is scrolled to
    rendered: [...r.querySelectorAll('.op')].every((op) => op.checkVisibility({ contentVisibilityAuto: true })),
  })));
  assert.ok(rows.filter((r) => r.below).length >= 5, 'rows out of view');
  assert.deepEqual(rows.filter((r) => !r.rendered), []);
  await context.close();
});

test('warnings sit in their match row, and the audit is grouped by op and reason with counts', async () => {
  const { page, context } = await openPage();
  await page.setInputFiles('[data-testid="file-input"]', fixture('everything.onnx'));
  await waitDone(page);
  await everyNode(page);
  const report = await pageReport(page);
  for (const m of report.matches) {
    const inRow = await page.$$eval(`[data-match-id="${m.id}"] .row-warnings li`, (ls) => ls.map((l) => l.textContent));
    assert.deepEqual(inRow, report.warnings.filter((w) => w.match_id === m.id).map((w) => w.message), m.id);
  }
  const groups = await page.$$eval('[data-testid="audit-group"]', (gs) => gs.map((g) => ({
    summary: g.querySelector('summary').textContent, rows: g.querySelectorAll('[data-testid="audit-row"]').length })));
  const expected = new Map();
  for (const u of report.unsupported) {
    const key = u.group ?? `${u.op_type}: ${u.reason}`;
    expected.set(key, (expected.get(key) ?? 0) + 1);
  }
  assert.deepEqual(groups, [...expected].map(([key, n]) => ({ summary: `${key} (${n})`, rows: n })));
  assert.ok(groups.length > 0);
  // An audit entry's "Show in graph" highlights its node in the converted model.
  await page.click('[data-testid="audit-group"] summary');
  await page.click('[data-testid="audit-group"] [data-testid="audit-row"] button');
  await page.waitForFunction(() => document.querySelector('[data-testid="graph-node"].hl'));
  assert.deepEqual(await page.$$eval('[data-testid="graph-node"].hl', (ns) => ns.map((n) => n.dataset.node)), [report.unsupported[0].node]);
  assert.ok((await page.textContent('[data-testid="node-props"]')).includes(report.unsupported[0].reason));
  await context.close();
});

test('the progress bar moves through the core\'s stages on a large model', { skip: !existsSync(join(ZOO, 'resnet50.onnx')) && 'no zoo' }, async () => {
  const { page, context } = await openPage();
  await page.evaluate(() => {
    window.progressSeen = [];
    const bar = document.querySelector('[data-testid="progress"]');
    const stage = document.getElementById('progress-stage');
    new MutationObserver(() => window.progressSeen.push({ value: Number(bar.getAttribute('value')), stage: stage.textContent }))
      .observe(bar, { attributes: true, attributeFilter: ['value'] });
  });
  await page.setInputFiles('[data-testid="file-input"]', join(ZOO, 'resnet50.onnx'));
  assert.match(await waitDone(page), /^Done/);
  const seen = await page.evaluate(() => window.progressSeen);
  const values = [...new Set(seen.map((s) => s.value))].filter((v) => v > 0 && v < 1);
  assert.ok(values.length >= 4, JSON.stringify(seen));
  assert.deepEqual(values, [...values].sort((a, b) => a - b), 'the bar only moves forward');
  const stages = seen.map((s) => s.stage);
  for (const stage of ['parse', 'conversion pass 1', 'fusion pass', 'save']) assert.ok(stages.includes(stage), stage);
  await context.close();
});

test('the sample converts with the keyboard alone, and focus never falls to the page body', async () => {
  const { page, context } = await openPage();
  await page.waitForFunction(() => document.querySelector('[data-testid="status"]').textContent.startsWith('Ready'), null,
    { polling: 250 });
  await page.evaluate(() => {
    window.lostFocus = 0;
    setInterval(() => { if (document.activeElement === document.body) window.lostFocus += 1; }, 20);
  });
  const active = () => page.evaluate(() => document.activeElement.id || document.activeElement.tagName);
  await page.keyboard.press('Tab');
  assert.equal(await active(), 'file-input', 'the first tab stop chooses a file');
  await page.keyboard.press('Tab');
  assert.equal(await active(), 'sample-model', 'one tab stop for choosing a file: the next is the sample');
  await page.evaluate(() => { window.lostFocus = 0; });
  await page.keyboard.press('Enter');
  assert.match(await waitDone(page), /^Done/);
  assert.equal(await active(), 'results-heading');
  // Untick a row with Space, then go back to "Convert again" and press Enter.
  let steps = 0;
  while (!(await page.evaluate(() => document.activeElement.matches('[data-testid="match-row"] input:not(:disabled)'))) && steps++ < 80) {
    await page.keyboard.press('Tab');
  }
  const id = await page.evaluate(() => document.activeElement.closest('[data-testid="match-row"]').dataset.matchId);
  await page.keyboard.press('Space');
  steps = 0;
  while ((await active()) !== 'convert' && steps++ < 80) await page.keyboard.press('Shift+Tab');
  assert.equal(await active(), 'convert');
  await page.keyboard.press('Enter');
  assert.match(await waitDone(page), /^Done/);
  assert.equal(await active(), 'results-heading');
  const report = await pageReport(page);
  assert.deepEqual(report.options.skip_matches, [id]);
  // Changing the target with the keyboard converts again, and focus stays on the target.
  steps = 0;
  while ((await active()) !== 'target' && steps++ < 80) await page.keyboard.press('Shift+Tab');
  await page.keyboard.press('ArrowDown');
  assert.match(await waitDone(page), /^Done/);
  assert.equal(await active(), 'target');
  assert.equal((await pageReport(page)).options.target, 'lattice-advanced');
  // On to the graph's one tab stop: Enter opens a collapsed box, the focus staying on what it held,
  // until a node has it; Enter opens the node's properties. Their own "Show in graph" rebuilds the
  // panel: focus goes to its heading, still in the page, and Tab goes on from there.
  steps = 0;
  const focused = () => page.evaluate(() => document.activeElement.dataset.testid);
  while (!['graph-node', 'graph-group'].includes(await focused()) && steps++ < 80) await page.keyboard.press('Tab');
  for (steps = 0; (await focused()) === 'graph-group' && steps < 5; ++steps) {
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.querySelector('[data-testid="graph"]').dataset.ready === 'true' &&
      document.activeElement.closest('[data-testid="graph"]'));
  }
  assert.equal(await focused(), 'graph-node');
  const node = await page.evaluate(() => document.activeElement.dataset.node);
  await page.keyboard.press('Enter');
  await page.waitForFunction((n) => document.getElementById('props-heading').textContent.includes(n), node);
  steps = 0;
  while (!(await page.evaluate(() => document.activeElement.matches('[data-testid="node-props"] button'))) && steps++ < 20) {
    await page.keyboard.press('Tab');
  }
  assert.match(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), /^Show in graph: the nodes of /);
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelector('[data-testid="graph-node"].hl'));
  assert.equal(await active(), 'props-heading');
  assert.equal(await page.evaluate(() => document.activeElement.isConnected), true);
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.closest('[data-testid="node-props"]') !== null), true,
    'Tab goes on from the panel');
  assert.equal(await page.evaluate(() => window.lostFocus), 0, 'focus fell to <body>');
  await context.close();
});

test('axe-core finds no serious or critical violation after a conversion', async () => {
  // bypassCSP: axe is injected as an inline script, which the page's own policy refuses.
  const { page, context } = await openPage({ bypassCSP: true });
  await page.click('[data-testid="sample-model"]');
  await waitDone(page);
  await graphReady(page);
  // The sample opens collapsed: a box opened, a node in it selected (the properties panel filled in too).
  await page.click('[data-testid="graph-group"]');
  await page.click('[data-testid="graph"][data-ready="true"] [data-testid="graph-node"]');
  await page.evaluate(() => document.querySelectorAll('[data-testid="audit-group"]').forEach((d) => { d.open = true; }));
  await page.addScriptTag({ path: require.resolve('axe-core/axe.min.js') });
  const results = await page.evaluate(() => window.axe.run(document));
  const bad = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(bad.map((v) => `${v.id}: ${v.help} (${v.nodes.length}) ${v.nodes.slice(0, 2).map((n) => n.target).join(' ')}`), []);
  console.log(`# axe-core: ${results.passes.length} rules pass, ${results.violations.length} violations, none serious or critical`);
  await context.close();
});

// Unticks every FPQ range fit match and converts again; returns their ids.
async function skipRangeFit(page) {
  const ids = await page.$$eval('[data-match-id^="FpqRangeFitPattern:"]', (rows) => rows.map((r) => r.dataset.matchId));
  assert.ok(ids.length > 0, 'the range fit matched');
  for (const id of ids) await page.uncheck(`[data-match-id="${id}"] input`);
  await page.click('[data-testid="convert"]');
  await waitDone(page);
  return ids;
}

test('the fixed-point selector: FPQ unticks folding, converts as `--fixed-point fpq`, and shows the fit', async () => {
  const { page, context, consoleErrors } = await openPage();
  await page.setInputFiles('[data-testid="file-input"]', fixture('bn_scales_up.onnx'));
  await waitDone(page);
  await everyNode(page);
  assert.equal(await page.isHidden('[data-testid="fixed-point-summary"]'), true, 'no summary without a scheme');
  await page.selectOption('[data-testid="fixed-point-select"]', 'fpq');
  await waitDone(page);
  assert.equal(await page.isChecked('[data-testid="fold-bn"]'), false);
  const { name } = await checkAgainstCli(page, fixture('bn_scales_up.onnx'), ['--fixed-point', 'fpq']);
  assert.equal(name, 'bn_scales_up.lattice.fpq.onnx');
  // FPQ's range fit (estimated from the BatchNorm, as the CLI does without data) brings conv_b's
  // weights into range; its matches unticked, conv_b clips as converted.
  assert.match(await page.textContent('[data-testid="fixed-point-summary"]'),
    /^FPQ: 0 of 2 layers clip, 0 more over the 10\.0 % error threshold; 0 of 1 BatchNorms out of range/);
  const fits = await skipRangeFit(page);
  assert.match(await page.textContent('[data-testid="fixed-point-summary"]'),
    /^FPQ: 1 of 2 layers clip, 0 more over the 10\.0 % error threshold; 0 of 1 BatchNorms out of range/);
  for (const id of fits) await page.check(`[data-match-id="${id}"] input`);
  // Folding asked for under FPQ: the folded conv clips too, and the node's properties say by how much.
  await page.check('[data-testid="fold-bn"]');
  await waitDone(page);
  const { name: folded } = await checkAgainstCli(page, fixture('bn_scales_up.onnx'), ['--fixed-point', 'fpq', '--fold-bn']);
  assert.equal(folded, 'bn_scales_up.lattice.fpq.fold.onnx');
  await page.click('[data-testid="graph-node"][data-node="/conv_a/Conv"]');
  assert.match(await page.textContent('[data-testid="node-props"]'), /Fixed point \(FPQ\)clips 80\.6 %/);
  // A QDQ model: the notice, said once.
  await page.setInputFiles('[data-testid="file-input"]', fixture('qdq.onnx'));
  await waitDone(page);
  assert.match(await page.textContent('[data-testid="quantization"]'), /quantizes the float model itself/);
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

test('under a fixed-point scheme each analysed layer wears its fit in the converted graph, counted in the legend; never without one', async () => {
  // bypassCSP: axe is injected as an inline script, which the page's own policy refuses.
  const { page, context, consoleErrors } = await openPage({ viewport: { width: 1280, height: 800 }, bypassCSP: true });
  await page.setInputFiles('[data-testid="file-input"]', fixture('bn_scales_up.onnx'));
  await waitDone(page);
  await everyNode(page);
  await graphReady(page);
  // Each node marked or badged: its mark, its badge's words (the badges lie in one layer over the
  // nodes, by node name) and its accessible name.
  const badges = () => page.$$eval('[data-testid="graph-node"]', (ns) => {
    const words = new Map([...document.querySelectorAll('[data-testid="fit-badge"]')].map((b) => [b.dataset.node, b.textContent]));
    return Object.fromEntries(ns.filter((n) => n.dataset.fit || words.has(n.dataset.node))
      .map((n) => [n.dataset.node, { fit: n.dataset.fit, badge: words.get(n.dataset.node), label: n.getAttribute('aria-label') }]));
  });
  const legend = () => page.$$eval('#legend [data-fit]', (ls) => Object.fromEntries(ls.map((l) => [l.dataset.fit, l.textContent])));
  assert.deepEqual(await badges(), {}, 'no scheme, no badge');
  assert.deepEqual(await legend(), {});
  // FPQ keeps the BatchNorms: conv_a's weights are small and fit, conv_b's clip (56.25 %, numpy's
  // figure in make_fixed_point.py), the BatchNorm's scale lies inside signed 5.10.
  await page.selectOption('[data-testid="fixed-point-select"]', 'fpq');
  await waitDone(page);
  await skipRangeFit(page);  // the weights as converted: the range fit would bring conv_b's into range
  await page.waitForSelector('[data-testid="fit-badge"]');
  const report = await pageReport(page);
  const [bn] = report.fixed_point.batch_norms;
  assert.ok(bn?.fits, JSON.stringify(report.fixed_point.batch_norms));
  const shown = await badges();
  assert.deepEqual(Object.keys(shown).sort(), ['/conv_a/Conv', '/conv_b/Conv', bn.node].sort());
  assert.deepEqual([shown['/conv_a/Conv'].fit, shown['/conv_a/Conv'].badge], ['fits', 'fits']);
  assert.deepEqual([shown['/conv_b/Conv'].fit, shown['/conv_b/Conv'].badge], ['clips', 'clips 56.3 %']);
  assert.deepEqual([shown[bn.node].fit, shown[bn.node].badge], ['fits', 'fits']);
  assert.match(shown['/conv_b/Conv'].label, /, FPQ: clips 56\.3 %$/, 'a screen reader hears the fit too');
  assert.deepEqual(await legend(), { fits: 'FPQ fits (2)', clips: 'FPQ clips or out of range (1)' });
  // A node's button names what it shows (the badge is outside it): axe finds nothing serious.
  await page.addScriptTag({ path: require.resolve('axe-core/axe.min.js') });
  const bad = (await page.evaluate(() => window.axe.run(document))).violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(bad.map((v) => `${v.id} (${v.nodes.length})`), []);
  // Folding asked for: conv_a takes its BatchNorm's scale and clips too.
  await page.check('[data-testid="fold-bn"]');
  await waitDone(page);
  await page.waitForSelector('[data-testid="graph-node"][data-node="/conv_a/Conv"][data-fit="clips"]');
  assert.equal((await badges())['/conv_a/Conv'].badge, 'clips 80.6 %');
  // The analysis describes the converted model: the input view has no badge, nor its legend.
  await switchGraph(page, 'input');
  assert.deepEqual(await badges(), {});
  assert.deepEqual(await legend(), {});
  await switchGraph(page, 'converted');
  await page.waitForSelector('[data-testid="fit-badge"]');
  // No scheme again: the badges and their legend go.
  await page.selectOption('[data-testid="fixed-point-select"]', '');
  await waitDone(page);
  await graphReady(page);
  assert.deepEqual(await badges(), {});
  assert.deepEqual(await legend(), {});
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

// A model written by a few lines of onnx.helper (`body` builds `model` from numpy `np`, `helper`,
// `TensorProto` and `numpy_helper`), checked by onnx's checker, in this file's scratch folder.
function pythonModel(name, body) {
  const path = join(dir, name);
  const script = 'import sys\nimport numpy as np, onnx\nfrom onnx import helper, TensorProto, numpy_helper\n' +
    `${body}\nonnx.checker.check_model(model)\nonnx.save(model, sys.argv[1])\n`;
  const r = spawnSync('/usr/bin/python3', ['-c', script, path], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return path;
}

// Two 16->16 3x3 convs with weights in [-0.4, 0.4]; one weight of the first at -0.524, past FPQ's
// signed 0.7 (scale 0.5): 1 of its 2304 weights clips, 0.04 %.
const TINY_CLIP = `rng = np.random.default_rng(0)
wa = rng.uniform(-0.4, 0.4, (16, 16, 3, 3)).astype(np.float32)
wa[3, 5, 1, 1] = -0.524
wb = rng.uniform(-0.4, 0.4, (16, 16, 3, 3)).astype(np.float32)
nodes = [helper.make_node('Conv', ['x', 'wa'], ['a'], name='/clip/Conv', pads=[1, 1, 1, 1]),
         helper.make_node('Relu', ['a'], ['r'], name='/clip/Relu'),
         helper.make_node('Conv', ['r', 'wb'], ['y'], name='/fit/Conv', pads=[1, 1, 1, 1])]
graph = helper.make_graph(nodes, 'tiny_clip', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 16, 8, 8])],
    [helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 16, 8, 8])],
    [numpy_helper.from_array(wa, 'wa'), numpy_helper.from_array(wb, 'wb')])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)], ir_version=7)`;

test('side by side under FPQ the converted pane wears each analysed layer\'s fit, as the single converted view does', async () => {
  const { page, context, consoleErrors } = await openPage({ viewport: { width: 1280, height: 800 } });
  await page.setInputFiles('[data-testid="file-input"]', fixture('bn_scales_up.onnx'));
  await waitDone(page);
  await everyNode(page);
  await page.selectOption('[data-testid="fixed-point-select"]', 'fpq');
  await waitDone(page);
  await skipRangeFit(page);
  await page.waitForSelector('[data-testid="fit-badge"]');
  const badges = (host) => page.$$eval(`${host} [data-testid="fit-badge"]`, (bs) => Object.fromEntries(bs.map((b) => [b.dataset.node, b.textContent])));
  const single = await badges('[data-testid="graph"]');
  const legend = () => page.$$eval('#legend [data-fit]', (ls) => Object.fromEntries(ls.map((l) => [l.dataset.fit, l.textContent])));
  const singleLegend = await legend();
  assert.ok(Object.keys(single).length > 0);
  await sideBySide(page);
  await page.waitForSelector('[data-testid="graph-converted"] [data-testid="fit-badge"]');
  assert.deepEqual(await badges('[data-testid="graph-converted"]'), single);
  assert.deepEqual(await badges('[data-testid="graph"]'), {}, 'the input pane has no fit');
  assert.deepEqual(await legend(), singleLegend);
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

test('under FPQ a share under the display\'s precision reads "< 0.1 %"; the findings are listed and lead to their nodes, the summary\'s counts to their layers', async () => {
  const model = pythonModel('tiny_clip.onnx', TINY_CLIP);
  const { page, context, consoleErrors } = await openPage({ viewport: { width: 1280, height: 800 } });
  await page.setInputFiles('[data-testid="file-input"]', model);
  await waitDone(page);
  await everyNode(page);
  await page.selectOption('[data-testid="fixed-point-select"]', 'fpq');
  await waitDone(page);
  await graphReady(page);
  await page.waitForSelector('[data-testid="fit-badge"]');
  const { fixed_point: fit } = await pageReport(page);
  const clipping = fit.layers.filter((l) => l.clipped > 0);
  assert.deepEqual(clipping.map((l) => l.node), ['/clip/Conv']);
  assert.ok(clipping[0].clipped > 0 && clipping[0].clipped < 0.0005, `${clipping[0].clipped}`);
  // The core's findings say the share as the page does.
  assert.match(fit.findings.find((f) => f.node === '/clip/Conv').message, /< 0\.1 % of its weights/);
  assert.doesNotMatch(JSON.stringify(fit.findings), /\b0\.0 %/);
  const highlighted = () => page.$$eval('[data-testid="graph-node"].hl', (ns) => ns.map((n) => n.dataset.node).sort());
  // The badge, the node's accessible name and its properties: never "0.0 %" for a share above 0.
  assert.equal(await page.textContent('[data-testid="fit-badge"][data-node="/clip/Conv"]'), 'clips < 0.1 %');
  assert.match(await page.getAttribute('[data-testid="graph-node"][data-node="/clip/Conv"]', 'aria-label'), /, FPQ: clips < 0\.1 %$/);
  await page.click('[data-testid="graph-node"][data-node="/clip/Conv"]');
  assert.match(await page.textContent('[data-testid="node-props"]'), /Fixed point \(FPQ\)clips < 0\.1 % \(error \d\.\d %/);
  // Every finding of the report is listed, in its words.
  const findings = () => page.$$eval('[data-testid="fixed-point-finding"] .message', (ms) => ms.map((m) => m.textContent));
  assert.deepEqual(await findings(), fit.findings.map((f) => f.message));
  assert.match(await page.textContent('[data-testid="fixed-point-summary"]'), new RegExp(`; ${fit.findings.length} findings in the report, listed below\\.$`));
  // One about a node leads to that node; one about a graph input to the nodes that read it.
  const about = (node) => `[data-testid="fixed-point-finding"][data-node="${node}"] button`;
  await page.click(about('/clip/Conv'));
  await page.waitForFunction(() => document.querySelector('[data-testid="graph-node"].hl'));
  assert.deepEqual(await highlighted(), ['/clip/Conv']);
  assert.ok((await page.textContent('#props-heading')).includes('/clip/Conv'));
  const input = fit.findings.find((f) => f.rule === 'input-range');
  assert.equal(input.node, 'x');
  await page.click('[data-testid="plan"]');  // elsewhere, so that the next highlight is seen anew
  await page.click(about('x'));
  await page.waitForFunction(() => document.querySelector('[data-testid="graph-node"].hl'));
  assert.deepEqual(await highlighted(), ['/clip/Conv'], 'the node reading input x');
  // "1 of 2 layers clip" leads to the layer that clips.
  assert.match(await page.textContent('[data-testid="fixed-point-summary"]'), /^FPQ: 1 of 2 layers clip, 0 more over the 10\.0 % error threshold; /);
  await page.click('[data-testid="graph-node"][data-node="/fit/Conv"]');
  await page.click('[data-testid="fixed-point-count"][data-kind="clip"]');
  await page.waitForFunction(() => document.querySelector('#props-heading').textContent.includes('/clip/Conv'));
  assert.deepEqual(await highlighted(), clipping.map((l) => l.node));
  assert.equal(await page.$('[data-testid="fixed-point-count"][data-kind="over"]'), null, 'a count of 0 leads nowhere');
  // No scheme: no summary, no findings.
  await page.selectOption('[data-testid="fixed-point-select"]', '');
  await waitDone(page);
  assert.ok(await page.isHidden('[data-testid="fixed-point-summary"]'));
  assert.deepEqual(await findings(), []);
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

// --- Snapped kernels' weights ----------------------------------------------------------

test('the snapped-kernels switch: each snapped row and node says what became of the trained kernel, and the download is the CLI\'s', async () => {
  const { page, context, consoleErrors } = await openPage();
  const model = fixture('odd_convs.onnx');
  await page.setInputFiles('[data-testid="file-input"]', model);
  await waitDone(page);
  await everyNode(page);
  const snapped = async () => page.$$eval('[data-testid="match-row"]', (rs) => Object.fromEntries(rs
    .filter((r) => r.querySelector('.weights')).map((r) => [r.dataset.matchId, r.querySelector('.weights').textContent])));
  const { bytes: reinitBytes, name: reinitName } = await downloadBytes(page, 'download');
  const reinit = await checkAgainstCli(page, model, ['--snap-weights', 'reinit']);
  assert.equal(reinitName, 'odd_convs.lattice.onnx');
  const ids = reinit.report.matches.filter((m) => m.weights).map((m) => m.id);
  assert.ok(ids.length >= 2, ids.join(', '));
  assert.deepEqual(await snapped(), Object.fromEntries(ids.map((id) => [id, 'weights re-initialised (nothing of the trained kernel kept)'])));

  await page.selectOption('[data-testid="snap-weights"]', 'transfer');
  await waitDone(page);
  const transfer = await checkAgainstCli(page, model, ['--snap-weights', 'transfer']);
  assert.equal(transfer.name, 'odd_convs.lattice.transfer.onnx');
  const { bytes: transferBytes } = await downloadBytes(page, 'download');
  assert.ok(!transferBytes.equals(reinitBytes), 'the transferred model differs from the re-initialised one');
  // The share each row states is the report's kept_energy: the 5×5's centre keeps part of it, a
  // 1×1 embedded into a 3×3 all of it.
  const kept = Object.fromEntries(transfer.report.matches.filter((m) => m.weights).map((m) => [m.id, m.weights.kept_energy]));
  assert.deepEqual(Object.keys(kept), ids);
  const rows = await snapped();
  for (const id of ids) {
    const share = kept[id] === 1 ? '100' : (100 * kept[id]).toFixed(1);
    assert.equal(rows[id], `weights transferred: ${share} % of the kernel's energy kept`, id);
  }
  assert.ok(Object.values(kept).some((k) => k > 0 && k < 1) && Object.values(kept).includes(1), JSON.stringify(kept));
  // The node's properties say it too, in the converted model.
  const c5 = transfer.report.matches.find((m) => m.id === 'LatticeConv2dPattern:/c5/Conv');
  await graphReady(page);
  await page.click(`[data-testid="graph-node"][data-node="${c5.new_nodes[0]}"]`);
  assert.ok((await page.textContent('[data-testid="node-props"]')).includes(`weights transferred: ${(100 * c5.weights.kept_energy).toFixed(1)} % of the kernel's energy kept`));

  // Back to re-initialisation: the first model's bytes again.
  await page.selectOption('[data-testid="snap-weights"]', 'reinit');
  await waitDone(page);
  assert.ok((await downloadBytes(page, 'download')).bytes.equals(reinitBytes));
  assert.match(Object.values(await snapped())[0], /^weights re-initialised/);
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

// --- The check ------------------------------------------------------------------------

// Presses "Check" (layer by layer if asked) and waits for the result panel; returns its dataset.
async function runCheckInPage(page, { layerwise = false } = {}) {
  if (layerwise) await page.check('[data-testid="check-layerwise"]');
  await page.click('[data-testid="check"]');
  await page.waitForFunction(() => {
    const box = document.querySelector('[data-testid="check-result"]');
    return !box.hidden && box.textContent.length > 0;
  }, null, { timeout: 300_000, polling: 250 });
  return page.$eval('[data-testid="check-result"]', (box) => ({ ...box.dataset, text: box.textContent }));
}

test('the check runs in the page: the fold-only twin agrees, the converted model runs, the report carries both', async () => {
  const { page, context, consoleErrors } = await openPage();
  await page.click('[data-testid="sample-model"]');
  const done = await waitDone(page);
  const result = await runCheckInPage(page);
  assert.equal(result.foldPass, 'true', result.text);
  assert.equal(result.convertedRuns, 'true', result.text);
  // The conversion's own summary stays on the status's first line; the check's is the second.
  assert.deepEqual((await statusLines(page)).map((l, i) => (i ? l.replace(/\d+/, 'N') : l)), [done, 'Checked in N ms.']);
  assert.match(result.text, /folding changed no output by more than/);
  assert.match(result.text, /the Lattice rewrites change output 'output' by up to [\d.e-]+ \(\d+ % of its range\): expected; repair it from calibration data, or retrain/);
  assert.match(result.text, /onnxruntime-web 1\.\d+\.\d+/);
  const { check } = await pageReport(page);
  assert.equal(check.fold_only.schema, 'onnx-lattice-check/1');
  assert.equal(check.fold_only.pass, true);
  assert.equal(check.converted.pass, false);
  // The same seed and the same inputs as the Node CLI's check: the two runtimes agree on the input model.
  const nodeCheck = await api.check(join(SITE, 'sample.onnx'), join(SITE, 'sample.onnx'));
  assert.equal(nodeCheck.runtime.name, 'onnxruntime-node');
  assert.deepEqual(check.converted.outputs[0].stats_original.min.toFixed(4), nodeCheck.outputs[0].stats_original.min.toFixed(4));

  // Layer by layer: each applied rewrite's plan row says how much it changed at its output.
  const layered = await runCheckInPage(page, { layerwise: true });
  assert.equal(layered.foldPass, 'true');
  const changes = await page.$$eval('[data-testid="match-row"] .check-change', (rows) => rows.map((r) => r.textContent));
  assert.ok(changes.length > 0, 'per-rewrite figures in the plan');
  for (const c of changes) assert.match(c, /^Check: changes its output '.+' by up to [\d.e-]+ \([\d.e-]+ already entering it\)$/);
  // A second check replaces the check's line, never the conversion's.
  assert.deepEqual((await statusLines(page)).map((l, i) => (i ? l.replace(/\d+/, 'N') : l)), [done, 'Checked in N ms.']);
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

// Served with COOP and COEP (scripts/serve.mjs) the page is cross-origin isolated, and the check
// worker runs onnxruntime-web on a thread a core: the runtime's threads are workers of its own
// script. From a host that does not send the headers it runs on one thread, and still checks.
test('side by side after a layer-by-layer check: each tensor both models compute is coloured by its change as a share of its range, as the check\'s JSON says, in both panes; the properties give the figures', async () => {
  const { page, context, consoleErrors } = await sampleSideBySide();
  await runCheckInPage(page, { layerwise: true });
  await page.waitForSelector('[data-testid="graph-converted"][data-ready="true"] [data-distance-step]', { timeout: 60_000 });
  await page.waitForSelector('[data-testid="graph"][data-ready="true"] [data-distance-step]', { timeout: 60_000 });
  const { check } = await pageReport(page);
  const layers = check.converted.layers;
  assert.ok(layers.length > 0 && layers.every((l) => typeof l.range === 'number'));
  // The scale's steps, powers of ten of the share (docs/page.md), read from the JSON's own figures.
  const stepOf = (l) => {
    const s = l.range > 0 ? l.max_abs / l.range : l.max_abs > 0 ? Infinity : 0;
    return [1e-3, 1e-2, 1e-1, 1, Infinity].findIndex((below) => s < below);
  };
  const legend = await page.$$eval('[data-testid="distance-scale"] .distance-step', (ss) => ss.map((s) => s.dataset.fill));
  assert.equal(legend.length, 5);
  const views = { input: api.describe(readFileSync(join(SITE, 'sample.onnx'))), converted: api.describe(cli(join(SITE, 'sample.onnx')).bytes) };
  const steps = new Set();
  for (const [view, testid] of [['input', 'graph'], ['converted', 'graph-converted']]) {
    const shown = await page.$$eval(`[data-testid="${testid}"] [data-testid="graph-node"]`, (gs) => Object.fromEntries(gs.map((g) => [g.dataset.node,
      { step: g.dataset.distanceStep, fill: g.querySelector('.distance')?.getAttribute('fill') ?? null }])));
    // The node computing each tensor wears the step of its largest change; every other node none.
    const want = {};
    for (const node of views[view].nodes) {
      const mine = layers.filter((l) => node.outputs.some((o) => o.name === l.tensor));
      want[node.name] = mine.length ? Math.max(...mine.map(stepOf)) : null;
    }
    for (const [name, step] of Object.entries(want)) {
      assert.equal(shown[name].step === undefined ? null : Number(shown[name].step), step, `${view} ${name}`);
      assert.equal(shown[name].fill, step === null ? null : legend[step], `${view} ${name}: the legend's colour`);
      if (step !== null) steps.add(step);
    }
    assert.ok(Object.values(want).filter((s) => s !== null).length > 0, view);
  }
  assert.ok(steps.size >= 2, `more than one step of the scale shows: ${[...steps]}`);
  // The properties give the node's figure and its counterparts'.
  const moved = layers.find((l) => l.match_id && stepOf(l) > 0);
  await clickNode(page, 'graph-converted', moved.node);
  const figures = await page.textContent('[data-testid="distance-figures"]');
  assert.ok(figures.includes(`This node: '${moved.tensor}' moved by up to ${moved.max_abs.toPrecision(2)}`), figures);
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

test('cross-origin isolated, the check runs onnxruntime-web on every core; without the headers, on one thread', async () => {
  const plain = await serve(SITE, 0, { isolated: false });
  try {
    for (const [url, isolated] of [[base, true], [`http://127.0.0.1:${plain.address().port}/`, false]]) {
      const context = await browser.newContext();
      const page = await context.newPage();
      const threads = [];
      page.on('worker', (w) => { if (w.url().endsWith('/ort/ort.wasm.bundle.min.mjs')) threads.push(w.url()); });
      await page.goto(url);
      const [crossOriginIsolated, cores] = await page.evaluate(() => [self.crossOriginIsolated, navigator.hardwareConcurrency]);
      assert.equal(crossOriginIsolated, isolated);
      await page.click('[data-testid="sample-model"]');
      await waitDone(page);
      const result = await runCheckInPage(page);
      assert.equal(result.foldPass, 'true', result.text);
      assert.equal(threads.length > 0, isolated && cores > 1, `${isolated ? '' : 'not '}isolated, ${cores} cores: ${threads.length} runtime threads`);
      await context.close();
    }
  } finally {
    plain.close();
  }
});

test('the FPQ toggle: the converted model against its FPQ twin, the twin to download, its module loaded only then', async () => {
  const { page, context, consoleErrors } = await openPage();
  const requested = [];
  page.on('request', (r) => requested.push(new URL(r.url()).pathname));
  await page.click('[data-testid="sample-model"]');
  await waitDone(page);
  await runCheckInPage(page);
  assert.ok(!requested.some((p) => p.includes('onnx_lattice_fpq')), 'no FPQ module without the toggle');
  await page.check('[data-testid="check-fpq"]');
  const result = await runCheckInPage(page, { layerwise: true });
  assert.equal(result.foldPass, 'true', result.text);
  assert.ok(requested.some((p) => p.endsWith('onnx_lattice_fpq.wasm')), 'the FPQ module loaded with the toggle');
  assert.match(result.text, /FPQ's fixed point moves output 'output' by up to [\d.e-]+/);
  assert.match(result.text, /FPQ twin: the first tensor where the fixed point parts from the float is '/);
  const { check } = await pageReport(page);
  assert.equal(check.fpq.schema, 'onnx-lattice-check/1');
  assert.equal(check.fpq.simulation.source, 'FPGA-UG-02228 Table 4.1');
  // The download is the Node API's twin of the page's converted model.
  const converted = await downloadBytes(page, 'download');
  const twin = await downloadBytes(page, 'download-fpq-twin');
  assert.ok(twin.name.endsWith('.fpq-twin.onnx'), twin.name);
  assert.ok(twin.bytes.equals(Buffer.from((await api.fpqTwin(converted.bytes)).model)));
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

test('the check of ResNet-50 in the page', { skip: !existsSync(join(ZOO, 'resnet50.onnx')) && 'no zoo' }, async () => {
  const { page, context } = await openPage();
  await page.setInputFiles('[data-testid="file-input"]', join(ZOO, 'resnet50.onnx'));
  await waitDone(page);
  const started = Date.now();
  const result = await runCheckInPage(page);
  assert.equal(result.foldPass, 'true', result.text);
  assert.equal(result.convertedRuns, 'true', result.text);
  console.log(`# ResNet-50 checked in the page (fold-only twin and converted model) in ${Date.now() - started} ms`);
  await context.close();
});

test('an external-data model is checked in the page with its data file', async () => {
  const ext = join(dir, 'check-ext');
  const made = spawnSync('/usr/bin/python3', [join(FIXTURES, 'make_external.py'), FIXTURES, ext], { encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
  const model = join(ext, 'one/resnet_stem/resnet_stem.onnx');
  const { page, context } = await openPage();
  await page.setInputFiles('[data-testid="file-input"]', [model, `${model}.data`]);
  assert.match(await waitDone(page), /^Done/);
  assert.ok(await page.isVisible('[data-testid="download-data"]'), 'the converted model has a data file too');
  const result = await runCheckInPage(page);
  assert.equal(result.foldPass, 'true', result.text);
  assert.equal(result.convertedRuns, 'true', result.text);
  await context.close();
});

test('a dynamic batch is checked at 1 without asking; the report and the page say the sizes fed', async () => {
  const { page, context, consoleErrors } = await openPage();
  await page.setInputFiles('[data-testid="file-input"]', fixture('yolo_dynamic_batch.onnx'));
  await waitDone(page);
  const result = await runCheckInPage(page);
  assert.equal(result.foldPass, 'true', result.text);
  assert.equal(result.convertedRuns, 'true', result.text);
  assert.match(result.text, /fed input 1×3×64×64, uniform in \[-1, 1\), seed 0/);
  const { check } = await pageReport(page);
  assert.deepEqual(check.converted.inputs.batch_shapes, { input: [1, 3, 64, 64] });
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

// Fills the size prompt's fields with `sizes` (all of them, in order) and checks with them.
async function checkAtSizes(page, sizes) {
  const fields = await page.$$('[data-testid="check-result"] [data-testid="check-dimension"]');
  assert.equal(fields.length, sizes.length);
  for (const [i, field] of fields.entries()) await field.fill(String(sizes[i]));
  await page.click('[data-testid="check-result"] button[type="submit"]');
  await page.waitForFunction(() => {
    const box = document.querySelector('[data-testid="check-result"]');
    return box.dataset.verdict !== undefined || box.dataset.refused !== undefined || /could not run/.test(box.textContent);
  }, null, { timeout: 300_000, polling: 250 });
  return page.$eval('[data-testid="check-result"]', (box) => ({ ...box.dataset, text: box.textContent }));
}

test('a dynamic height and width are asked for, from the size the model suggests; a 1×1 check that fails says so, huge sizes are refused in words', async () => {
  const { page, context, consoleErrors } = await openPage();
  await page.setInputFiles('[data-testid="file-input"]', fixture('detector_dynamic_hw.onnx'));
  await waitDone(page);
  const asked = await runCheckInPage(page);
  assert.equal(asked.verdict, undefined, 'nothing ran yet');
  assert.match(asked.text, /input, axis 2 \(H\).*input, axis 3 \(W\)/);
  assert.match(asked.text, /Suggested for input: 128 on each side: the model's deepest stride is 32/);
  const values = await page.$$eval('[data-testid="check-result"] [data-testid="check-dimension"]', (fs) => fs.map((f) => f.value));
  assert.deepEqual(values, ['128', '128'], 'only H and W are asked for, starting at the suggestion');
  const proposed = await checkAtSizes(page, [128, 128]);
  assert.equal(proposed.verdict, 'pass', proposed.text);
  assert.match(proposed.text, /the Lattice rewrites change output 'output' by up to/);
  assert.match(proposed.text, /fed input 1×3×128×128/);
  assert.match(await page.textContent('[data-testid="status"]'), /Checked in \d+ ms/);
  // At 1×1 the asymmetric padding's conv has nothing to read: the converted model fails to run,
  // and the status says the check failed rather than "Checked in".
  await runCheckInPage(page);
  const tiny = await checkAtSizes(page, [1, 1]);
  assert.equal(tiny.convertedRuns, 'false', tiny.text);
  assert.match((await statusLines(page))[1], /^The check failed: the candidate model failed to run in onnxruntime-web/);
  // Sizes no browser holds: refused before the runtime loads, with the bytes, never a wrapped figure.
  for (const size of [20000, 2 ** 40]) {
    await runCheckInPage(page);
    const huge = await checkAtSizes(page, [size, size]);
    assert.equal(huge.refused, 'true', huge.text);
    assert.match(huge.text, /too large to check in the browser: .* would need (about )?[\d.e+]+ (GiB|TiB|PiB)/);
    assert.doesNotMatch(huge.text, /18446744073709551616|Invalid typed array length/);
  }
  assert.deepEqual(consoleErrors.filter((e) => !/OrtRun|Invalid input shape/.test(e)), []);
  await context.close();
});

// How far the document reaches past the viewport's width, and axe's serious or critical findings.
async function phoneState(page) {
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  await page.addScriptTag({ path: require.resolve('axe-core/axe.min.js') });
  const { violations } = await page.evaluate(() => window.axe.run(document));
  return { overflow, bad: violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.help}`) };
}

test('on a 390×844 phone, the size prompt and the check\'s result fit the width (no horizontal scroll), and axe finds nothing serious', async () => {
  // bypassCSP: axe is injected as an inline script, which the page's own policy refuses.
  const { page, context } = await openPage({ viewport: { width: 390, height: 844 }, hasTouch: true, bypassCSP: true });
  await page.setInputFiles('[data-testid="file-input"]', fixture('detector_dynamic_hw.onnx'));
  await waitDone(page);
  const asked = await runCheckInPage(page, { layerwise: true });
  assert.match(asked.text, /dynamic dimensions/);
  assert.deepEqual(await phoneState(page), { overflow: 0, bad: [] }, 'with the size prompt');
  const result = await checkAtSizes(page, [128, 128]);
  assert.equal(result.verdict, 'pass', result.text);
  assert.deepEqual(await phoneState(page), { overflow: 0, bad: [] }, 'with the check\'s result');
  await context.close();
});

// The digits CNN trained at set-up (make_trained.py) converted in a new page, and the PNG files of
// one of its sample folders, in name order.
async function trainedInPage(folder, url = base) {
  const model = join(TRAINED, 'digits.onnx');
  const images = readdirSync(join(TRAINED, folder)).sort().map((f) => join(TRAINED, folder, f));
  const opened = await openPage({}, url);
  await opened.page.setInputFiles('[data-testid="file-input"]', model);
  await waitDone(opened.page);
  return { model, images, ...opened };
}

test('samples picked while the samples panel\'s script still loads are taken when it comes', async () => {
  const { page, context, consoleErrors } = await openPage();
  // The panel's script held back until the samples are picked: their change event comes first.
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  await page.route('**/data-picker.js', async (route) => { await held; await route.continue(); });
  await page.setInputFiles('[data-testid="file-input"]', join(TRAINED, 'digits.onnx'));
  await page.waitForSelector('[data-testid="data-input"]', { state: 'attached' });
  await page.setInputFiles('[data-testid="data-input"]', join(TRAINED, 'heldout.npz'));
  release();
  await waitDone(page);
  await page.waitForFunction(() => document.querySelector('[data-testid="data-chosen"]').textContent !== 'No samples: random inputs.', null, { timeout: 30_000 });
  assert.equal(await page.textContent('[data-testid="data-chosen"]'), 'Samples: heldout.npz.');
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

test('the page checks a trained model on picked images, with the Lattice scale, as the Node CLI does on the same samples', async () => {
  const { model, images, page, context, consoleErrors } = await trainedInPage('heldout_png');
  assert.ok(await page.isHidden('[data-testid="image-options"]'), 'no image choices without images');
  await page.setInputFiles('[data-testid="data-input"]', images);
  assert.equal(await page.textContent('[data-testid="data-chosen"]'), `Samples: ${images.length} images.`);
  assert.ok(await page.isVisible('[data-testid="image-options"]'));
  assert.ok(await page.isHidden('[data-testid="image-order"]'), 'a one-channel input takes the luma: no colour order to choose');
  await page.selectOption('[data-testid="image-scale"]', '0,2');
  const result = await runCheckInPage(page);
  assert.equal(result.foldPass, 'true', result.text);
  const { check } = await pageReport(page);
  const logits = check.converted.outputs[0];
  assert.equal(check.converted.inputs.samples, images.length);
  assert.deepEqual(check.converted.inputs.preprocessing, { resize: 'stretch', scale: '0,2', order: 'rgb', channels: 1, layout: 'nchw', height: 32, width: 32 });
  // The Node CLI's figure on the same folder, and on the same samples as numpy wrote them.
  const converted = join(dir, 'digits.lattice.onnx');
  assert.equal(CLIS.node(['convert', model, '-o', converted, '--quiet']).status, 0);
  const node = await api.check(model, converted, { inputs: join(TRAINED, 'heldout_png'), preprocessing: { scale: '0,2' } });
  assert.equal(logits.top1_agreement, node.outputs[0].top1_agreement);
  assert.ok(logits.top1_agreement < 0.5, `the default conversion decides differently (${logits.top1_agreement})`);
  assert.match(result.text, new RegExp(`output 'logits' decides as the original on ${(100 * logits.top1_agreement).toFixed(1)} % of ${images.length} samples of ${images.length} images`));
  assert.match(result.text, /samples of 64 images in 2 batches like image 32×1×32×32; images stretched to 32×32, scaled to 0,2, one channel/);

  // The images with their labels picked beside them under a name of their own: both accuracies.
  const classes = join(dir, 'digit_classes.npy');
  const py = spawnSync('/usr/bin/python3', ['-c', 'import numpy, sys; numpy.save(sys.argv[1], numpy.array([int(a) for a in sys.argv[2:]], numpy.int64))',
    classes, ...images.map((f) => basename(f).slice(5, -4))]);
  assert.equal(py.status, 0, py.stderr);
  await page.setInputFiles('[data-testid="data-input"]', [...images, classes]);
  await runCheckInPage(page);
  const labelled = (await pageReport(page)).check;
  assert.equal(labelled.converted.inputs.labels, images.length);
  const nodeLabelled = await api.check(model, converted, { inputs: join(TRAINED, 'heldout_png'), labels: classes, preprocessing: { scale: '0,2' } });
  assert.deepEqual(labelled.converted.outputs[0].accuracy, nodeLabelled.outputs[0].accuracy);
  assert.ok(labelled.converted.outputs[0].accuracy.original > 0.95);

  // An .npz with labels: both accuracies, the Node API's.
  await page.click('[data-testid="data-clear"]');
  assert.equal(await page.textContent('[data-testid="data-chosen"]'), 'No samples: random inputs.');
  await page.setInputFiles('[data-testid="data-input"]', join(TRAINED, 'heldout.npz'));
  await runCheckInPage(page);
  const npz = (await pageReport(page)).check.converted.outputs[0];
  const nodeNpz = (await api.check(model, converted, { inputs: join(TRAINED, 'heldout.npz') })).outputs[0];
  assert.equal(npz.top1_agreement, nodeNpz.top1_agreement);
  assert.deepEqual(npz.accuracy, nodeNpz.accuracy);
  assert.ok(npz.accuracy.original > 0.97);

  // A file the browser cannot decode is named, and nothing runs.
  const fake = join(dir, 'fake.png');
  writeFileSync(fake, 'not an image');
  await page.setInputFiles('[data-testid="data-input"]', fake);
  const bad = await runCheckInPage(page);
  assert.equal(bad.foldPass, undefined);
  assert.match(bad.text, /The check could not run: fake\.png: this browser cannot decode the image/);
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

// The check's tables in the page: caption, column heads and cells, per table.
const checkTables = (page) => page.$$eval('[data-testid="check-result"] table', (tables) => tables.map((t) => ({
  caption: t.caption.textContent, head: [...t.tHead.rows[0].cells].map((c) => c.textContent),
  rows: [...t.tBodies[0].rows].map((r) => [...r.cells].map((c) => c.textContent)),
})));

test('the page shows each output\'s task figures (a map, anchors, a sequence, classes) as the Node API computes them', async () => {
  const model = join(FIXTURES, 'tasks/task_outputs.onnx'), samples = join(FIXTURES, 'tasks/task_samples.npy');
  const { page, context, consoleErrors } = await openPage();
  await page.setInputFiles('[data-testid="file-input"]', model);
  await waitDone(page);
  // On random inputs the figures are there, and marked: they say nothing of the task.
  let result = await runCheckInPage(page);
  let converted = (await checkTables(page)).find((t) => t.caption.startsWith('Converted model'));
  assert.ok(converted.head.includes('task (random inputs)'), converted.head.join(' | '));
  assert.match(result.text, /output 'maps' marks the regions the original marks \(pixels above 0\.3\) with a mean IoU of [\d.]+ on 1 random input; .*; random inputs say nothing of the task/);
  // On samples: the Node API's figures for the CLI's conversion (the page's, byte for byte).
  await page.setInputFiles('[data-testid="data-input"]', samples);
  result = await runCheckInPage(page);
  const { check } = await pageReport(page);
  const cliConverted = join(dir, 'task_outputs.lattice.onnx');
  assert.equal(CLIS.node(['convert', model, '-o', cliConverted, '--quiet']).status, 0);
  const node = await api.check(model, cliConverted, { inputs: samples });
  const { taskCell } = await import('../../wasm/shared/check.mjs');
  converted = (await checkTables(page)).find((t) => t.caption.startsWith('Converted model'));
  const column = converted.head.indexOf('task');
  assert.ok(column > 0, converted.head.join(' | '));
  for (const o of node.outputs) {
    const mine = check.converted.outputs.find((x) => x.name === o.name);
    // The decisions are the same; a mean probability may differ in its last bits between the runtimes.
    const { original_confidence: a, ...decided } = mine.task ?? {}, { original_confidence: b, ...expected } = o.task ?? {};
    assert.deepEqual(decided, expected, o.name);
    assert.ok(a === b || Math.abs(a - b) < 1e-6, `${o.name}: confidence ${a} against ${b}`);
    assert.equal(converted.rows.find((r) => r[0] === o.name)[column], taskCell(o.task), o.name);
  }
  assert.deepEqual(['maps', 'maps_nhwc', 'scores', 'probs', 'ctc', 'logits'].map((n) => check.converted.outputs.find((o) => o.name === n).task.kind),
    ['map', 'map', 'anchors', 'anchors', 'sequence', 'classes']);
  assert.match(result.text, /output 'ctc' reads the same sequence as the original on [\d.]+ % of 32 samples of task_samples\.npy \(greedy CTC, blank 0\)/);
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

test('the page repairs a trained model from picked images and gives the Node API\'s repair of the same samples', async () => {
  const { model, images, page, context, consoleErrors } = await trainedInPage('calibration_png');
  await page.setInputFiles('[data-testid="data-input"]', images);
  await page.selectOption('[data-testid="image-scale"]', '0,2');
  await page.click('[data-testid="repair"]');
  await page.waitForFunction(() => document.querySelector('[data-testid="check-result"]').dataset.foldPass !== undefined ||
    document.querySelector('[data-testid="check-result"] .error'), null, { timeout: 300_000, polling: 250 });
  const text = await page.textContent('[data-testid="check-result"]');
  assert.match(text, /Repair: \d+ layers refitted on 96 samples of 128 images \[0, 96\)/, text);
  assert.match(text, /after the repair, output 'logits' differs from the original's by up to [\d.e+-]+ \(\d+ % of its range\): the agreement above, on 32 held-out samples the repair did not fit, is what counts/, text);
  assert.match(text, /The check below runs it on 32 held-out samples the fit did not see\./, text);
  assert.doesNotMatch(text, /retrain|check it on samples the repair did not fit/, text);
  const { repair, check } = await pageReport(page);
  assert.equal(check.converted.inputs.samples, 32, 'checked on the quarter the fit did not see');
  assert.ok(check.converted.outputs[0].top1_agreement > 0.9, `agreement on held-out samples ${check.converted.outputs[0].top1_agreement}`);
  // Every model on the same 32 samples, as the Node CLI's table: the converted one as it was too.
  const rows = await page.$$eval('[data-testid="check-models"] tbody tr', (trs) => trs.map((tr) => [tr.dataset.model, ...[...tr.cells].slice(1).map((td) => td.textContent)]));
  const pct = (x) => `${(100 * x).toFixed(1)} %`;
  assert.deepEqual(rows, [
    ['original', '—'],
    ['converted', pct(check.unrepaired.outputs[0].top1_agreement)],
    ['repaired', pct(check.converted.outputs[0].top1_agreement)],
  ]);
  assert.equal(check.unrepaired.inputs.samples, 32);
  assert.ok(check.unrepaired.outputs[0].top1_agreement < 0.5, 'the conversion alone fails the task the repair restores');
  assert.ok(await page.$$eval('[data-testid="match-row"] .repair-change', (rows) => rows.length) > 0, 'refitted layers in the plan');
  const { path, name } = await downloadFile(page, 'download');
  assert.equal(name, 'digits.lattice.repaired.onnx');
  // The Node API on the same 96 samples, as numpy wrote them: the same layers, the same decisions
  // on the 400 held-out samples (the two runtimes' float rounding may differ in the last bits).
  const converted = join(dir, 'digits.lattice.onnx');
  assert.equal(CLIS.node(['convert', model, '-o', converted, '--quiet']).status, 0);
  const fit96 = numpyValues(join(TRAINED, 'calibration.npy'), Float32Array, dir).slice(0, 96 * 1024);
  const node = await api.repair(model, converted, { calibration: { image: { data: fit96, dims: [96, 1, 32, 32] } } });
  assert.deepEqual(repair.layers.map((l) => [l.node, l.refitted]), node.report.layers.map((l) => [l.node, l.refitted]));
  const heldout = join(TRAINED, 'heldout.npz');
  const fromPage = await api.check(model, path, { inputs: heldout });
  writeFileSync(join(dir, 'node-repaired.onnx'), node.model);
  const fromNode = await api.check(model, join(dir, 'node-repaired.onnx'), { inputs: heldout });
  const [a, b] = [fromPage.outputs[0], fromNode.outputs[0]];
  assert.ok(Math.abs(a.accuracy.candidate - b.accuracy.candidate) <= 1 / 400, `${a.accuracy.candidate} against ${b.accuracy.candidate}`);
  // 96 samples fitted (the rest checks): a repair, if a weaker one than on 128 (repair.test.mjs).
  assert.ok(a.accuracy.candidate > 0.9 && a.accuracy.candidate > 10 * (1 - a.accuracy.original), `held-out accuracy ${a.accuracy.candidate} against ${a.accuracy.original}`);
  const same = await api.check(join(dir, 'node-repaired.onnx'), path, { inputs: heldout, rtol: 1e-3, atol: 1e-3 });
  assert.equal(same.pass, true, `the page's repaired model computes the Node one's logits within 1e-3 (max |Δ| ${same.outputs[0].max_abs})`);
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

// Cross-origin isolated, the repair's fit runs on every core (onnx_lattice_fit_mt, whose pthreads
// are workers of its own script); from a host without the headers, in the one-thread module. The
// fit gives the same bits on any number of threads (a Catch2 test): the same layers refitted.
test('Cancel stops a repair between its layers\' fits and leaves the page usable: nothing repaired, a check then runs', async () => {
  const { images, page, context, consoleErrors } = await trainedInPage('calibration_png');
  await page.setInputFiles('[data-testid="data-input"]', images);
  await page.click('[data-testid="repair"]');
  // Cancelled while it fits its first layer.
  await page.waitForFunction(() => /^fitting /.test(document.getElementById('progress-stage').textContent), null, { timeout: 120_000, polling: 50 });
  const checker = page.workers().find((w) => /check-worker\.js$/.test(w.url()));
  assert.ok(checker, 'the repair runs in the check\'s worker');
  const ended = new Promise((resolve) => checker.once('close', resolve));
  await page.click('[data-testid="check-cancel"]');
  await page.waitForFunction(() => /cancelled/.test(document.querySelector('[data-testid="status"]').textContent), null, { timeout: 2_000, polling: 50 });
  // Its worker is ended at once, not after the layers left.
  await Promise.race([ended, new Promise((_, reject) => setTimeout(() => reject(new Error('the check worker still runs')), 2_000))]);
  assert.equal(await page.isVisible('[data-testid="progress"]'), false);
  assert.equal(await page.isVisible('[data-testid="check-cancel"]'), false);
  assert.equal(await page.evaluate(() => document.activeElement.dataset.testid), 'repair');
  // Nothing of the repair: the download is the converted model, the report has no repair.
  const { name } = await downloadFile(page, 'download');
  assert.equal(name, 'digits.lattice.onnx');
  const report = await pageReport(page);
  assert.equal(report.repair, undefined);
  assert.equal(await page.$$eval('[data-testid="match-row"] .repair-change', (rows) => rows.length), 0);
  // The page is usable: the controls are back and a check runs to its end.
  for (const id of ['check', 'repair', 'convert', 'target-select']) assert.equal(await page.isEnabled(`[data-testid="${id}"]`), true, id);
  await page.click('[data-testid="check"]');
  await page.waitForFunction(() => document.querySelector('[data-testid="check-result"]').dataset.foldPass !== undefined, null, { timeout: 120_000, polling: 250 });
  assert.match(await page.textContent('[data-testid="status"]'), /Checked/);
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

test('side by side after a layer-by-layer repair: each tensor shows its change before the repair and after it, as the check\'s JSON says', async () => {
  const { images, page, context, consoleErrors } = await trainedInPage('calibration_png');
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.setInputFiles('[data-testid="data-input"]', images);
  await page.selectOption('[data-testid="image-scale"]', '0,2');
  await page.check('[data-testid="check-layerwise"]');
  await sideBySide(page);
  await page.click('[data-testid="repair"]');
  await page.waitForFunction(() => document.querySelector('[data-testid="check-result"]').dataset.foldPass !== undefined, null, { timeout: 300_000, polling: 250 });
  await page.waitForSelector('[data-testid="graph-converted"][data-ready="true"] [data-distance-step-before]', { timeout: 60_000 });
  const { check } = await pageReport(page);
  const share = (l) => (l.range > 0 ? l.max_abs / l.range : l.max_abs > 0 ? Infinity : 0);
  const after = new Map(check.converted.layers.map((l) => [l.tensor, l])), before = new Map(check.unrepaired.layers.map((l) => [l.tensor, l]));
  const shown = await page.$$eval('[data-testid="graph-converted"] [data-distance]', (gs) => gs.map((g) => ({
    name: g.dataset.node, after: Number(g.dataset.distance), before: g.dataset.distanceBefore === undefined ? null : Number(g.dataset.distanceBefore),
    strips: [...g.querySelectorAll('.distance')].map((r) => r.getAttribute('fill')), label: g.getAttribute('aria-label'),
  })));
  let improved = 0;
  for (const node of shown) {
    const layer = check.converted.layers.find((l) => l.node === node.name);
    if (!layer) continue;
    assert.equal(node.after, share(after.get(layer.tensor)), node.name);
    assert.equal(node.before, share(before.get(layer.tensor)), node.name);
    assert.equal(node.strips.length, 2, `${node.name}: before and after`);
    assert.match(node.label, /before the repair/);
    if (node.after < node.before) improved += 1;
  }
  assert.ok(improved > 0, 'the repair brought some tensor back');
  // The properties say both figures.
  const refitted = shown.find((n) => n.before !== null && n.after < n.before);
  await clickNode(page, 'graph-converted', refitted.name);
  assert.match(await page.textContent('[data-testid="distance-figures"]'), /This node: '[^']+' moved by up to [^;]+; before the repair /);
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

test('the page\'s repair fits on every core when cross-origin isolated, on one thread without the headers', async () => {
  const plain = await serve(SITE, 0, { isolated: false });
  try {
    const layers = [];
    for (const [url, isolated] of [[base, true], [`http://127.0.0.1:${plain.address().port}/`, false]]) {
      const { page, context, consoleErrors } = await trainedInPage('calibration_png', url);
      const loaded = [];
      page.on('request', (r) => loaded.push(new URL(r.url()).pathname));
      const workers = [];
      page.on('worker', (w) => workers.push(new URL(w.url()).pathname));
      await page.setInputFiles('[data-testid="data-input"]', join(TRAINED, 'calibration.npy'));
      await page.click('[data-testid="repair"]');
      await page.waitForFunction(() => document.querySelector('[data-testid="check-result"]').dataset.foldPass !== undefined ||
        document.querySelector('[data-testid="check-result"] .error'), null, { timeout: 300_000, polling: 250 });
      const text = await page.textContent('[data-testid="check-result"]');
      assert.match(text, /Repair: \d+ layers refitted on \d+ samples/, text);
      const cores = await page.evaluate(() => navigator.hardwareConcurrency);
      assert.equal(loaded.includes('/onnx_lattice_fit_mt.wasm'), isolated, loaded.join(' '));
      assert.equal(loaded.includes('/onnx_lattice_fit.wasm'), !isolated, loaded.join(' '));
      const fitThreads = workers.filter((w) => w === '/onnx_lattice_fit_mt.worker.js').length;
      assert.equal(fitThreads, isolated ? Math.min(4, cores) - 1 : 0, `${isolated ? '' : 'not '}isolated, ${cores} cores: ${workers}`);
      layers.push((await pageReport(page)).repair.layers.map((l) => [l.node, l.refitted]));
      assert.deepEqual(consoleErrors, []);
      await context.close();
    }
    assert.deepEqual(layers[0], layers[1]);
  } finally {
    plain.close();
  }
});

test('under FPQ a check with the twin on samples marks each measured output in the graph and its node\'s properties', async () => {
  const { page, context, consoleErrors } = await trainedInPage('calibration_png');
  await page.selectOption('[data-testid="fixed-point-select"]', 'fpq');
  await waitDone(page);
  await everyNode(page);
  await page.setInputFiles('[data-testid="data-input"]', join(TRAINED, 'heldout.npy'));
  await page.check('[data-testid="check-fpq"]');
  const result = await runCheckInPage(page);
  assert.equal(result.foldPass, 'true', result.text);
  const { check, fixed_point: fit } = await pageReport(page);
  assert.ok(check.fpq.activations.length > 0, 'the activations were measured');
  assert.deepEqual(fit.activations, check.fpq.activations, 'the report\'s fit carries them, as the Node CLI\'s does');
  // The graph is drawn again with a badge on each node whose output was measured.
  await page.check('[data-testid="graph-switch"] input[value="converted"]');
  const relu = check.fpq.activations.find((a) => /\/Relu_output_0$/.test(a.tensor));
  assert.ok(relu, JSON.stringify(check.fpq.activations.map((a) => a.tensor)));
  const node = relu.tensor.replace(/_output_0$/, '');
  await page.waitForSelector(`[data-testid="fit-badge"][data-node="${node}"]`, { timeout: 60_000 });
  const badge = await page.textContent(`[data-testid="fit-badge"][data-node="${node}"]`);
  assert.match(badge, relu.clipped > 0 ? /^out clips [<>\d. ]+ %$/ : /^out fits$/, badge);
  await page.click(`[data-testid="graph-node"][data-node="${node}"]`);
  const props = await page.textContent('[data-testid="node-props"]');
  assert.match(props, new RegExp(`output '${relu.tensor.replace(/[/.]/g, '\\$&')}' on the data: [<>\\d. ]+ % clip beyond ${relu.representation}, [<>\\d. ]+ % vanish, SQNR [\\d.e+-]+ dB`), props);
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

test('under FPQ the page\'s repair keeps no Conv bias and says which new weights leave FPQ\'s range, as the Node API does', async () => {
  const { model, page, context, consoleErrors } = await trainedInPage('calibration_png');
  await page.selectOption('[data-testid="fixed-point-select"]', 'fpq');
  await waitDone(page);
  await page.setInputFiles('[data-testid="data-input"]', join(TRAINED, 'calibration.npy'));
  await page.click('[data-testid="repair"]');
  await page.waitForFunction(() => document.querySelector('[data-testid="check-result"]').dataset.foldPass !== undefined ||
    document.querySelector('[data-testid="check-result"] .error'), null, { timeout: 300_000, polling: 250 });
  const text = await page.textContent('[data-testid="check-result"]');
  const { repair, range_fit: rangeFit } = await pageReport(page);
  assert.ok(repair, text);
  // FPQ's ranges fitted on the repaired model, on the samples the repair fitted on.
  assert.equal(rangeFit?.data.samples, 96, text);
  assert.match(text, /FPQ's ranges fitted on 96 samples of calibration\.npy \[0, 96\); the download is the fitted model\. The check below runs it on 32 held-out samples the fit did not see\./, text);
  const refitted = repair.layers.filter((l) => l.refitted);
  assert.ok(repair.fixed_point.biases_moved > 0);
  assert.match(text, new RegExp(`FPQ: ${repair.fixed_point.biases_moved} new biases moved into BatchNormalizations; `), text);
  const { path, name } = await downloadFile(page, 'download');
  // Under FPQ the repaired model's ranges are fitted on the same 96 samples, and that is the download.
  assert.equal(name, 'digits.lattice.fpq.repaired.range-fit.onnx');
  const description = await api.describe(readFileSync(path));
  assert.deepEqual(description.nodes.filter((n) => n.op === 'Conv' && n.inputs[2]?.name).map((n) => n.name), [], 'no Conv keeps a bias');
  // The Node API on the same 96 samples: the same layers refitted, the same ones clipping.
  // The conversion's report tells the API the scheme (and the matches that made each layer).
  const converted = join(dir, 'digits.lattice.fpq.onnx');
  assert.equal(CLIS.node(['convert', model, '-o', converted, '--quiet', '--fixed-point', 'fpq', '--report', `${converted}.json`]).status, 0);
  const conversion = JSON.parse(readFileSync(`${converted}.json`, 'utf8'));
  const fit96 = numpyValues(join(TRAINED, 'calibration.npy'), Float32Array, dir).slice(0, 96 * 1024);
  const node = await api.repair(model, converted, { calibration: { image: { data: fit96, dims: [96, 1, 32, 32] } }, conversion });
  assert.deepEqual(refitted.map((l) => l.node), node.report.layers.filter((l) => l.refitted).map((l) => l.node));
  assert.deepEqual(repair.fixed_point.weights_clip, node.report.fixed_point.weights_clip);
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

// FPQ's range fit in the page (range_fit.mjs, as the Node CLI runs it on --calibration): on the
// digits CNN exported with its BatchNormalizations folded, the ranges are fitted on three quarters
// of the samples picked and the check runs on the quarter the fit did not see; the download is the
// fitted model and the fit analysis its own. Without samples the conversion's estimate stays, said so.
test('under FPQ a check on picked samples fits FPQ\'s ranges on them, checks on the held-out quarter and offers the fitted model; without samples the estimate, said so', async () => {
  const fused = join(TRAINED, 'digits_fused.onnx');
  const { page, context, consoleErrors } = await openPage();
  await page.setInputFiles('[data-testid="file-input"]', fused);
  await waitDone(page);
  await page.selectOption('[data-testid="target-select"]', 'none');
  await waitDone(page);
  await page.selectOption('[data-testid="fixed-point-select"]', 'fpq');
  await waitDone(page);
  const findings = () => page.$$eval('[data-testid="fixed-point-finding"]', (fs) => fs.map((f) => f.textContent).join('\n'));
  assert.match(await findings(), /FPQ's ranges without data/, 'the conversion estimates the ranges');
  const estimate = await downloadBytes(page, 'download');
  assert.equal(estimate.name, 'digits_fused.none.fpq.onnx');

  // Without samples: the estimate, said so; nothing fitted, the download as converted.
  let result = await runCheckInPage(page);
  assert.equal(result.foldPass, 'true', result.text);
  assert.equal(await page.getAttribute('[data-testid="range-fit"]', 'data-measured'), 'false');
  assert.match(await page.textContent('[data-testid="range-fit"]'), /FPQ's ranges are the conversion's estimate, made without data from the BatchNormalizations' statistics: no samples were picked; pick some to fit them on your data\./);
  assert.equal((await pageReport(page)).range_fit, undefined);
  assert.ok((await downloadBytes(page, 'download')).bytes.equals(estimate.bytes));

  // On samples: fitted on the first 96 of 128, checked (with the FPQ twin) on the last 32.
  await page.setInputFiles('[data-testid="data-input"]', join(TRAINED, 'calibration.npy'));
  await page.check('[data-testid="check-fpq"]');
  result = await runCheckInPage(page);
  assert.equal(result.foldPass, 'true', result.text);
  assert.equal(await page.getAttribute('[data-testid="range-fit"]', 'data-measured'), 'true', result.text);
  const section = await page.textContent('[data-testid="range-fit"]');
  assert.match(section, /FPQ's ranges fitted on 96 samples of calibration\.npy \[0, 96\); the download is the fitted model\. The check below runs it on 32 held-out samples the fit did not see\./, section);
  assert.match(section, /range fit: the float check of the fit passes \(fold-only tolerance\)/);
  assert.doesNotMatch(section, /estimate/);
  assert.match((await statusLines(page))[1], /^Ranges fitted and checked in \d+ ms\.$/);
  const report = await pageReport(page);
  const fit = report.range_fit;
  assert.equal(fit.data.samples, 96);
  assert.ok(fit.matches.filter((m) => m.applied).length >= 3, JSON.stringify(fit.matches.map((m) => m.id)));
  assert.ok(fit.clipped.after < fit.clipped.before, JSON.stringify(fit.clipped));
  // The page says the report's figures, before → after.
  const { percent } = await import('../../wasm/shared/check.mjs');
  const applied = fit.matches.filter((m) => m.applied).length;
  assert.ok(section.includes(`range fit: ${applied} layers fitted to FPQ's ranges measured on calibration.npy [0, 96); ` +
    `FPQ activations clipped ${percent(fit.clipped.before)} → ${percent(fit.clipped.after)}`), section);
  assert.equal(fit.float_check.pass, true);
  assert.deepEqual([report.check.converted.inputs.samples, report.check.converted.inputs.held_out], [32, true]);
  assert.match(report.check.converted.inputs.source, /^calibration\.npy \[96, 128\), held out from the range fit$/);
  // The fit analysis is the fitted model's, in the report and on the page.
  assert.match(await findings(), /fitted to FPQ's ranges measured on data/);
  assert.doesNotMatch(await findings(), /without data/);
  // The download is the fitted model: not the estimate's, exact in float, and its FPQ twin decides
  // as the float model on the 400 held-out samples (the estimate's figure printed beside it).
  const fitted = await downloadFile(page, 'download');
  assert.equal(fitted.name, 'digits_fused.none.fpq.range-fit.onnx');
  assert.ok(!readFileSync(fitted.path).equals(estimate.bytes), 'the fitted model differs from the estimate');
  const estimatePath = join(dir, 'digits_fused.estimate.onnx');
  writeFileSync(estimatePath, estimate.bytes);
  const heldout = { inputs: join(TRAINED, 'heldout.npz'), simulate: 'fpq' };
  const [withFit, withEstimate] = [await api.check(fused, fitted.path, heldout), await api.check(fused, estimatePath, heldout)];
  const agreement = (c) => c.fpq.outputs[0].top1_agreement;
  console.log(`FPQ twin top-1 agreement on 400 held-out samples: the estimate ${(100 * agreement(withEstimate)).toFixed(1)} %, ` +
    `fitted in the page on 96 samples ${(100 * agreement(withFit)).toFixed(1)} %; clipped ${(100 * fit.clipped.before).toFixed(1)} % → ${(100 * fit.clipped.after).toFixed(1)} %`);
  assert.ok(agreement(withFit) > 0.95, `${agreement(withFit)} (the estimate's ${agreement(withEstimate)})`);
  assert.equal(withFit.outputs[0].top1_agreement, 1, 'the fit is exact in float');

  // Samples cleared: the estimate again, and the download with it.
  await page.click('[data-testid="data-clear"]');
  await runCheckInPage(page);
  assert.equal(await page.getAttribute('[data-testid="range-fit"]', 'data-measured'), 'false');
  assert.equal((await pageReport(page)).range_fit, undefined);
  const back = await downloadBytes(page, 'download');
  assert.deepEqual([back.name, back.bytes.equals(estimate.bytes)], [estimate.name, true]);
  assert.match(await findings(), /without data/);
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

test('no request of the check left 127.0.0.1', () => {
  assert.ok(requests.some((u) => u.includes('/ort/')), 'the runtime was loaded from this site');
  // (Some tests open the page from a second server on 127.0.0.1, one that sends no isolation headers.)
  assert.deepEqual(requests.filter((u) => !u.startsWith('http://127.0.0.1:') && !u.startsWith('blob:') && !u.startsWith('data:')), []);
});
