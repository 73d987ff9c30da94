// The Node CLI's side of the check: the core parses `check ORIGINAL CANDIDATE` and
// `convert --check` like every command line (core/cli/check_request.h) and hands over a request;
// this runs it (check_node.mjs), prints it, writes the check into the conversion's report and
// gives the exit status.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';

import { fedText, figure as shortFigure, finiteForJson, gateLine, introducesNonFinite, modelsTable, modelsTableLines, percent, taskCell, verdict } from '../shared/check.mjs';
import { checkShapes, missingSizesMessage, sizesTooLarge } from '../shared/check_sizes.mjs';
import { runCheck } from '../node/check_node.mjs';
import { codedError } from '../node/coded_error.mjs';
import { rangeFitLines } from '../shared/range_fit.mjs';
import { fixedPointRepairText, refittedText } from '../shared/repair.mjs';

// Three significant digits: a terminal line is read closer than the page's table.
const figure = (x) => shortFigure(x, 3);
const shape = (dims) => (dims ? `[${dims.join('×')}]` : 'none');

// One line per output (and the first tensor where the models part, layerwise), for a terminal.
export function formatCheck(check, original, candidate) {
  const lines = [`check: ${candidate} against ${original} in ${check.runtime.name} ${check.runtime.version}` +
    ` (${check.inputs ? `${fedText(check)}, ` : ''}rtol ${check.tolerance.rtol}, atol ${check.tolerance.atol})`];
  if (check.error) return `${lines[0]}\n  ${check.error}\n`;
  for (const o of check.outputs) {
    if (o.task?.kind === 'classes' && o.task.samples) {
      lines.push(`  top-1 ${o.name}: the same class on ${percent(o.top1_agreement)} of ${o.shape_original[0]} samples` +
        (o.accuracy ? `; accuracy ${percent(o.accuracy.original)} → ${percent(o.accuracy.candidate)}` : ''));
    } else if (o.task?.samples) lines.push(`  ${o.task.kind} ${o.name}: ${taskCell(o.task)}; ${o.task.samples} samples`);
    lines.push(o.comparable
      ? `  ${o.inconclusive ? '?   ' : o.pass ? 'pass' : 'FAIL'}  ${o.name} ${shape(o.shape_original)}: max |Δ| ${figure(o.max_abs)} at [${o.max_abs_index}], ` +
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
  for (const reason of check.inconclusive ?? []) lines.push(`  inconclusive: ${reason}`);
  // With a gate the gate decides; the distances above are what it decided on.
  lines.push(check.gate ? `check: ${gateLine(check.gate)}`
    : check.verdict === 'inconclusive' ? 'check INCONCLUSIVE: it could not have shown a change; check at sizes (or on samples) where the outputs vary'
      : check.pass ? 'check passed' : 'check FAILED');
  return `${lines.join('\n')}\n`;
}

// The conversion's files as the core staged them (core/cli/files.h, stage_together; the request's
// `staged`: the model, its data file, the report), each under a temporary name beside where it
// goes. The candidate the check runs is the staged model with its staged data file, whatever an
// older conversion left under the data file's own name. `stage` adds a file of the host's own (the
// FPQ twin); `place` has the core rename them all into place (`host.placeStaged`), `discard`
// removes them.
function stagedFiles(request, host) {
  const { model, data, report } = request.staged ?? {};
  // The twin first, so that a twin that cannot be placed leaves the others unplaced too.
  const staged = [model, data, report].filter(Boolean);
  const discard = () => { for (const f of staged) rmSync(f.temporary, { force: true }); };
  return {
    model, report,
    candidate: model && { path: model.temporary, dataPaths: data ? { [data.location]: data.temporary } : {} },
    stage(path, content) {
      const temporary = `${path}.tmp-${randomBytes(4).toString('hex')}`;
      staged.unshift({ temporary, resolved: path, path });
      writeFileSync(temporary, content);
    },
    discard,
    place() {
      if (!staged.length) return;
      const failed = host.placeStaged(staged);
      if (failed) throw codedError(failed, 'ERR_ONNX_LATTICE_IO');
    },
  };
}

// The report with its check, in the report's staged file (or on standard output).
function writeReport(path, report, out) {
  const text = JSON.stringify(finiteForJson(report));
  if (path === '-') return out(text);
  writeFileSync(path, text);
}

// The repair in a few lines: what it fitted on, and each refitted layer's change before → after.
export function repairLines(repair) {
  const refitted = repair.layers.filter((l) => l.refitted);
  const lines = [`repair: ${refittedText(repair)} on ${repair.data.source}` +
    `${repair.data.note ? ` (${repair.data.note})` : ''} in ${Math.round(repair.time_ms)} ms`];
  for (const l of refitted) lines.push(`repair:   ${l.node}: '${l.target_tensor}' max |Δ| ${figure(l.before.max_abs)} → ${figure(l.after.max_abs)}, relative ${figure(l.before.rel)} → ${figure(l.after.rel)}`);
  for (const l of repair.left) lines.push(`repair:   left as converted: ${l.node}: ${l.reason}`);
  const fixedPoint = fixedPointRepairText(repair);
  if (fixedPoint) lines.push(`repair: ${fixedPoint}`);
  return lines;
}

// What is wrong with a check request before its conversion runs ('' when nothing), from the
// input model's description the core hands over (core/cli/cli.cc): the sizes to feed, what
// holding them would take, and the samples' files, so that none of it is found after the
// conversion has written its files.
export function prepareCheck(request) {
  const { description, options } = request;
  const sources = [options.inputs, options.labels, ...(request.repair?.calibration ?? []), ...(request.range_fit?.calibration ?? [])].filter((p) => p !== undefined);
  const absent = sources.find((path) => !existsSync(path));
  if (absent !== undefined) return `${absent}: no such file or folder`;
  // Samples size every input themselves (and are checked against them as they are read).
  if (options.inputs !== undefined || request.repair?.calibration?.length || request.range_fit?.calibration?.length) return '';
  const { shapes, missing } = checkShapes(description, options.inputShapes);
  if (missing.length) return missingSizesMessage(missing, 'cli');
  return sizesTooLarge(description, shapes) ?? '';
}

// A usage error and the data behind it are the caller's to correct (exit 2); sizes the check
// could not choose are said with the CLI's flag.
const isUsage = (e) => e.code === 'ERR_ONNX_LATTICE_OPTIONS' || e.code === 'ERR_ONNX_LATTICE_DATA';
const cliMessage = (e) => (e.missing ? missingSizesMessage(e.missing, 'cli') : e.message);

// The exit status of a comparison: passed, inconclusive (a comparison that could not have shown a
// change: check.mjs, compareRuns), or failed. `EXIT`: the core's statuses by name.
const statusOf = (check, EXIT) => (check.verdict === 'inconclusive' ? EXIT.inconclusive : check.pass ? EXIT.ok : EXIT.failed);
// The exit status of a candidate's check under a gate, the same for `check` and `convert --check`:
// a model that does not run, or gives NaN or infinity the original does not, fails; below the
// gate a CI job set (--min-agreement, --min-accuracy), below_gate, whatever the distances; else
// ok. Null without a gate.
const gateStatus = (check, EXIT) => (!check.gate ? null : check.error || introducesNonFinite(check) ? EXIT.failed : check.gate.pass ? EXIT.ok : EXIT.below_gate);

// Runs a request from the core; returns the exit status. `host` prints ({out, err}) and gives the
// core's exit statuses by name (`exit`: {ok, failed, usage, …}, core/cli/exit_status.h).
export async function runCheckRequest(request, host) {
  const EXIT = host.exit;
  const fail = (e) => {
    const usage = isUsage(e);
    host.err(`onnx-lattice: ${usage ? '' : 'error: '}${cliMessage(e)}\n`);
    return usage ? EXIT.usage : EXIT.failed;
  };
  const options = { ...request.options };
  try {
    if (request.command === 'check') {
      const { report, fpq } = await runCheck({ original: request.original, candidate: request.candidate }, options);
      // With the FPQ twin, the three models side by side on the samples first.
      const models = fpq ? modelsTable({ converted: report, fpq }, { name: 'candidate' }) : null;
      host.out(request.json ? `${JSON.stringify(finiteForJson(fpq ? { ...report, fpq } : report))}\n`
        : (models ? modelsTableLines(models).map((l) => `${l}\n`).join('') : '') +
          formatCheck(report, request.original, request.candidate) + (fpq ? verdict(fpq, 'fpq').map((l) => `fpq: ${l}\n`).join('') : ''));
      // The twin differs from the float model by design: its comparison is reported, not failed.
      return gateStatus(report, EXIT) ?? statusOf(report, EXIT);
    }
    // convert --check / --repair: the converted model (repaired first) and the fold-only twin,
    // each against the input. The conversion's files are staged (core/cli/files.h): they are run
    // and rewritten under their temporary names, and placed together once all is done, so a
    // repair or a twin that fails leaves every file as it was.
    const conversion = request.report;
    const repair = request.repair ? { calibration: request.repair.calibration, check: request.check } : undefined;
    const rangeFit = request.range_fit ? { calibration: request.range_fit.calibration } : undefined;
    const files = stagedFiles(request, host);
    const reported = request.check || repair || rangeFit;
    const discarded = (e) => {
      files.discard();
      return Object.assign(e, { message: `${e.message} (nothing was written)` });
    };
    let result = {}, models = null;
    try {
      if (reported) {
        result = await runCheck({ original: request.original, candidate: files.candidate, twin: request.check, repair, rangeFit },
          { ...options, conversion });
      }
    } catch (e) {
      // Without its repair or range fit the converted model is not what was asked for, and a
      // usage error is the caller's to correct before anything is written: nothing is. A check
      // alone that could not run leaves the conversion's files, as converted.
      if (repair || rangeFit || isUsage(e)) throw discarded(e);
      files.place();
      throw e;
    }
    try {
      // The repaired model replaces the converted one whole, as the report does; likewise the
      // range-fitted model (made from the repaired one, if any), with the fit analysis of what is
      // written.
      if (result.repair) conversion.repair = result.repair;
      if (result.rangeFit) {
        conversion.range_fit = result.rangeFit;
        if (result.fixedPoint) conversion.fixed_point = result.fixedPoint;
      }
      const model = result.fitted ?? result.repaired;
      if (model) writeFileSync(files.model.temporary, model);
      if (request.fpq_twin !== undefined) {
        // The twin of what is written (repaired or not), placed with the rest or not at all.
        try {
          const { fpqTwin } = await import('../node/fpq.mjs');
          files.stage(request.fpq_twin, (await fpqTwin(model ?? readFileSync(files.model.temporary))).model);
        } catch (e) {
          throw e.code ? e : Object.assign(e, { message: `cannot write the FPQ twin '${request.fpq_twin}': ${e.message}` });
        }
      }
      if (request.check) {
        const { report: converted, twin, fpq, unrepaired } = result;
        models = modelsTable({ converted, unrepaired, fpq }, { repaired: Boolean(result.repair) });
        conversion.check = { converted, fold_only: twin, ...(unrepaired ? { unrepaired } : {}), ...(fpq ? { fpq } : {}), models };
        // The fit analysis gains the activations' fit on the data, beside the weights'.
        if (fpq?.activations && conversion.fixed_point) conversion.fixed_point.activations = fpq.activations;
      }
      // Without a check or a repair the report is the conversion's, as the core wrote it.
      if (reported && request.report_path) writeReport(request.report_path === '-' ? '-' : files.report.temporary, conversion, host.out);
    } catch (e) {
      throw discarded(e);
    }
    files.place();
    if (!reported) return EXIT.ok;
    const { report: converted, twin, fpq } = result;
    if (request.report_path !== '-') {
      // What decides the outcome leads: every model on the same samples, then how each was made.
      const lines = [...(models ? modelsTableLines(models).map((l) => `check: ${l}`) : []),
        ...(result.repair ? repairLines(result.repair) : []), ...(result.rangeFit ? rangeFitLines(result.rangeFit) : []),
        ...(request.check ? [...verdict(twin, 'fold_only'), ...verdict(converted, result.repair ? 'repaired' : 'converted', result.repair), ...(fpq ? verdict(fpq, 'fpq') : []),
          ...(converted.inputs ? [`fed ${fedText(converted)}`] : []), ...(converted.gate ? [gateLine(converted.gate)] : [])].map((l) => `check: ${l}`) : [])];
      host.out(lines.map((l) => `${l}\n`).join(''));
    }
    if (!request.check) return EXIT.ok;
    // The rewrites change outputs by design; a model that no longer runs, produces NaN or
    // infinity the original does not, or folds that are not exact, fail the conversion's check.
    const broken = converted.error || introducesNonFinite(converted) || statusOf(twin, EXIT) === EXIT.failed;
    if (broken) return EXIT.failed;
    if (converted.gate) return gateStatus(converted, EXIT);
    return [twin, converted].some((c) => c.verdict === 'inconclusive') ? EXIT.inconclusive : EXIT.ok;
  } catch (e) {
    return fail(e);
  }
}
