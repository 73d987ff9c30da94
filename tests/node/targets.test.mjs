// Targets are listed from the catalogue (`onnx-lattice patterns --json`, the binding's
// catalogue()), never from a copy: each place that names them by hand is checked against it here,
// so a target added to core/patterns/lattice/targets.cc fails this test until they all name it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { createSyncConverter } from '../../wasm/index.mjs';
import { CLIS, ROOT } from './helpers.mjs';

const lattice = await createSyncConverter();
const { targets } = lattice.patterns();
const names = targets.map((t) => t.name);
const kernels = new Map(lattice.hardware().targets.map((t) => [t.name, t.conv_kernels]));
const read = (path) => readFileSync(join(ROOT, path), 'utf8');

// The body rows of the first Markdown table after `heading`, as [the first cell's name, row].
function tableAfter(text, heading) {
  const from = text.indexOf(heading);
  assert.ok(from >= 0, `no "${heading}"`);
  const lines = text.slice(from).split('\n');
  const start = lines.findIndex((l) => l.startsWith('|'));
  const end = lines.findIndex((l, i) => i > start && !l.startsWith('|'));
  return lines.slice(start + 2, end).map((row) => [row.split('|')[1].trim().match(/^`([^`]+)`/)?.[1], row]);
}

test('both CLIs\' --help lists the catalogue\'s targets, the default first', () => {
  const listed = `${names[0]} (default), ${names.slice(1, -1).join(', ')} or ${names.at(-1)}`;
  for (const [cli, run] of Object.entries(CLIS)) {
    for (const command of ['convert', 'inspect']) {
      const r = run([command, '--help']);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, new RegExp(`--target NAME +${listed.replace(/[()]/g, '\\$&')}\\n`), `${cli} ${command}`);
    }
    const unknown = run(['inspect', 'x.onnx', '--target', 'nope']);
    assert.equal(unknown.status, 2);
    assert.match(unknown.stderr, new RegExp(`unknown target 'nope' \\(known: ${names.join(', ')}\\)`), cli);
  }
});

test('index.d.ts types the catalogue\'s targets', () => {
  const type = read('wasm/index.d.ts').match(/^export type Target = (.*);$/m)[1];
  assert.deepEqual(type.split(' | ').map((t) => t.replace(/'/g, '')), names);
});

test('the README and the docs list the catalogue\'s targets, with the kernels the hardware table gives', () => {
  for (const [path, heading] of [['README.md', '## Targets'], ['docs/targets.md', '# Targets and patterns']]) {
    const table = tableAfter(read(path), heading);
    assert.deepEqual(table.map(([name]) => name), names, path);
    for (const [name, row] of table) {
      if (kernels.has(name)) assert.ok(row.includes(`| ${kernels.get(name)} |`), `${path}: ${name} accepts ${kernels.get(name)}`);
    }
  }
  assert.ok(read('docs/usage.md').includes(`\`--target ${names.join('|')}\``), 'docs/usage.md');
  assert.ok(read('wasm/README.md').includes(`| \`target\` | ${names.map((n) => `\`'${n}'\``).join(' \\| ')} |`), 'wasm/README.md');
});

test('the page has no list of its own: its selector is filled from the catalogue', () => {
  const select = read('web/index.html').match(/<select id="target"[^>]*>([\s\S]*?)<\/select>/)[1];
  assert.doesNotMatch(select, /<option/);
});
