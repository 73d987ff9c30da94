// The fixed-point fit (report `fixed_point`) in the page's words: the summary line, whose counts
// lead to their layers, the list of the report's findings, each leading to its node, and a node's
// fit for its properties. Loaded by app.js only when a scheme is chosen, so the page's first load
// does not carry it (nor the check's module, whose `percent` says a share as the check does:
// never "0.0 %" for a share above 0).
import { figure, percent } from './shared/check.mjs';

function el(tag, content, className) {
  const e = document.createElement(tag);
  if (content !== undefined) e.textContent = content;
  if (className) e.className = className;
  return e;
}

function link(content, onClick) {
  const b = el('button', content, 'link');
  b.type = 'button';
  b.addEventListener('click', onClick);
  return b;
}

// The nodes a finding is about: its node, or the nodes reading it when it names a graph input.
function nodesOf(name, description) {
  if (!name) return [];
  if (description.nodes.some((n) => n.name === name)) return [name];
  return description.nodes.filter((n) => n.inputs.some((t) => t.name === name)).map((n) => n.name);
}

// "FPQ: 12 of 53 layers clip, 3 more over the 10.0 % error threshold; 0 of 40 BatchNorms out of
// range; 2 findings in the report, listed below." into `summary`, the findings into `list`.
// `description`: the converted model's; onShow(names) brings those nodes into view.
export function renderFixedPoint(summary, list, fit, description, onShow) {
  summary.replaceChildren();
  list.replaceChildren();
  summary.hidden = false;
  list.hidden = !fit.findings.length;
  const findings = `${fit.findings.length} finding${fit.findings.length === 1 ? '' : 's'} in the report${fit.findings.length ? ', listed below' : ''}.`;
  // A count above 0 is a button that shows those nodes.
  const count = (kind, nodes, words) => {
    if (!nodes.length) return words;
    const b = link(words, () => onShow(nodes));
    b.dataset.testid = 'fixed-point-count';
    b.dataset.kind = kind;
    return b;
  };
  if (fit.scheme !== 'fpq') {
    summary.append(`LSQ: structural rules only; ${findings}`);
  } else {
    const clip = fit.layers.filter((l) => l.clipped > 0).map((l) => l.node);
    const over = fit.layers.filter((l) => l.clipped === 0 && !l.fits).map((l) => l.node);
    const norms = fit.batch_norms.filter((b) => !b.fits).map((b) => b.node);
    summary.append('FPQ: ', count('clip', clip, `${clip.length} of ${fit.layers.length} layers clip`), ', ',
      count('over', over, `${over.length} more over the ${percent(fit.error_threshold)} error threshold`), '; ',
      count('batch-norms', norms, `${norms.length} of ${fit.batch_norms.length} BatchNorms out of range`), `; ${findings}`);
  }
  for (const f of fit.findings) {
    const li = el('li');
    li.dataset.testid = 'fixed-point-finding';
    li.dataset.node = f.node;
    const nodes = nodesOf(f.node, description);
    const message = nodes.length ? link(f.message, () => onShow(nodes)) : el('span', f.message);
    message.classList.add('message');
    li.append(message, ' ', el('span', `(${f.source})`, 'muted'));
    list.append(li);
  }
}

// A layer's FPQ fit in words: "fits (error 1.2 %)", "clips 12.3 % (error 40.1 %, weights …)".
function layerFit(l) {
  const error = `error ${percent(l.quantization_error)}`;
  if (l.clipped > 0) return `clips ${percent(l.clipped)} (${error}, weights ${l.weight_min.toPrecision(3)} to ${l.weight_max.toPrecision(3)})`;
  return l.fits ? `fits (${error})` : `${error}, over the threshold; ${percent(l.vanished)} round to zero`;
}

// How one of a node's outputs fares in its FPQ representation on the check's samples
// (fixed_point.activations, from a check with the FPQ twin on data).
export function activationFit(a) {
  return `output '${a.tensor}' on the data: ${percent(a.clipped)} clip beyond ${a.representation}, ` +
    `${percent(a.vanished)} vanish, SQNR ${figure(a.sqnr_db)} dB`;
}

// What the analysis says of one node of the converted model, for its properties: lines, or none.
// `outputs`: the node's output tensors, whose fit on data a check with the FPQ twin measured.
export function fitLines(fit, name, outputs = []) {
  const lines = [];
  const layer = fit.layers.find((l) => l.node === name);
  if (layer) lines.push(layerFit(layer));
  const bn = fit.batch_norms.find((b) => b.node === name);
  if (bn) lines.push(`scale ${bn.scale_min.toPrecision(3)} to ${bn.scale_max.toPrecision(3)}, offset ${bn.offset_min.toPrecision(3)} to ${bn.offset_max.toPrecision(3)}: ${bn.fits ? 'fits' : 'outside'} signed 5.10`);
  // The layer's own line says its clipping already.
  for (const f of fit.findings.filter((x) => x.node === name && x.rule !== 'weights-clip')) lines.push(`${f.message} (${f.source})`);
  for (const a of (fit.activations ?? []).filter((x) => outputs.includes(x.tensor))) lines.push(activationFit(a));
  return lines;
}
