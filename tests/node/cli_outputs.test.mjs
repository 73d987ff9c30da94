// Where the CLIs write (SPEC section 4): all or nothing, only regular files replaced, a symlink
// written through, a character device written in place, and the same exit status, stderr line
// and files on disk from both CLIs.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, statSync, symlinkSync, writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { CLIS, NATIVE_CLI, NODE_CLI, ZOO, fixture, scratch } from './helpers.mjs';

const SAMPLE = fixture('sample.onnx');

// Runs `args(dir)` with both CLIs, each in a fresh folder that `prepare(dir)` fills; returns per
// CLI the result and the folder's listing afterwards, and asserts both CLIs agree on all three.
function both(prepare, args) {
  const results = Object.entries(CLIS).map(([cli, run]) => {
    const dir = scratch();
    prepare(dir);
    const r = run(args(dir));
    const listing = readdirSync(dir).sort().map((f) => `${f}:${kind(join(dir, f))}`);
    return { cli, dir, r, listing, stderr: r.stderr.replaceAll(dir, 'DIR') };
  });
  const [a, b] = results;
  assert.equal(a.r.status, b.r.status, `exit status: ${a.stderr} / ${b.stderr}`);
  assert.equal(a.stderr, b.stderr, 'the same stderr');
  assert.deepEqual(a.listing, b.listing, 'the same files on disk');
  return results;
}

function kind(path) {
  const s = lstatSync(path);
  return s.isSymbolicLink() ? 'link' : s.isFile() ? `file(${s.size})` : s.isDirectory() ? 'dir'
    : s.isFIFO() ? 'fifo' : s.isCharacterDevice() ? 'chardev' : 'other';
}

const nothing = () => {};

test('a report that cannot be written means no model either: exit 3, no file at all', () => {
  for (const { r, dir, listing } of both(nothing, (d) => ['convert', SAMPLE, '-o', join(d, 'out.onnx'),
    '--report', join(d, 'no/such/dir/r.json')])) {
    assert.equal(r.status, 3);
    assert.match(r.stderr, /^onnx-lattice: error: cannot write '.*no\/such\/dir\/r\.json': No such file or directory\n$/);
    assert.deepEqual(listing, [], `nothing in ${dir}`);
  }
});

test('an existing model file is left untouched when the report fails', () => {
  const prepare = (d) => writeFileSync(join(d, 'out.onnx'), 'previous content');
  for (const { r, dir } of both(prepare, (d) => ['convert', SAMPLE, '-o', join(d, 'out.onnx'), '--report',
    join(d, 'missing/r.json')])) {
    assert.equal(r.status, 3);
    assert.equal(readFileSync(join(dir, 'out.onnx'), 'utf8'), 'previous content');
  }
});

test('-o and --report naming the same file is a usage error, found before anything is written', () => {
  const prepare = (d) => symlinkSync('same.onnx', join(d, 'alias.onnx'));
  for (const args of [(d) => ['convert', SAMPLE, '-o', join(d, 'same.onnx'), '--report', join(d, 'same.onnx')],
    (d) => ['convert', SAMPLE, '-o', join(d, 'same.onnx'), '--report', join(d, 'alias.onnx')]]) {
    for (const { r, listing } of both(prepare, args)) {
      assert.equal(r.status, 2);
      assert.match(r.stderr, /-o and --report name the same file/);
      assert.deepEqual(listing, ['alias.onnx:link']);
    }
  }
});

test('--report naming the input model is a usage error', () => {
  const prepare = (d) => writeFileSync(join(d, 'in.onnx'), readFileSync(SAMPLE));
  for (const { r, dir } of both(prepare, (d) => ['convert', join(d, 'in.onnx'), '-o', join(d, 'o.onnx'),
    '--report', join(d, 'in.onnx')])) {
    assert.equal(r.status, 2);
    assert.match(r.stderr, /would overwrite the input model/);
    assert.ok(readFileSync(join(dir, 'in.onnx')).equals(readFileSync(SAMPLE)));
  }
});

test('-o - writes the model to standard output and the summary to standard error', () => {
  const expected = join(scratch(), 'expected.onnx');
  assert.equal(CLIS.native(['convert', SAMPLE, '-o', expected, '--quiet']).status, 0);
  const binary = {  // stdout as bytes, not text
    native: (args) => spawnSync(NATIVE_CLI, args, { maxBuffer: 1 << 28 }),
    node: (args) => spawnSync(process.execPath, [NODE_CLI, ...args], { maxBuffer: 1 << 28 }),
  };
  for (const [cli, run] of Object.entries(binary)) {
    const r = run(['convert', SAMPLE, '-o', '-']);
    assert.equal(r.status, 0, `${cli}: ${r.stderr}`);
    assert.ok(r.stdout.equals(readFileSync(expected)), `${cli}: stdout is the model, byte for byte`);
    assert.match(r.stderr.toString(), /^onnx-lattice .*: target lattice/, `${cli}: the summary on stderr`);
    const quiet = run(['convert', SAMPLE, '-o', '-', '--quiet']);
    assert.ok(quiet.stdout.equals(readFileSync(expected)));
    assert.equal(quiet.stderr.length, 0, `${cli}: --quiet prints nothing else`);
  }
  for (const { r } of both(nothing, () => ['convert', SAMPLE, '-o', '-', '--report', '-'])) {
    assert.equal(r.status, 2);
    assert.match(r.stderr, /--report - cannot share it/);
  }
});

// Folded weights over 64 KiB are computed as they are written (core/onnx/deferred_data.h): to a
// file, to standard output, to a device and to a data file, by either CLI, the bytes are the same.
test('a real model\'s folded weights are written alike to a file, standard output and a data file', (t) => {
  const model = join(ZOO, 'resnet18.onnx');
  if (!existsSync(model)) return t.skip(`no ${model} (scripts/test.sh generates the zoo)`);
  const dir = scratch();
  const binary = {
    native: (args) => spawnSync(NATIVE_CLI, args, { maxBuffer: 1 << 28 }),
    node: (args) => spawnSync(process.execPath, [NODE_CLI, ...args], { maxBuffer: 1 << 28 }),
  };
  const expected = join(dir, 'expected.onnx');
  assert.equal(binary.native(['convert', model, '-o', expected, '--quiet']).status, 0);
  const bytes = readFileSync(expected);
  assert.ok(bytes.length > 40 << 20, 'the weights are in the model file');
  for (const [cli, run] of Object.entries(binary)) {
    const file = join(dir, `${cli}.onnx`);
    assert.equal(run(['convert', model, '-o', file, '--quiet']).status, 0, cli);
    assert.ok(readFileSync(file).equals(bytes), `${cli}: the file`);
    const out = run(['convert', model, '-o', '-', '--quiet']);
    assert.equal(out.status, 0, `${cli}: ${out.stderr}`);
    assert.ok(out.stdout.equals(bytes), `${cli}: standard output`);
    assert.equal(run(['convert', model, '-o', '/dev/null', '--quiet']).status, 0, `${cli}: a device`);
    const split = join(dir, `${cli}.external.onnx`);
    assert.equal(run(['convert', model, '-o', split, '--external-data', '--quiet']).status, 0, cli);
    const back = join(dir, `${cli}.inline.onnx`);
    assert.equal(run(['convert', split, '-o', back, '--inline', '--target', 'none', '--no-fold-bn', '--quiet']).status, 0);
    assert.ok(readFileSync(back).equals(bytes), `${cli}: the data file holds the same weights`);
  }
});

test('a directory or a FIFO as -o or --report is refused with exit 2, and nothing is written', () => {
  const prepare = (d) => {
    mkdirSync(join(d, 'folder'));
    assert.equal(spawnSync('mkfifo', [join(d, 'pipe')]).status, 0);
  };
  const cases = [
    [(d) => ['convert', SAMPLE, '-o', join(d, 'folder')], /-o '.*folder' is a directory/],
    [(d) => ['convert', SAMPLE, '-o', join(d, 'pipe')], /-o '.*pipe' is a FIFO/],
    [(d) => ['convert', SAMPLE, '-o', join(d, 'm.onnx'), '--report', join(d, 'folder')], /--report '.*folder' is a directory/],
  ];
  for (const [args, message] of cases) {
    for (const { r, listing } of both(prepare, args)) {
      assert.equal(r.status, 2);
      assert.match(r.stderr, message);
      assert.deepEqual(listing, ['folder:dir', 'pipe:fifo']);
    }
  }
});

test('a character device is written in place, never replaced by a file', (t) => {
  // A device of our own (the null device's numbers) in a scratch folder, never the machine's /dev/null.
  const probe = scratch();
  if (spawnSync('mknod', [join(probe, 'nul'), 'c', '1', '3']).status !== 0) {
    t.skip('mknod needs root');
    return;
  }
  const prepare = (d) => assert.equal(spawnSync('mknod', [join(d, 'nul'), 'c', '1', '3']).status, 0);
  for (const { r, listing } of both(prepare, (d) => ['convert', SAMPLE, '-o', join(d, 'nul'), '--quiet'])) {
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(listing, ['nul:chardev']);
  }
});

test('a symlink is followed: its target is replaced, the link stays', () => {
  const prepare = (d) => {
    mkdirSync(join(d, 'real'));
    writeFileSync(join(d, 'real/model.onnx'), 'old');
    symlinkSync('real/model.onnx', join(d, 'link.onnx'));
  };
  for (const { r, dir, listing } of both(prepare, (d) => ['convert', SAMPLE, '-o', join(d, 'link.onnx'), '--quiet'])) {
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(listing, ['link.onnx:link', 'real:dir']);
    assert.equal(readlinkSync(join(dir, 'link.onnx')), 'real/model.onnx');
    assert.equal(readdirSync(join(dir, 'real')).length, 1, 'no temporary file left');
    assert.ok(statSync(join(dir, 'real/model.onnx')).size > 1000);
  }
});

test('a replaced file keeps its permissions', () => {
  const prepare = (d) => writeFileSync(join(d, 'out.onnx'), 'old', { mode: 0o640 });
  for (const { r, dir } of both(prepare, (d) => ['convert', SAMPLE, '-o', join(d, 'out.onnx'), '--quiet'])) {
    assert.equal(r.status, 0, r.stderr);
    assert.equal(statSync(join(dir, 'out.onnx')).mode & 0o777, 0o640);
  }
});

test('converting a file onto itself works: the input is read whole first', () => {
  const expected = join(scratch(), 'expected.onnx');
  assert.equal(CLIS.native(['convert', SAMPLE, '-o', expected, '--quiet']).status, 0);
  const prepare = (d) => writeFileSync(join(d, 'm.onnx'), readFileSync(SAMPLE));
  for (const { r, dir } of both(prepare, (d) => ['convert', join(d, 'm.onnx'), '-o', join(d, 'm.onnx'), '--quiet'])) {
    assert.equal(r.status, 0, r.stderr);
    assert.ok(readFileSync(join(dir, 'm.onnx')).equals(readFileSync(expected)));
  }
});

test('COMMAND --help prints that command\'s usage and exits 0', () => {
  for (const command of ['convert', 'inspect', 'patterns']) {
    for (const [cli, run] of Object.entries(CLIS)) {
      const r = run([command, '--help']);
      assert.equal(r.status, 0, `${cli} ${command}: ${r.stderr}`);
      assert.match(r.stdout, new RegExp(`^usage:\\n  onnx-lattice ${command} `), `${cli} ${command}`);
      assert.equal(r.stderr, '');
    }
  }
});

test('an unknown --skip-match id is a usage error naming it and listing the model\'s ids', () => {
  for (const { r, listing } of both(nothing, (d) => ['convert', SAMPLE, '-o', join(d, 'o.onnx'),
    '--skip-match', 'ConvBatchNormFoldPattern:/stem/stem.0/Conv,NoSuch:id'])) {
    assert.equal(r.status, 2);
    assert.match(r.stderr, /no match has the id 'NoSuch:id' \(this model's matches: LatticeSPPFMaxPoolPattern:\/sppf5\/m\/MaxPool, /);
    assert.equal(r.stderr.trim().split('\n').length, 1);
    assert.deepEqual(listing, []);
  }
});
