// The result's panels besides the plan: the model card, the grouped audit and a node's properties.
import { formatAttribute, formatBytes, formatCount } from './ops.js';

function el(tag, content, className) {
  const e = document.createElement(tag);
  if (content !== undefined) e.textContent = content;
  if (className) e.className = className;
  return e;
}

// Names wrap after '/', '_' or a '.' that is no decimal point (a <wbr> there), which the browser
// takes before breaking inside a word (only one wider than the line).
export function breakable(text) {
  const f = document.createDocumentFragment();
  String(text).split(/(?<=[/_]|(?<!\d)\.)|(?<=\.)(?!\d)/).forEach((part, i) => f.append(...(i ? [el('wbr'), part] : [part])));
  return f;
}
const words = (item) => (typeof item === 'string' ? breakable(item) : item);
function frag(...parts) {
  const f = document.createDocumentFragment();
  f.append(...parts.map(words));
  return f;
}

function entry(dl, term, ...details) {
  dl.append(el('dt', term));
  const dd = el('dd');
  dd.append(...details.map(words));
  dl.append(dd);
}

// Symbolic dimensions by name; a size's expression ("floor((H+1)/2)") as "?", whole in a tooltip.
const shape = (dims) => (dims ? frag('[', ...dims.flatMap((d, i) => [i ? ', ' : '',
  /[()+*/]/.test(d) ? Object.assign(el('abbr', '?'), { title: d }) : String(d)]), ']') : '?');
const valueLine = (v) => frag(`${v.name}: ${v.type ?? ''}`, ...(v.shape === undefined ? [] : [' ', shape(v.shape)]));
const change = (a, b, format = String) => (a === b ? format(a) : `${format(a)} → ${format(b)}`);

function list(items) {
  const ul = el('ul', undefined, 'plain');
  for (const item of items) {
    const li = el('li');
    li.append(words(item));
    ul.append(li);
  }
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

// What a snapped Conv's match did with the trained kernel (report matches[].weights), in words.
export function weightsText(weights) {
  if (weights.method === 'reinit') return 'weights re-initialised (nothing of the trained kernel kept)';
  return `weights transferred: ${(100 * weights.kept_energy).toFixed(weights.kept_energy === 1 ? 0 : 1)} % of the kernel's energy kept`;
}

// "Show in graph" for one entry; its accessible name starts with the visible text.
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
// what the layerwise check measured of its rewrites (`changes`: match id -> the sentence), and
// under a fixed-point scheme its fit (`fitLines(name)`: lines). onShowMatch(match): "Show in graph"
// beside one of them. `declared`: the view's graph inputs and outputs (name -> dims): their
// symbolic dimensions have the names the inferred shapes write "?".
export function renderProps(aside, node, { report, view, onShowMatch, changes = new Map(), fitLines = () => [], declared = new Map() } = {}) {
  const heading = el('h3', 'Properties');
  heading.id = 'props-heading';
  heading.tabIndex = -1;
  aside.replaceChildren(heading);
  if (!node) {
    aside.append(el('p', 'Click a node, or “Show in graph” beside a match, warning or audit entry.', 'hint'));
    return;
  }
  heading.replaceChildren(breakable(`${node.op} — ${node.name}`));
  const dl = el('dl', undefined, 'card');
  entry(dl, 'Op', node.domain ? `${node.domain}.${node.op}` : node.op);
  entry(dl, 'Name', node.unnamed ? `${node.name} (unnamed in the model)` : node.name);
  entry(dl, 'In', view === 'input' ? 'the input model' : 'the converted model');
  const attributes = Object.entries(node.attributes);
  if (attributes.length) entry(dl, 'Attributes', list(attributes.map(([k, v]) => `${k} = ${formatAttribute(v)}`)));
  // A graph input's or output's dimension as the model declares it (its own name for it, as on the
  // model card); inside the graph, as the converter infers it.
  const named = (t, own = declared.get(t.name)) => (own && own.length === t.shape?.length
    ? own.map((d, i) => (typeof d === 'string' && d !== '?' ? d : t.shape[i] === '?' ? d : t.shape[i])) : t.shape ?? own);
  const tensor = (t) => (t.name ? frag(t.name, ' ', shape(named(t)), t.constant ? ' (constant)' : '') : '(omitted)');
  entry(dl, 'Inputs', list(node.inputs.map(tensor)));
  entry(dl, 'Outputs', list(node.outputs.map(tensor)));
  const matches = report.matches.filter((m) => m.nodes.includes(node.name) || (m.applied && m.new_nodes.includes(node.name)));
  if (matches.length) {
    const ul = el('ul', undefined, 'plain');
    for (const m of matches) {
      const li = el('li');
      li.append(breakable(`${m.id}: ${m.applied ? (m.nodes.includes(node.name) && view === 'input' ? 'rewritten' : 'emitted by this rewrite') : `not applied (${m.reason})`}${m.weights ? `; ${weightsText(m.weights)}` : ''}`));
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
  // The fixed-point fit, from its module (loaded with a scheme): it describes the converted model.
  const fit = view === 'input' ? [] : fitLines(node.name);
  if (fit.length) entry(dl, `Fixed point (${report.fixed_point.scheme.toUpperCase()})`, list(fit));
  aside.append(dl);
}
