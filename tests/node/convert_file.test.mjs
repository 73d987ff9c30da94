// convertFile(input, output, options): paths are paths, the output defaults beside the input,
// every conversion option is taken, the files written are returned, and a file that cannot be
// read or written is ERR_ONNX_LATTICE_IO with its path and errno, apart from a rejected model.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';

import { createConverter, createSyncConverter } from '../../wasm/index.mjs';
import { CLIS, FIXTURES, ROOT, fixture, scratch } from './helpers.mjs';

const lattice = await createConverter();
const sync = await createSyncConverter();
after(() => lattice.close());

const SAMPLE = fixture('sample.onnx');
const expected = (() => {
  const out = join(scratch(), 'expected.onnx');
  assert.equal(CLIS.native(['convert', SAMPLE, '-o', out, '--quiet']).status, 0);
  return readFileSync(out);
})();

// A fresh folder holding the sample as `name`.
function folderWith(name) {
  const dir = scratch();
  copyFileSync(SAMPLE, join(dir, name));
  return dir;
}

test('names that look like flags are file names, in both converters', async () => {
  for (const converter of [lattice, sync]) {
    for (const name of ['-m.onnx', '--help', '-o', '--']) {
      const dir = folderWith(name);
      const out = join(dir, `-${name}.out`);
      const { report, files } = await converter.convertFile(join(dir, name), out);
      assert.equal(report.schema, 'onnx-lattice-report/1', name);
      assert.deepEqual(files, [out], name);
      assert.ok(readFileSync(out).equals(expected), name);
    }
  }
  // Relative names starting with '-', from the folder they are in.
  const dir = folderWith('-m.onnx');
  const script = `
    import { createConverter } from ${JSON.stringify(join(ROOT, 'wasm/index.mjs'))};
    const lattice = await createConverter();
    const { files } = await lattice.convertFile('-m.onnx', '-');
    console.log(JSON.stringify(files));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: dir, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), ['./-'], "'-' is the file of that name");
  assert.ok(readFileSync(join(dir, '-')).equals(expected));
});

test('without an output, the model is written beside the input as <name>.<target>.onnx', async () => {
  const dir = folderWith('m.onnx');
  const { files } = await lattice.convertFile(join(dir, 'm.onnx'));
  assert.deepEqual(files, [join(dir, 'm.lattice.onnx')]);
  const advanced = await lattice.convertFile(join(dir, 'm.onnx'), undefined, { target: 'lattice-advanced' });
  assert.deepEqual(advanced.files, [join(dir, 'm.lattice-advanced.onnx')]);
  assert.deepEqual(readdirSync(dir).sort(), ['m.lattice-advanced.onnx', 'm.lattice.onnx', 'm.onnx']);
  assert.ok(readFileSync(join(dir, 'm.onnx')).equals(readFileSync(SAMPLE)), 'never over the input');
  assert.ok(!existsSync('undefined'));
});

test('every conversion option is taken, inputShapes and onProgress included; memory-only ones are refused', async () => {
  const dir = scratch();
  const out = join(dir, 'pinned.onnx');
  const events = [];
  const { report } = await lattice.convertFile(fixture('yolo_dynamic_batch.onnx'), out, {
    target: 'none', foldBatchNorm: false, inputShapes: { input: [1, 3, 64, 64] }, ignoreUnknownSkips: true,
    skipMatches: ['No:such'], onProgress: (e) => events.push(e.stage),
  });
  assert.deepEqual(report.input_shapes, { input: [1, 3, 64, 64] });
  const inMemory = sync.convert(readFileSync(fixture('yolo_dynamic_batch.onnx')), { target: 'none', foldBatchNorm: false, inputShapes: { input: [1, 3, 64, 64] } });
  assert.ok(readFileSync(out).equals(Buffer.from(inMemory.model)));
  assert.deepEqual([events[0], events.at(-1)], ['parse', 'done']);
  for (const key of ['resolver', 'dataFile', 'describe']) {
    await assert.rejects(lattice.convertFile(SAMPLE, join(dir, 'x.onnx'), { [key]: key === 'describe' ? true : 'x' }),
      (e) => e.code === 'ERR_ONNX_LATTICE_OPTIONS' && e.message.includes(key));
  }
  await assert.rejects(lattice.convertFile(SAMPLE, join(dir, 'x.onnx'), { bogus: 1 }), { code: 'ERR_ONNX_LATTICE_OPTIONS' });
  assert.deepEqual(readdirSync(dir), ['pinned.onnx']);
});

test('files that cannot be read or written are ERR_ONNX_LATTICE_IO with path and errno; a bad model is not', async () => {
  const dir = scratch();
  mkdirSync(join(dir, 'folder'));
  const io = (path, errno) => (e) => e.code === 'ERR_ONNX_LATTICE_IO' && e.path === path && e.errno === errno && e.message.includes(path);
  await assert.rejects(lattice.convertFile(join(dir, 'missing.onnx'), join(dir, 'o.onnx')), io(join(dir, 'missing.onnx'), 'ENOENT'));
  await assert.rejects(lattice.convertFile(join(dir, 'folder'), join(dir, 'o.onnx')), io(join(dir, 'folder'), 'EISDIR'));
  await assert.rejects(lattice.convertFile(SAMPLE, join(dir, 'no/such/o.onnx')), io(join(dir, 'no/such/o.onnx'), 'ENOENT'));
  await assert.rejects(lattice.convertFile(fixture('..'), join(dir, 'o.onnx')), { code: 'ERR_ONNX_LATTICE_IO', errno: 'EISDIR' });
  const garbage = join(dir, 'garbage.onnx');
  (await import('node:fs')).writeFileSync(garbage, 'not a model');
  await assert.rejects(lattice.convertFile(garbage, join(dir, 'o.onnx')), (e) => e.code === 'ERR_ONNX_LATTICE_MODEL' && e.path === undefined);
  assert.deepEqual(readdirSync(dir).sort(), ['folder', 'garbage.onnx']);
});

test('the data file of an external-data output is named after the output, in every API', async () => {
  const dir = scratch();
  const made = spawnSync('/usr/bin/python3', [join(FIXTURES, 'make_external.py'), FIXTURES, dir], { encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
  const model = join(dir, 'one', 'resnet_stem', 'resnet_stem.onnx');
  assert.ok(existsSync(model), readdirSync(dir).join());
  const out = join(dir, 'mine.onnx');
  const { files } = await lattice.convertFile(model, out);
  assert.deepEqual(files, [out, `${out}.data`]);
  assert.ok(readFileSync(out).includes(Buffer.from('mine.onnx.data')), 'the model points at its own data file');
  // In memory there is no output name: dataFile names it, and is required.
  const bytes = readFileSync(model);
  const resolver = (location) => readFileSync(join(dir, 'one', 'resnet_stem', location));
  await assert.rejects(lattice.convert(bytes, { resolver }), (e) => e.code === 'ERR_ONNX_LATTICE_OPTIONS' && /dataFile/.test(e.message));
  const named = await lattice.convert(bytes, { resolver, dataFile: 'mine.onnx.data' });
  assert.ok(Buffer.from(named.model).equals(readFileSync(out)));
  assert.ok(Buffer.from(named.data).equals(readFileSync(`${out}.data`)));
});
