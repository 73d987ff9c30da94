// After a layer-by-layer check: each tensor both models compute (the check's `layers`) coloured on
// the node that computes it, in each pane, by how far the converted model moved it — its largest
// change as a share of the original tensor's range (max_abs / range, as the verdict's "27 % of its
// range") — on a scale of five steps, each a power of ten. A strip along the top of the node's box
// carries the colour (after a repair, before in its left half and after in its right); the node's
// accessible name, its properties and the legend say the figure.
import { svg } from './graph.js';

// Light to dark, each step's label its range of shares.
export const STEPS = [
  { below: 1e-3, fill: '#e5f5e0', label: '< 0.1 %' },
  { below: 1e-2, fill: '#a1d99b', label: '0.1–1 %' },
  { below: 1e-1, fill: '#fdd49e', label: '1–10 %' },
  { below: 1, fill: '#f16913', label: '10–100 %' },
  { below: Infinity, fill: '#7f0000', label: '≥ 100 %' },
];

// A tensor's change as a share of its range; a constant tensor that changed at all is off the scale.
export function share(layer) {
  if (layer.range > 0) return layer.max_abs / layer.range;
  return layer.max_abs > 0 ? Infinity : 0;
}
export const stepOf = (s) => STEPS.findIndex((step) => s < step.below);

export function percentText(s) {
  if (s === Infinity) return 'a constant tensor changed';
  if (s > 0 && s < 5e-4) return '< 0.1 % of its range';
  return `${(100 * s).toFixed(s < 0.1 ? 1 : 0)} % of its range`;
}

// The check's tensors by the node computing each in `description` (a node's outputs may be several).
export function distancesByNode(layers, description) {
  const byTensor = new Map(layers.map((l) => [l.tensor, l]));
  const out = new Map();
  for (const node of description.nodes) {
    const found = node.outputs.map((o) => byTensor.get(o.name)).filter(Boolean);
    if (found.length) out.set(node.name, found);
  }
  return out;
}

const worstOf = (found) => found.reduce((a, b) => (share(b) > share(a) ? b : a));

// The check's tensors by the box of `pane` showing the node computing each: a collapsed box holds
// its members'.
function byBox(pane, layers) {
  const out = new Map();
  for (const [name, found] of distancesByNode(layers, pane.shown)) {
    const box = pane.nodes.get(name);
    if (box) out.set(box, [...(out.get(box) ?? []), ...found]);
  }
  return out;
}

// Marks `pane`'s drawn boxes (a GraphView; a collapsed box by its members' largest change); returns
// how many it marked. After a repair `before` holds the converted model's layers before it (the
// check's `unrepaired`): the strip's left half then says before, its right half after.
export function overlayDistances(pane, layers, before = null) {
  const earlier = before && byBox(pane, before);
  let marked = 0;
  for (const [shown, found] of byBox(pane, layers)) {
    if (shown.g.dataset.distance !== undefined) continue;
    const s = share(worstOf(found)), step = stepOf(s);
    const was = earlier?.get(shown) && share(worstOf(earlier.get(shown)));
    const strip = (x, width, fill) => shown.g.insertBefore(svg('rect', { class: 'distance', x, y: 1, width, height: 6, rx: 2, fill }), shown.g.querySelector('text'));
    shown.g.dataset.distance = String(s);
    shown.g.dataset.distanceStep = String(step);
    if (was === undefined || was === null) strip(1, shown.w - 2, STEPS[step].fill);
    else {
      shown.g.dataset.distanceBefore = String(was);
      shown.g.dataset.distanceStepBefore = String(stepOf(was));
      strip(1, shown.w / 2 - 1, STEPS[stepOf(was)].fill);
      strip(shown.w / 2, shown.w / 2 - 1, STEPS[step].fill);
    }
    const history = was === undefined || was === null ? '' : `, ${percentText(was)} before the repair`;
    shown.g.setAttribute('aria-label', `${shown.g.getAttribute('aria-label')}, check: moved by up to ${percentText(s)}${history}`);
    marked += 1;
  }
  return marked;
}

// The legend's scale: one swatch per step with its label.
export function scaleLegend() {
  const li = document.createElement('li');
  li.className = 'distance-scale';
  li.dataset.testid = 'distance-scale';
  li.append('Check, change at each tensor (after a repair: before | after):');
  for (const step of STEPS) {
    const swatch = svg('svg', { class: 'swatch', viewBox: '0 0 22 14', 'aria-hidden': 'true' });
    swatch.append(svg('rect', { x: 1, y: 4, width: 20, height: 6, rx: 2, fill: step.fill, stroke: '#444', 'stroke-width': 0.5 }));
    const item = Object.assign(document.createElement('span'), { className: 'distance-step' });
    item.dataset.fill = step.fill;
    item.append(swatch, step.label);
    li.append(item);
  }
  return li;
}
