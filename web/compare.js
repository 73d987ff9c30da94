// The side-by-side view: the input model in the graph's own pane, the converted model in a second
// one beside it (below it on a narrow screen). Selecting, hovering or panning in one marks (or
// brings to the centre) its counterparts in the other through the report's node map (core/report/node_map.h), read as given:
// an input node → the converted nodes it became (one-to-many: a stride-2 Conv → Conv + MaxPool),
// and back (many-to-one: a fold's Conv and BatchNorm → one Conv). Each node wears what the
// conversion did to it — unchanged, an exact rewrite (every match on its way numerically
// equivalent: a fold), a lossy one — by fill, border and glyph. Loaded when the view is first
// chosen: none of it weighs on the page's first load.
import { distancesByNode, overlayDistances, percentText, scaleLegend, share } from './distance-overlay.js';
import { GraphView, svg } from './graph.js';

export const CHANGES = ['unchanged', 'exact', 'lossy'];
const SPOKEN = { unchanged: 'unchanged', exact: 'exact rewrite', lossy: 'lossy rewrite' };

// The report's node map both ways. An input node without an entry is in the converted model
// unchanged under its own name, and so is its counterpart.
export function nodeMap(report) {
  const forward = new Map(report.node_map.map((e) => [e.node, e]));
  const backward = new Map();
  for (const e of report.node_map) {
    for (const n of e.new_nodes) {
      const b = backward.get(n) ?? { nodes: [], exact: true };
      b.nodes.push(e.node);
      b.exact &&= e.exact;
      backward.set(n, b);
    }
  }
  const entry = (name, view) => (view === 'input' ? forward.get(name) : backward.get(name));
  return {
    counterparts: (name, view) => (view === 'input' ? forward.get(name)?.new_nodes : backward.get(name)?.nodes) ?? [name],
    change: (name, view) => { const e = entry(name, view); return !e ? 'unchanged' : e.exact ? 'exact' : 'lossy'; },
    // The matches an input node went through, for its properties.
    steps: (name) => forward.get(name)?.steps ?? [],
  };
}

// The glyphs of the two kinds of rewrite (besides fill and border, WCAG 1.4.1): "=" exact, "≈" lossy.
function addGlyphs() {
  const defs = document.querySelector('svg.glyphs');
  if (!defs || defs.querySelector('#glyph-exact')) return;
  const exact = svg('symbol', { id: 'glyph-exact', viewBox: '-7 -7 14 14' });
  exact.append(svg('circle', { r: 6, fill: '#fff', stroke: '#1f4e8c', 'stroke-width': 1.5 }),
    svg('path', { d: 'M-3 -1.5H3M-3 1.5H3', stroke: '#1f4e8c', 'stroke-width': 1.6 }));
  const lossy = svg('symbol', { id: 'glyph-lossy', viewBox: '-7 -7 14 14' });
  lossy.append(svg('circle', { r: 6, fill: '#8a3b00' }),
    svg('path', { d: 'M-3.2 -1Q-1.6 -2.8 0 -1T3.2 -1M-3.2 2Q-1.6 0.2 0 2T3.2 2', fill: 'none', stroke: '#fff', 'stroke-width': 1.4 }));
  defs.append(exact, lossy);
}

function loadStyle() {
  if (document.querySelector('link[href="compare.css"]')) return;
  document.head.append(Object.assign(document.createElement('link'), { rel: 'stylesheet', href: 'compare.css' }));
}

function button(text, label) {
  const b = Object.assign(document.createElement('button'), { type: 'button', className: 'small', textContent: text });
  if (label) b.setAttribute('aria-label', label);
  return b;
}

// Marks each drawn box with what the conversion did to its node (a collapsed box: the most to any
// of its members, lossy before exact); returns the count of each kind, node by node.
function markChanges(view, pane, map) {
  const counts = Object.fromEntries(CHANGES.map((c) => [c, 0]));
  const boxes = new Map();
  for (const [name, box] of pane.nodes) {
    const change = map.change(name, view);
    counts[change] += 1;
    if (CHANGES.indexOf(change) >= CHANGES.indexOf(boxes.get(box) ?? 'unchanged')) boxes.set(box, change);
  }
  for (const [{ g }, change] of boxes) {
    if (g.dataset.change) continue;  // two draws of a view can finish in either order: marked once
    g.classList.add(change);
    g.dataset.change = change;
    g.setAttribute('aria-label', `${g.getAttribute('aria-label')}, ${SPOKEN[change]}`);
    // The rewrite's kind replaces the plain "rewritten" glyph; a state of its own (refused, cannot
    // run) keeps its glyph.
    if (change === 'unchanged') continue;
    g.querySelector('use[href="#glyph-applied"]')?.remove();
    const box = g.querySelector('.box');
    g.append(svg('use', { href: `#glyph-${change}`, class: 'glyph change-glyph', x: Number(box.getAttribute('width')) - 6, y: -6, width: 12, height: 12 }));
  }
  return counts;
}

// In a node's properties: what it became (or came from) in the other model, each a button that
// selects it there, and the matches on the way, exact or not.
function counterpartsSection(name, view, names, map, select, distances) {
  const section = Object.assign(document.createElement('section'), { className: 'counterparts' });
  section.dataset.testid = 'counterparts';
  const change = map.change(name, view);
  const heading = Object.assign(document.createElement('h4'), {
    textContent: `${view === 'input' ? 'In the converted model' : 'From the input model'}: ${SPOKEN[change]}` });
  const list = Object.assign(document.createElement('ul'), { className: 'plain' });
  for (const n of names) {
    const b = Object.assign(document.createElement('button'), { type: 'button', className: 'link', textContent: n });
    b.addEventListener('click', () => select(n));
    const li = document.createElement('li');
    li.append(b);
    list.append(li);
  }
  section.append(heading, list);
  // After a layer-by-layer check, what it measured at this node's outputs and at its counterparts'.
  if (distances) {
    const other = view === 'input' ? 'converted' : 'input';
    const was = (v, n, tensor) => distances.before?.[v].get(n)?.find((l) => l.tensor === tensor);
    const lines = [[view, [name]], [other, names]].flatMap(([v, ns]) => ns.flatMap((n) => (distances[v].get(n) ?? []).map((l) => {
      const b = was(v, n, l.tensor);
      const history = b ? `; before the repair ${b.max_abs.toPrecision(2)} (${percentText(share(b))})` : '';
      return `${n === name ? 'This node' : n}: '${l.tensor}' moved by up to ${l.max_abs.toPrecision(2)} (${percentText(share(l))})${history}`;
    })));
    const unique = [...new Set(lines)];
    if (unique.length) {
      const figures = Object.assign(document.createElement('ul'), { className: 'plain distance-figures' });
      figures.dataset.testid = 'distance-figures';
      for (const line of unique) figures.append(Object.assign(document.createElement('li'), { textContent: `Check: ${line}` }));
      section.append(figures);
    }
  }
  const origins = view === 'input' ? [name] : names;
  const steps = [...new Map(origins.flatMap((n) => map.steps(n)).map((s) => [s.match_id, s])).values()];
  if (steps.length) {
    section.append(Object.assign(document.createElement('p'), { className: 'hint',
      textContent: `Through ${steps.map((s) => `${s.match_id} (${s.numerically_equivalent ? 'exact' : 'output will differ'})`).join(', ')}.` }));
  }
  return section;
}

// `page`: {graph (the page's GraphView, which shows the input here), legend, props (the properties
// panel), onSelect(name, view), states(view) (each node's state, as the single view has it),
// redraw() (both panes drawn again, after a collapsed box is opened in either)}.
export function sideBySide(page) {
  loadStyle();
  addGlyphs();
  const host = page.graph.el.host;
  const left = Object.assign(document.createElement('div'), { className: 'pane' });
  const leftTitle = Object.assign(document.createElement('h3'), { className: 'pane-title', textContent: 'Input model' });
  left.append(leftTitle);
  const right = Object.assign(document.createElement('div'), { className: 'pane' });
  const title = Object.assign(document.createElement('h3'), { className: 'pane-title', textContent: 'Converted model' });
  const zoomOut = button('−', 'Zoom the converted model out'), zoomIn = button('+', 'Zoom the converted model in');
  const fit = button('Fit');
  fit.setAttribute('aria-label', 'Fit the converted model');
  const bar = Object.assign(document.createElement('div'), { className: 'zoom pane-zoom' });
  bar.append(zoomOut, zoomIn, fit);
  const head = Object.assign(document.createElement('div'), { className: 'pane-head' });
  head.append(title, bar);
  const otherHost = Object.assign(document.createElement('div'), { id: 'graph-converted', className: 'graph' });
  otherHost.dataset.testid = 'graph-converted';
  otherHost.setAttribute('aria-label', 'Converted model');
  right.append(head, otherHost);
  // Its own legend, off the page: the page's legend counts the input pane, and the kinds below.
  const converted = new GraphView({ host: otherHost, legend: document.createElement('ul'), zoomIn, zoomOut, fit },
    (name) => page.onSelect(name, 'converted'));
  converted.onRedraw = page.redraw;
  const legendItems = CHANGES.map((change) => {
    const li = document.createElement('li');
    li.dataset.change = change;
    const swatch = svg('svg', { class: 'swatch', viewBox: '-2 -7 28 22', 'aria-hidden': 'true' });
    const g = svg('g', { class: `node plain ${change}` });
    g.append(svg('rect', { class: 'box', width: 18, height: 12, rx: 2 }));
    if (change !== 'unchanged') g.append(svg('use', { href: `#glyph-${change}`, class: 'glyph', x: 12, y: -6, width: 12, height: 12 }));
    swatch.append(g);
    const text = document.createElement('span');
    text.append(`${SPOKEN[change]} (`, Object.assign(document.createElement('span'), { className: 'count' }), ')');
    li.append(swatch, text);
    return li;
  });
  let map = null, shown = false;
  let distances = null;  // after a layer-by-layer check: {input, converted} node → the check's tensors it computes
  const scale = scaleLegend();
  // The single view's "rewritten" and "untouched", which the three kinds stand for here.
  const replaced = () => page.legend.querySelectorAll('[data-state="applied"], [data-state="plain"]');

  // Both panes' nodes that hover or selection marked in the other.
  const mark = (pane, names, className) => {
    for (const n of pane.nodes.values()) n.g.classList.remove(className);
    for (const name of names) pane.nodes.get(name)?.g.classList.add(className);
  };
  const hover = (pane, other, view) => {
    pane.el.host.addEventListener('pointerover', (e) => {
      const node = e.target.closest?.('.node');
      const names = node && map ? [...pane.nodes.values()].find((b) => b.g === node)?.names ?? [] : [];
      mark(other, names.flatMap((n) => map.counterparts(n, view)), 'counterpart');
    });
    pane.el.host.addEventListener('pointerleave', () => mark(other, [], 'counterpart'));
  };
  hover(page.graph, converted, 'input');
  hover(converted, page.graph, 'converted');

  // Panning or zooming one pane by hand moves the other: the counterparts of the node nearest the
  // moved pane's centre come to the other's centre, at the other's own zoom. A pane moved by the
  // page (a start view, Fit, a selection brought into view) moves only itself.
  let following = false;
  const follow = (pane, other, view) => {
    const apply = pane.apply.bind(pane);
    pane.apply = (mode = null) => {
      apply(mode);
      if (following || mode || !map || !shown || !pane.nodes.size || !other.nodes.size) return;
      const { width, height } = pane.box(), { x, y, k } = pane.view;
      const cx = (width / 2 - x) / k, cy = (height / 2 - y) / k;
      let nearest = null, best = Infinity;
      for (const [name, n] of pane.nodes) {
        const d = Math.hypot(n.x - cx, n.y - cy);
        if (d < best) { best = d; nearest = name; }
      }
      const there = map.counterparts(nearest, view).map((n) => other.nodes.get(n)).filter(Boolean);
      if (!there.length) return;
      const ox = there.reduce((a, n) => a + n.x, 0) / there.length, oy = there.reduce((a, n) => a + n.y, 0) / there.length;
      const box = other.box();
      following = true;
      other.view = { k: other.view.k, x: box.width / 2 - ox * other.view.k, y: box.height / 2 - oy * other.view.k };
      other.apply();
      following = false;
    };
  };
  follow(page.graph, converted, 'input');
  follow(converted, page.graph, 'converted');

  return {
    // Shows (or, with `on` false, takes away) the converted pane beside the page's graph, which
    // has just drawn the input. Resolves once both are drawn.
    async show(on, current) {
      const area = host.parentElement.classList.contains('pane') ? host.parentElement.parentElement : host.parentElement;
      if (!on) {
        if (shown) {
          area.insertBefore(host, left);
          left.remove();
          right.remove();
          area.classList.remove('side-by-side');
          legendItems.forEach((li) => li.remove());
          scale.remove();
          replaced().forEach((li) => { li.hidden = false; });
          shown = false;
        }
        return;
      }
      if (!shown) {
        area.insertBefore(left, host);
        left.append(host);
        left.after(right);
        area.classList.add('side-by-side');
        replaced().forEach((li) => { li.hidden = true; });
        page.legend.prepend(...legendItems);
        shown = true;
      }
      map = nodeMap(current.report);
      if (converted.collapse !== page.graph.collapse) converted.setCollapse(page.graph.collapse);
      const drawn = await converted.show(current.output, page.states('converted'));
      if (!drawn) return;
      const counts = { input: markChanges('input', page.graph, map), converted: markChanges('converted', converted, map) };
      for (const li of legendItems) {
        li.querySelector('.count').textContent = `input ${counts.input[li.dataset.change]}, converted ${counts.converted[li.dataset.change]}`;
      }
      // Under a fixed-point scheme the converted pane wears each analysed layer's fit (and, after a
      // check with the FPQ twin on samples, each measured activation's clipped share), as the
      // single converted view does.
      const fit = current.report.fixed_point;
      const overlay = fit && await import('./fit-overlay.js').catch(() => null);
      if (overlay && converted.shown === current.output) overlay.overlayFit(converted, fit, page.legend);
      const layers = current.check?.converted.layers;
      distances = layers ? { input: distancesByNode(layers, current.input), converted: distancesByNode(layers, current.output) } : null;
      // After a repair: the converted model as it was, against the original, for before → after.
      const before = current.check?.unrepaired?.layers ?? null;
      if (before && distances) distances.before = { input: distancesByNode(before, current.input), converted: distancesByNode(before, current.output) };
      if (layers) {
        overlayDistances(page.graph, layers, before);
        overlayDistances(converted, layers, before);
        page.legend.append(scale);
      } else scale.remove();
    },
    // Highlights nodes in the pane showing `view` ('input' or 'converted'), as "Show in graph"
    // does, bringing them into view there alone.
    highlight(view, names) {
      following = true;
      (view === 'input' ? page.graph : converted).highlight(names);
      following = false;
    },
    // A node picked in either pane (`view` 'input' or 'converted'), its properties just shown:
    // selected there, its counterparts selected in the other pane and brought into view (which
    // moves that pane alone), and listed in the properties.
    selected(name, view) {
      if (!shown || !map) return;
      const [here, there] = view === 'input' ? [page.graph, converted] : [converted, page.graph];
      here.select(name);
      const names = map.counterparts(name, view).filter((n) => there.nodes.has(n));
      there.select(null);
      mark(there, names, 'selected');
      following = true;
      if (names.length) there.highlight(names);
      following = false;
      page.props.append(counterpartsSection(name, view, names, map, (n) => page.onSelect(n, view === 'input' ? 'converted' : 'input'), distances));
    },
  };
}
