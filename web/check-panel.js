// The check's result in the page: the verdict in words, a table per comparison, the sizes to
// check at when the model leaves them open, and the refusal of sizes onnxruntime-web cannot hold.
import { fedText, figure, percent, taskCell, verdict } from './shared/check.mjs';
import { breakable } from './panels.js';
import { rangeFitLines } from './shared/range_fit.mjs';
import { fixedPointRepairText, refittedText } from './shared/repair.mjs';

export { finiteForJson } from './shared/check.mjs';
export { checkShapes, sizesTooLarge } from './shared/check_sizes.mjs';

// onnxruntime-web is 32-bit WebAssembly: 4 GiB of memory at most.
export const CHECK_MEMORY_LIMIT = 4 * 2 ** 30;

// What a rewrite changed, measured at its output (layerwise), for its plan row and its nodes.
export function changeText(change) {
  return `Check: changes its output '${change.tensor}' by up to ${figure(change.max_abs)} (${figure(change.max_abs_in)} already entering it)`;
}

// Tensor and node names in the result wrap at their separators (breakable): a phone's width holds
// every line.
function el(tag, content, className) {
  const e = document.createElement(tag);
  if (content !== undefined) e.append(breakable(content));
  if (className) e.className = className;
  return e;
}

function table(caption, check) {
  const t = el('table');
  // On a phone the table scrolls inside its own box (style.css): focusable, so keys scroll it too.
  t.tabIndex = 0;
  t.append(el('caption', caption));
  const head = el('tr');
  // The task's figures (top-1 of [N, K] scores, a map's IoU, per-anchor decisions, CTC
  // sequences): a column when some output has them; on random inputs they say nothing of the task.
  const decides = check.outputs.some((o) => o.task?.samples);
  const random = check.inputs?.source === 'random';
  const taskHead = random ? 'task (random inputs)' : 'task';
  for (const h of ['output', 'shape', ...(decides ? [taskHead] : []), 'max |Δ|', 'mean |Δ|', 'p99 |Δ|', 'max rel', 'NaN / inf', 'within tolerance']) head.append(el('th', h));
  t.append(el('thead'));
  t.tHead.append(head);
  const body = el('tbody');
  for (const o of check.outputs) {
    const row = el('tr');
    const task = decides ? [taskCell(o.task)] : [];
    const cells = o.comparable
      ? [o.name, o.shape_original.join('×'), ...task, figure(o.max_abs), figure(o.mean_abs), figure(o.p99_abs), figure(o.max_rel),
        `${o.nan[1]} / ${o.inf[1]}`, o.inconclusive ? 'says nothing' : o.pass ? 'yes' : 'no']
      : [o.name, `${o.shape_original?.join('×')} → ${o.shape_candidate?.join('×') ?? 'none'}`, ...task, o.reason, '', '', '', '', '—'];
    for (const c of cells) row.append(el('td', c));
    body.append(row);
  }
  t.append(body);
  return t;
}

// Every model the check ran, side by side on the same samples (shared/check.mjs, modelsTable): a row a
// model, a column an output's task figure (and accuracy, with labels).
function modelsSection(models) {
  const t = el('table', undefined, 'models');
  t.tabIndex = 0;
  t.dataset.testid = 'check-models';
  t.append(el('caption', `Every model on ${models.samples}`));
  const labelled = models.rows[0].cells.map((c) => c.accuracy !== null);
  const head = el('tr');
  head.append(el('th', 'model'));
  models.outputs.forEach((o, i) => {
    head.append(el('th', `${o.name}: ${o.figure.replace('_', ' ')}`));
    if (labelled[i]) head.append(el('th', `${o.name}: accuracy`));
  });
  t.append(el('thead'));
  t.tHead.append(head);
  const body = el('tbody');
  for (const r of models.rows) {
    const row = el('tr');
    row.dataset.model = r.model;
    row.append(el('td', r.against ? `${r.model} (against the ${r.against})` : r.model));
    r.cells.forEach((c, i) => {
      row.append(el('td', c.value === null ? '—' : percent(c.value)));
      if (labelled[i]) row.append(el('td', c.accuracy === null ? '—' : percent(c.accuracy)));
    });
    body.append(row);
  }
  t.append(body);
  return t;
}

// The sizes to check at, for the inputs whose dynamic dimensions the model leaves open (what the
// CLI asks for with --check-shape): a field per dimension, starting at the size the model
// suggests (shared/check_sizes.mjs, proposeShape), and why; `onSizes({name: dims})` checks with them.
function sizesForm(box, missing, onSizes) {
  const form = el('form');
  form.append(el('p', 'The model\'s inputs have dynamic dimensions: give each the size to check at. A size that reduces ' +
    'the model to a pixel tests nothing.'));
  const fields = [];
  for (const { input, axes, proposed } of missing) {
    for (const axis of axes) {
      const label = el('label', `${input.name}, axis ${axis} (${input.shape[axis]}) `);
      const field = Object.assign(el('input'), { type: 'number', min: 1, step: 1, value: proposed?.dims[axis] ?? '', required: true });
      field.dataset.testid = 'check-dimension';
      label.append(field);
      form.append(label);
      fields.push({ input, axis, field });
    }
    if (proposed) form.append(el('p', `Suggested for ${input.name}: ${proposed.rule}.`, 'hint'));
  }
  const go = Object.assign(el('button', 'Check with these sizes'), { type: 'submit' });
  form.append(go);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const shapes = Object.fromEntries(missing.map(({ input, proposed }) => [input.name, [...(proposed?.dims ?? input.shape)]]));
    for (const { input, axis, field } of fields) shapes[input.name][axis] = Number(field.value);
    onSizes(shapes);
  });
  box.append(form);
  fields[0]?.field.focus();
}

// A refitted layer's change at its target, or why a layer was left as converted, for its plan row.
export function repairText(layer) {
  if (!layer.refitted) return `Repair: ${layer.node} left as converted: ${layer.reason}.`;
  return `Repair: refitted; '${layer.target_tensor}' differs by up to ${figure(layer.before.max_abs)} → ${figure(layer.after.max_abs)} ` +
    `(relative ${figure(layer.before.rel)} → ${figure(layer.after.rel)}) on the calibration samples`;
}

// The converted model against its FPQ twin: what Lattice FPQ's fixed point changes (by design),
// and the twin to download, for any runtime.
function fpqSection(box, fpq, twin) {
  const section = el('div', undefined, 'check-fpq');
  section.dataset.testid = 'check-fpq-result';
  const lines = el('ul', undefined, 'verdicts');
  for (const line of verdict(fpq, 'fpq')) lines.append(el('li', line));
  section.append(lines);
  if (!fpq.error) section.append(table('FPQ twin against the converted model (the fixed point changes it by design)', fpq));
  if (twin) {
    const link = el('a', `Download the FPQ twin (${twin.name})`);
    link.href = URL.createObjectURL(twin.blob);
    link.download = twin.name;
    link.dataset.testid = 'download-fpq-twin';
    const p = el('p');
    p.append(link);
    section.append(p);
  }
  box.append(section);
}

// The repair in a sentence: what it fitted, on what, and whether the check runs it on samples
// the fit did not see (`held_out`: the picked samples' last quarter).
function repairSummary(repair, inputs) {
  return `Repair: ${refittedText(repair)} on ${repair.data.samples} samples of ${repair.data.source}` +
    `${repair.data.note ? ` (${repair.data.note})` : ''} in ${Math.round(repair.time_ms)} ms; the download is the repaired model. ` +
    (inputs?.held_out ? `The check below runs it on ${inputs.samples} held-out samples the fit did not see.`
      : 'The check below runs it on random inputs: pick samples to check it on samples the fit did not see.') + fixedPoint(repair);
}

// FPQ's ranges: fitted on the samples picked (its lines as the Node CLI prints them), and what the
// check below runs the fitted model on; or the conversion's estimate, and why (`estimate`).
function rangeFitSection(box, rangeFit, estimate, inputs) {
  const section = el('div', undefined, 'range-fit');
  section.dataset.testid = 'range-fit';
  section.dataset.measured = String(Boolean(rangeFit));
  if (!rangeFit) {
    section.append(el('p', `FPQ's ranges are the conversion's estimate, made without data from the BatchNormalizations' statistics: ${estimate}.`));
    box.append(section);
    return;
  }
  section.append(el('p', `FPQ's ranges fitted on ${rangeFit.data.samples} samples of ${rangeFit.data.source}; the download is the fitted model.` +
    (inputs?.held_out ? ` The check below runs it on ${inputs.samples} held-out samples the fit did not see.` : '')));
  const lines = el('ul', undefined, 'verdicts');
  for (const line of rangeFitLines(rangeFit)) lines.append(el('li', line));
  section.append(lines);
  box.append(section);
}

const fixedPoint = (repair) => {
  const text = fixedPointRepairText(repair);
  return text ? ` ${text}.` : '';
};

// {check, repair?, rangeFit? | rangeEstimate? (under FPQ), fpqTwin?, ms} | {error} | {refused: why (sizesTooLarge)} |
// {missing: checkShapes().missing, onSizes}
export function renderCheck(box, { check, repair, rangeFit, rangeEstimate, fpqTwin, ms, error, refused, missing, onSizes }) {
  box.hidden = false;
  box.replaceChildren();
  // Every state the last result left goes: a refusal kept would mark the next result refused.
  delete box.dataset.foldPass;
  delete box.dataset.convertedRuns;
  delete box.dataset.verdict;
  delete box.dataset.refused;
  if (missing) {
    sizesForm(box, missing, onSizes);
    return;
  }
  if (refused !== undefined) {
    box.dataset.refused = 'true';
    box.append(el('p', `This is too large to check in the browser: ${refused}. Check it with the ` +
      'Node CLI: onnx-lattice convert MODEL.onnx -o OUT.onnx --check, or onnx-lattice check MODEL.onnx OUT.onnx.', 'error'));
    return;
  }
  if (error) {
    box.append(el('p', `The check could not run: ${error}`, 'error'));
    return;
  }
  const { converted, fold_only: fold } = check;
  box.dataset.foldPass = String(fold.pass);
  box.dataset.convertedRuns = String(!converted.error);
  box.dataset.verdict = [fold, converted].some((c) => c.verdict === 'inconclusive') ? 'inconclusive' : fold.pass ? 'pass' : 'fail';
  // What decides the outcome leads: every model on the same samples, then how the repair and the
  // range fit made the model checked.
  if (check.models) box.append(modelsSection(check.models));
  if (repair) {
    const summary = el('p', repairSummary(repair, converted.inputs), 'repair-summary');
    summary.dataset.testid = 'repair-summary';
    box.append(summary);
  }
  if (rangeFit || rangeEstimate) rangeFitSection(box, rangeFit, rangeEstimate, converted.inputs);
  const verdicts = el('ul', undefined, 'verdicts');
  for (const line of [...verdict(fold, 'fold_only'), ...verdict(converted, repair ? 'repaired' : 'converted', repair)]) verdicts.append(el('li', line));
  box.append(verdicts);
  if (!fold.error) box.append(table('Fold-only twin against the input (must agree)', fold));
  if (!converted.error) box.append(table('Converted model against the input', converted));
  if (converted.first_failing) {
    box.append(el('p', `Layer by layer, the first tensor beyond the tolerance is '${converted.first_failing.tensor}'` +
      `${converted.first_failing.match_id ? `, the output of ${converted.first_failing.match_id}` : ''}; each rewrite's change is in its plan row.`));
  }
  if (check.fpq) fpqSection(box, check.fpq, fpqTwin);
  box.append(el('p', `${converted.runtime.name} ${converted.runtime.version}, fed ${fedText(converted)}, ` +
    `rtol ${converted.tolerance.rtol}, atol ${converted.tolerance.atol}; ${Math.round(ms)} ms.`, 'hint'));
}
