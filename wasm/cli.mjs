#!/usr/bin/env node
// The Node CLI: the same command line as the native one (core/cli), over Node's fs. The host
// functions are primitives (lstat, write a temporary file, rename, ...); which files may be
// written, and in what order, is decided once in the core. Failures come back as {error}.
import {
  closeSync, constants, fchmodSync, fsyncSync, lstatSync, openSync, readFileSync, readlinkSync, renameSync, rmSync,
  statSync, writeSync,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { guard, loadModule } from './index.mjs';

// The wording of the C library's strerror for the common cases, so both CLIs print the same.
const STRERROR = {
  ENOENT: 'No such file or directory', EACCES: 'Permission denied', EISDIR: 'Is a directory',
  ENOTDIR: 'Not a directory', ENOSPC: 'No space left on device', EROFS: 'Read-only file system',
  EEXIST: 'File exists', ELOOP: 'Too many levels of symbolic links', EPIPE: 'Broken pipe',
  EPERM: 'Operation not permitted', ENAMETOOLONG: 'File name too long', EIO: 'Input/output error',
};
const failure = (e) => ({ error: STRERROR[e.code] ?? e.message });
const attempt = (fn) => {
  try {
    return fn();
  } catch (e) {
    return failure(e);
  }
};

// Same order as lattice::FileStat::Kind.
const KIND = { missing: 0, regular: 1, symlink: 2, charDevice: 3, directory: 4, fifo: 5, other: 6 };
const kindOf = (s) => (s.isFile() ? KIND.regular : s.isSymbolicLink() ? KIND.symlink
  : s.isCharacterDevice() ? KIND.charDevice : s.isDirectory() ? KIND.directory : s.isFIFO() ? KIND.fifo : KIND.other);

function writeAll(fd, bytes) {
  for (let done = 0; done < bytes.length;) done += writeSync(fd, bytes, done, bytes.length - done);
}

const host = {
  lstat(path) {
    try {
      const s = lstatSync(path, { bigint: true });
      return { kind: kindOf(s), size: Number(s.size), identity: `${s.dev}:${s.ino}` };
    } catch (e) {
      return e.code === 'ENOENT' ? { kind: KIND.missing, size: 0, identity: '' } : failure(e);
    }
  },
  readLink: (path) => attempt(() => readlinkSync(path)),
  readFile: (path) => attempt(() => readFileSync(path)),
  // A new file beside `path` (exclusive create), with the mode of the file it replaces.
  writeTemporary(path, bytes) {
    const tmp = `${path}.tmp-${randomBytes(4).toString('hex')}`;
    let fd;
    try {
      fd = openSync(tmp, 'wx', 0o666);
      const old = attempt(() => statSync(path));
      if (old.mode !== undefined) fchmodSync(fd, old.mode & 0o7777);
      writeAll(fd, bytes);
      fsyncSync(fd);
      closeSync(fd);
      return tmp;
    } catch (e) {
      if (fd !== undefined) attempt(() => closeSync(fd));
      rmSync(tmp, { force: true });
      return failure(e);
    }
  },
  rename: (from, to) => attempt(() => renameSync(from, to)),
  remove: (path) => rmSync(path, { force: true }),
  writeDevice(path, bytes) {
    return attempt(() => {
      const fd = openSync(path, constants.O_WRONLY);  // never creates: the device must exist
      try {
        writeAll(fd, bytes);
      } finally {
        closeSync(fd);
      }
    });
  },
  // Synchronous for files and pipes on Linux; a copy, since `bytes` is a view of the wasm heap.
  outBytes: (bytes) => attempt(() => process.stdout.write(Buffer.from(bytes))),
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
