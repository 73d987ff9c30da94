// The Node CLI's side of the check: the core parses `check ORIGINAL CANDIDATE` and
// `convert --check` like every command line (core/cli/check_request.h) and hands over a request;
// this runs it (check_node.mjs), prints it, writes the check into the conversion's report and
// gives the exit status.
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';

import { figure as shortFigure, finiteForJson, introducesNonFinite, percent, verdict } from './check.mjs';
import { runCheck } from './check_node.mjs';

const EXIT = { ok: 0, failed: 1, usage: 2 };

// Three significant digits: a terminal line is read closer than the page's table.
const figure = (x) => shortFigure(x, 3);
const shape = (dims) => (dims ? `[${dims.join('×')}]` : 'none');

// One line per output (and the first tensor where the models part, layerwise), for a terminal.
export function formatCheck(check, original, candidate) {
  const fed = check.inputs?.source && check.inputs.source !== 'random'
    ? `${check.inputs.samples} samples of ${check.inputs.source}${check.inputs.conversions ? ` (${check.inputs.conversions.join(', ')})` : ''}`
    : `seed ${check.seed}, inputs uniform in [${check.input_range.join(', ')})`;
  const lines = [`check: ${candidate} against ${original} in ${check.runtime.name} ${check.runtime.version}` +
    ` (${fed}, rtol ${check.tolerance.rtol}, atol ${check.tolerance.atol})`];
  if (check.error) return `${lines[0]}\n  ${check.error}\n`;
  for (const o of check.outputs) {
    if (o.top1_agreement !== undefined) {
      lines.push(`  top-1 ${o.name}: the same class on ${percent(o.top1_agreement)} of ${o.shape_original[0]} samples` +
        (o.accuracy ? `; accuracy ${percent(o.accuracy.original)} → ${percent(o.accuracy.candidate)}` : ''));
    }
    lines.push(o.comparable
      ? `  ${o.pass ? 'pass' : 'FAIL'}  ${o.name} ${shape(o.shape_original)}: max |Δ| ${figure(o.max_abs)} at [${o.max_abs_index}], ` +
        `mean ${figure(o.mean_abs)}, p99 ${figure(o.p99_abs)}, max rel ${figure(o.max_rel)}; passes at atol ≥ ${figure(o.min_atol)}` +
        (o.nan[1] || o.inf[1] ? `; NaN ${o.nan[0]} → ${o.nan[1]}, inf ${o.inf[0]} → ${o.inf[1]}` : '')
      : `  —     ${o.name}: ${o.reason}, ${shape(o.shape_original)} → ${shape(o.shape_candidate)}`);
  }
  if (check.layers) {
    lines.push(`  layerwise: ${check.layers.length} tensors compared; ` + (check.first_failing
      ? `the first beyond the tolerance is '${check.first_failing.tensor}'${check.first_failing.match_id ? ` (${check.first_failing.match_id})` : ''}`
      : 'all within the tolerance'));
    for (const r of (check.rewrites ?? []).slice(0, 10)) {
      lines.push(`    ${figure(r.max_abs)} at '${r.tensor}' (${figure(r.max_abs_in)} entering)  ${r.match_id}`);
    }
  }
  lines.push(check.pass ? 'check passed' : 'check FAILED');
  return `${lines.join('\n')}\n`;
}

// A file replaced whole (a temporary file renamed over it), so a reader never sees half of it.
function writeWhole(path, content) {
  const temporary = `${path}.tmp-${randomBytes(4).toString('hex')}`;
  try {
    writeFileSync(temporary, content);
    renameSync(temporary, path);
  } finally {
    rmSync(temporary, { force: true });
  }
}

// The report with its check written where the conversion wrote it.
function writeReport(path, report, out) {
  const text = JSON.stringify(finiteForJson(report));
  if (path === '-') return out(text);
  writeWhole(path, text);
}

// The repair in a few lines: what it fitted on, and each refitted layer's change before → after.
export function repairLines(repair) {
  const refitted = repair.layers.filter((l) => l.refitted);
  const lines = [`repair: ${refitted.length} layer${refitted.length === 1 ? '' : 's'} refitted on ${repair.data.source}` +
    `${repair.data.note ? ` (${repair.data.note})` : ''} in ${Math.round(repair.time_ms)} ms`];
  for (const l of refitted) lines.push(`repair:   ${l.node}: '${l.target_tensor}' max |Δ| ${figure(l.before.max_abs)} → ${figure(l.after.max_abs)}, relative ${figure(l.before.rel)} → ${figure(l.after.rel)}`);
  return lines;
}

// Runs a request from the core; returns the exit status. `host` prints ({out, err}).
export async function runCheckRequest(request, host) {
  const fail = (e) => {
    // Options and the data given with them are the caller's to correct: a usage error.
    const usage = e.code === 'ERR_ONNX_LATTICE_OPTIONS' || e.code === 'ERR_ONNX_LATTICE_DATA';
    host.err(`onnx-lattice: ${usage ? '' : 'error: '}${e.message}\n`);
    return usage ? EXIT.usage : EXIT.failed;
  };
  const options = { ...request.options };
  try {
    if (request.command === 'check') {
      const { report } = await runCheck({ original: request.original, candidate: request.candidate }, options);
      host.out(request.json ? `${JSON.stringify(finiteForJson(report))}\n` : formatCheck(report, request.original, request.candidate));
      return report.pass ? EXIT.ok : EXIT.failed;
    }
    // convert --check / --repair: the converted model (repaired first) and the fold-only twin,
    // each against the input.
    const conversion = request.report;
    const repair = request.repair ? { calibration: request.repair.calibration, check: request.check } : undefined;
    let result;
    try {
      result = await runCheck({ original: request.original, candidate: request.candidate, twin: request.check, repair },
        { ...options, conversion });
    } catch (e) {
      // Without its repair, the converted model is not what was asked for: nothing stays written.
      if (repair) for (const path of [...(request.written ?? []), ...(request.report_path && request.report_path !== '-' ? [request.report_path] : [])]) rmSync(path, { force: true });
      throw e;
    }
    if (result.repair) {
      // The repaired model replaces the converted one whole, as the report does.
      writeWhole(request.candidate, result.repaired);
      conversion.repair = result.repair;
    }
    const { report: converted, twin } = result;
    if (request.check) conversion.check = { converted, fold_only: twin };
    if (request.report_path) writeReport(request.report_path, conversion, host.out);
    if (request.report_path !== '-') {
      const lines = [...(result.repair ? repairLines(result.repair) : []),
        ...(request.check ? [...verdict(twin, 'fold_only'), ...verdict(converted, 'converted')].map((l) => `check: ${l}`) : [])];
      host.out(lines.map((l) => `${l}\n`).join(''));
    }
    if (!request.check) return EXIT.ok;
    // The rewrites change outputs by design; a model that no longer runs, produces NaN or
    // infinity the original does not, or folds that are not exact, fail the conversion's check.
    const broken = converted.error || introducesNonFinite(converted) || !twin.pass;
    return broken ? EXIT.failed : EXIT.ok;
  } catch (e) {
    return fail(e);
  }
}
