// The fixed-point fit (report `fixed_point`) over the converted model's graph: each layer and
// BatchNorm the analysis measured gets a badge at the foot of its box that says its fit in words ("fits",
// "clips 80.6 %", "error 12.0 %", "out of range") — the words are the mark, the colour only
// repeats them — and the legend counts each kind. Loaded by app.js only when a scheme is chosen,
// so the page's first load does not carry it.
// A share as the check says it (never "0.0 %" for one above 0).
import { percent } from './shared/check.mjs';
import { svg } from './graph.js';

// Light fills with a dark border, so the box's text colour (style.css) reads on every badge.
const LOOK = {
  fits: { fill: '#e3f4e8', stroke: '#1e6b37', words: 'fits' },
  clips: { fill: '#fde2e1', stroke: '#a4262c', words: 'clips or out of range' },
  error: { fill: '#fff1cc', stroke: '#7a4f00', words: 'over the error threshold' },
};
const CHAR_W = 7, BADGE_H = 14;  // 12 px text, as graph.js measures its boxes'

// Each analysed node's kind and badge text. A layer clips when any weight does, else is over the
// threshold when it does not fit; a BatchNorm fits or lies outside signed 5.10 (it saturates:
// counted with the clipping ones). After a check with the FPQ twin on data, the nodes whose
// output was measured (Relu, MaxPool, Add: `fixed_point.activations`) say how it fared, unless
// their own weights already have the badge.
function fitsOf(fit, description) {
  const out = new Map();
  const producer = new Map(description.nodes.flatMap((n) => n.outputs.map((o) => [o.name, n.name])));
  for (const a of fit.activations ?? []) {
    const node = producer.get(a.tensor);
    if (node) out.set(node, a.clipped > 0 ? ['clips', `out clips ${percent(a.clipped)}`] : ['fits', 'out fits']);
  }
  for (const l of fit.layers) {
    out.set(l.node, l.clipped > 0 ? ['clips', `clips ${percent(l.clipped)}`]
      : l.fits ? ['fits', 'fits'] : ['error', `error ${percent(l.quantization_error)}`]);
  }
  for (const b of fit.batch_norms) out.set(b.node, b.fits ? ['fits', 'fits'] : ['clips', 'out of range']);
  return out;
}

// `graph`: the GraphView that has just drawn the converted model; `legend`: its legend list. Twice
// on one drawing marks it once (two draws of a view can finish in either order).
export function overlayFit(graph, fit, legend) {
  const scheme = fit.scheme.toUpperCase();
  const counts = { fits: 0, clips: 0, error: 0 };
  legend.querySelectorAll('.fit').forEach((e) => e.remove());
  // One layer over the nodes, outside each node's button: the node's accessible name says the
  // fit, and a button's name must contain the text it shows (WCAG 2.5.3). Clicks go through.
  const layer = svg('g', { class: 'fit-badges', 'aria-hidden': 'true', 'pointer-events': 'none', 'font-size': 12, 'font-family': 'system-ui, sans-serif' });
  // A collapsed box wears its worst member's badge (clips before error before fits).
  const worst = new Map(), rank = (k) => ['fits', 'error', 'clips'].indexOf(k);
  for (const [name, [kind, text]] of fitsOf(fit, graph.shown)) {
    const shown = graph.nodes.get(name);
    if (!shown) continue;
    counts[kind] += 1;
    if (!worst.has(shown) || rank(kind) > rank(worst.get(shown)[0])) worst.set(shown, [kind, text, name]);
  }
  for (const [{ g, x, y, w, h }, [kind, text, name]] of worst) {
    if (g.dataset.fit) continue;
    const width = text.length * CHAR_W + 8;
    const badge = svg('g', { 'data-testid': 'fit-badge', 'data-node': name, transform: `translate(${x - width / 2},${y + h / 2 - 4})` });
    badge.append(svg('rect', { width, height: BADGE_H, rx: 7, fill: LOOK[kind].fill, stroke: LOOK[kind].stroke }),
      Object.assign(svg('text', { x: width / 2, y: 11, 'text-anchor': 'middle' }), { textContent: text }));
    layer.append(badge);
    g.dataset.fit = kind;
    g.setAttribute('aria-label', `${g.getAttribute('aria-label')}, ${scheme}: ${text}`);
  }
  graph.viewport.append(layer);
  for (const kind of Object.keys(LOOK)) {
    if (!counts[kind]) continue;
    const li = document.createElement('li');
    li.className = 'fit';
    li.dataset.fit = kind;
    const swatch = svg('svg', { class: 'swatch', viewBox: '0 0 22 14', 'aria-hidden': 'true' });
    swatch.append(svg('rect', { x: 1, y: 1, width: 20, height: 12, rx: 6, fill: LOOK[kind].fill, stroke: LOOK[kind].stroke }));
    const words = document.createElement('span');
    words.append(`${scheme} ${LOOK[kind].words} (`, Object.assign(document.createElement('span'), { className: 'count', textContent: String(counts[kind]) }), ')');
    li.append(swatch, words);
    legend.append(li);
  }
}
