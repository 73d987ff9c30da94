// The Node CLI's side of the check: the core parses `check ORIGINAL CANDIDATE` and
// `convert --check` like every command line (core/cli/check_request.h) and hands over a request;
// this runs it (check_node.mjs), prints it, writes the check into the conversion's report and
// gives the exit status.
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';

import { figure as shortFigure, finiteForJson, introducesNonFinite, verdict } from './check.mjs';
import { runCheck } from './check_node.mjs';

const EXIT = { ok: 0, failed: 1, usage: 2 };

// Three significant digits: a terminal line is read closer than the page's table.
const figure = (x) => shortFigure(x, 3);
const shape = (dims) => (dims ? `[${dims.join('×')}]` : 'none');

// One line per output (and the first tensor where the models part, layerwise), for a terminal.
export function formatCheck(check, original, candidate) {
  const lines = [`check: ${candidate} against ${original} in ${check.runtime.name} ${check.runtime.version}` +
    ` (seed ${check.seed}, inputs uniform in [${check.input_range.join(', ')}), rtol ${check.tolerance.rtol}, atol ${check.tolerance.atol})`];
  if (check.error) return `${lines[0]}\n  ${check.error}\n`;
  for (const o of check.outputs) {
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

// The report with its check written where the conversion wrote it: replaced whole (a temporary
// file renamed over it), so a reader never sees half of it.
function writeReport(path, report, out) {
  const text = JSON.stringify(finiteForJson(report));
  if (path === '-') return out(text);
  const temporary = `${path}.tmp-${randomBytes(4).toString('hex')}`;
  try {
    writeFileSync(temporary, text);
    renameSync(temporary, path);
  } finally {
    rmSync(temporary, { force: true });
  }
}

// Runs a request from the core; returns the exit status. `host` prints ({out, err}).
export async function runCheckRequest(request, host) {
  const fail = (e) => {
    host.err(`onnx-lattice: ${e.code === 'ERR_ONNX_LATTICE_OPTIONS' ? '' : 'error: '}${e.message}\n`);
    return e.code === 'ERR_ONNX_LATTICE_OPTIONS' ? EXIT.usage : EXIT.failed;
  };
  const options = { ...request.options };
  try {
    if (request.command === 'check') {
      const { report } = await runCheck({ original: request.original, candidate: request.candidate }, options);
      host.out(request.json ? `${JSON.stringify(finiteForJson(report))}\n` : formatCheck(report, request.original, request.candidate));
      return report.pass ? EXIT.ok : EXIT.failed;
    }
    // convert --check: the converted model and the fold-only twin, each against the input.
    const conversion = request.report;
    const { report: converted, twin } = await runCheck({ original: request.original, candidate: request.candidate, twin: true },
      { ...options, conversion });
    conversion.check = { converted, fold_only: twin };
    if (request.report_path) writeReport(request.report_path, conversion, host.out);
    if (request.report_path !== '-') {
      const lines = [...verdict(twin, 'fold_only'), ...verdict(converted, 'converted')];
      host.out(lines.map((l) => `check: ${l}\n`).join(''));
    }
    // The rewrites change outputs by design; a model that no longer runs, produces NaN or
    // infinity the original does not, or folds that are not exact, fail the conversion's check.
    const broken = converted.error || introducesNonFinite(converted) || !twin.pass;
    return broken ? EXIT.failed : EXIT.ok;
  } catch (e) {
    return fail(e);
  }
}
