// What the conversion worker reads of the picked files before the core runs, and how: the core
// reads synchronously (FileReaderSync, one slow call per range), while an asynchronous read of a
// File is several times faster per byte and per call. So the bytes the conversion needs are read
// first, in few large asynchronous reads, and the core then finds them in hand (the `held` option,
// wasm/js_files.h), each byte read once:
// - files that are small together are read whole: a plan would cost more than reading bytes the
//   conversion does not need;
// - otherwise a dry run plans the reads (the `plan` binding): it reads the skeleton and the small
//   tensors itself, and notes the tensor data the conversion will read (the weights it folds);
//   the noted ranges are then read, up to a memory budget. What is over the budget is read where
//   it lies, as without a plan, so a model of gigabytes converts in the same small heap.
// Unchanged tensor data is never read: the output keeps it as slices of the Files.
/* exported readAhead, readsFor, READ_AHEAD */

const READ_AHEAD = {
  budget: 256 * 2 ** 20,  // bytes held at most, as the wasm heap's bound in the page tests
  whole: 16 * 2 ** 20,    // files of at most this much together are read whole, without a plan
};

// The planned ranges [{file, offset, length}] as reads: overlapping and touching ranges of a file
// joined, in file order, cut to `budget` bytes in all (the first ranges of each file first).
function readsFor(ranges, budget) {
  const byFile = new Map();
  for (const r of ranges) {
    if (!byFile.has(r.file)) byFile.set(r.file, []);
    byFile.get(r.file).push({ offset: r.offset, end: r.offset + r.length });
  }
  const reads = [];
  let left = budget;
  for (const [file, list] of byFile) {
    list.sort((a, b) => a.offset - b.offset);
    const joined = [];
    for (const r of list) {
      const last = joined.at(-1);
      if (last && r.offset <= last.end) last.end = Math.max(last.end, r.end); else joined.push({ ...r });
    }
    for (const r of joined) {
      const length = Math.min(r.end - r.offset, left);
      if (length <= 0) break;
      reads.push({ file, offset: r.offset, length });
      left -= length;
    }
  }
  return reads;
}

// `input` (a File, or bytes) and `files` (its data files by name) as the core will read them with
// `options`: a Map of the ranges read, File -> [{offset, bytes}] sorted by offset (the `held`
// option), or undefined when there is nothing to read ahead. `plan(options)` calls the binding;
// `profile` gets what this cost.
async function readAhead(input, files, plan, profile) {
  const started = performance.now();
  const blobs = [input, ...files.values()].filter((f) => f instanceof Blob);
  const total = blobs.reduce((sum, f) => sum + f.size, 0);
  Object.assign(profile, { planMs: 0, planReads: 0, reads: 0, bytes: 0, ms: 0 });
  if (!blobs.length) return undefined;
  const held = new Map();
  const hold = (file, offset, bytes) => {
    if (!held.has(file)) held.set(file, []);
    held.get(file).push({ offset, bytes });
  };
  let reads;
  if (total <= READ_AHEAD.whole) {
    reads = blobs.map((file) => ({ file, offset: 0, length: file.size }));
  } else {
    const planned = plan();
    profile.planMs = performance.now() - started;
    if (planned.error !== undefined) return undefined;  // the conversion says why, in its words
    profile.planReads = planned.profile.reads;
    for (const { file, offset, bytes } of planned.read) hold(file, offset, bytes);
    reads = readsFor(planned.ranges, READ_AHEAD.budget);
  }
  const readStarted = performance.now();
  await Promise.all(reads.map(async ({ file, offset, length }) => {
    const whole = offset === 0 && length === file.size;
    hold(file, offset, new Uint8Array(await (whole ? file : file.slice(offset, offset + length)).arrayBuffer()));
  }));
  for (const list of held.values()) list.sort((a, b) => a.offset - b.offset);
  Object.assign(profile, { reads: reads.length, bytes: reads.reduce((sum, r) => sum + r.length, 0),
    ms: performance.now() - readStarted });
  return held;
}
