// The result's panels besides the plan: the model card, the grouped audit and a node's properties.
import { formatAttribute, formatBytes, formatCount, formatShape } from './ops.js';

function el(tag, content, className) {
  const e = document.createElement(tag);
  if (content !== undefined) e.textContent = content;
  if (className) e.className = className;
  return e;
}

function entry(dl, term, ...details) {
  dl.append(el('dt', term));
  const dd = el('dd');
  dd.append(...details);
  dl.append(dd);
}

const valueLine = (v) => `${v.name}: ${v.type ?? ''} ${v.shape === undefined ? '' : formatShape(v.shape)}`.trim();
const change = (a, b, format = String) => (a === b ? format(a) : `${format(a)} → ${format(b)}`);

function list(items) {
  const ul = el('ul', undefined, 'plain');
  for (const item of items) ul.append(el('li', item));
  return ul;
}

export function renderCard(dl, report, input, output) {
  dl.replaceChildren();
  entry(dl, 'Inputs', list(input.inputs.map(valueLine)));
  entry(dl, 'Outputs', list(output.outputs.map(valueLine)));
  entry(dl, 'Opset', change(input.opset, output.opset));
  entry(dl, 'IR version', change(input.ir_version, output.ir_version));
  entry(dl, 'Producer', input.producer || 'not recorded');
  entry(dl, 'Parameters', change(input.parameters, output.parameters, formatCount));
  entry(dl, 'Nodes', change(report.input.nodes, report.output.nodes));
  entry(dl, 'Size', change(report.input.bytes, report.output.bytes, formatBytes));
}

const percent = (share) => `${(100 * share).toFixed(1)} %`;

// The quantization notice (a QDQ model) and the fixed-point summary line, each shown when the
// report has it: "FPQ: 12 of 53 layers clip, 3 more over the 10 % error threshold; 0 of 40 BatchNorms out of range".
export function renderFixedPoint(quantization, summary, report) {
  quantization.hidden = !report.quantization;
  quantization.textContent = report.quantization?.message ?? '';
  const fit = report.fixed_point;
  summary.hidden = !fit;
  if (!fit) return (summary.textContent = '');
  const findings = `${fit.findings.length} finding${fit.findings.length === 1 ? '' : 's'} in the report`;
  if (fit.scheme !== 'fpq') return (summary.textContent = `LSQ: structural rules only; ${findings}.`);
  const clip = fit.layers.filter((l) => l.clipped > 0).length;
  const over = fit.layers.filter((l) => l.clipped === 0 && !l.fits).length;
  const norms = fit.batch_norms.filter((b) => !b.fits).length;
  summary.textContent = `FPQ: ${clip} of ${fit.layers.length} layers clip, ${over} more over the ` +
    `${percent(fit.error_threshold)} error threshold; ${norms} of ${fit.batch_norms.length} BatchNorms out of range; ${findings}.`;
}

// A layer's FPQ fit in words: "fits (error 1.2 %)", "clips 12.3 % (error 40.1 %)".
function layerFit(l) {
  const error = `error ${percent(l.quantization_error)}`;
  if (l.clipped > 0) return `clips ${percent(l.clipped)} (${error}, weights ${l.weight_min.toPrecision(3)} to ${l.weight_max.toPrecision(3)})`;
  return l.fits ? `fits (${error})` : `${error}, over the threshold; ${percent(l.vanished)} round to zero`;
}

// "Show in graph" for one entry; its accessible name starts with the visible text.
// What a snapped Conv's match did with the trained kernel (report matches[].weights), in words.
export function weightsText(weights) {
  if (weights.method === 'reinit') return 'weights re-initialised (nothing of the trained kernel kept)';
  return `weights transferred: ${(100 * weights.kept_energy).toFixed(weights.kept_energy === 1 ? 0 : 1)} % of the kernel's energy kept`;
}

export function showButton(what, onClick) {
  const b = el('button', 'Show in graph', 'small secondary');
  b.type = 'button';
  b.setAttribute('aria-label', `Show in graph: ${what}`);
  b.addEventListener('click', (e) => { e.stopPropagation(); onClick(); });
  return b;
}

// Grouped by the report's `group` when it has one, else by op type and reason; each group
// collapsible, with its count.
export function renderAudit(container, unsupported, onShow) {
  container.replaceChildren();
  if (!unsupported.length) {
    container.append(el('p', 'None: the target can run every node.'));
    return;
  }
  const groups = new Map();
  for (const u of unsupported) {
    const key = u.group ?? `${u.op_type}: ${u.reason}`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(u);
  }
  for (const [key, entries] of groups) {
    const details = el('details', undefined, 'audit-group');
    details.dataset.testid = 'audit-group';
    const summary = el('summary');
    summary.append(el('span', key), el('span', ` (${entries.length})`, 'count'));
    const ul = el('ul');
    for (const u of entries) {
      const li = el('li', `${u.node} (${u.op_type}): ${u.reason}`);
      li.dataset.testid = 'audit-row';
      li.append(' ', showButton(u.node, () => onShow([u.node])));
      ul.append(li);
    }
    details.append(summary);
    if (entries.length > 1) {
      details.append(showButton(`all ${entries.length} of this group`, () => onShow(entries.map((u) => u.node))));
    }
    details.append(ul);
    container.append(details);
  }
}

// The properties of one node, and the matches, warnings and audit entries that concern it, and
// what the layerwise check measured of its rewrites (`changes`: match id -> the sentence).
// onShowMatch(match): "Show in graph" beside one of them.
export function renderProps(aside, node, report, view, onShowMatch, changes = new Map()) {
  const heading = el('h3', 'Properties');
  heading.id = 'props-heading';
  heading.tabIndex = -1;
  aside.replaceChildren(heading);
  if (!node) {
    aside.append(el('p', 'Click a node, or “Show in graph” beside a match, warning or audit entry.', 'hint'));
    return;
  }
  heading.textContent = `${node.op} — ${node.name}`;
  const dl = el('dl', undefined, 'card');
  entry(dl, 'Op', node.domain ? `${node.domain}.${node.op}` : node.op);
  entry(dl, 'Name', node.unnamed ? `${node.name} (unnamed in the model)` : node.name);
  entry(dl, 'In', view === 'input' ? 'the input model' : 'the converted model');
  const attributes = Object.entries(node.attributes);
  if (attributes.length) entry(dl, 'Attributes', list(attributes.map(([k, v]) => `${k} = ${formatAttribute(v)}`)));
  const tensor = (t) => (t.name ? `${t.name} ${formatShape(t.shape)}${t.constant ? ' (constant)' : ''}` : '(omitted)');
  entry(dl, 'Inputs', list(node.inputs.map(tensor)));
  entry(dl, 'Outputs', list(node.outputs.map(tensor)));
  const matches = report.matches.filter((m) => m.nodes.includes(node.name) || (m.applied && m.new_nodes.includes(node.name)));
  if (matches.length) {
    const ul = el('ul', undefined, 'plain');
    for (const m of matches) {
      const li = el('li', `${m.id}: ${m.applied ? (m.nodes.includes(node.name) && view === 'input' ? 'rewritten' : 'emitted by this rewrite') : `not applied (${m.reason})`}${m.weights ? `; ${weightsText(m.weights)}` : ''}`);
      li.append(' ', showButton(`the nodes of ${m.id}`, () => onShowMatch(m)));
      ul.append(li);
    }
    entry(dl, 'Matches', ul);
  }
  const ids = new Set(matches.map((m) => m.id));
  const measured = [...ids].filter((id) => changes.has(id)).map((id) => changes.get(id));
  if (measured.length) entry(dl, 'Check', list(measured));
  const warnings = report.warnings.filter((w) => ids.has(w.match_id) || w.node === node.name);
  if (warnings.length) entry(dl, 'Warnings', list(warnings.map((w) => w.message)));
  const audit = report.unsupported.filter((u) => u.node === node.name);
  if (audit.length) entry(dl, 'Cannot run', list(audit.map((u) => u.reason)));
  // The fit analysis describes the converted model.
  const fit = view === 'input' ? null : report.fixed_point;
  if (fit) {
    const lines = [];
    const layer = fit.layers.find((l) => l.node === node.name);
    if (layer) lines.push(layerFit(layer));
    const bn = fit.batch_norms.find((b) => b.node === node.name);
    if (bn) lines.push(`scale ${bn.scale_min.toPrecision(3)} to ${bn.scale_max.toPrecision(3)}, offset ${bn.offset_min.toPrecision(3)} to ${bn.offset_max.toPrecision(3)}: ${bn.fits ? 'fits' : 'outside'} signed 5.10`);
    for (const f of fit.findings.filter((x) => x.node === node.name && x.rule !== 'weights-clip')) lines.push(`${f.message} (${f.source})`);
    if (lines.length) entry(dl, `Fixed point (${fit.scheme.toUpperCase()})`, list(lines));
  }
  aside.append(dl);
}
