// Fails fast, naming the package, when something a test or fixture script imports is not
// installed. The list is read from the sources themselves (every import in tests/, bench/ and
// scripts/, every /usr/bin program they name), so it cannot drift from what the suites use: a
// missing install step in scripts/setup.sh fails here, in seconds, on the developer's machine.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PYTHON = '/usr/bin/python3';

function* sources(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (/\.(mjs|js|py)$/.test(name)) yield path;
  }
}

const js = new Map();      // package -> first file importing it
const python = new Map();  // top-level module -> first file
const programs = new Map();
for (const dir of ['tests', 'bench', 'scripts']) {
  for (const file of sources(join(ROOT, dir))) {
    const text = readFileSync(file, 'utf8');
    const where = relative(ROOT, file);
    if (file.endsWith('.py')) {
      for (const m of text.matchAll(/^\s*(?:import\s+([A-Za-z_]\w*)|from\s+([A-Za-z_]\w*)[\w.]*\s+import)/gm)) {
        const module = m[1] ?? m[2];
        // A script beside the importing one (make_fixtures.py) is the project's own, not a package.
        if (existsSync(join(dirname(file), `${module}.py`))) continue;
        if (!python.has(module)) python.set(module, where);
      }
    } else {
      for (const m of text.matchAll(/(?:\bfrom\s+|\bimport\s*\(?\s*|\brequire\s*\(\s*)['"]([^'"./][^'"]*)['"]/g)) {
        const spec = m[1];
        if (isBuiltin(spec)) continue;
        const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
        if (!js.has(name)) js.set(name, where);
      }
    }
    for (const m of text.matchAll(/['"](\/usr\/bin\/[\w.+-]+)['"]/g)) {
      if (!programs.has(m[1])) programs.set(m[1], where);
    }
  }
}

const missing = [];
for (const [name, where] of js) {
  try {
    await import(name);
  } catch (e) {
    missing.push(`npm package '${name}' (imported by ${where}): ${e.code ?? e.message}`);
  }
}
const probe = spawnSync(PYTHON, ['-c', `
import importlib, sys
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception as e:
        print(name, type(e).__name__, e, sep="\\t")
`, ...python.keys()], { encoding: 'utf8' });
if (probe.status !== 0) missing.push(`${PYTHON} does not run: ${probe.stderr || probe.error}`);
for (const line of probe.stdout.split('\n').filter(Boolean)) {
  const [name, kind, message] = line.split('\t');
  missing.push(`python module '${name}' (imported by ${python.get(name)}): ${kind} ${message}`);
}
for (const [program, where] of programs) {
  if (!existsSync(program)) missing.push(`program ${program} (named by ${where})`);
}

if (missing.length) {
  console.error('missing test dependencies (scripts/setup.sh --test must install them):');
  for (const m of missing) console.error(`  ${m}`);
  process.exit(1);
}
console.error(`[onnx-lattice] test dependencies present: ${js.size} npm packages, ${python.size} python modules, ` +
  `${programs.size} programs`);
