// The file-system Host of the Node CLI and of convertFile (wasm/index.mjs): primitives only
// (lstat, realpath, read a range, write a temporary file, rename, ...); which files may be read or
// written, and in what order, is decided once in the core (core/cli). Failures come back as
// {error, code} in the C library's strerror wording with errno's name, so both CLIs print the same.
import {
  closeSync, constants, fchmodSync, fsyncSync, lstatSync, mkdirSync, openSync, readFileSync, readSync, readdirSync, readlinkSync, realpathSync,
  renameSync, rmSync, statSync, writeSync,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { isatty } from 'node:tty';

// The wording of the C library's strerror for the common cases, so both CLIs print the same.
const STRERROR = {
  ENOENT: 'No such file or directory', EACCES: 'Permission denied', EISDIR: 'Is a directory',
  ENOTDIR: 'Not a directory', ENOSPC: 'No space left on device', EROFS: 'Read-only file system',
  EEXIST: 'File exists', ELOOP: 'Too many levels of symbolic links', EPIPE: 'Broken pipe',
  EPERM: 'Operation not permitted', ENAMETOOLONG: 'File name too long', EIO: 'Input/output error',
};
const failure = (e) => ({ error: STRERROR[e.code] ?? e.message, code: e.code ?? '' });
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

// Exactly `length` bytes at `position` of `fd`, into `into` (an early end of file is an I/O error).
function readAll(fd, into, position) {
  for (let done = 0; done < into.length;) {
    const n = readSync(fd, into, done, into.length - done, position + done);
    if (n === 0) throw Object.assign(new Error('short read'), { code: 'EIO' });
    done += n;
  }
  return into;
}

// One buffer for every copy: a fresh one per range is faulted in again, page by page (the Node
// CLI converted ResNet-50 without folds in 268 ms with those, 240 ms with this one).
let copyBuffer;

// A range of `source` appended to `fd` in chunks: the tensor data never enters the wasm heap.
function copyRange(fd, { source, offset, length }) {
  const from = openSync(source, 'r');
  try {
    copyBuffer ??= Buffer.allocUnsafeSlow(8 << 20);
    for (let done = 0; done < length;) {
      const part = copyBuffer.subarray(0, Math.min(copyBuffer.length, length - done));
      writeAll(fd, readAll(from, part, offset + done));
      done += part.length;
    }
  } finally {
    closeSync(from);
  }
}

// Standard input to its end, or its first `atMost` bytes, read synchronously from fd 0 as the
// native CLI does (process.stdin is asynchronous, and the core waits for the bytes).
function readStdin(atMost) {
  const chunks = [];
  let total = 0;
  while (total < atMost) {
    const chunk = Buffer.allocUnsafe(Math.min(1 << 20, atMost - total));
    let n;
    try {
      n = readSync(0, chunk, 0, chunk.length, null);
    } catch (e) {
      // A non-blocking pipe (left so by another program) has no data yet: wait for it.
      if (e.code !== 'EAGAIN') throw e;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
      continue;
    }
    if (n === 0) break;
    chunks.push(chunk.subarray(0, n));
    total += n;
  }
  return Buffer.concat(chunks, total);
}

export const fsHost = {
  lstat(path) {
    try {
      const s = lstatSync(path, { bigint: true });
      return { kind: kindOf(s), size: Number(s.size), identity: `${s.dev}:${s.ino}` };
    } catch (e) {
      return e.code === 'ENOENT' ? { kind: KIND.missing, size: 0, identity: '' } : failure(e);
    }
  },
  readLink: (path) => attempt(() => readlinkSync(path)),
  listDir: (path) => attempt(() => readdirSync(path)),
  readFile: (path) => attempt(() => readFileSync(path)),
  readStdin: (atMost) => attempt(() => readStdin(atMost)),
  realPath: (path) => attempt(() => realpathSync(path)),
  // `into` is a view of the wasm heap, filled in place.
  readRangeInto: (path, offset, into) => attempt(() => {
    const fd = openSync(path, 'r');
    try {
      readAll(fd, into, offset);
      return true;
    } finally {
      closeSync(fd);
    }
  }),
  // A new file beside `path` (exclusive create), with the mode of the file it replaces:
  // {fd, name, replacing}. The core appends its pieces, then closes or discards it.
  openTemporary(path) {
    const name = `${path}.tmp-${randomBytes(4).toString('hex')}`;
    let fd;
    try {
      fd = openSync(name, 'wx', 0o666);
      const old = attempt(() => statSync(path));
      if (old.mode !== undefined) fchmodSync(fd, old.mode & 0o7777);
      return { fd, name, replacing: old.mode !== undefined };
    } catch (e) {
      if (fd !== undefined) attempt(() => closeSync(fd));
      rmSync(name, { force: true });
      return failure(e);
    }
  },
  // `bytes` is a view of the wasm heap, written at once.
  appendBytes: (fd, bytes) => attempt(() => writeAll(fd, bytes)),
  appendRange: (fd, source, offset, length) => attempt(() => copyRange(fd, { source, offset, length })),
  // As the native CLI: on disk before the rename only when it replaces a file.
  closeTemporary: (fd, replacing) => attempt(() => {
    if (replacing) fsyncSync(fd);
    closeSync(fd);
  }),
  discardTemporary(fd, name) {
    attempt(() => closeSync(fd));
    rmSync(name, { force: true });
  },
  rename: (from, to) => attempt(() => renameSync(from, to)),
  makeDirs: (path) => attempt(() => mkdirSync(path, { recursive: true })),
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
  outIsTerminal: () => Boolean(process.stdout.isTTY),
  // isatty(0), as the native CLI: process.stdin would open (and start reading) the stream.
  inIsTerminal: () => isatty(0),
};
