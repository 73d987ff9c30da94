// The engine's growth on synthetic chains (scripts/bench.sh): for each N, builds the chain model
// with bench/chain_model.cc, then times whole CLI processes: the round trip (`--target none
// --no-fold-bn`: parse, validate, write) and the conversion with the default target. Prints the
// table, convert / round trip per N and the growth exponent between the two largest N.
//   node bench/chain.mjs BIN_DIR MODEL_DIR [--maxpool] [--node-cli] N...
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

const [bin, dir, ...rest] = process.argv.slice(2);
const maxpool = rest.includes('--maxpool');
const nodeCli = rest.includes('--node-cli');
const sizes = rest.filter((a) => !a.startsWith('--')).map(Number);
const cli = nodeCli ? [process.execPath, join(import.meta.dirname, '..', 'wasm', 'cli.mjs')] : [join(bin, 'onnx-lattice')];

function seconds(args) {
  const start = process.hrtime.bigint();
  execFileSync(cli[0], [...cli.slice(1), ...args], { stdio: ['ignore', 'ignore', 'inherit'], maxBuffer: 1 << 30 });
  return Number(process.hrtime.bigint() - start) / 1e9;
}

const rows = [];
for (const n of sizes) {
  const model = join(dir, `chain-${n}${maxpool ? '-maxpool' : ''}.onnx`);
  if (!existsSync(model)) execFileSync(join(bin, 'onnx_lattice_chain_model'), [String(n), ...(maxpool ? ['--maxpool'] : []), model]);
  const out = join(dir, 'out.onnx');
  const report = join(dir, 'report.json');
  const roundTrip = seconds(['convert', model, '-o', out, '--target', 'none', '--no-fold-bn', '--quiet']);
  const convert = seconds(['convert', model, '-o', out, '--quiet', '--report', report]);
  const matches = JSON.parse(execFileSync(process.execPath, ['-e', `process.stdout.write(String(require(${JSON.stringify(report)}).matches.length))`]).toString());
  rmSync(out, { force: true });
  rmSync(report, { force: true });
  rows.push({ n, mb: statSync(model).size / 1e6, matches, roundTrip, convert });
  const r = rows.at(-1);
  console.log(`${String(n).padStart(7)} blocks ${r.mb.toFixed(1).padStart(7)} MB ${String(matches).padStart(7)} matches` +
    `   round trip ${r.roundTrip.toFixed(2).padStart(8)} s   convert ${r.convert.toFixed(2).padStart(8)} s` +
    `   convert / round trip ${(r.convert / r.roundTrip).toFixed(2).padStart(7)}` +
    `   ${(1000 * r.convert / Math.max(matches, 1)).toFixed(3)} ms per match`);
}
const exponent = (a, b, key) => Math.log(b[key] / a[key]) / Math.log(b.n / a.n);
for (let i = 1; i < rows.length; ++i) {
  const [a, b] = [rows[i - 1], rows[i]];
  console.log(`growth exponent ${a.n} -> ${b.n}: convert ${exponent(a, b, 'convert').toFixed(2)}, ` +
    `round trip ${exponent(a, b, 'roundTrip').toFixed(2)}`);
}
const from = rows.find((r) => r.n === 1600);
if (from && rows.at(-1).n > 1600) {
  const to = rows.at(-1);
  console.log(`growth exponent of convert ${from.n} -> ${to.n}: ${exponent(from, to, 'convert').toFixed(2)} (target <= 1.15)`);
  console.log(`convert / round trip at 1600: ${(from.convert / from.roundTrip).toFixed(2)} (target <= 3)`);
}
