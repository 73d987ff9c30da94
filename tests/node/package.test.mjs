// The npm package on its own: `npm pack`, installed from the tarball into an empty project (no
// registry: its three pure-JavaScript dependencies come from the npm cache that setup.sh's
// `npm ci` filled), its README's example run there, from `import` and `require`.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { ROOT, fixture, scratch } from './helpers.mjs';

// The installed package's name, spelt out in the scripts run inside the fresh project only (it is
// not installed here, so scripts/check_test_deps.mjs must not take it for a test dependency).
const NAME = JSON.stringify('onnx-lattice');
const npm = (args, cwd) => spawnSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, encoding: 'utf8' });

test('the packed package installs into an empty project and its README example runs there', () => {
  const dir = scratch();
  const packed = npm(['pack', '--pack-destination', dir, '--json'], join(ROOT, 'wasm'));
  assert.equal(packed.status, 0, packed.stderr);
  const [{ filename, files }] = JSON.parse(packed.stdout);
  const paths = files.map((f) => f.path).sort();
  for (const needed of ['LICENSE', 'README.md', 'index.cjs', 'index.d.ts', 'index.mjs', 'package.json', 'dist/onnx_lattice.wasm', 'dist/onnx_lattice_fit.wasm']) {
    assert.ok(paths.includes(needed), `${needed} in ${paths}`);
  }
  assert.match(readFileSync(join(ROOT, 'wasm/LICENSE'), 'utf8'), /Apache License\s+Version 2\.0/);

  const project = join(dir, 'project');
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'user', version: '1.0.0', private: true, type: 'module' }));
  const installed = npm(['install', '--offline', join(dir, filename)], project);
  assert.equal(installed.status, 0, installed.stderr);

  // The README's first example, as written, beside a model.onnx.
  const readme = readFileSync(join(ROOT, 'wasm/README.md'), 'utf8');
  const example = readme.match(/```js\n([\s\S]*?)```/)[1];
  assert.ok(example.includes(`{ createConverter } from ${NAME.replaceAll('"', "'")}`), 'imports the package by its name');
  copyFileSync(fixture('sample.onnx'), join(project, 'model.onnx'));
  writeFileSync(join(project, 'example.mjs'), example);
  const run = spawnSync(process.execPath, ['example.mjs'], { cwd: project, encoding: 'utf8', timeout: 60000 });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /model\.lattice\.onnx.*matches/s);
  assert.deepEqual(readdirSync(project).filter((f) => f.endsWith('.onnx')).sort(), ['model.lattice.onnx', 'model.mem.onnx', 'model.onnx']);

  // Only the documented API; the same from CommonJS.
  const esm = spawnSync(process.execPath, ['--input-type=module', '-e',
    `const m = await import(${NAME}); console.log(Object.keys(m).sort().join())`], { cwd: project, encoding: 'utf8' });
  assert.equal(esm.stdout.trim(), 'createConverter,createSyncConverter', esm.stderr);
  const cjs = spawnSync(process.execPath, ['-e', `
    const { createConverter } = require(${NAME});
    createConverter().then(async (lattice) => {
      const report = await lattice.inspect(require('node:fs').readFileSync('model.onnx'));
      console.log(Object.keys(require(${NAME})).sort().join(), report.schema);
    });`], { cwd: project, encoding: 'utf8' });
  assert.equal(cjs.status, 0, cjs.stderr);
  assert.equal(cjs.stdout.trim(), 'createConverter,createSyncConverter onnx-lattice-report/1');
  // The bin.
  const bin = spawnSync(join(project, 'node_modules/.bin/onnx-lattice'), ['--version'], { encoding: 'utf8' });
  assert.equal(bin.status, 0, bin.stderr);
});

// index.d.ts's top-level fields of an interface (two-space indented `name:` / `name?:`): all of
// them, and those not optional.
function fieldsOf(name) {
  const types = readFileSync(join(ROOT, 'wasm/index.d.ts'), 'utf8');
  const body = types.match(new RegExp(`export interface ${name} \\{\\n([\\s\\S]*?)\\n\\}`))[1];
  const fields = [...body.matchAll(/^ {2}(\w+)(\??):/gm)];
  return { all: fields.map((m) => m[1]).sort(), required: fields.filter((m) => !m[2]).map((m) => m[1]).sort() };
}

// What a report shows of a type: every field it has is typed, every required one is there.
function assertTyped(name, objects) {
  const { all, required } = fieldsOf(name);
  const seen = [...new Set(objects.flatMap((o) => Object.keys(o)))].sort();
  assert.deepEqual(seen.filter((key) => !all.includes(key)), [], `${name}: fields missing from index.d.ts`);
  for (const o of objects) assert.deepEqual(required.filter((key) => !(key in o)), [], `${name}: required but absent`);
}

test('the Report type names the report file\'s own snake_case fields', async () => {
  const { createSyncConverter } = await import('../../wasm/index.mjs');
  const lattice = await createSyncConverter();
  // A report with refused and skipped matches too.
  const { report } = lattice.convert(readFileSync(fixture('sample.onnx')), { skipMatches: ['ConvBatchNormFoldPattern:/stem/stem.0/Conv'] });
  assert.ok(report.matches.some((m) => m.reason), 'a match with a reason');
  assertTyped('Report', [report]);
  assertTyped('Match', report.matches);
  assertTyped('ModelStats', [report.input, report.output]);
});
