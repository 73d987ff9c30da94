// Shared by the node:test suites: where things are, and how to run both CLIs.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const FIXTURES = join(ROOT, 'tests/fixtures');
export const NATIVE_CLI = join(ROOT, 'build/native/onnx-lattice');
export const NODE_CLI = join(ROOT, 'wasm/cli.mjs');

export const fixtures = () => readdirSync(FIXTURES).filter((f) => f.endsWith('.onnx')).sort();
export const fixture = (name) => join(FIXTURES, name);
export const scratch = () => mkdtempSync(join(tmpdir(), 'onnx-lattice-test-'));

// Both CLIs, same arguments: { status, stdout, stderr }.
export const CLIS = {
  native: (args) => spawnSync(NATIVE_CLI, args, { encoding: 'utf8', maxBuffer: 1 << 28 }),
  node: (args) => spawnSync(process.execPath, [NODE_CLI, ...args], { encoding: 'utf8', maxBuffer: 1 << 28 }),
};

// A report without what may differ between two runs: the time taken.
export function stable(report) {
  const { timings_ms, ...rest } = report;
  return rest;
}
