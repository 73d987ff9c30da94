// The check (wasm/shared/check.mjs, wasm/node/check_node.mjs, wasm/cli/check_cli.mjs): the comparison's
// arithmetic, then the Node API and both CLIs on real models run in onnxruntime-node.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { compareTensor, firstBeyondTolerance, inputFeeds, rewriteChanges, withOutputs } from '../../wasm/shared/check.mjs';
import { createSyncConverter } from '../../wasm/index.mjs';
import { CLIS, ROOT, ZOO, fixture, scratch } from './helpers.mjs';

const lattice = await createSyncConverter();
const dir = scratch();
const tensor = (data, dims = [data.length], type = 'float32') => ({ type, dims, data: Float32Array.from(data) });

test('compareTensor: |Δ| statistics, the index of the largest, and the tolerances that would pass', () => {
  const a = tensor([1, 2, 3, 4, 0, 10], [2, 3]);
  const b = tensor([1, 2.5, 3, 4, 0.001, 10], [2, 3]);
  const e = compareTensor('y', a, b, { rtol: 1e-4, atol: 1e-5 });
  assert.equal(e.comparable, true);
  assert.equal(e.max_abs, 0.5);
  assert.deepEqual(e.max_abs_index, [0, 1]);
  assert.ok(Math.abs(e.mean_abs - 0.501 / 6) < 1e-9);
  assert.equal(e.max_rel, Infinity, 'a change where the original is 0 is infinitely relative');
  assert.ok(Math.abs(e.min_atol - (0.5 - 1e-4 * 2)) < 1e-9, `min_atol ${e.min_atol}`);
  assert.equal(e.min_rtol, Infinity);
  assert.equal(e.pass, false);
  // At exactly the tolerance that would pass, it passes; a hair below, it fails.
  assert.equal(compareTensor('y', a, b, { rtol: 1e-4, atol: e.min_atol }).pass, true);
  assert.equal(compareTensor('y', a, b, { rtol: 1e-4, atol: e.min_atol * 0.999 }).pass, false);
  assert.deepEqual(e.nan, [0, 0]);
});

test('one tolerance: the repair\'s firstBeyondTolerance passes exactly where compareTensor does, and at its min_atol', () => {
  const cases = [
    [[100, NaN], [109, NaN]], [[100, 1], [111, 1]], [[1, 2], [1, NaN]], [[NaN, 2], [1, 2]],
    [[Infinity, 1], [Infinity, 1]], [[Infinity, 1], [1e30, 1]], [[-Infinity], [Infinity]], [[0, -0], [-0, 0]],
    [[1, 2, 3, 4, 0, 10], [1, 2.5, 3, 4, 0.001, 10]], [[5, 5, 5], [5.4, 5, 6]],
  ];
  for (const [x, y] of cases) {
    for (const tol of [{ rtol: 0.1, atol: 0 }, { rtol: 1e-4, atol: 1e-5 }, { rtol: 0, atol: 0.5 }]) {
      const e = compareTensor('y', tensor(x), tensor(y), tol);
      const at = firstBeyondTolerance(new Float32Array(x), new Float32Array(y), tol.rtol, tol.atol);
      assert.equal(at === x.length, e.pass, `${x} → ${y} at ${JSON.stringify(tol)}`);
      if (!e.pass) assert.ok(at < x.length && !compareTensor('y', tensor(x.slice(0, at + 1)), tensor(y.slice(0, at + 1)), tol).pass, 'the first value beyond');
      if (Number.isFinite(e.min_atol)) assert.equal(firstBeyondTolerance(new Float32Array(x), new Float32Array(y), tol.rtol, e.min_atol), x.length);
    }
  }
});

test('compareTensor: allclose per element, NaN against NaN equal, a new NaN or infinity a failure', () => {
  const tol = { rtol: 0.1, atol: 0 };
  assert.equal(compareTensor('y', tensor([100, NaN]), tensor([109, NaN]), tol).pass, true);
  assert.equal(compareTensor('y', tensor([100, 1]), tensor([111, 1]), tol).pass, false, 'rtol is relative to the original');
  const nan = compareTensor('y', tensor([1, 2]), tensor([1, NaN]), tol);
  assert.equal(nan.pass, false);
  assert.deepEqual(nan.nan, [0, 1]);
  assert.equal(nan.max_abs, Infinity);
  const inf = compareTensor('y', tensor([Infinity, 2]), tensor([Infinity, -Infinity]), tol);
  assert.deepEqual(inf.inf, [1, 2]);
  assert.equal(inf.pass, false);
});

test('compareTensor: a scaled atol is relative to the largest |value|, as float rounding is', () => {
  const a = tensor([100, 0.1]), b = tensor([100, 0.1 + 5e-5]);
  assert.equal(compareTensor('y', a, b).pass, false, 'onnxsim\'s atol 1e-5 is absolute');
  const scaled = compareTensor('y', a, b, { rtol: 1e-4, atol: 1e-5, scaled: true });
  assert.equal(scaled.atol_used, 1e-5 * 100);
  assert.equal(scaled.pass, true);
  assert.equal(compareTensor('y', tensor([0.5]), tensor([0.5 + 2.5e-5]), { rtol: 0, atol: 1e-5, scaled: true }).pass, false, 'never below atol itself');
});

test('rewriteChanges: what entered a chain rewrite is what its nodes read from outside it, not its own tensors', () => {
  // pre -> [conv -> bn -> relu] (one match) -> post: the chain changes `c` and `b` itself; only `p` was given.
  const node = (name, inputs, outputs) => ({ name, inputs: inputs.map((n) => ({ name: n })), outputs: outputs.map((n) => ({ name: n })) });
  const original = { nodes: [node('pre', ['x'], ['p']), node('conv', ['p', 'w'], ['c']), node('bn', ['c'], ['b']), node('relu', ['b'], ['r']), node('post', ['r'], ['y'])] };
  const layers = [
    { tensor: 'p', match_id: undefined, max_abs: 0.25, max_rel: 0, pass: false },
    { tensor: 'c', match_id: 'chain', max_abs: 4, max_rel: 0, pass: false },
    { tensor: 'b', match_id: 'chain', max_abs: 8, max_rel: 0, pass: false },
    { tensor: 'r', match_id: 'chain', max_abs: 2, max_rel: 0, pass: false },
  ];
  const conversion = { matches: [{ id: 'chain', pattern: 'P', applied: true, nodes: ['conv', 'bn', 'relu'] }] };
  assert.deepEqual(rewriteChanges(layers, original, conversion),
    [{ match_id: 'chain', pattern: 'P', tensor: 'r', max_abs: 2, max_rel: 0, max_abs_in: 0.25, pass: false }]);
  // A rewrite reading the graph input only was given nothing changed.
  layers[0].max_abs = 0;
  assert.equal(rewriteChanges(layers, original, conversion)[0].max_abs_in, 0);
});

test('compareTensor: p99 of |Δ| over 1000 elements', () => {
  const a = new Array(1000).fill(0), b = Array.from({ length: 1000 }, (_, i) => i / 1000);
  const e = compareTensor('y', tensor(a), tensor(b));
  assert.equal(e.p99_abs, Math.fround(989 / 1000));
  assert.equal(e.max_abs, Math.fround(999 / 1000));
});

test('compareTensor: a changed shape is not comparable and carries both sides\' statistics', () => {
  const e = compareTensor('y', tensor([1, 2, 3, 4], [1, 4]), tensor([2, 4], [1, 2]));
  assert.equal(e.comparable, false);
  assert.equal(e.reason, 'the shape changed');
  assert.deepEqual(e.stats_original, { min: 1, max: 4, mean: 2.5, std: Math.sqrt(1.25) });
  assert.deepEqual(e.stats_candidate, { min: 2, max: 4, mean: 3, std: 1 });
  assert.equal(e.max_abs, undefined);
});

test('inputFeeds: seeded, in the range, zeros for integers, and an unsized dimension named with a size proposed', () => {
  const inputs = [{ name: 'x', type: 'float', shape: [1, 3, 'H', 4] }, { name: 'ids', type: 'int64', shape: [2] }];
  const description = { inputs, nodes: [] };
  assert.throws(() => inputFeeds(description), (e) => e.code === 'ERR_ONNX_LATTICE_OPTIONS' &&
    /input 'x' \[1, 3, H, 4\] has 'H' \(axis 2\): the check never guesses such a size, give it, e\.g\. inputShapes: \{'x': \[1, 3, 32, 4\]\}/.test(e.message));
  const opts = { seed: 7, inputRange: [2, 3], inputShapes: { x: [1, 3, 5, 4] } };
  const a = inputFeeds(description, opts), b = inputFeeds(description, opts), c = inputFeeds(description, { ...opts, seed: 8 });
  assert.deepEqual(a.x.dims, [1, 3, 5, 4]);
  assert.equal(a.x.data.length, 60);
  assert.deepEqual(a.x.data, b.x.data, 'same seed, same values');
  assert.notDeepEqual(a.x.data, c.x.data, 'another seed, other values');
  assert.ok(a.x.data.every((v) => v >= 2 && v < 3));
  assert.deepEqual([...a.ids.data], [0n, 0n]);
  assert.deepEqual([...inputFeeds(description, { ...opts, inputValues: { ids: [4, 5] } }).ids.data], [4n, 5n]);
});

test('withOutputs: the tensors named become graph outputs of the same model (onnxruntime runs it)', async () => {
  const ort = (await import('onnxruntime-node')).default;
  const bytes = readFileSync(fixture('conv_bn_relu.onnx'));
  const { nodes } = lattice.describe(bytes);
  const inner = nodes[0].outputs[0].name;
  const session = await ort.InferenceSession.create(withOutputs(bytes, [inner]), { graphOptimizationLevel: 'disabled' });
  assert.ok(session.outputNames.includes(inner), `${session.outputNames}`);
  assert.equal(withOutputs(bytes, []), bytes);
});

// The sample converted for lattice (output changes by design) and folded only.
function convertSample(options, name) {
  const path = join(dir, name);
  const { model } = lattice.convert(readFileSync(fixture('sample.onnx')), options);
  writeFileSync(path, model);
  return path;
}

test('check API: a fold-only conversion passes, a Lattice conversion does not, both run', async () => {
  const original = fixture('sample.onnx');
  const folded = await lattice.check(original, convertSample({ target: 'none' }, 'fold.onnx'));
  assert.equal(folded.schema, 'onnx-lattice-check/1');
  assert.equal(folded.runtime.name, 'onnxruntime-node');
  assert.match(folded.runtime.version, /^\d+\.\d+\.\d+/);
  assert.deepEqual(folded.tolerance, { rtol: 1e-4, atol: 1e-5 });
  assert.equal(folded.pass, true, JSON.stringify(folded.outputs));
  assert.ok(folded.outputs[0].max_abs > 0 && folded.outputs[0].max_abs < 1e-5, `folding moves outputs by float rounding only: ${folded.outputs[0].max_abs}`);
  const converted = await lattice.check(readFileSync(original), readFileSync(convertSample({}, 'lattice.onnx')));
  assert.equal(converted.error, undefined);
  assert.equal(converted.pass, false);
  assert.ok(converted.outputs[0].max_abs > 1e-3, `the Lattice rewrites change the output: ${converted.outputs[0].max_abs}`);
  assert.ok(converted.timings_ms.load > 0 && converted.timings_ms.run > 0);
});

test('check API: the same seed gives the same report, another seed other inputs', async () => {
  const original = fixture('sample.onnx'), candidate = convertSample({}, 'lattice-seed.onnx');
  const strip = ({ timings_ms, ...rest }) => rest;
  const a = await lattice.check(original, candidate, { seed: 3 }), b = await lattice.check(original, candidate, { seed: 3 });
  assert.deepEqual(strip(a), strip(b));
  const c = await lattice.check(original, candidate, { seed: 4, inputRange: [0, 2] });
  assert.notEqual(c.outputs[0].max_abs, a.outputs[0].max_abs);
  assert.deepEqual(c.input_range, [0, 2]);
  assert.equal(c.seed, 4);
});

test('check API: on your samples the report records them, not a seed or a range that fed nothing', async () => {
  const tasks = join(ROOT, 'tests/fixtures/tasks');
  const report = await lattice.check(join(tasks, 'task_outputs.onnx'), join(tasks, 'task_outputs_perturbed.onnx'), { inputs: join(tasks, 'task_samples.npy'), seed: 4 });
  assert.equal(report.inputs.source, 'task_samples.npy');
  assert.equal('seed' in report, false);
  assert.equal('input_range' in report, false);
});

test('check API: bad options and a missing file are coded errors', async () => {
  const sample = fixture('sample.onnx');
  await assert.rejects(lattice.check(sample, sample, { rtol: -1 }), { code: 'ERR_ONNX_LATTICE_OPTIONS', message: /rtol must be/ });
  await assert.rejects(lattice.check(sample, sample, { tolerance: 1 }), { code: 'ERR_ONNX_LATTICE_OPTIONS', message: /unknown check option 'tolerance'/ });
  await assert.rejects(lattice.check(sample, 42), { code: 'ERR_ONNX_LATTICE_OPTIONS' });
  await assert.rejects(lattice.check(sample, join(dir, 'nope.onnx')), (e) => e.code === 'ERR_ONNX_LATTICE_IO' && e.path.endsWith('nope.onnx'));
  await assert.rejects(lattice.check(sample, fixture('conv_bn_relu.onnx')), { code: 'ERR_ONNX_LATTICE_OPTIONS', message: /different inputs/ });
});

test('check API: a dynamic batch is 1; other dynamic dimensions are asked for in the API\'s words, with the model\'s size', async () => {
  const batched = fixture('yolo_dynamic_batch.onnx');
  const report = await lattice.check(batched, batched);
  assert.equal(report.pass, true);
  assert.deepEqual(report.inputs.batch_shapes, { input: [1, 3, 64, 64] });
  assert.equal((await lattice.check(batched, batched, { inputShapes: { input: [2, 3, 64, 64] } })).inputs.batch_shapes.input[0], 2);
  const detector = fixture('detector_dynamic_hw.onnx');
  await assert.rejects(lattice.check(detector, detector), (e) => e.code === 'ERR_ONNX_LATTICE_OPTIONS' &&
    /input 'input' \[N, 3, H, W\] has 'H' \(axis 2\), 'W' \(axis 3\): .*e\.g\. inputShapes: \{'input': \[1, 3, 128, 128\]\} \(128 on each side: the model's deepest stride is 32/.test(e.message) &&
    !/--/.test(e.message));
});

test('check API: a corrupted folded weight fails, and layerwise names its conv and fold as where the models part', async () => {
  const original = fixture('resnet_stem.onnx');
  const { model, report } = lattice.convert(readFileSync(original), { target: 'none' });
  const folds = report.matches.filter((m) => m.applied);
  assert.ok(folds.length >= 2, 'the stem has more than one fold');
  const victim = folds[1];
  const corrupted = join(dir, 'corrupted.onnx');
  const folded = join(dir, 'folded.onnx');
  writeFileSync(folded, model);
  const py = spawnSync('/usr/bin/python3', [join(ROOT, 'tests/node/corrupt_weight.py'), folded, corrupted, victim.new_nodes[0]], { encoding: 'utf8' });
  assert.equal(py.status, 0, py.stderr);
  const clean = await lattice.check(original, folded, { layerwise: true, conversion: report });
  assert.equal(clean.pass, true);
  assert.equal(clean.first_failing, undefined);
  assert.ok(clean.layers.length > 0 && clean.layers.every((l) => l.pass));
  const check = await lattice.check(original, corrupted, { layerwise: true, conversion: report });
  assert.equal(check.pass, false);
  const tensorOf = lattice.describe(readFileSync(corrupted)).nodes.find((n) => n.name === victim.new_nodes[0]).outputs[0].name;
  assert.deepEqual(check.first_failing, { tensor: tensorOf, match_id: victim.id });
  const before = check.layers.slice(0, check.layers.findIndex((l) => l.tensor === tensorOf));
  assert.ok(before.length > 0 && before.every((l) => l.pass), 'every tensor before it agrees');
  assert.equal(check.rewrites[0].match_id, victim.id, 'the corrupted fold ranks first');
});

test('check: an external-data model is read with its data files', async (t) => {
  const ext = join(dir, 'ext');
  const py = spawnSync('/usr/bin/python3', [join(ROOT, 'tests/fixtures/make_external.py'), join(ROOT, 'tests/fixtures'), ext], { encoding: 'utf8' });
  assert.equal(py.status, 0, py.stderr);
  const model = join(ext, 'one/sample/sample.onnx');
  const check = await lattice.check(fixture('sample.onnx'), model);
  assert.equal(check.pass, true);
  assert.equal(check.outputs[0].max_abs, 0, 'the same model with its data outside runs identically');
  const files = { 'sample.onnx.data': readFileSync(`${model}.data`) };
  assert.equal((await lattice.check(fixture('sample.onnx'), { model: readFileSync(model), dataFiles: files })).pass, true);
  const cli = CLIS.node(['convert', model, '-o', join(ext, 'out.onnx'), '--check', '--report', join(ext, 'r.json')]);
  assert.equal(cli.status, 0, cli.stderr);
  const report = JSON.parse(readFileSync(join(ext, 'r.json'), 'utf8'));
  assert.equal(report.check.fold_only.pass, true);
  t.diagnostic(cli.stdout.trim().split('\n').filter((l) => l.startsWith('check:')).join(' | '));
});

test('Node CLI: convert --check writes both comparisons into the report and exits 0 for a Lattice conversion', () => {
  const out = join(dir, 'cli.onnx'), reportPath = join(dir, 'cli.json');
  const r = CLIS.node(['convert', fixture('sample.onnx'), '-o', out, '--report', reportPath, '--check', '--layerwise']);
  assert.equal(r.status, 0, r.stderr);
  const report = JSON.parse(readFileSync(reportPath, 'utf8'));
  assert.equal(report.check.fold_only.pass, true);
  assert.equal(report.check.converted.error, undefined);
  assert.equal(report.check.converted.pass, false, 'the rewrites change the output, and it is reported');
  assert.ok(report.check.converted.rewrites.length > 0);
  assert.match(r.stdout, /check: folding changed no output by more than/);
  assert.match(r.stdout, /check: the Lattice rewrites change output 'output' by up to [\d.e-]+ \(\d+ % of its range\): expected; repair it from calibration data, or retrain/);
  // A model with nothing to fold: its twin is the input, said as such, not "by more than 0".
  const plain = CLIS.node(['convert', fixture('global_pools.onnx'), '-o', join(dir, 'plain.onnx'), '--check', '--no-fold-bn']);
  assert.equal(plain.status, 0, plain.stderr);
  assert.match(plain.stdout, /^check: the fold-only twin computes every output exactly as the input$/m);
  assert.doesNotMatch(plain.stdout, /by more than 0\b/);
  const stdout = CLIS.node(['convert', fixture('sample.onnx'), '-o', out, '--report', '-', '--check']);
  assert.equal(stdout.status, 0, stdout.stderr);
  assert.equal(JSON.parse(stdout.stdout).check.fold_only.pass, true);
});

test('Node CLI: under --fixed-point fpq the fold-only twin makes the same exact bias moves, and the check compares them', () => {
  const out = join(dir, 'fpq.onnx'), reportPath = join(dir, 'fpq.json');
  // The bias moves alone: the range fit rewrites the same chains after them (range_fit.test.mjs).
  const r = CLIS.node(['convert', fixture('fpq_biases.onnx'), '-o', out, '--fixed-point', 'fpq', '--skip', 'FpqRangeFitPattern', '--report', reportPath, '--check', '--layerwise']);
  assert.equal(r.status, 0, r.stderr);
  const { check, matches } = JSON.parse(readFileSync(reportPath, 'utf8'));
  const moved = matches.filter((m) => m.pattern === 'FpqConvBiasIntoBatchNormPattern' && m.applied).map((m) => m.id).sort();
  assert.ok(moved.length >= 3, `the fixture's biased convs are moved (${moved})`);
  // Every bias move is a rewrite of the twin too, measured at its output and exact there: the
  // last conv's included, whose output is the graph's.
  const twinMoves = check.fold_only.rewrites.filter((w) => w.pattern === 'FpqConvBiasIntoBatchNormPattern');
  assert.deepEqual(twinMoves.map((w) => w.match_id).sort(), moved);
  assert.equal(twinMoves.find((w) => w.match_id.endsWith('/group5/Conv')).tensor, 'output');
  assert.ok(twinMoves.every((w) => w.pass), JSON.stringify(twinMoves));
  assert.equal(check.fold_only.pass, true);
  assert.deepEqual(check.fold_only.outputs.map((o) => [o.name, o.pass]), [['output', true]]);
});

test('Node CLI: check exits 0 when outputs agree, 1 when not, 2 for usage, with --json the report', () => {
  const sample = fixture('sample.onnx'), converted = convertSample({}, 'cli-check.onnx');
  const same = CLIS.node(['check', sample, sample]);
  assert.equal(same.status, 0, same.stderr);
  assert.match(same.stdout, /check passed/);
  const differ = CLIS.node(['check', sample, converted, '--json', '--seed', '5', '--rtol', '0.001', '--atol', '0']);
  assert.equal(differ.status, 1, differ.stderr);
  const report = JSON.parse(differ.stdout);
  assert.equal(report.seed, 5);
  assert.deepEqual(report.tolerance, { rtol: 0.001, atol: 0 });
  for (const [args, message] of [
    [['check', sample], /check needs two models/],
    [['check', sample, sample, '--seed', 'x'], /--seed needs a number, not 'x'/],
    [['check', sample, sample, '--input-range', '1,0'], /--input-range needs LO,HI with LO < HI/],
    [['convert', sample, '-o', join(dir, 'x.onnx'), '--layerwise'], /add --check/],
    [['check', fixture('detector_dynamic_hw.onnx'), fixture('detector_dynamic_hw.onnx')], /e\.g\. --check-shape input:1,3,128,128 \(/],
  ]) {
    const r = CLIS.node(args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
  }
});

test('native CLI: check and convert --check say the runtime is in the Node CLI (exit 2), and --help says so', () => {
  const sample = fixture('sample.onnx');
  for (const args of [['check', sample, sample], ['convert', sample, '-o', join(dir, 'n.onnx'), '--check']]) {
    const r = CLIS.native(args);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /the check runs both models in onnxruntime, which this native CLI does not have: use the Node CLI/);
    assert.ok(!existsSync(join(dir, 'n.onnx')), 'nothing converted');
  }
  assert.match(CLIS.native(['check', '--help']).stdout, /native CLI: the check runs both models in onnxruntime/);
  // Each use of the runtime is named for what it is.
  const calibration = join(dir, 'samples.npy');  // refused before it is read
  for (const [args, message] of [
    [['--repair', '--calibration', calibration], /--repair runs both models in onnxruntime to fit the rewritten layers/],
    [['--fixed-point', 'fpq', '--calibration', calibration], /--calibration under --fixed-point fpq runs the model in onnxruntime to measure FPQ's ranges/],
  ]) {
    const r = CLIS.native(['convert', sample, '-o', join(dir, 'n.onnx'), ...args]);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, message);
    assert.ok(!existsSync(join(dir, 'n.onnx')), 'nothing converted');
  }
});

// The package under test, by the name users import it with (a variable, so that the dependency
// check does not take it for a package to install).
const PACKAGE = 'onnx-lattice';

test('without onnxruntime-node the check rejects with ERR_ONNX_LATTICE_CHECK_RUNTIME naming the package', async () => {
  // The package as a user installs it, somewhere no node_modules holds the optional peer.
  const pkg = join(dir, 'alone/node_modules/onnx-lattice');
  mkdirSync(pkg, { recursive: true });
  cpSync(join(ROOT, 'wasm'), pkg, { recursive: true, filter: (p) => !p.includes('node_modules') });
  const script = `import { createConverter } from ${JSON.stringify(PACKAGE)};
const c = await createConverter();
try { await c.check(${JSON.stringify(fixture('sample.onnx'))}, ${JSON.stringify(fixture('sample.onnx'))}); } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`;
  writeFileSync(join(dir, 'alone/try.mjs'), script);
  const r = spawnSync(process.execPath, [join(dir, 'alone/try.mjs')], { encoding: 'utf8', cwd: join(dir, 'alone') });
  const { code, message } = JSON.parse(r.stdout);
  assert.equal(code, 'ERR_ONNX_LATTICE_CHECK_RUNTIME');
  assert.match(message, /npm install onnxruntime-node/);
});

test('the check never blocks the caller: a 10 ms ticker keeps ticking while ResNet-50 is checked', { skip: !existsSync(join(ZOO, 'resnet50.onnx')) && 'no zoo' }, async (t) => {
  const model = join(ZOO, 'resnet50.onnx');
  // The same ticker idle first: on a loaded 2-core machine timers are late by themselves (200 ms
  // seen while other builds ran), and the worker's threads compete for the cores. What this
  // guards against is the runtime on the caller's thread: creating ResNet-50's session alone
  // blocks it for seconds, far past either bound.
  const longestGap = async (work) => {
    let last = performance.now(), gap = 0;
    const ticker = setInterval(() => { const now = performance.now(); gap = Math.max(gap, now - last); last = now; }, 10);
    const result = await work();
    clearInterval(ticker);
    return { gap, result };
  };
  const idle = await longestGap(() => new Promise((resolve) => setTimeout(resolve, 2000)));
  const started = performance.now();
  const { gap, result } = await longestGap(() => lattice.check(model, model));
  assert.equal(result.pass, true);
  t.diagnostic(`ResNet-50 checked against itself in ${Math.round(performance.now() - started)} ms; the ticker's longest gap ` +
    `${gap.toFixed(1)} ms (idle: ${idle.gap.toFixed(1)} ms)`);
  assert.ok(gap <= Math.max(250, 2 * idle.gap + 100), `the event loop was blocked for ${gap} ms (idle ${idle.gap} ms)`);
});
