// The page worker's read plan as reads (web/read-ahead.js, a classic worker script, run here in a
// context of its own): each file's ranges joined where they overlap or touch, in file order, and
// never more bytes than the budget.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import vm from 'node:vm';

import { ROOT } from './helpers.mjs';

const context = vm.createContext({});
vm.runInContext(readFileSync(join(ROOT, 'web/read-ahead.js'), 'utf8'), context);
const readsFor = (ranges, budget) => JSON.parse(JSON.stringify(context.readsFor(ranges, budget)));

test('planned ranges become one read per run of overlapping or touching ranges of a file', () => {
  const a = 'a', b = 'b';
  const planned = [
    { file: a, offset: 100, length: 50 }, { file: b, offset: 0, length: 10 }, { file: a, offset: 0, length: 40 },
    { file: a, offset: 150, length: 10 }, { file: a, offset: 120, length: 10 }, { file: a, offset: 41, length: 1 },
  ];
  assert.deepEqual(readsFor(planned, Infinity), [
    { file: a, offset: 0, length: 40 }, { file: a, offset: 41, length: 1 }, { file: a, offset: 100, length: 60 },
    { file: b, offset: 0, length: 10 },
  ]);
});

test('the reads stop at the budget, the last one cut to fit', () => {
  const planned = [{ file: 'a', offset: 0, length: 100 }, { file: 'a', offset: 200, length: 100 }, { file: 'b', offset: 0, length: 10 }];
  assert.deepEqual(readsFor(planned, 150), [{ file: 'a', offset: 0, length: 100 }, { file: 'a', offset: 200, length: 50 }]);
  assert.deepEqual(readsFor(planned, 0), []);
});
