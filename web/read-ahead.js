// Reads ahead, in few large async reads, what the core will read of the picked files, so that
// it finds the bytes in hand (the `held` option) instead of reading each range with a slow
// FileReaderSync call: files within the budget whole, others as planned by a dry run (the `plan`
// binding), up to the budget; the rest is read where it lies, as before.
/* exported readAhead, readsFor, READ_AHEAD */

const READ_AHEAD = {
  budget: 256 * 2 ** 20,  // bytes held at most
  // Files this small together are read whole: the plan, a dry run of the conversion, costs more
  // than reading what no fold needs (docs/decisions.md: the page reads what the conversion needs ahead)
  whole: 256 * 2 ** 20,
};

// Planned ranges [{file, offset, length}] as reads: those of a file that overlap or touch joined,
// in file order, cut to `budget` bytes in all.
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

// `held` for the core: File -> [{offset, bytes}] sorted by offset, or undefined. `plan()` calls
// the binding; `profile` gets what this cost.
async function readAhead(input, files, plan, profile) {
  const started = performance.now();
  const blobs = [input, ...files.values()].filter((f) => f instanceof Blob);
  const total = blobs.reduce((sum, f) => sum + f.size, 0);
  Object.assign(profile, { planMs: 0, reads: 0, bytes: 0, ms: 0 });
  if (!blobs.length) return undefined;
  const held = new Map();
  const hold = (file, offset, bytes) => held.set(file, [...held.get(file) ?? [], { offset, bytes }]);
  let reads;
  if (total <= READ_AHEAD.whole) {
    reads = blobs.map((file) => ({ file, offset: 0, length: file.size }));
  } else {
    const planned = plan();
    profile.planMs = performance.now() - started;
    if (planned.error !== undefined) return undefined;  // the conversion will say why
    for (const { file, offset, bytes } of planned.read) hold(file, offset, bytes);
    reads = readsFor(planned.ranges, READ_AHEAD.budget);
  }
  const readStarted = performance.now();
  await Promise.all(reads.map(async ({ file, offset, length }) => {
    hold(file, offset, new Uint8Array(await file.slice(offset, offset + length).arrayBuffer()));
  }));
  for (const list of held.values()) list.sort((a, b) => a.offset - b.offset);
  Object.assign(profile, { reads: reads.length, bytes: reads.reduce((sum, r) => sum + r.length, 0),
    ms: performance.now() - readStarted });
  return held;
}
