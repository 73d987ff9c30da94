// The npm package on its own: packed as the repository's README says, installed from the tarball
// into fresh projects, a CommonJS one as `npm init -y` makes it and an ES module one (no registry:
// its three pure-JavaScript dependencies come from the npm cache that setup.sh's `npm ci` filled;
// onnxruntime-node, the optional peer that check() and repair() run on, is linked from the
// repository's node_modules, as its install would download from outside the registry), where
// every example of the package's own README runs.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { createConverter, createSyncConverter } from '../../wasm/index.mjs';
import { ROOT, fixture, scratch } from './helpers.mjs';

// The installed package's name, spelt out in the scripts run inside the fresh project only (it is
// not installed here, so scripts/check_test_deps.mjs must not take it for a test dependency).
const NAME = JSON.stringify('onnx-lattice');
const npm = (args, cwd) => spawnSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, encoding: 'utf8' });
const README = readFileSync(join(ROOT, 'wasm/README.md'), 'utf8');
// Every JavaScript example of the package's README: CommonJS when it requires the package.
const EXAMPLES = [...README.matchAll(/```js\n([\s\S]*?)```/g)].map(([, code]) => ({
  code, commonjs: code.includes(`require(${NAME.replaceAll('"', "'")})`),
}));

// What the README's examples read: the sample as model.onnx (and in models/), four samples of its
// input in an .npz and sixteen for calibration in a .npy, written by numpy.
function projectFiles(project) {
  copyFileSync(fixture('sample.onnx'), join(project, 'model.onnx'));
  mkdirSync(join(project, 'models'));
  copyFileSync(fixture('sample.onnx'), join(project, 'models/model.onnx'));
  const made = spawnSync('/usr/bin/python3', ['-c', 'import numpy as np\nrng = np.random.default_rng(0)\n' +
    'np.savez("samples.npz", input=rng.uniform(0, 1, (4, 3, 64, 64)).astype(np.float32))\n' +
    'np.save("calibration.npy", rng.uniform(0, 1, (16, 3, 64, 64)).astype(np.float32))'], { cwd: project, encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
}

test('packed as the README says, the package installs into a fresh CommonJS project and a fresh ES module one, where every example of its README runs', async () => {
  const dir = scratch();
  // The repository's README names the command; `npm pack` at the root (the development tools' package) cannot work.
  const command = readFileSync(join(ROOT, 'README.md'), 'utf8').match(/`npm (pack \.\/wasm)`/);
  assert.ok(command, 'the README says how to pack the package');
  const packed = npm([...command[1].split(' '), '--pack-destination', dir, '--json'], ROOT);
  assert.equal(packed.status, 0, packed.stderr);
  const [{ filename, files }] = JSON.parse(packed.stdout);
  const paths = files.map((f) => f.path).sort();
  for (const needed of ['LICENSE', 'README.md', 'index.cjs', 'index.d.ts', 'index.mjs', 'package.json', 'dist/onnx_lattice.wasm', 'dist/onnx_lattice_fit_mt.wasm', 'dist/onnx_lattice_fit_mt.worker.js', 'dist/onnx_lattice_fpq.wasm']) {
    assert.ok(paths.includes(needed), `${needed} in ${paths}`);
  }
  assert.match(readFileSync(join(ROOT, 'wasm/LICENSE'), 'utf8'), /Apache License\s+Version 2\.0/);
  assert.ok(EXAMPLES.some((e) => e.commonjs) && EXAMPLES.some((e) => !e.commonjs), 'examples for require() and for import statements');
  // What the README's conversion of model.onnx must write: the converter's own bytes.
  const converted = (await createSyncConverter()).convert(readFileSync(fixture('sample.onnx'))).model;

  for (const type of ['commonjs', 'module']) {
    const project = join(dir, type);
    mkdirSync(project);
    assert.equal(npm(['init', '-y'], project).status, 0);
    if (type === 'module') assert.equal(npm(['pkg', 'set', 'type=module'], project).status, 0);
    const installed = npm(['install', '--offline', join(dir, filename)], project);
    assert.equal(installed.status, 0, installed.stderr);
    symlinkSync(join(ROOT, 'node_modules/onnxruntime-node'), join(project, 'node_modules/onnxruntime-node'), 'dir');
    projectFiles(project);
    // Each example in a file of its own, named so that Node runs it as what it is in this project.
    const ext = (commonjs) => (type === 'module' ? (commonjs ? '.cjs' : '.js') : (commonjs ? '.js' : '.mjs'));
    EXAMPLES.forEach(({ code, commonjs }, i) => {
      const file = `example${i + 1}${ext(commonjs)}`;
      writeFileSync(join(project, file), code);
      const run = spawnSync(process.execPath, [file], { cwd: project, encoding: 'utf8', timeout: 120_000 });
      assert.equal(run.status, 0, `${type} project, ${file} (${code.split('\n')[0]}): ${run.stderr}`);
      assert.notEqual(run.stdout.trim(), '', `${file} says what it did`);
    });
    assert.ok(readFileSync(join(project, 'model.lattice.onnx')).equals(converted), `${type}: model.lattice.onnx is the converter's`);
    assert.ok(readdirSync(project).includes('model.repaired.onnx'), `${type}: the repair's example wrote its model`);

    // Only the documented API, from import and from require.
    const esm = spawnSync(process.execPath, ['--input-type=module', '-e',
      `const m = await import(${NAME}); console.log(Object.keys(m).sort().join())`], { cwd: project, encoding: 'utf8' });
    assert.equal(esm.stdout.trim(), 'createConverter,createSyncConverter', esm.stderr);
    const cjs = spawnSync(process.execPath, ['--input-type=commonjs', '-e', `console.log(Object.keys(require(${NAME})).sort().join())`],
      { cwd: project, encoding: 'utf8' });
    assert.equal(cjs.stdout.trim(), 'createConverter,createSyncConverter', cjs.stderr);
    const bin = spawnSync(join(project, 'node_modules/.bin/onnx-lattice'), ['--version'], { encoding: 'utf8' });
    assert.equal(bin.status, 0, bin.stderr);
  }
});

// index.d.ts's top-level fields of an interface (two-space indented `name:` / `name?:`): all of
// them, and those not optional.
function fieldsOf(name) {
  const types = readFileSync(join(ROOT, 'wasm/index.d.ts'), 'utf8');
  const body = types.match(new RegExp(`export interface ${name} (?:extends \\w+ )?\\{\\n([\\s\\S]*?)\\n\\}`))[1];
  const fields = [...body.matchAll(/^ {2}(\w+)(\??):/gm)];
  return { all: fields.map((m) => m[1]).sort(), required: fields.filter((m) => !m[2]).map((m) => m[1]).sort() };
}

test('the package README shows every call of both converters in an example and names every option', async () => {
  const examples = EXAMPLES.map((e) => e.code).join('\n');
  const asyncOne = await createConverter();
  const calls = new Set([...Object.keys(asyncOne), ...Object.keys(await createSyncConverter())]);
  await asyncOne.close();
  // The synchronous converter's repair internals (fitLayer, fitBytes, the repair session,
  // fpqWeightBounds) are the page's and repair's own: typed, not advertised.
  for (const internal of ['fitLayer', 'fitBytes', 'openRepairSession', 'repairSession', 'fpqWeightBounds']) calls.delete(internal);
  assert.deepEqual([...calls].filter((call) => !new RegExp(`\\.${call}\\b`).test(examples)), [], 'calls without an example');
  for (const factory of ['createConverter', 'createSyncConverter']) assert.ok(examples.includes(`${factory}()`), factory);
  const options = ['ConvertOptions', 'MemoryConvertOptions', 'CallOptions', 'CheckOptions', 'RepairOptions', 'ImagePreprocessing']
    .flatMap((name) => fieldsOf(name).all);
  assert.deepEqual([...new Set(options)].filter((option) => !README.includes(`\`${option}\``)), [], 'options the README does not name');
});

// What a report shows of a type: every field it has is typed, every required one is there.
function assertTyped(name, objects) {
  const { all, required } = fieldsOf(name);
  const seen = [...new Set(objects.flatMap((o) => Object.keys(o)))].sort();
  assert.deepEqual(seen.filter((key) => !all.includes(key)), [], `${name}: fields missing from index.d.ts`);
  for (const o of objects) assert.deepEqual(required.filter((key) => !(key in o)), [], `${name}: required but absent`);
}

test('the Report type names the report file\'s own snake_case fields', async () => {
  const lattice = await createSyncConverter();
  // A report with refused and skipped matches too.
  const { report } = lattice.convert(readFileSync(fixture('sample.onnx')), { skipMatches: ['ConvBatchNormFoldPattern:/stem/stem.0/Conv'] });
  assert.ok(report.matches.some((m) => m.reason), 'a match with a reason');
  assertTyped('Report', [report]);
  assertTyped('Match', report.matches);
  assertTyped('ModelStats', [report.input, report.output]);
});
