// The page's messages (web/messages.js, a classic script, run here in a context of its own): the
// table's channels and kinds are messages.d.ts's, every message the page's scripts send is made by
// a constructor of a kind its channel has, none is a bare object or compared with a bare kind, and
// `receive` says a kind it has no handler for rather than drop it.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import vm from 'node:vm';

import { ROOT } from './helpers.mjs';

const errors = [];
const context = vm.createContext({ console: { error: (...args) => errors.push(args) } });
context.self = context;
vm.runInContext(readFileSync(join(ROOT, 'web/messages.js'), 'utf8'), context);
const { receive, ...channels } = context.pageMessages;
const kinds = (channel) => Object.keys(channel).sort();

const scripts = readdirSync(join(ROOT, 'web')).filter((f) => f.endsWith('.js') && f !== 'messages.js')
  .map((f) => ({ name: f, source: readFileSync(join(ROOT, 'web', f), 'utf8') }));

test('messages.d.ts types each channel of the table, kind for kind', () => {
  const types = readFileSync(join(ROOT, 'web/messages.d.ts'), 'utf8');
  const declared = {};
  for (const [, name, body] of types.matchAll(/^export interface (\w+) \{\n([\s\S]*?)\n\}/gm)) {
    if (name === 'PageMessages') continue;
    declared[name[0].toLowerCase() + name.slice(1)] = [...body.matchAll(/^ {2}(\w+):/gm)].map((m) => m[1]).sort();
  }
  assert.deepEqual(Object.keys(declared).sort(), Object.keys(channels).sort());
  for (const [name, channel] of Object.entries(channels)) assert.deepEqual(declared[name], kinds(channel), name);
  const page = types.match(/^export interface PageMessages \{\n([\s\S]*?)\n\}/m)[1];
  assert.deepEqual([...page.matchAll(/^ {2}(\w+): Channel<(\w+)>;/gm)].map((m) => [m[1], m[2][0].toLowerCase() + m[2].slice(1)]),
    Object.keys(channels).map((name) => [name, name]));
});

test('the table is frozen, and a constructor makes its kind\'s message and names its kind', () => {
  assert.ok(Object.isFrozen(context.pageMessages));
  for (const channel of Object.values(channels)) assert.ok(Object.isFrozen(channel));
  const { toConverter } = channels;
  assert.deepEqual({ ...toConverter.convert({ options: { target: 'lattice' } }) }, { options: { target: 'lattice' }, type: 'convert' });
  assert.equal(toConverter.repairPort.type, 'repairPort');
  assert.throws(() => toConverter.lod({}), TypeError, 'a misspelt kind throws at the sender');
});

test('every message the page\'s scripts send is made by a constructor of a kind its channel has', () => {
  let made = 0;
  for (const { name, source } of scripts) {
    for (const [, channel, kind] of source.matchAll(/\b(to[A-Z]\w*|from[A-Z]\w*)\.(\w+)\b/g)) {
      if (!(channel in channels)) continue;
      assert.ok(Object.hasOwn(channels[channel], kind), `${name}: ${channel}.${kind}`);
      made += 1;
    }
    // A message written by hand, or a kind compared by hand, would bypass the table.
    for (const m of source.matchAll(/postMessage\(\s*\{|\.type\s*[!=]==?\s*'|\btype: '(?!button|submit|number|module|application\/)/g)) {
      assert.fail(`${name}: a message by hand: ${source.slice(m.index, m.index + 60)}`);
    }
  }
  assert.ok(made > 20, `${made} constructor uses found`);
});

test('receive hands a message to its kind\'s handler, and says an unknown or unhandled kind', () => {
  const { fromCheck } = channels;
  const said = [];
  const handlers = { progress: ({ stage }) => `at ${stage}`, result: () => 'done' };
  assert.equal(receive(fromCheck, fromCheck.progress({ stage: 'reading', fraction: 0 }), handlers, (s) => said.push(s)), 'at reading');
  assert.deepEqual(said, []);
  assert.deepEqual(errors, []);
  for (const data of [{ type: 'progres' }, fromCheck.error({ message: 'x' }), { type: 'toString' }, null]) {
    receive(fromCheck, data, handlers, (s) => said.push(s));
  }
  assert.deepEqual(said, ["unknown message kind 'progres'", "unknown message kind 'error'", "unknown message kind 'toString'",
    "unknown message kind 'undefined'"]);
  assert.equal(errors.length, 4, 'each on the console too');
});
