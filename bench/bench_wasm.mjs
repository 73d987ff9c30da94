// WebAssembly timings for scripts/bench.sh: the same conversion as bench/bench.cc, through the
// npm package's API, repeated in this process; prints medians in milliseconds as JSON.
//   node bench/bench_wasm.mjs MODEL.onnx REPEATS TARGET
import { readFileSync } from 'node:fs';
import { createSyncConverter } from '../wasm/index.mjs';

const [path, repeats, target] = process.argv.slice(2);
const bytes = readFileSync(path);
const lattice = await createSyncConverter();
const wall = [], core = [];
let matches = 0;
for (let i = 0; i < Number(repeats); ++i) {
  const start = performance.now();
  const { report } = lattice.convert(bytes, { target });
  wall.push(performance.now() - start);
  const t = report.timings_ms;
  core.push(t.load + t.convert + t.save);
  matches = report.matches.length;
}
const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(JSON.stringify({ convert_ms: median(core), with_js_copies_ms: median(wall), matches }));
