// External data (ONNX data_location = EXTERNAL): every fixture re-saved by onnx with its tensors
// in one data file or one file per tensor converts exactly as its single-file self, in both CLIs
// and the Node API; the outputs load in onnx's checker and run in onnxruntime with the same
// numerics; unsafe or broken references are refused everywhere with nothing written.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import ort from 'onnxruntime-node';

import { createSyncConverter } from '../../wasm/index.mjs';
import { CLIS, FIXTURES, ROOT, fixture, fixtures, scratch } from './helpers.mjs';
import { feedsFor, proposedSizes } from './ort.mjs';
import { checkModelFile } from './onnx_checker.mjs';

const dir = scratch();
const saved = (layout, name) => join(dir, layout, basename(name, '.onnx'), name);
const read = (path) => readFileSync(path);
const readIf = (path) => (existsSync(path) ? readFileSync(path) : null);
let lattice;

before(async () => {
  const made = spawnSync('/usr/bin/python3', [join(ROOT, 'tests/fixtures/make_external.py'), FIXTURES, dir], { encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
  lattice = await createSyncConverter();
});
after(() => rmSync(dir, { recursive: true, force: true }));

const run = (cli, args) => CLIS[cli](args);

// The single-file conversion of a committed fixture: what every external-data conversion must equal.
function reference(name) {
  const out = join(dir, 'ref', name);
  mkdirSync(dirname(out), { recursive: true });
  if (!existsSync(out)) assert.equal(run('native', ['convert', fixture(name), '-o', out, '--quiet']).status, 0);
  return read(out);
}

// A conversion's output brought back to one file (data inline), with the native CLI, and
// nothing else changed.
function inlined(model) {
  const back = `${model}.inline.onnx`;
  const r = run('native', ['convert', model, '-o', back, '--inline', '--target', 'none', '--no-fold-bn', '--quiet']);
  assert.equal(r.status, 0, r.stderr);
  return read(back);
}


describe('external-data models convert as their single-file selves', () => {
  for (const layout of ['one', 'many']) {
    for (const name of fixtures()) {
      test(`${layout} data file(s): ${name}`, () => {
        const outputs = {};
        for (const cli of ['native', 'node']) {
          const out = join(dir, `out-${cli}`, layout, basename(name, '.onnx'), name);
          mkdirSync(dirname(out), { recursive: true });
          const r = run(cli, ['convert', saved(layout, name), '-o', out, '--quiet']);
          assert.equal(r.status, 0, r.stderr);
          outputs[cli] = { out, model: read(out), data: readIf(`${out}.data`) };
        }
        assert.deepEqual(outputs.node.model, outputs.native.model, 'both CLIs write the same model');
        assert.deepEqual(outputs.node.data, outputs.native.data, 'both CLIs write the same data file');
        assert.deepEqual(inlined(outputs.native.out), reference(name), 'inline again, it is the single-file conversion');
      });
    }
  }

  test('the outputs pass onnx\'s checker, with their data files', async () => {
    for (const name of fixtures()) {
      const answer = await checkModelFile(join(dir, 'out-native', 'one', basename(name, '.onnx'), name));
      assert.match(answer, /^(ok|skip opset \d+ is newer)/, name);
    }
  });

  test('onnxruntime computes the same outputs from the external-data and the single-file conversions', async () => {
    const options = { graphOptimizationLevel: 'disabled', intraOpNumThreads: 1 };
    let compared = 0;
    for (const name of fixtures()) {
      const ext = join(dir, 'out-native', 'many', basename(name, '.onnx'), name);
      if (!existsSync(`${ext}.data`)) continue;
      const a = await ort.InferenceSession.create(reference(name), options);
      const b = await ort.InferenceSession.create(ext, options);
      const feeds = feedsFor(a, 1, proposedSizes(lattice.describe(reference(name))));
      const [ra, rb] = [await a.run(feeds), await b.run(feeds)];
      for (const output of a.outputNames) assert.deepEqual(rb[output].data, ra[output].data, `${name}: ${output}`);
      ++compared;
    }
    assert.ok(compared >= 5, `${compared} models compared`);
  });
});

describe('data layout', () => {
  test('--external-data moves every tensor of 1 KiB or more; --inline brings it back', async () => {
    for (const name of ['resnet_stem.onnx', 'odd_convs.onnx', 'sample.onnx', 'grouped_decoder.onnx']) {
      const out = join(dir, 'layout', name);
      mkdirSync(dirname(out), { recursive: true });
      for (const cli of ['native', 'node']) {
        const r = run(cli, ['convert', fixture(name), '-o', out, '--external-data', '--quiet']);
        assert.equal(r.status, 0, r.stderr);
      }
      assert.ok(read(`${out}.data`).length > 0);
      assert.ok(read(out).length < reference(name).length, 'the weights left the model file');
      assert.deepEqual(inlined(out), reference(name));
      assert.equal(await checkModelFile(out), 'ok', name);
    }
  });

  test('convert --check runs the data file it is about to write, not the one an older conversion left there', () => {
    const out = join(dir, 'layout', 'stale.onnx');
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(`${out}.data`, 'an older data file');
    const r = run('node', ['convert', fixture('resnet_stem.onnx'), '-o', out, '--external-data', '--check', '--quiet']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /check: folding changed no output by more than/);
    assert.deepEqual(inlined(out), reference('resnet_stem.onnx'));
  });

  test('--external-data with no tensor of 1 KiB writes one file', () => {
    const out = join(dir, 'layout', 'small.onnx');
    assert.equal(run('native', ['convert', fixture('mobilenet_blocks.onnx'), '-o', out, '--external-data', '--quiet']).status, 0);
    assert.equal(existsSync(`${out}.data`), false);
    assert.deepEqual(read(out), reference('mobilenet_blocks.onnx'));
  });

  test('the data file\'s tensors start at multiples of 4096 and name the new file', () => {
    const out = join(dir, 'layout', 'aligned.onnx');
    assert.equal(run('native', ['convert', saved('many', 'sample.onnx'), '-o', out, '--quiet']).status, 0);
    const code = `import onnx\nm = onnx.load(${JSON.stringify(out)}, load_external_data=False)\n` +
      'for t in m.graph.initializer:\n  if t.data_location == onnx.TensorProto.EXTERNAL:\n' +
      '    e = {x.key: x.value for x in t.external_data}\n    print(e["location"], int(e["offset"]) % 4096)';
    const r = spawnSync('/usr/bin/python3', ['-c', code], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.ok(lines.length > 1);
    for (const line of lines) assert.equal(line, 'aligned.onnx.data 0');
  });

  test('--inline is refused, before reading, when the model would exceed 2 GiB', () => {
    for (const cli of ['native', 'node']) {
      const out = join(dir, `huge-${cli}`);
      mkdirSync(out);
      const r = run(cli, ['convert', join(dir, 'huge', 'model.onnx'), '-o', join(out, 'm.onnx'), '--inline']);
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, /2288\.8 MiB, over protobuf's 2 GiB limit/);
      assert.deepEqual(readdirSync(out), []);
    }
  });

  test('-o may name the input: its data file is read before it is replaced', () => {
    for (const cli of ['native', 'node']) {
      const folder = join(dir, `self-${cli}`);
      mkdirSync(folder);
      for (const f of readdirSync(dirname(saved('one', 'sample.onnx')))) {
        writeFileSync(join(folder, f), read(join(dirname(saved('one', 'sample.onnx')), f)));
      }
      const model = join(folder, 'sample.onnx');
      const r = run(cli, ['convert', model, '-o', model, '--quiet']);
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(inlined(model), reference('sample.onnx'));
    }
  });

  test('--report cannot name the data file', () => {
    const out = join(dir, 'layout', 'r.onnx');
    for (const cli of ['native', 'node']) {
      const r = run(cli, ['convert', saved('one', 'sample.onnx'), '-o', out, '--report', `${out}.data`]);
      assert.equal(r.status, 2);
      assert.match(r.stderr, /--report '.*r\.onnx\.data' names the model's data file/);
      assert.equal(existsSync(out), false);
    }
  });

  test('two files cannot go to standard output', () => {
    for (const cli of ['native', 'node']) {
      const r = run(cli, ['convert', saved('one', 'resnet_stem.onnx'), '-o', '-']);
      assert.equal(r.status, 2);
      assert.match(r.stderr, /separate file, which -o '-' cannot hold; give a file name, or --inline/);
      assert.equal(r.stdout, '');
    }
  });
});

const BAD = {
  dotdot: /initializer 'stem\.0\.weight' has external data location '\.\.\/secret\.bin', which is a way out of it/,
  absolute: /initializer 'stem\.0\.weight' has external data location '\/.*secret\.bin', which is an absolute path/,
  symlink: /initializer 'stem\.0\.weight' keeps its data in 'link\.bin': it resolves to '.*secret\.bin', outside the model's folder/,
  dirlink: /initializer 'stem\.0\.weight' keeps its data in 'sub\/secret\.bin': it resolves to '.*bad\/secret\.bin', outside the model's folder/,
  range: /initializer 'stem\.0\.weight' keeps its data at offset 1048576 length 4704 of 'model\.onnx\.data', beyond the end of that file \(7328 bytes\)/,
  missing: /initializer 'stem\.0\.weight' keeps its data in 'gone\.data': No such file or directory/,
  length: /initializer 'stem\.0\.weight' keeps 4700 bytes in 'model\.onnx\.data', but dims \[8, 3, 7, 7\] of type float need 4704 bytes/,
};

describe('unsafe or broken references are refused, nothing written', () => {
  for (const [name, message] of Object.entries(BAD)) {
    test(name, () => {
      const model = join(dir, 'bad', name, 'model.onnx');
      for (const cli of ['native', 'node']) {
        const out = join(dir, `bad-out-${cli}-${name}`);
        mkdirSync(out);
        const r = run(cli, ['convert', model, '-o', join(out, 'm.onnx'), '--report', join(out, 'r.json')]);
        assert.equal(r.status, 1, `${cli}: ${r.stderr}`);
        assert.match(r.stderr, message);
        assert.deepEqual(readdirSync(out), [], `${cli} wrote nothing`);
      }
      const out = join(dir, `bad-out-api-${name}`);
      mkdirSync(out);
      assert.throws(() => lattice.convertFile(model, join(out, 'm.onnx')), (e) => e.code === 'ERR_ONNX_LATTICE_MODEL' && message.test(e.message));
      assert.deepEqual(readdirSync(out), []);
    });
  }

  test('the Node API\'s resolver: the same checks on the locations and ranges', () => {
    const files = new Map([['model.onnx.data', read(join(dir, 'bad', 'range', 'model.onnx.data'))], ['../secret.bin', new Uint8Array(1 << 16)]]);
    for (const name of ['dotdot', 'absolute', 'range', 'length']) {
      assert.throws(() => lattice.convert(read(join(dir, 'bad', name, 'model.onnx')), { resolver: files }),
        (e) => e.code === 'ERR_ONNX_LATTICE_MODEL' && message(name).test(e.message), name);
    }
    assert.throws(() => lattice.convert(read(join(dir, 'bad', 'missing', 'model.onnx')), { resolver: files }),
      (e) => e.code === 'ERR_ONNX_LATTICE_MODEL' && /keeps its data in 'gone\.data': no file of that name was given/.test(e.message));
    assert.throws(() => lattice.convert(read(saved('one', 'resnet_stem.onnx'))),
      (e) => e.code === 'ERR_ONNX_LATTICE_MODEL' && /keeps its data in an external file \('resnet_stem\.onnx\.data'\), and no data files were given/.test(e.message));
  });
});

function message(name) {
  return BAD[name];
}

describe('Node API', () => {
  test('convert with a resolver (function, Map or object) equals the CLI\'s files', () => {
    for (const name of ['resnet_stem.onnx', 'sample.onnx', 'linear_bn.onnx']) {
      const model = saved('many', name);
      const cliOut = join(dir, 'api', name);
      mkdirSync(dirname(cliOut), { recursive: true });
      assert.equal(run('native', ['convert', model, '-o', cliOut, '--quiet']).status, 0);
      const folder = dirname(model);
      const files = Object.fromEntries(readdirSync(folder).filter((f) => f !== name).map((f) => [f, read(join(folder, f))]));
      for (const resolver of [(location) => files[location], new Map(Object.entries(files)), files]) {
        const { model: bytes, data } = lattice.convert(read(model), { resolver, dataFile: `${name}.data` });
        assert.deepEqual(Buffer.from(bytes), read(cliOut));
        assert.deepEqual(data === null ? null : Buffer.from(data), readIf(`${cliOut}.data`));
      }
      const inline = lattice.convert(read(model), { resolver: files, dataLayout: 'inline' });
      assert.equal(inline.data, null);
      assert.deepEqual(Buffer.from(inline.model), reference(name));
    }
  });

  test('convertFile writes what the CLIs write and returns the report', () => {
    const name = 'sample.onnx';
    const cliOut = join(dir, 'api-file', 'cli.onnx');
    const apiOut = join(dir, 'api-file', 'api.onnx');
    mkdirSync(dirname(cliOut), { recursive: true });
    assert.equal(run('native', ['convert', saved('one', name), '-o', cliOut, '--quiet', '--target', 'none']).status, 0);
    const { report } = lattice.convertFile(saved('one', name), apiOut, { target: 'none' });
    assert.equal(report.options.target, 'none');
    assert.ok(report.matches.some((m) => m.applied));
    assert.deepEqual(read(`${apiOut}.data`), read(`${cliOut}.data`));
    // The model names its own data file: equal once that name is the same.
    const rename = (bytes) => bytes.toString('latin1').replaceAll('api.onnx.data', 'cli.onnx.data');
    assert.equal(rename(read(apiOut)), read(cliOut).toString('latin1'));
    assert.throws(() => lattice.convertFile(saved('one', name), apiOut, { dataLayout: 'sideways' }), (e) => e.code === 'ERR_ONNX_LATTICE_OPTIONS');
    assert.throws(() => lattice.convert(read(saved('one', name)), { resolver: 42 }), (e) => e.code === 'ERR_ONNX_LATTICE_OPTIONS');
    assert.throws(() => lattice.convert(read(saved('one', name)), { dataLayout: 'sideways' }), (e) => e.code === 'ERR_ONNX_LATTICE_OPTIONS');
  });
});
