// The asynchronous Node API (wasm/index.mjs, createConverter): every call runs in the converter's
// worker thread, so the calling thread keeps running; progress follows the work, writing included;
// an AbortSignal cancels a call and leaves no file; every error carries a code.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';

import { createConverter, createSyncConverter } from '../../wasm/index.mjs';
import { FIXTURES, ROOT, ZOO, fixture, scratch } from './helpers.mjs';

const lattice = await createConverter();
after(() => lattice.close());
const dir = scratch();

// ResNet-50 from the zoo, or (without it) a Conv + BatchNorm whose 96 MiB weight is folded: a call
// that takes hundreds of milliseconds of work either way.
function bigModel() {
  const resnet = join(ZOO, 'resnet50.onnx');
  if (existsSync(resnet)) return resnet;
  const made = join(dir, 'fold-96m.onnx');
  if (!existsSync(made)) {
    const r = spawnSync('/usr/bin/python3', [join(FIXTURES, 'make_huge.py'), 'fold', made, String(96 << 20)], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
  }
  return made;
}

// Runs `work` while a 10 ms interval ticks on this thread; the longest gap between ticks.
async function maxTickGap(work) {
  let last = performance.now();
  let gap = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    gap = Math.max(gap, now - last);
    last = now;
  }, 10);
  try {
    await work();
  } finally {
    clearInterval(ticker);
  }
  return Math.max(gap, performance.now() - last);
}

test('every call returns a Promise', async () => {
  const bytes = readFileSync(fixture('sample.onnx'));
  for (const pending of [lattice.convert(bytes), lattice.inspect(bytes), lattice.describe(bytes),
    lattice.convertFile(fixture('sample.onnx'), join(dir, 'p.onnx'))]) {
    assert.ok(pending instanceof Promise);
    await pending;
  }
});

test('a 10 ms ticker keeps ticking (gap <= 50 ms) while a large model converts, from memory and from a file', async () => {
  const model = bigModel();
  const bytes = readFileSync(model);
  await lattice.convert(readFileSync(fixture('sample.onnx')));  // the worker started
  const gaps = {
    convert: await maxTickGap(() => lattice.convert(bytes)),
    convertFile: await maxTickGap(() => lattice.convertFile(model, join(dir, 'big.onnx'))),
    describe: await maxTickGap(() => lattice.describe(bytes)),
  };
  // The same ticker with nothing to do: a machine busy with other work delays timers by itself
  // (50-160 ms seen while builds ran). The bound is 50 ms plus twice the idle gap above 0 (the
  // target, 50 ms, is printed above for the record); a conversion on this thread would block it
  // for 400 ms and more.
  const idle = await maxTickGap(() => new Promise((resolve) => setTimeout(resolve, 1000)));
  console.log(`max ticker gap (ms) on ${model}: ${JSON.stringify(gaps)}, idle ${idle.toFixed(1)}`);
  for (const [call, gap] of Object.entries(gaps)) assert.ok(gap <= 50 + 2 * idle, `${call}: ${gap} ms (idle ${idle} ms)`);
});

test('onProgress follows the work: stages, then writing up to 1 once the bytes exist, then done; convertFile too', async () => {
  const model = bigModel();
  for (const call of ['convert', 'convertFile']) {
    const events = [];
    const started = performance.now();
    const onProgress = (e) => events.push({ ...e, at: performance.now() - started });
    const result = call === 'convert'
      ? await lattice.convert(readFileSync(model), { onProgress })
      : await lattice.convertFile(model, join(dir, 'progress.onnx'), { onProgress });
    const ended = performance.now() - started;
    const stages = events.map((e) => e.stage);
    assert.deepEqual(stages.slice(0, 2), ['parse', 'validate'], call);
    assert.equal(stages.at(-1), 'done', call);
    assert.equal(stages.at(-2), 'writing', call);
    assert.equal(events.at(-2).fraction, 1, `${call}: writing reaches 1 when the output is produced`);
    const writing = events.filter((e) => e.stage === 'writing');
    assert.ok(writing.length > 10, `${call}: writing is followed (${writing.length} events)`);
    const fractions = events.map((e) => e.fraction);
    assert.deepEqual(fractions, [...fractions].sort((a, b) => a - b), `${call}: fractions only grow`);
    // The events come as the work is done, not all at its start: half the fraction is reached
    // neither in the first nor in the last tenth of the call.
    const half = events.find((e) => e.fraction >= 0.5).at;
    assert.ok(half > ended * 0.1 && half < ended * 0.9, `${call}: 0.5 at ${half} of ${ended} ms`);
    if (call === 'convert') assert.ok(result.model.length > 0);
    else assert.deepEqual(result.files, [join(dir, 'progress.onnx')]);
  }
});

test('an aborted call rejects with ERR_ONNX_LATTICE_ABORTED and leaves no file; the converter works on', async () => {
  const model = bigModel();
  const bytes = readFileSync(model);
  const isAborted = (e) => e.code === 'ERR_ONNX_LATTICE_ABORTED' && e.name === 'AbortError';
  // Already aborted: rejected before any work.
  await assert.rejects(lattice.convert(bytes, { signal: AbortSignal.abort() }), isAborted);
  // Aborted in flight, at points the call's own progress marks: while converting, as writing
  // starts, and halfway through writing (the folded weights being computed into the file).
  const points = [['parse', 0], ['audit', 0], ['writing', 0.2], ['writing', 0.6]];
  for (const [stage, from] of points) {
    const when = (e) => e.stage === stage && e.fraction >= from;
    const controller = new AbortController();
    const abortAt = (e) => { if (when(e)) controller.abort(); };
    await assert.rejects(lattice.convert(bytes, { signal: controller.signal, onProgress: abortAt }), isAborted, `convert at ${stage} ${from}`);
    const folder = join(dir, `aborted-${stage}-${from}`);
    mkdirSync(folder);
    const fileController = new AbortController();
    const fileAbortAt = (e) => { if (when(e)) fileController.abort(); };
    await assert.rejects(lattice.convertFile(model, join(folder, 'm.onnx'), { signal: fileController.signal, onProgress: fileAbortAt }),
      isAborted, `convertFile at ${stage} ${from}`);
    assert.deepEqual(readdirSync(folder), [], `no file left when aborted at ${stage} ${from}`);
  }
  const { report } = await lattice.convert(readFileSync(fixture('sample.onnx')));
  assert.equal(report.schema, 'onnx-lattice-report/1');
});

test('calls queue in order; aborting a queued call leaves the others alone', async () => {
  const bytes = readFileSync(fixture('sample.onnx'));
  const controller = new AbortController();
  const first = lattice.convert(bytes);
  const second = lattice.inspect(bytes, { signal: controller.signal });
  const third = lattice.describe(bytes);
  const secondRejects = assert.rejects(second, { code: 'ERR_ONNX_LATTICE_ABORTED' });  // handled at once
  controller.abort();
  assert.ok((await first).model.length > 0);
  await secondRejects;
  assert.ok((await third).nodes.length > 0);
});

test('every error carries a code, describe() included, and options are checked on this thread too', async () => {
  const garbage = new TextEncoder().encode('not a model');
  await assert.rejects(lattice.describe(garbage), { code: 'ERR_ONNX_LATTICE_MODEL' });
  await assert.rejects(lattice.convert(garbage), { code: 'ERR_ONNX_LATTICE_MODEL' });
  await assert.rejects(lattice.inspect(readFileSync(fixture('sample.onnx')), { target: 'x' }), { code: 'ERR_ONNX_LATTICE_OPTIONS' });
  await assert.rejects(lattice.convert('a string'), (e) => e instanceof TypeError && e.code === 'ERR_ONNX_LATTICE_OPTIONS');
  await assert.rejects(lattice.convert(garbage, { signal: 5 }), { code: 'ERR_ONNX_LATTICE_OPTIONS' });
  await assert.rejects(lattice.describe(garbage, { target: 'none' }), { code: 'ERR_ONNX_LATTICE_OPTIONS' });
});

test('a resolver function on this thread serves the worker, asked once per data file', async () => {
  const sync = await createSyncConverter();
  const model = readFileSync(fixture('sample.onnx'));
  // The sample moved to a data file by the converter itself, then read back through a resolver.
  const split = sync.convert(model, { target: 'none', foldBatchNorm: false, dataLayout: 'external', dataFile: 's.onnx.data' });
  assert.ok(split.data.length > 0);
  const asked = [];
  const back = await lattice.convert(split.model, {
    target: 'none', foldBatchNorm: false, dataLayout: 'inline',
    resolver: (location) => { asked.push(location); return location === 's.onnx.data' ? split.data : null; },
  });
  assert.deepEqual(asked, ['s.onnx.data']);
  assert.ok(Buffer.from(back.model).equals(Buffer.from(sync.convert(model, { target: 'none', foldBatchNorm: false, dataLayout: 'inline' }).model)));
});

test('an idle converter does not keep the process alive; close() ends its worker and it can start again', async () => {
  const script = `
    import { createConverter } from ${JSON.stringify(join(ROOT, 'wasm/index.mjs'))};
    import { readFileSync } from 'node:fs';
    const lattice = await createConverter();
    const { report } = await lattice.convert(readFileSync(${JSON.stringify(fixture('sample.onnx'))}));
    console.log(report.schema);`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20000 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'onnx-lattice-report/1');
  const own = await createConverter();
  await own.convert(readFileSync(fixture('sample.onnx')));
  await own.close();
  assert.equal((await own.inspect(readFileSync(fixture('sample.onnx')))).schema, 'onnx-lattice-report/1');
  await own.close();
});
