// The CLIs in scripts and CI (core/cli): exit 3 for a file that cannot be read or written, --json
// failures as {"error": ...} on stdout, -o optional, `--` before file names that look like flags,
// a repeated single-valued flag refused, -o - refused on a terminal, every command's flags listed
// one per line; both CLIs alike (stdout, stderr, status, files).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { runCheckRequest } from '../../wasm/cli/check_cli.mjs';
import { loadModule } from '../../wasm/node/engine.mjs';
import { CLIS, NATIVE_CLI, NODE_CLI, ROOT, fixture, scratch } from './helpers.mjs';

const SAMPLE = fixture('sample.onnx');

// Runs both CLIs on `args(dir)` in a fresh folder each (holding the sample as m.onnx and -m.onnx,
// and an empty folder `folder`), in that folder, with `stdin(dir)` (bytes, or an open file's fd)
// on standard input; asserts they agree on status, stdout, stderr and the files left, and returns
// the native one's.
function both(args, stdin = () => '') {
  const results = Object.entries(CLIS).map(([cli]) => {
    const dir = scratch();
    copyFileSync(SAMPLE, join(dir, 'm.onnx'));
    copyFileSync(SAMPLE, join(dir, '-m.onnx'));
    mkdirSync(join(dir, 'folder'));
    const argv = args(dir);
    const input = stdin(dir);
    const options = typeof input === 'number' ? { stdio: [input, 'pipe', 'pipe'] } : { input };
    const run = cli === 'native'
      ? spawnSync(NATIVE_CLI, argv, { cwd: dir, encoding: 'utf8', ...options })
      : spawnSync(process.execPath, [NODE_CLI, ...argv], { cwd: dir, encoding: 'utf8', ...options });
    const clean = (text) => text.replaceAll(dir, 'DIR');
    return { status: run.status, stdout: clean(run.stdout), stderr: clean(run.stderr), files: readdirSync(dir).sort(), dir };
  });
  const [native, node] = results;
  for (const key of ['status', 'stdout', 'stderr', 'files']) assert.deepEqual(node[key], native[key], key);
  return native;
}

test('a file that cannot be read or written: exit 3, one line naming it, nothing written', () => {
  const cases = [
    [() => ['convert', 'missing.onnx', '-o', 'o.onnx'], "cannot read 'missing.onnx': No such file or directory"],
    [() => ['inspect', 'folder'], "cannot read 'folder': Is a directory"],
    [() => ['convert', 'm.onnx', '-o', 'no/such/o.onnx'], "cannot write 'no/such/o.onnx': No such file or directory"],
    [() => ['inspect', 'missing.onnx'], "cannot read 'missing.onnx': No such file or directory"],
  ];
  for (const [args, message] of cases) {
    const r = both(args);
    assert.equal(r.status, 3, r.stderr);
    assert.equal(r.stderr, `onnx-lattice: error: ${message}\n`);
    assert.deepEqual(r.files, ['-m.onnx', 'folder', 'm.onnx']);
  }
});

test('--json: a failure is {"error": {code, message, path?}} on stdout, with the exit status of its kind', () => {
  const garbage = (d) => { (spawnSync('sh', ['-c', `printf junk > '${d}/g.onnx'`])); return join(d, 'g.onnx'); };
  const cases = [
    [() => ['convert', 'missing.onnx', '--json'], 3, { code: 'ERR_ONNX_LATTICE_IO', message: "cannot read 'missing.onnx': No such file or directory", path: 'missing.onnx', errno: 'ENOENT' }],
    [() => ['inspect', 'folder', '--json'], 3, { code: 'ERR_ONNX_LATTICE_IO', message: "cannot read 'folder': Is a directory", path: 'folder', errno: 'EISDIR' }],
    [() => ['inspect', 'm.onnx', '--json', '--target', 'xilinx'], 2, null],
    [(d) => ['convert', garbage(d), '-o', 'o.onnx', '--json'], 1, null],
  ];
  for (const [args, status, expected] of cases) {
    const r = both(args);
    assert.equal(r.status, status, r.stdout);
    assert.equal(r.stderr, '');
    const { error } = JSON.parse(r.stdout);
    if (expected) assert.deepEqual(error, expected);
    else assert.equal(error.code, status === 2 ? 'ERR_ONNX_LATTICE_OPTIONS' : 'ERR_ONNX_LATTICE_MODEL');
  }
  for (const run of Object.values(CLIS)) {
    const ok = run(['convert', SAMPLE, '-o', join(scratch(), 'o.onnx'), '--json']);
    assert.equal(ok.status, 0);
    assert.equal(JSON.parse(ok.stdout).schema, 'onnx-lattice-report/1');
  }
});

test('-o is optional: <name>.<target>.onnx beside the input, never over it', () => {
  const r = both(() => ['convert', 'm.onnx', '--quiet']);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.files, ['-m.onnx', 'folder', 'm.lattice.onnx', 'm.onnx']);
  assert.ok(readFileSync(join(r.dir, 'm.onnx')).equals(readFileSync(SAMPLE)));
  const advanced = both((d) => ['convert', join(d, 'm.onnx'), '--target', 'lattice-advanced', '--quiet']);
  assert.deepEqual(advanced.files, ['-m.onnx', 'folder', 'm.lattice-advanced.onnx', 'm.onnx']);
  const summary = both(() => ['convert', 'm.onnx']);
  assert.match(summary.stdout, /m\.lattice\.onnx/);
});

test('after --, every argument is a file name, even one starting with -', () => {
  const r = both(() => ['convert', '-o', 'out.onnx', '--quiet', '--', '-m.onnx']);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(r.files.includes('out.onnx'));
  const without = both(() => ['convert', '-m.onnx', '-o', 'out.onnx']);
  assert.equal(without.status, 2);
  assert.match(without.stderr, /'-m\.onnx' is not an option of 'convert'/);
});

test('a single-valued flag given twice is a usage error', () => {
  for (const args of [['--target', 'none', '--target', 'lattice'], ['-o', 'a.onnx', '--output', 'b.onnx'], ['--report', 'a.json', '--report', 'b.json']]) {
    const r = both(() => ['convert', 'm.onnx', ...args]);
    assert.equal(r.status, 2, args.join(' '));
    assert.match(r.stderr, /given twice/);
    assert.deepEqual(r.files, ['-m.onnx', 'folder', 'm.onnx']);
  }
});

test('every command\'s --help lists its flags, one line each', () => {
  const flags = {
    convert: ['-o, --output', '--report', '--json', '-d, --out-dir', '--reports', '--fail-on-unsupported', '--dry-run',
      '--quiet', '--external-data', '--inline', '--target', '--fixed-point', '--fold-bn', '--no-fold-bn', '--snap-weights',
      '--only', '--skip', '--skip-match', '--input-shape', '--check', '--repair', '--calibration', '--fpq-twin', '--layerwise', '--seed', '--input-range', '--rtol', '--atol',
      '--inputs', '--labels', '--map-threshold', '--min-agreement', '--min-accuracy', '--image-resize', '--image-scale', '--image-order', '--check-shape', '--simulate', '--',
      '-h, --help'],
    check: ['--layerwise', '--seed', '--input-range', '--rtol', '--atol', '--inputs', '--labels', '--map-threshold', '--min-agreement', '--min-accuracy', '--image-resize', '--image-scale', '--image-order', '--check-shape',
      '--simulate', '--input-shape', '--json', '--', '-h, --help'],
    inspect: ['--target', '--fixed-point', '--fold-bn', '--no-fold-bn', '--snap-weights', '--only', '--skip', '--skip-match', '--input-shape', '--fail-on-unsupported',
      '--json', '--', '-h, --help'],
    patterns: ['--json'],
    hardware: ['--json'],
  };
  for (const [command, expected] of Object.entries(flags)) {
    const r = both(() => [command, '--help']);
    assert.equal(r.status, 0);
    // Each flag line's names, without its value's placeholder ('-o, --output FILE' -> '-o, --output').
    const listed = r.stdout.split('\n').filter((line) => /^ {2}-/.test(line)).map((line) => line.trim().match(/^(-\w, --[\w-]+|--[\w-]*)/)[1]);
    assert.deepEqual(listed, expected, command);
  }
});

test('-o - refuses to write the model to a terminal', () => {
  for (const cli of [[NATIVE_CLI], [process.execPath, NODE_CLI]]) {
    const command = [...cli, 'convert', SAMPLE, '-o', '-'].map((a) => `'${a}'`).join(' ');
    const r = spawnSync('script', ['-q', '-e', '-c', command, '/dev/null'], { encoding: 'utf8' });
    assert.equal(r.status, 2, r.stdout);
    assert.match(r.stdout, /standard output, which is a terminal/);
    assert.ok(r.stdout.length < 2000, 'no binary on the terminal');
  }
});

// A folder of models for the batch tests: two good ones (one in a subfolder), a bad one, an
// earlier run's output (left alone) and a file that is not a model.
function batchFolder(d) {
  mkdirSync(join(d, 'models/sub'), { recursive: true });
  copyFileSync(SAMPLE, join(d, 'models/a.onnx'));
  copyFileSync(fixture('conv_bn_relu.onnx'), join(d, 'models/sub/b.onnx'));
  copyFileSync(SAMPLE, join(d, 'models/a.lattice.onnx'));
  spawnSync('sh', ['-c', `printf junk > '${d}/models/bad.onnx'; printf x > '${d}/models/notes.txt'`]);
  mkdirSync(join(d, 'out'));
  return d;
}

test('a folder with one bad model: a line per model, a summary, the worst exit status, outputs in -d', () => {
  const r = both((d) => { batchFolder(d); return ['convert', 'models', '-d', 'out', '--reports']; });
  assert.equal(r.status, 1, r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.equal(lines.length, 4, r.stdout);
  assert.match(lines[0], /^(ok|partial) +models\/a\.onnx -> out\/a\.lattice\.onnx \(\d+ applied, \d+ the target cannot run\)$/);
  assert.match(lines[1], /^failed +models\/bad\.onnx: .*not an ONNX model/);
  assert.match(lines[2], /^(ok|partial) +models\/sub\/b\.onnx -> out\/b\.lattice\.onnx/);
  assert.match(lines[3], /^3 models: 2 converted, 1 failed; \d+ nodes the target cannot run, in 1 model$/);
  assert.deepEqual(readdirSync(join(r.dir, 'out')).sort(), ['a.lattice.onnx', 'a.lattice.report.json', 'b.lattice.onnx', 'b.lattice.report.json']);
  // Several files, beside their inputs; a missing one is an I/O error, the worst status.
  const files = both((d) => { batchFolder(d); return ['convert', 'models/a.onnx', 'models/sub/b.onnx', 'missing.onnx', '--quiet']; });
  assert.equal(files.status, 3);
  assert.equal(files.stdout, '');
  // -o, --report and --json name one model's outputs: refused with several.
  for (const flag of [['-o', 'x.onnx'], ['--report', 'r.json'], ['--json']]) {
    const refused = both((d) => { batchFolder(d); return ['convert', 'models', '-d', 'out', ...flag]; });
    assert.equal(refused.status, 2, flag.join(' '));
    // With --json the error is JSON on stdout, as every --json failure.
    const message = flag[0] === '--json' ? JSON.parse(refused.stdout).error.message : refused.stderr;
    assert.match(message, /names one model's output/);
  }
});

test('--fail-on-unsupported: exit 4 when the target cannot run some node, the count in the summary', () => {
  const single = both(() => ['convert', 'm.onnx', '-o', 'o.onnx', '--fail-on-unsupported']);
  const report = CLIS.native(['inspect', SAMPLE, '--json']);  // its timings differ between runs
  const cannotRun = JSON.parse(report.stdout).unsupported.length;
  assert.ok(cannotRun > 0, 'the sample has nodes the target cannot run');
  assert.equal(single.status, 4, single.stderr);
  assert.ok(single.files.includes('o.onnx'), 'the model is still written');
  assert.equal(both(() => ['convert', 'm.onnx', '-o', 'o.onnx']).status, 0, 'without the flag: 0');
  assert.equal(both(() => ['inspect', 'm.onnx', '--fail-on-unsupported']).status, 4);
  const batch = both((d) => { copyFileSync(SAMPLE, join(d, 'n.onnx')); return ['convert', 'm.onnx', 'n.onnx', '-d', 'folder', '--fail-on-unsupported']; });
  assert.equal(batch.status, 4, batch.stdout);
  assert.match(batch.stdout, new RegExp(`2 models: 2 converted, 0 failed; ${2 * cannotRun} nodes the target cannot run, in 2 models\\n$`));
  // Without the flag a batch of such models succeeds; with it, a rejected model (1) or an
  // unreadable one (3) is worse than a model the target cannot run whole (4).
  const lenient = both((d) => { copyFileSync(SAMPLE, join(d, 'n.onnx')); return ['convert', 'm.onnx', 'n.onnx', '-d', 'folder']; });
  assert.equal(lenient.status, 0, lenient.stdout);
  assert.equal(both((d) => { batchFolder(d); return ['convert', 'models', '-d', 'out', '--fail-on-unsupported', '--quiet']; }).status, 1);
  assert.equal(both(() => ['convert', 'm.onnx', 'missing.onnx', '--fail-on-unsupported', '--quiet']).status, 3);
});

test('a batch whose outputs collide, or whose -d is no folder, is refused before any work', () => {
  const collide = both((d) => { copyFileSync(SAMPLE, join(d, 'folder/m.onnx')); return ['convert', 'm.onnx', 'folder/m.onnx', '-d', 'folder']; });
  assert.equal(collide.status, 2);
  assert.equal(collide.stderr, "onnx-lattice: 'm.onnx' and 'folder/m.onnx' would both be written to 'folder/m.lattice.onnx'; convert them in two runs\n");
  assert.deepEqual(readdirSync(join(collide.dir, 'folder')), ['m.onnx']);
  const noFolder = both(() => ['convert', 'm.onnx', '-d', 'm.onnx']);
  assert.equal(noFolder.status, 2);
  assert.equal(noFolder.stderr, "onnx-lattice: -d 'm.onnx' is not a folder\n");
});

test('-d makes a folder that does not exist, with its parents; a file in its way is an I/O error; a dry run makes nothing', () => {
  const made = both(() => ['convert', 'm.onnx', '-d', 'out/deeper', '--quiet']);
  assert.equal(made.status, 0, made.stderr);
  assert.deepEqual(readdirSync(join(made.dir, 'out/deeper')), ['m.lattice.onnx']);
  const blocked = both(() => ['convert', 'm.onnx', '-d', 'm.onnx/sub']);
  assert.equal(blocked.status, 3);
  assert.equal(blocked.stderr, "onnx-lattice: cannot make the folder -d 'm.onnx/sub': Not a directory\n");
  const dry = both(() => ['convert', 'm.onnx', '-d', 'never', '--dry-run', '--quiet']);
  assert.equal(dry.status, 0, dry.stderr);
  assert.ok(!dry.files.includes('never'), 'a dry run made no folder');
});

test('- reads the model from standard input: converted as the file would be, named "standard input"', () => {
  const fromFile = join(scratch(), 'f.onnx');
  assert.equal(CLIS.native(['convert', SAMPLE, '-o', fromFile, '--quiet']).status, 0);
  const sample = () => readFileSync(SAMPLE);
  const r = both(() => ['convert', '-', '-o', 'o.onnx'], sample);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(readFileSync(join(r.dir, 'o.onnx')).equals(readFileSync(fromFile)));
  assert.match(r.stdout, /^input {3}standard input \(34829 bytes/m);
  // After --, - is still standard input (a file named - is ./-).
  assert.equal(both(() => ['convert', '-o', 'o.onnx', '--quiet', '--', '-'], sample).status, 0);
  const inspect = both(() => ['inspect', '-'], sample);  // the summary: the JSON report's timings differ
  assert.equal(inspect.status, 0, inspect.stderr);
  assert.match(inspect.stdout, /^input {3}standard input \(34829 bytes, ir_version 7, opset 13, 38 nodes\)$/m);
  // - twice: the model from standard input to standard output, the summary to standard error.
  const piped = Object.values(CLIS).map((run) => run === CLIS.native
    ? spawnSync(NATIVE_CLI, ['convert', '-', '-o', '-'], { input: sample() })
    : spawnSync(process.execPath, [NODE_CLI, 'convert', '-', '-o', '-'], { input: sample() }));
  for (const p of piped) {
    assert.equal(p.status, 0, p.stderr.toString());
    assert.ok(p.stdout.equals(readFileSync(fromFile)));
    assert.match(p.stderr.toString(), /^input {3}standard input/m);
  }
  assert.equal(piped[1].stderr.toString(), piped[0].stderr.toString());
});

test('- needs -o (no name to put the output beside) and is one model: never part of a batch, nor checked', () => {
  const sample = () => readFileSync(SAMPLE);
  const cases = [
    [['convert', '-'], 'a model read from standard input has no name to put the output beside: give -o FILE (or -o - for standard output)'],
    [['convert', '-', 'm.onnx'], '- (standard input) is one model'],
    [['convert', 'm.onnx', '-', '-d', 'folder'], '- (standard input) is one model'],
    [['convert', '-', '-d', 'folder'], '- (standard input) is one model'],
    [['check', '-', 'm.onnx'], "'-' (standard input) is not one"],
    [['convert', '-', '-o', 'o.onnx', '--check'], '--check runs the input model too'],
  ];
  for (const [args, message] of cases) {
    const r = both(() => args, sample);
    assert.equal(r.status, 2, args.join(' '));
    assert.ok(r.stderr.startsWith('onnx-lattice: ') && r.stderr.includes(message), r.stderr);
    assert.deepEqual(r.files, ['-m.onnx', 'folder', 'm.onnx']);
  }
  const json = both(() => ['convert', '-', '--json'], sample);
  assert.equal(json.status, 2);
  assert.equal(JSON.parse(json.stdout).error.code, 'ERR_ONNX_LATTICE_OPTIONS');
});

test('bad input on standard input: the messages a file gets, exit 1, nothing written', () => {
  const sample = readFileSync(SAMPLE);
  const undecodable = (n) => `not an ONNX model: the ${n} bytes do not decode as an ONNX ModelProto (truncated or corrupted file?)`;
  const cases = [  // bytes, the message for them on standard input, in a file
    [Buffer.alloc(0), 'standard input is empty; expected an ONNX model (.onnx)', 'bad.onnx: the file is empty; expected an ONNX model (.onnx)'],
    [Buffer.from('junk'), 'standard input: not an ONNX model: it is text, beginning “junk”', 'bad.onnx: not an ONNX model: it is text, beginning “junk”'],
    [Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]), 'standard input: not an ONNX model: it is a PNG image', 'bad.onnx: not an ONNX model: it is a PNG image'],
    [sample.subarray(0, 300), `standard input: ${undecodable(300)}`, `bad.onnx: ${undecodable(300)}`],
  ];
  for (const [bytes, message, fileMessage] of cases) {
    // Over an existing output, which must stay as it was.
    const r = both((d) => { copyFileSync(SAMPLE, join(d, 'o.onnx')); return ['convert', '-', '-o', 'o.onnx']; }, () => bytes);
    assert.equal(r.status, 1, r.stderr);
    assert.equal(r.stderr, `onnx-lattice: error: ${message}\n`);
    assert.deepEqual(r.files, ['-m.onnx', 'folder', 'm.onnx', 'o.onnx']);
    assert.ok(readFileSync(join(r.dir, 'o.onnx')).equals(sample));
    const file = both((d) => { writeFileSync(join(d, 'bad.onnx'), bytes); return ['convert', 'bad.onnx', '-o', 'o.onnx']; });
    assert.equal(file.stderr, `onnx-lattice: error: ${fileMessage}\n`);
  }
  // Standard input that cannot be read (a folder): an I/O error naming it, exit 3.
  const folder = both(() => ['convert', '-', '-o', 'o.onnx', '--json'], (d) => openSync(join(d, 'folder'), 'r'));
  assert.equal(folder.status, 3);
  assert.deepEqual(JSON.parse(folder.stdout).error,
    { code: 'ERR_ONNX_LATTICE_IO', message: 'cannot read standard input: Is a directory', path: '-', errno: 'EISDIR' });
});

test('a model read from standard input finds its data files in the current folder', () => {
  // The sample split into ext.onnx + ext.onnx.data, in the current folder or in ./folder.
  const split = (d, where) => {
    const r = CLIS.native(['convert', SAMPLE, '-o', join(d, where, 'ext.onnx'), '--external-data', '--target', 'none', '--quiet']);
    assert.equal(r.status, 0, r.stderr);
  };
  const here = both((d) => { split(d, '.'); return ['convert', '-', '-o', 'o.onnx', '--inline', '--quiet']; },
    (d) => readFileSync(join(d, 'ext.onnx')));
  assert.equal(here.status, 0, here.stderr);
  assert.ok(here.files.includes('o.onnx'));
  const elsewhere = both((d) => { split(d, 'folder'); return ['convert', '-', '-o', 'o.onnx', '--inline']; },
    (d) => readFileSync(join(d, 'folder/ext.onnx')));
  assert.equal(elsewhere.status, 1, elsewhere.stderr);
  assert.match(elsewhere.stderr, /in the current folder \(where a model read from standard input finds its data files\)/);
  assert.ok(!elsewhere.files.includes('o.onnx'));
});

test('- refuses to read the model from a terminal', () => {
  for (const cli of [[NATIVE_CLI], [process.execPath, NODE_CLI]]) {
    const command = [...cli, 'convert', '-', '-o', join(scratch(), 'o.onnx')].map((a) => `'${a}'`).join(' ');
    const r = spawnSync('script', ['-q', '-e', '-c', command, '/dev/null'], { encoding: 'utf8', timeout: 60000 });
    assert.equal(r.status, 2, r.stdout);
    assert.match(r.stdout, /standard input, which is a terminal/);
  }
});

test('exit statuses: both CLIs\' --help lists the core\'s table, by which the Node CLI\'s check exits', async () => {
  const table = JSON.parse((await loadModule()).exitStatuses());
  const rows = (key) => table.filter((s) => s[key]).map((s) => `  ${s.number}  ${s[key]}`);
  const listed = (help) => help.slice(help.indexOf('\nexit status:\n')).split('\n').filter((l) => /^  \d+  /.test(l));
  for (const cli of Object.values(CLIS)) {
    assert.deepEqual(listed(cli(['--help']).stdout), rows('meaning'));
    assert.deepEqual(listed(cli(['convert', '--help']).stdout), rows('meaning'));
    assert.deepEqual(listed(cli(['check', '--help']).stdout), rows('check_meaning'));
  }
  // The check's JavaScript names only statuses of the table, and exits by the numbers it is given.
  const used = new Set([...readFileSync(join(ROOT, 'wasm/cli/check_cli.mjs'), 'utf8').matchAll(/\bEXIT\.(\w+)/g)].map((m) => m[1]));
  assert.ok(used.size >= 5, [...used].join());
  assert.deepEqual([...used].filter((name) => !table.some((s) => s.name === name)), []);
  const host = { exit: Object.fromEntries(table.map((s) => [s.name, 100 + s.number])), out: () => {}, err: () => {} };
  assert.equal(await runCheckRequest({ command: 'convert', options: {} }, host), 100);
  assert.equal(await runCheckRequest({ command: 'check', original: 'a.onnx', candidate: 'b.onnx', options: { bogus: 1 } }, host), 102);
});
