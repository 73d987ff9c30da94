#!/usr/bin/env node
// The Node CLI: the same command line as the native one (core/cli), over Node's fs.
import { readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { guard, loadModule } from './index.mjs';

// The wording of the C library's strerror for the common cases, so both CLIs print the same.
const STRERROR = {
  ENOENT: 'No such file or directory', EACCES: 'Permission denied', EISDIR: 'Is a directory',
  ENOTDIR: 'Not a directory', ENOSPC: 'No space left on device', EROFS: 'Read-only file system',
};
const describe = (e) => STRERROR[e.code] ?? e.message;

const host = {
  // The file's size, or a message; errno names as the native CLI prints them (strerror).
  fileSize(path) {
    try {
      const stat = statSync(path);
      if (stat.isFile()) return stat.size;
      return `cannot read '${path}': ${stat.isDirectory() ? STRERROR.EISDIR : 'Operation not supported'}`;
    } catch (e) {
      return `cannot read '${path}': ${describe(e)}`;
    }
  },
  readFile(path) {
    try {
      return readFileSync(path);
    } catch (e) {
      return `cannot read '${path}': ${describe(e)}`;
    }
  },
  // Temporary file + rename, as the native CLI: never a partial file.
  writeFile(path, bytes) {
    const tmp = `${path}.tmp-${process.pid}`;
    try {
      writeFileSync(tmp, bytes);
      renameSync(tmp, path);
      return '';
    } catch (e) {
      rmSync(tmp, { force: true });
      return `cannot write '${path}': ${describe(e)}`;
    }
  },
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  errIsTerminal: () => Boolean(process.stderr.isTTY),
};

const module = await loadModule();
try {
  process.exitCode = guard({}, () => module.runCli(process.argv.slice(2), host));
} catch (e) {
  process.stderr.write(`onnx-lattice: error: ${e.message}\n`);
  process.exitCode = 1;
}
