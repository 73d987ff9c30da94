// The option table (core/option_table.h, the package's options()) against every place that
// states an option by hand: both CLIs' --help, the JavaScript defaults of the check and the
// repair, the keys check() and repair() take, index.d.ts and the package README's tables. A
// default changed in one of them, and not in the table, fails here.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { DEFAULT_INPUT_RANGE, DEFAULT_MAP_THRESHOLD, DEFAULT_SEED, DEFAULT_TOLERANCE } from '../../wasm/shared/check.mjs';
import { CHECK_KEYS, REPAIR_KEYS } from '../../wasm/node/check_node.mjs';
import { createSyncConverter } from '../../wasm/index.mjs';
import { PREPROCESSING_DEFAULTS } from '../../wasm/shared/preprocess.mjs';
import { REPAIR_DEFAULTS } from '../../wasm/shared/repair.mjs';
import { CLIS, ROOT } from './helpers.mjs';

const lattice = await createSyncConverter();
const table = lattice.options();
const rows = table.options;
const read = (path) => readFileSync(join(ROOT, path), 'utf8');
// A default as written anywhere ("[-1, 1]", "`'reinit'`", "-1,1") in one spelling: "-1,1", "reinit"
// (a doc comment's line breaks and leading `*`s fall away too).
const spelling = (text) => String(text).replace(/[`'"[\]{}*\s]/g, '');
const keyed = (shell) => rows.filter((r) => r.key && r.shells.includes(shell));
// The key as an options object holds it ('preprocessing.resize' is under `preprocessing`).
const topKey = (row) => row.key.split('.')[0];
const rowOf = (key, shell) => keyed(shell).find((r) => r.key === key);

test('both CLIs\' --help lists, for each command, the table\'s flags for it, in its order and words', () => {
  for (const command of ['convert', 'inspect', 'check', 'patterns', 'hardware']) {
    const expected = rows.filter((r) => r.flag && r.commands.includes(command)).map((r) => {
      const names = `${r.alias ? `${r.alias}, ` : ''}${r.flag}${r.value ? ` ${r.value}` : ''}`;
      return `  ${names.padEnd(32)} ${r.help}`;
    });
    for (const [cli, run] of Object.entries(CLIS)) {
      const r = run([command, '--help']);
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(r.stdout.split('\n').filter((line) => /^ {2}-/.test(line)), expected, `${cli} ${command}`);
    }
  }
});

test('a default said in a help line is the table\'s default for that flag', () => {
  for (const command of ['convert', 'inspect', 'check']) {
    for (const [cli, run] of Object.entries(CLIS)) {
      const lines = run([command, '--help']).stdout.split('\n');
      for (const row of rows.filter((r) => r.flag && r.commands.includes(command))) {
        const line = lines.find((l) => l.startsWith(`  ${row.alias ? `${row.alias}, ` : ''}${row.flag} `));
        const said = line.match(/\bdefault[: ]+([^;)]+)/)?.[1];
        if (said === undefined) continue;
        assert.equal(spelling(said), spelling(row.default), `${cli} ${command} --help: ${line.trim()}`);
      }
    }
  }
});

test('the check\'s and the repair\'s defaults in JavaScript are the table\'s', () => {
  const byKey = (key) => rowOf(key, 'check') ?? rowOf(key, 'repair');
  assert.equal(Number(byKey('rtol').default), DEFAULT_TOLERANCE.rtol);
  assert.equal(Number(byKey('atol').default), DEFAULT_TOLERANCE.atol);
  assert.equal(Number(byKey('seed').default), DEFAULT_SEED);
  assert.equal(Number(byKey('seed').default), REPAIR_DEFAULTS.seed);
  assert.deepEqual(byKey('inputRange').default.split(',').map(Number), [...DEFAULT_INPUT_RANGE]);
  assert.equal(Number(byKey('mapThreshold').default), DEFAULT_MAP_THRESHOLD);
  for (const [name, value] of Object.entries(PREPROCESSING_DEFAULTS)) assert.equal(byKey(`preprocessing.${name}`).default, value, name);
  assert.equal(Number(byKey('ridge').default), REPAIR_DEFAULTS.ridge);
  assert.equal(Number(byKey('maxRows').default), REPAIR_DEFAULTS.maxRows);
  assert.equal(Number(byKey('refitAbove').default), REPAIR_DEFAULTS.refitAbove);
});

test('check() and repair() take the table\'s keys, no more and no fewer', () => {
  const keys = (shell) => [...new Set(keyed(shell).map(topKey))].sort();
  assert.deepEqual([...CHECK_KEYS].sort(), keys('check'));
  assert.deepEqual([...REPAIR_KEYS].sort(), keys('repair'));
});

test('folding is the core\'s derived default: on, except under FPQ; the page states no rule of its own', () => {
  assert.deepEqual(table.derived.fold_batch_norm, { none: true, fpq: false, lsq: true });
  for (const path of ['web/app.js', 'web/worker.js']) assert.doesNotMatch(read(path), /[!=]==? 'fpq'/, path);
});

// index.d.ts: `key?: type;` of each interface, with the doc comment just above it.
function declared(name) {
  const body = read('wasm/index.d.ts').match(new RegExp(`export interface ${name} (?:extends \\w+ )?\\{\\n([\\s\\S]*?)\\n\\}`))[1];
  const out = new Map();
  for (const m of body.matchAll(/(?:\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*)?\n? {2}(\w+)\?: ([^\n]+);/g)) out.set(m[2], { type: m[3], doc: m[1] ?? '' });
  return out;
}

test('index.d.ts declares each key of the table with its type, and its doc comment its default', () => {
  const wrapper = new Set(['onProgress', 'signal']);
  const interfaces = [
    ['ConvertOptions', keyed('convertFile').filter((r) => !wrapper.has(r.key))],
    ['MemoryConvertOptions', keyed('convert').filter((r) => !r.shells.includes('convertFile'))],
    ['CallOptions', keyed('convertFile').filter((r) => wrapper.has(r.key))],
    ['CheckOptions', keyed('check')],
    ['RepairOptions', keyed('repair')],
  ];
  for (const [name, wanted] of interfaces) {
    const keys = declared(name);
    assert.deepEqual([...keys.keys()].sort(), [...new Set(wanted.map(topKey))].sort(), name);
    for (const row of wanted) {
      const { type, doc } = keys.get(topKey(row));
      if (!row.key.includes('.')) assert.equal(type, row.type, `${name}.${row.key}`);
      if (row.default && /default/i.test(doc)) assert.ok(spelling(doc).includes(spelling(row.default)), `${name}.${row.key}: ${doc}`);
    }
  }
  // The preprocessing's words are ImagePreprocessing's.
  const image = declared('ImagePreprocessing');
  for (const row of keyed('check').filter((r) => r.key.startsWith('preprocessing.'))) {
    assert.equal(image.get(row.key.split('.')[1]).type, row.type, row.key);
  }
  // The derived default: each scheme that turns folding off is named beside foldBatchNorm.
  const { doc } = declared('ConvertOptions').get('foldBatchNorm');
  for (const [scheme, folds] of Object.entries(table.derived.fold_batch_norm)) {
    if (folds !== table.derived.fold_batch_norm.none) assert.match(doc, new RegExp(`fixedPoint '${scheme}'`));
  }
});

// The body rows of the first Markdown table after `heading`: [first cell's `name`s, cells].
function tableAfter(text, heading) {
  const lines = text.slice(text.indexOf(heading)).split('\n');
  const start = lines.findIndex((l) => l.startsWith('|'));
  const end = lines.findIndex((l, i) => i > start && !l.startsWith('|'));
  return lines.slice(start + 2, end).map((line) => {
    const cells = line.split(/(?<!\\)\|/).slice(1, -1).map((c) => c.trim());
    return [[...cells[0].matchAll(/`(\w+)`/g)].map((m) => m[1]), cells];
  });
}

test('the package README\'s options tables list the table\'s keys with its defaults', () => {
  const readme = read('wasm/README.md');
  const conversion = tableAfter(readme, '### Conversion options');
  assert.deepEqual(conversion.flatMap(([names]) => names).sort(), [...new Set(keyed('convert').concat(keyed('convertFile')).map((r) => r.key))].sort());
  for (const [[key], cells] of conversion) {
    const row = rowOf(key, 'convert') ?? rowOf(key, 'convertFile');
    if (row.default) assert.equal(spelling(cells[2]), spelling(row.default), `${key}: ${cells[2]}`);
  }
  const fold = conversion.find(([[key]]) => key === 'foldBatchNorm')[1][2];
  const { none, ...schemes } = table.derived.fold_batch_norm;
  const off = Object.entries(schemes).filter(([, folds]) => folds !== none).map(([s]) => `\`${!none}\` with \`fixedPoint: '${s}'\``);
  assert.equal(fold, `\`${none}\` (${off.join(', ')})`);
  // The check's table has a column fewer (no type); its defaults must be the table's.
  for (const [names, cells] of tableAfter(readme, '### Checking on your samples')) {
    const defaults = names.map((key) => (key === 'preprocessing'
      ? keyed('check').filter((r) => r.key.startsWith('preprocessing.')).map((r) => `${r.key.split('.')[1]}:${r.default}`).join(',')
      : rowOf(key, 'check')?.default));
    if (defaults.every(Boolean)) assert.equal(spelling(cells[1]), spelling(defaults.join(',')), `${names}: ${cells[1]}`);
  }
});

test('the page\'s choices are the table\'s: each select offers its key\'s allowed values, its default selected', () => {
  const html = read('web/index.html');
  // `none` is the fixed-point select's empty value: no scheme, the key left out.
  for (const [id, key, none] of [['fixed-point', 'fixedPoint', true], ['snap-weights', 'snapWeights', false], ['layout', 'dataLayout', false]]) {
    const select = html.match(new RegExp(`<select id="${id}"[^>]*>([\\s\\S]*?)</select>`));
    assert.ok(select, `web/index.html has <select id="${id}">`);
    const options = [...select[1].matchAll(/<option value="([^"]*)"( selected)?>/g)].map(([, value, selected]) => ({ value, selected: !!selected }));
    const row = rowOf(key, 'page');
    assert.ok(row, `the table has the page's ${key}`);
    // The same values; the page orders them for reading.
    assert.deepEqual(options.map((o) => o.value).sort(), [...(none ? [''] : []), ...row.allowed].sort(), id);
    assert.equal(options.find((o) => o.selected)?.value, row.default, `${id}'s selected option is the table's default`);
  }
});
