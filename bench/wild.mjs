#!/usr/bin/env node
// Measures the conversion and the repair on the "wild" models (tests/fixtures/make_wild.py): for
// each model of the manifest, `node wasm/cli.mjs convert` (pinned with --input-shape when its
// input is dynamic), the task figure of the converted model (wild_tasks.mjs: it must load and run
// in onnxruntime), then `convert --repair --calibration` and the repaired model's figure. Prints a
// table; --json FILE also writes every figure.
//
//   node bench/wild.mjs [--dir DIR] [--models blazeface,ocr_cls] [--target lattice]
//        [--out DIR] [--json FILE] [--timeout SECONDS] [--cli PATH] [-- extra convert arguments]
//
// DIR defaults to $ONNX_LATTICE_WILD, else $ONNX_LATTICE_CACHE/wild, else ~/.cache/onnx-lattice/wild.
// The converted and repaired models go to --out (a temporary folder, removed, by default). --cli
// runs another CLI (a .mjs under Node, else an executable: build/native/onnx-lattice converts but
// does not repair).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { FIGURES, taskFigure } from '../tests/node/wild_tasks.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const NODE_CLI = join(ROOT, 'wasm/cli.mjs');

function parseArgs(argv) {
  const args = { target: 'lattice', timeout: 3600, extra: [] };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    if (a === '--') { args.extra = argv.slice(i + 1); break; }
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--dir') args.dir = value();
    else if (a === '--models') args.models = value().split(',');
    else if (a === '--target') args.target = value();
    else if (a === '--out') args.out = value();
    else if (a === '--json') args.json = value();
    else if (a === '--timeout') args.timeout = Number(value());
    else if (a === '--cli') args.cli = value();
    else throw new Error(`unknown argument ${a}`);
  }
  args.dir ??= process.env.ONNX_LATTICE_WILD ??
    join(process.env.ONNX_LATTICE_CACHE ?? join(homedir(), '.cache/onnx-lattice'), 'wild');
  return args;
}

// `node wasm/cli.mjs convert ...`: {status, seconds, stderr tail, report}.
function convert(model, output, entry, args, more = []) {
  const report = `${output}.report.json`;
  const argv = [args.cli ?? NODE_CLI, 'convert', model, '-o', output, '--target', args.target, '--report', report,
    ...(entry.inputShape ? ['--input-shape', entry.inputShape] : []), ...more, ...args.extra];
  const start = process.hrtime.bigint();
  const [exe, ...rest] = argv[0].endsWith('.mjs') ? [process.execPath, ...argv] : argv;
  const r = spawnSync(exe, rest, { encoding: 'utf8', maxBuffer: 1 << 28, timeout: args.timeout * 1000 });
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  let parsed = null;
  try { parsed = JSON.parse(readFileSync(report, 'utf8')); } catch { /* no report */ }
  const tail = (r.stderr ?? '').trim().split('\n').slice(-3).join(' | ');
  return { status: r.status ?? (r.signal ? `killed (${r.signal})` : 'failed'), seconds, stderr: tail, report: parsed,
    command: [argv[0] === NODE_CLI ? 'node wasm/cli.mjs' : argv[0], ...argv.slice(1)].join(' ') };
}

async function figure(entry, dir, candidate) {
  try {
    const r = await taskFigure(entry.kind, join(dir, entry.path), candidate, join(dir, entry.heldout.path), {
      inputName: entry.input, labels: join(dir, entry.heldout.labels),
      dictionary: entry.dictionary && join(dir, entry.dictionary), cache: FIGURE_CACHE,
    });
    return r;
  } catch (e) {
    return { error: e.message.split('\n')[0] };
  }
}

const FIGURE_CACHE = new Map();

function short(sanity, kind) {
  if (!sanity) return '';
  if (kind === 'face') return `faces ${sanity.onFaceCrops} on face crops, ${sanity.onOtherCrops} on others`;
  if (kind === 'classifier') return `accuracy ${sanity.accuracy}, p ${sanity.meanTopProb}`;
  if (kind === 'textdet') return `text boxes found ${sanity.textBoxesFound}`;
  if (kind === 'lines') return `${sanity.meanCentres} centres/image`;
  if (kind === 'ctc') return `reads ${sanity.exactReads} exactly, chars ${sanity.charAccuracy}`;
  return JSON.stringify(sanity);
}

const fmt = (r) => (r?.error ? `error: ${r.error.slice(0, 60)}` : r ? r.figure.toFixed(4) : '–');

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const manifestPath = join(args.dir, 'manifest.json');
  if (!existsSync(manifestPath)) {
    throw new Error(`${manifestPath} is missing: run /usr/bin/python3 tests/fixtures/make_wild.py ${args.dir}`);
  }
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
  const out = args.out ?? mkdtempSync(join(tmpdir(), 'onnx-lattice-wild-'));
  mkdirSync(out, { recursive: true });
  if (!args.out) process.on('exit', () => rmSync(out, { recursive: true, force: true }));
  const rows = [];
  for (const [name, entry] of Object.entries(manifest.models)) {
    if (args.models && !args.models.includes(name)) continue;
    const model = join(args.dir, entry.path);
    const row = { model: name, kind: entry.kind, figure: FIGURES[entry.kind] };
    const self = await figure(entry, args.dir, model);
    row.original = self.error ? { error: self.error } : self.original;
    row.self = self.error ? null : self.figure;

    const converted = join(out, `${name}.${args.target}.onnx`);
    const c = convert(model, converted, entry, args);
    row.convert = { status: c.status, seconds: c.seconds, stderr: c.status === 0 ? undefined : c.stderr, command: c.command };
    row.converted = c.status === 0 ? await figure(entry, args.dir, converted) : { error: `convert failed: ${c.stderr}` };

    const repaired = join(out, `${name}.${args.target}.repaired.onnx`);
    const r = convert(model, repaired, entry, args, ['--repair', '--calibration', join(args.dir, entry.calibration.path)]);
    const rep = r.report?.repair;
    row.repair = {
      status: r.status, seconds: r.seconds, stderr: r.status === 0 ? undefined : r.stderr, command: r.command,
      refitted: Array.isArray(rep?.layers) ? rep.layers.filter((l) => l.refitted).length : undefined,
      kept: Array.isArray(rep?.layers) ? rep.layers.filter((l) => !l.refitted).length : undefined,
      left: Array.isArray(rep?.left) ? rep.left.length : undefined,
      repair_ms: rep?.time_ms,
    };
    row.repaired = r.status === 0 ? await figure(entry, args.dir, repaired) : { error: `repair failed: ${r.stderr}` };
    for (const k of ['converted', 'repaired']) if (row[k]) delete row[k].perSample;
    rows.push(row);
    console.error(`${name}: converted ${fmt(row.converted)} (${c.seconds.toFixed(1)} s), repaired ${fmt(row.repaired)} (${r.seconds.toFixed(1)} s)`);
  }

  const header = ['model', 'task figure', 'original on its data', 'converted', 'repaired', 'refitted / kept / left',
    'convert s', 'convert --repair s (repair alone)'];
  const lines = rows.map((row) => [row.model, row.figure, short(row.original, row.kind), fmt(row.converted), fmt(row.repaired),
    row.repair.refitted === undefined ? '–' : `${row.repair.refitted} / ${row.repair.kept} / ${row.repair.left}`,
    row.convert.seconds.toFixed(1),
    `${row.repair.seconds.toFixed(1)}${row.repair.repair_ms === undefined ? '' : ` (${(row.repair.repair_ms / 1000).toFixed(1)})`}`]);
  console.log(`| ${header.join(' | ')} |`);
  console.log(`| ${header.map(() => '---').join(' | ')} |`);
  for (const l of lines) console.log(`| ${l.join(' | ')} |`);
  if (args.json) writeFileSync(args.json, `${JSON.stringify({ target: args.target, dir: args.dir, rows }, null, 1)}\n`);
}

main().catch((e) => {
  process.stderr.write(`wild_measure: ${e.message}\n`);
  process.exitCode = 1;
});
