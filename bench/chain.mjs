// The engine's growth on synthetic chains (scripts/bench.sh): for each N, builds the chain model
// with bench/chain_model.cc, then times whole CLI processes: the round trip (`--target none
// --no-fold-bn`: parse, validate, write) and the conversion with the default target. Prints the
// table, convert / round trip per N and the growth exponents. Times are the processes' CPU time
// (user + system), which other work on a shared machine disturbs far less than wall time; the
// wall time is printed beside it.
//   node bench/chain.mjs BIN_DIR MODEL_DIR [--maxpool] [--node-cli] N...
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

const [bin, dir, ...rest] = process.argv.slice(2);
const maxpool = rest.includes('--maxpool');
const nodeCli = rest.includes('--node-cli');
const sizes = rest.filter((a) => !a.startsWith('--')).map(Number);
const cli = nodeCli
  ? [process.execPath, join(import.meta.dirname, '..', 'wasm', 'cli.mjs')]
  : [join(bin, 'onnx-lattice')];

// CPU seconds of the process (user + system, from wait4's rusage), and wall seconds.
const RUSAGE = `
import os, sys, time
start = time.monotonic()
pid = os.fork()
if pid == 0:
    fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(usage.ru_utime + usage.ru_stime, time.monotonic() - start)
sys.exit(os.waitstatus_to_exitcode(status))
`;
function seconds(args) {
  const out = execFileSync('/usr/bin/python3', ['-c', RUSAGE, ...cli, ...args],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  const [cpu, wall] = out.toString().trim().split(' ').map(Number);
  return { cpu, wall };
}

const rows = [];
for (const n of sizes) {
  const model = join(dir, `chain-${n}${maxpool ? '-maxpool' : ''}.onnx`);
  if (!existsSync(model)) {
    execFileSync(join(bin, 'onnx_lattice_chain_model'), [String(n), ...(maxpool ? ['--maxpool'] : []), model]);
  }
  const out = join(dir, 'out.onnx');
  const report = join(dir, 'report.json');
  const roundTrip = seconds(['convert', model, '-o', out, '--target', 'none', '--no-fold-bn', '--quiet']);
  const convert = seconds(['convert', model, '-o', out, '--quiet', '--report', report]);
  const matches = JSON.parse(readFileSync(report, 'utf8')).matches.length;
  rmSync(out, { force: true });
  rmSync(report, { force: true });
  rows.push({ n, mb: statSync(model).size / 1e6, matches, roundTrip: roundTrip.cpu, convert: convert.cpu });
  const r = rows.at(-1);
  const s = (t) => `${t.cpu.toFixed(2).padStart(8)} s (wall ${t.wall.toFixed(2)})`;
  console.log(`${String(n).padStart(7)} blocks ${r.mb.toFixed(1).padStart(7)} MB ${String(matches).padStart(7)} matches` +
    `   round trip ${s(roundTrip)}   convert ${s(convert)}` +
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
  const k = exponent(from, to, 'convert'), base = exponent(from, to, 'roundTrip');
  console.log(`growth exponent of convert ${from.n} -> ${to.n}: ${k.toFixed(2)} (target <= 1.15); ` +
    `of the round trip in the same run ${base.toFixed(2)}, of convert / round trip ${(k - base).toFixed(2)}`);
  console.log(`convert / round trip at 1600: ${(from.convert / from.roundTrip).toFixed(2)} (target <= 3)`);
} else if (rows.length > 1) {
  console.log('no growth exponent or ratio against their targets: they need N = 1600 and a larger N (CHAIN_SIZES)');
}
