// The native CLI and the Node CLI: same flags, same output, same exit status (SPEC section 4).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, writeFileSync, ftruncateSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { CLIS, NATIVE_CLI, NODE_CLI, ZOO, fixture, fixtures, scratch, stable } from './helpers.mjs';

const dir = scratch();

test('both CLIs write the same bytes and print the same summary and report for every fixture', () => {
  for (const name of fixtures()) {
    const out = {};
    for (const [cli, run] of Object.entries(CLIS)) {
      const model = join(dir, `${cli}-${name}`);
      const report = join(dir, `${cli}-${name}.json`);
      const r = run(['convert', fixture(name), '-o', model, '--report', report]);
      assert.equal(r.status, 0, `${cli} ${name}: ${r.stderr}`);
      out[cli] = { stdout: r.stdout.replaceAll(model, 'OUT'), model: readFileSync(model), report: JSON.parse(readFileSync(report)) };
    }
    assert.equal(out.node.stdout, out.native.stdout, name);
    assert.ok(out.node.model.equals(out.native.model), name);
    assert.deepEqual(stable(out.node.report), stable(out.native.report), name);
  }
});

test('--report - prints the JSON report on stdout', () => {
  for (const run of Object.values(CLIS)) {
    const r = run(['convert', fixture('conv_bn_relu.onnx'), '-o', join(dir, 'x.onnx'), '--report', '-']);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).schema, 'onnx-lattice-report/1');
  }
});

test('inspect and --dry-run write nothing', () => {
  for (const [cli, run] of Object.entries(CLIS)) {
    const out = join(dir, `${cli}-dry.onnx`);
    const r = run(['convert', fixture('sample.onnx'), '-o', out, '--dry-run']);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(existsSync(out), false);
    const i = run(['inspect', fixture('sample.onnx'), '--json']);
    assert.equal(i.status, 0, i.stderr);
    assert.equal(JSON.parse(i.stdout).options.dry_run, true);
  }
});

test('usage errors exit 2 and say what is wrong', () => {
  const cases = [
    [[], /no command given/],
    [['frobnicate'], /unknown command 'frobnicate'/],
    [['convert', fixture('sample.onnx'), '-o', join(dir, 'u.onnx'), '--target', 'xilinx'], /unknown target 'xilinx'/],
    [['convert', fixture('sample.onnx'), '-o', join(dir, 'u.onnx'), '--bogus'], /'--bogus' is not an option of 'convert'/],
    [['inspect', fixture('sample.onnx'), '-o', 'x'], /'-o' is not an option of 'inspect'/],
    [['convert', fixture('sample.onnx'), '-o'], /-o needs a file name/],
  ];
  for (const [cli, run] of Object.entries(CLIS)) {
    for (const [args, message] of cases) {
      const r = run(args);
      assert.equal(r.status, 2, `${cli} ${args.join(' ')}`);
      assert.match(r.stderr, message, `${cli} ${args.join(' ')}`);
    }
  }
});

// Rejected inputs: exit 1, one line naming the problem on stderr, and no output file at all.
function assertRejected(input, message, status = 1) {
  for (const [cli, run] of Object.entries(CLIS)) {
    const out = join(dir, `${cli}-rejected.onnx`);
    const r = run(['convert', input, '-o', out, '--report', `${out}.json`]);
    assert.equal(r.status, status, `${cli}: ${r.stderr}`);
    assert.match(r.stderr, message, cli);
    assert.equal(r.stderr.trim().split('\n').length, 1, `${cli}: one line`);
    assert.equal(existsSync(out), false, `${cli}: no output file`);
    assert.equal(existsSync(`${out}.json`), false, `${cli}: no report file`);
  }
}

test('garbage, empty and truncated files are rejected with exit 1 and no output', () => {
  const garbage = join(dir, 'garbage.onnx');
  writeFileSync(garbage, 'GIF89a this is a picture, not a model');
  assertRejected(garbage, /not an ONNX model/);
  const empty = join(dir, 'empty.onnx');
  writeFileSync(empty, '');
  assertRejected(empty, /empty/);
  const truncated = join(dir, 'truncated.onnx');
  writeFileSync(truncated, readFileSync(fixture('sample.onnx')).subarray(0, 20000));
  assertRejected(truncated, /not an ONNX model/);
  assertRejected(join(dir, 'does-not-exist.onnx'), /cannot read/, 3);  // an I/O error, not a rejected model
});

test('bit-flipped models are rejected or converted, never a crash, and both CLIs agree', () => {
  const original = readFileSync(fixture('conv_bn_relu.onnx'));
  for (let i = 0; i < original.length; i += 37) {
    const flipped = Buffer.from(original);
    flipped[i] ^= 1 << (i % 8);
    const input = join(dir, 'flipped.onnx');
    writeFileSync(input, flipped);
    const results = Object.entries(CLIS).map(([cli, run]) => {
      const out = join(dir, `${cli}-flipped-${i}.onnx`);
      const r = run(['convert', input, '-o', out, '--quiet']);
      assert.ok(r.status === 0 || r.status === 1, `${cli} byte ${i}: status ${r.status} ${r.stderr}`);
      if (r.status === 1) assert.equal(existsSync(out), false);
      return [r.status, r.stderr];
    });
    assert.deepEqual(results[0], results[1], `byte ${i}`);
  }
});

test('a file over 2 GiB is rejected by both CLIs', () => {
  const huge = join(dir, 'huge.onnx');
  const fd = openSync(huge, 'w');
  ftruncateSync(fd, 2 ** 31 + 16);  // sparse: no disk used
  closeSync(fd);
  assertRejected(huge, /2 GiB/);
});

test('a rejected model leaves an existing output file untouched', () => {
  const out = join(dir, 'keep.onnx');
  writeFileSync(out, 'previous content');
  for (const run of Object.values(CLIS)) {
    const r = run(['convert', join(dir, 'garbage.onnx'), '-o', out]);
    assert.equal(r.status, 1);
    assert.equal(readFileSync(out, 'utf8'), 'previous content');
  }
});

test('--input-shape pins an input in both CLIs, byte for byte alike; a bad one is a usage error', () => {
  const out = {};
  for (const [cli, run] of Object.entries(CLIS)) {
    const model = join(dir, `${cli}-pinned.onnx`);
    const r = run(['convert', fixture('yolo_dynamic_batch.onnx'), '-o', model, '--input-shape', 'input:1,3,64,64']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /pinned {2}input: \[1, 3, 64, 64\]/);
    out[cli] = readFileSync(model);
    const bad = run(['inspect', fixture('yolo_dynamic_batch.onnx'), '--input-shape', 'input:1,3,x,64']);
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /'x' is not a positive whole number/);
    // The pin, not the model, is at fault: a usage error too, as an unknown --skip-match id is.
    const contradicting = run(['inspect', fixture('yolo_dynamic_batch.onnx'), '--input-shape', 'input:1,3,32,64']);
    assert.equal(contradicting.status, 2);
    assert.match(contradicting.stderr, /contradicts graph input 'input' \[N, 3, 64, 64\]: its dimension 2 is fixed at 64/);
  }
  assert.ok(out.node.equals(out.native));
});

test('hardware prints the table with its sources, the same in both CLIs and the Node API', async () => {
  const { createSyncConverter } = await import('../../wasm/index.mjs');
  const api = (await createSyncConverter()).hardware();
  const outputs = {};
  for (const [cli, run] of Object.entries(CLIS)) {
    const text = run(['hardware']);
    assert.equal(text.status, 0, text.stderr);
    assert.match(text.stdout, /Mul {18}no\n {26}source: Lattice sensAI guide FPGA-UG-02228 — Multiply as a standalone layer is not supported on the FPGA\n/);
    const json = run(['hardware', '--json']);
    assert.equal(json.status, 0, json.stderr);
    outputs[cli] = JSON.parse(json.stdout);
  }
  assert.deepEqual(outputs.node, outputs.native);
  assert.deepEqual(api, outputs.native);
  assert.ok(api.operators.every((row) => row.source.length > 0));
});

// `script` runs the CLI with a pseudo-terminal for its standard streams, as a user's shell would.
function onTerminal(args) {
  const command = args.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  return spawnSync('script', ['-q', '-e', '-c', command, '/dev/null'], { encoding: 'utf8' });
}

test('on a terminal both CLIs show the stages on one line, cleared before the summary; not in a pipe', () => {
  const dir = scratch();
  for (const [name, cli] of [['native', [NATIVE_CLI]], ['node', [process.execPath, NODE_CLI]]]) {
    const out = join(dir, `${name}.onnx`);
    const r = onTerminal([...cli, 'convert', fixture('resnet_stem.onnx'), '-o', out]);
    assert.equal(r.status, 0, r.stdout);
    const stages = [...r.stdout.matchAll(/\r\x1b\[Konnx-lattice: ([a-z0-9 ]+?)(?: (\d+)%)?(?=\r)/g)].map((m) => m[1]);
    assert.deepEqual(stages.slice(0, 2), ['parse', 'validate'], `${name}: ${JSON.stringify(r.stdout.slice(0, 300))}`);
    assert.ok(stages.includes('save') && stages.at(-1) === 'writing', `${name}: ${stages}`);
    // The line is cleared, then the summary starts on a clean line.
    assert.match(r.stdout, /writing\r\x1b\[Konnx-lattice \d/, name);
    const piped = (name === 'native' ? CLIS.native : CLIS.node)(['convert', fixture('resnet_stem.onnx'), '-o', out]);
    assert.equal(piped.stderr, '', `${name}: nothing on a standard error that is not a terminal`);
    const quiet = onTerminal([...cli, 'convert', fixture('resnet_stem.onnx'), '-o', out, '--quiet']);
    assert.equal(quiet.stdout, '', `${name}: --quiet prints nothing`);
  }
});

test('on a terminal, writing a real model shows its percentage as the folded weights are computed', (t) => {
  const model = join(ZOO, 'resnet18.onnx');
  if (!existsSync(model)) return t.skip(`no ${model} (scripts/test.sh generates the zoo)`);
  const dir = scratch();
  for (const [name, cli] of [['native', [NATIVE_CLI]], ['node', [process.execPath, NODE_CLI]]]) {
    const r = onTerminal([...cli, 'convert', model, '-o', join(dir, `${name}.onnx`)]);
    assert.equal(r.status, 0, r.stdout);
    const percents = [...r.stdout.matchAll(/\r\x1b\[Konnx-lattice: writing (\d+)%(?=\r)/g)].map((m) => Number(m[1]));
    assert.ok(percents.length > 10, `${name}: ${percents}`);
    assert.ok(percents.every((p, i) => i === 0 || p > percents[i - 1]), `${name}: each shown once, rising: ${percents}`);
    assert.ok(percents.at(-1) >= 99 && percents.at(-1) <= 100, `${name}: ends at the end: ${percents}`);
  }
});
