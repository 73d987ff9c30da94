// The check's result in the page: the verdict in words, a table per comparison, and the size
// estimate that refuses a model onnxruntime-web cannot hold.
import { figure, percent, verdict } from './check.mjs';

export { finiteForJson } from './check.mjs';
import { formatBytes } from './ops.js';

// onnxruntime-web is 32-bit WebAssembly: 4 GiB of memory at most.
export const CHECK_MEMORY_LIMIT = 4 * 2 ** 30;

// About what the runtime needs at its peak: the weights twice (the model's bytes it is given,
// and the initializers it makes of them) and every activation (the layerwise check keeps them
// all; shapes the converter could not infer count nothing).
export function runtimePeak(weightBytes, description) {
  let activations = 0;
  for (const node of description.nodes) {
    for (const o of node.outputs) {
      if (Array.isArray(o.shape) && o.shape.every((d) => typeof d === 'number')) activations += 4 * o.shape.reduce((a, b) => a * b, 1);
    }
  }
  return 2 * weightBytes + activations;
}

// What a rewrite changed, measured at its output (layerwise), for its plan row and its nodes.
export function changeText(change) {
  return `Check: changes its output '${change.tensor}' by up to ${figure(change.max_abs)} (${figure(change.max_abs_in)} already entering it)`;
}

function el(tag, content, className) {
  const e = document.createElement(tag);
  if (content !== undefined) e.textContent = content;
  if (className) e.className = className;
  return e;
}

function table(caption, check) {
  const t = el('table');
  t.append(el('caption', caption));
  const head = el('tr');
  const decides = check.outputs.some((o) => o.top1_agreement !== undefined);
  for (const h of ['output', 'shape', ...(decides ? ['same top-1'] : []), 'max |Δ|', 'mean |Δ|', 'p99 |Δ|', 'max rel', 'NaN / inf', 'within tolerance']) head.append(el('th', h));
  t.append(el('thead'));
  t.tHead.append(head);
  const body = el('tbody');
  for (const o of check.outputs) {
    const row = el('tr');
    const top1 = decides ? [o.top1_agreement === undefined ? '' : percent(o.top1_agreement)] : [];
    const cells = o.comparable
      ? [o.name, o.shape_original.join('×'), ...top1, figure(o.max_abs), figure(o.mean_abs), figure(o.p99_abs), figure(o.max_rel),
        `${o.nan[1]} / ${o.inf[1]}`, o.pass ? 'yes' : 'no']
      : [o.name, `${o.shape_original?.join('×')} → ${o.shape_candidate?.join('×') ?? 'none'}`, ...top1, o.reason, '', '', '', '', '—'];
    for (const c of cells) row.append(el('td', c));
    body.append(row);
  }
  t.append(body);
  return t;
}

// The graph inputs whose shape the check cannot know: each with the axes neither the model nor
// the conversion's pinned shapes fix ([{name, shape, axes}]).
export function unpinnedInputs(inputs, inputShapes) {
  return inputs.filter((i) => !inputShapes[i.name]).map((i) => ({
    ...i, axes: (i.shape ?? []).flatMap((d, axis) => (typeof d === 'number' && d >= 0 ? [] : [axis])),
  })).filter((i) => i.axes.length);
}

// What the CLI asks for with --input-shape: a size per dynamic dimension, one field each (1 by
// default, as a batch of one is what a check needs); `onPin({name: dims})` checks with them.
function pinForm(box, inputs, onPin) {
  const form = el('form');
  form.append(el('p', 'The model\'s inputs have dynamic dimensions: give each a size to check with.'));
  const fields = [];
  for (const input of inputs) {
    for (const axis of input.axes) {
      const label = el('label', `${input.name}, axis ${axis} (${input.shape[axis]}) `);
      const field = Object.assign(el('input'), { type: 'number', min: 1, step: 1, value: 1, required: true });
      field.dataset.testid = 'check-dimension';
      label.append(field);
      form.append(label);
      fields.push({ input, axis, field });
    }
  }
  const go = Object.assign(el('button', 'Check with these sizes'), { type: 'submit' });
  form.append(go);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const shapes = Object.fromEntries(inputs.map((i) => [i.name, [...i.shape]]));
    for (const { input, axis, field } of fields) shapes[input.name][axis] = Number(field.value);
    onPin(shapes);
  });
  box.append(form);
  fields[0].field.focus();
}

// A refitted layer's change at its target, for its plan row.
export function repairText(layer) {
  return `Repair: refitted; '${layer.target_tensor}' differs by up to ${figure(layer.before.max_abs)} → ${figure(layer.after.max_abs)} ` +
    `(relative ${figure(layer.before.rel)} → ${figure(layer.after.rel)}) on the calibration samples`;
}

// The repair in a sentence: what it fitted, on what.
function repairSummary(repair) {
  const refitted = repair.layers.filter((l) => l.refitted).length;
  return `Repaired ${refitted} layer${refitted === 1 ? '' : 's'} on ${repair.data.samples} samples of ${repair.data.source}` +
    `${repair.data.note ? ` (${repair.data.note})` : ''} in ${Math.round(repair.time_ms)} ms; the download is the repaired model. ` +
    'The check below runs it on samples the fit did not see.';
}

// {check, repair?, ms} | {error} | {refused: estimated bytes} | {pin: unpinnedInputs(), onPin}
export function renderCheck(box, { check, repair, ms, error, refused, pin, onPin }) {
  box.hidden = false;
  box.replaceChildren();
  delete box.dataset.foldPass;
  delete box.dataset.convertedRuns;
  if (pin) {
    pinForm(box, pin, onPin);
    return;
  }
  if (refused !== undefined) {
    box.dataset.refused = 'true';
    box.append(el('p', `This model is too large to check in the browser: onnxruntime-web would need about ${formatBytes(refused)} ` +
      `(twice the weights plus the activations) of the ${formatBytes(CHECK_MEMORY_LIMIT)} WebAssembly allows. Check it with the ` +
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
  if (repair) {
    const summary = el('p', repairSummary(repair), 'repair-summary');
    summary.dataset.testid = 'repair-summary';
    box.append(summary);
  }
  const verdicts = el('ul', undefined, 'verdicts');
  for (const line of [...verdict(fold, 'fold_only'), ...verdict(converted, 'converted')]) verdicts.append(el('li', line));
  box.append(verdicts);
  if (!fold.error) box.append(table('Fold-only twin against the input (must agree)', fold));
  if (!converted.error) box.append(table('Converted model against the input', converted));
  if (converted.first_failing) {
    box.append(el('p', `Layer by layer, the first tensor beyond the tolerance is '${converted.first_failing.tensor}'` +
      `${converted.first_failing.match_id ? `, the output of ${converted.first_failing.match_id}` : ''}; each rewrite's change is in its plan row.`));
  }
  box.append(el('p', `${converted.runtime.name} ${converted.runtime.version}, ${fedWith(converted.inputs, converted)}, ` +
    `rtol ${converted.tolerance.rtol}, atol ${converted.tolerance.atol}; ${Math.round(ms)} ms.`, 'hint'));
}

// What both models were fed, in words: the samples (and how images became tensors), or the seeded
// random values.
function fedWith(inputs, check) {
  const shapes = Object.entries(inputs.batch_shapes).map(([name, dims]) => `${name} ${dims.join('×')}`).join(', ');
  if (inputs.source === 'random') return `seed ${check.seed}, inputs uniform in [${check.input_range.join(', ')}) (${shapes})`;
  const p = inputs.preprocessing;
  const images = p ? `; images ${p.resize === 'pad' ? 'padded' : 'stretched'} to ${p.height}×${p.width}, scaled to ${p.scale}, ${p.order.toUpperCase()}` : '';
  return `${inputs.samples} samples of ${inputs.source} in ${inputs.batches} batch${inputs.batches === 1 ? '' : 'es'} (${shapes})${images}`;
}
