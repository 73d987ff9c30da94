#!/usr/bin/env node
// The Node CLI: the same command line as the native one (core/cli), over Node's fs (fs_host.mjs).
import { fsHost } from './fs_host.mjs';
import { guard, loadModule } from './engine.mjs';

const module = await loadModule();
try {
  process.exitCode = guard({}, () => module.runCli(process.argv.slice(2), fsHost));
} catch (e) {
  process.stderr.write(`onnx-lattice: error: ${e.message}\n`);
  process.exitCode = 1;
}
