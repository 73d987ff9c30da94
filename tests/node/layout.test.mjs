// The package's folders by role (docs/development.md, "Where things go"): wasm/shared/ is what
// the page runs as Node does, so a module there that reached for Node, a package or a file outside
// the folder would work in Node and break only in the browser, where scripts/build.sh copies the
// folder alone.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { ROOT } from './helpers.mjs';

const SHARED = join(ROOT, 'wasm/shared');
// Every module specifier of a file: static imports and re-exports, and dynamic import()s.
const specifiers = (text) => [...text.matchAll(/(?:^\s*(?:import|export)\b[^'"]*?\bfrom\s*|^\s*import\s*|\bimport\s*\(\s*)['"]([^'"]+)['"]/gm)]
  .map((m) => m[1]);

test('the shared modules import nothing but each other', () => {
  const modules = readdirSync(SHARED).filter((f) => f.endsWith('.mjs'));
  assert.ok(modules.includes('check.mjs'), modules.join());
  for (const name of modules) {
    for (const spec of specifiers(readFileSync(join(SHARED, name), 'utf8'))) {
      assert.match(spec, /^\.\/[\w-]+\.mjs$/, `wasm/shared/${name} imports '${spec}'`);
      assert.ok(existsSync(join(SHARED, spec)), `wasm/shared/${name} imports '${spec}', not in wasm/shared`);
    }
  }
});

test('the page imports the shared modules from shared/, as the site holds them', () => {
  const scripts = readdirSync(join(ROOT, 'web')).filter((f) => f.endsWith('.js'));
  let seen = 0;
  for (const name of scripts) {
    for (const spec of specifiers(readFileSync(join(ROOT, 'web', name), 'utf8'))) {
      const base = spec.replace(/^\.\/shared\//, '');
      // A bare './X.mjs' naming a shared module would be a file the site does not have.
      assert.ok(!(spec.startsWith('./') && !spec.startsWith('./shared/') && existsSync(join(SHARED, base))),
        `web/${name} imports '${spec}': the site has it as './shared/${base}'`);
      if (spec.startsWith('./shared/')) {
        assert.ok(existsSync(join(SHARED, base)), `web/${name} imports '${spec}', not in wasm/shared`);
        ++seen;
      }
    }
  }
  assert.ok(seen > 0, 'the page imports shared modules');
});
