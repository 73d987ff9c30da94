// The whole-graph view: one box per node, coloured by what conversion did to it, laid out by
// dagre in a worker (layout-worker.js, loaded on first use) and drawn as SVG. Pan and zoom with
// the mouse (drag, wheel), touch (drag, pinch) and the keyboard (arrows, + and −, 0 to fit).
import { opLabel } from './ops.js';

const NS = 'http://www.w3.org/2000/svg';
const NODE_H = 28, CHAR_W = 7, PAD_W = 18, MIN_W = 56;
const MIN_ZOOM = 0.02, MAX_ZOOM = 4;
export const STATES = ['applied', 'refused', 'unsupported', 'plain'];

function svg(name, attrs = {}) {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

// Edges from each node to the nodes reading its outputs (weights and graph inputs draw no edge).
function edgesOf(description) {
  const producer = new Map();
  description.nodes.forEach((n, i) => n.outputs.forEach((t) => t.name && producer.set(t.name, i)));
  const edges = [];
  description.nodes.forEach((n, i) => {
    for (const t of n.inputs) {
      const from = producer.get(t.name);
      if (from !== undefined && from !== i) edges.push([from, i]);
    }
  });
  return edges;
}

export class GraphView {
  // `el`: {host (focusable box), legend, zoomIn, zoomOut, fit}; onSelect(name) when a node is picked.
  constructor(el, onSelect) {
    this.el = el;
    this.onSelect = onSelect;
    this.worker = null;
    this.pending = new Map();
    this.nextId = 0;
    this.layouts = new WeakMap();  // description -> layout, so switching views back is instant
    this.view = { x: 0, y: 0, k: 1 };
    this.nodes = new Map();  // name -> {g, x, y, w, h}
    this.shown = null;
    // Started with the page, like the converter, so the view works offline once the page is loaded.
    this.worker = new Worker('layout-worker.js');
    this.worker.onmessage = ({ data }) => {
      const done = this.pending.get(data.id);
      this.pending.delete(data.id);
      if (data.error) done.reject(new Error(data.error)); else done.resolve(data);
    };
    this.bindInput();
  }

  layout(description) {
    if (this.layouts.has(description)) return this.layouts.get(description);
    const labels = description.nodes.map(opLabel);
    const nodes = labels.map((l) => ({ width: Math.max(MIN_W, l.length * CHAR_W + PAD_W), height: NODE_H }));
    const id = this.nextId++;
    const promise = new Promise((resolve, reject) => this.pending.set(id, { resolve, reject }))
      .then((result) => ({ ...result, labels, sizes: nodes }));
    this.worker.postMessage({ id, nodes, edges: edgesOf(description) });
    this.layouts.set(description, promise);
    return promise;
  }

  // Draws `description` with each node's state (name -> state); resolves with the timings.
  async show(description, states) {
    const host = this.el.host;
    host.dataset.ready = 'false';
    this.shown = description;
    const started = performance.now();
    const layout = await this.layout(description);
    if (this.shown !== description) return null;  // another view was asked for meanwhile
    const laidOut = performance.now();
    const root = svg('svg', { class: 'graph-svg', role: 'img' });
    const viewport = svg('g', { class: 'viewport' });
    const path = layout.edges.map((pts) => `M${pts.slice(0, 2).join(' ')}L${pts.slice(2).join(' ')}`).join('');
    viewport.append(svg('path', { class: 'edges', d: path }));
    this.nodes = new Map();
    const counts = Object.fromEntries(STATES.map((s) => [s, 0]));
    const fragment = document.createDocumentFragment();
    description.nodes.forEach((node, i) => {
      const { x, y } = layout.nodes[i];
      const { width: w, height: h } = layout.sizes[i];
      const state = states.get(node.name) ?? 'plain';
      counts[state] += 1;
      const g = svg('g', { class: `node ${state}`, transform: `translate(${x - w / 2},${y - h / 2})`,
        'data-testid': 'graph-node', 'data-node': node.name, 'data-state': state });
      const title = svg('title');
      title.textContent = `${node.name} (${node.op}) — ${state}`;
      const text = svg('text', { x: w / 2, y: h / 2 + 4, 'text-anchor': 'middle' });
      text.textContent = layout.labels[i];
      g.append(title, svg('rect', { width: w, height: h, rx: 4 }), text);
      fragment.append(g);
      this.nodes.set(node.name, { g, x, y, w, h });
    });
    viewport.append(fragment);
    root.append(viewport);
    root.setAttribute('aria-label', `Graph of ${description.nodes.length} nodes: ` +
      STATES.map((s) => `${counts[s]} ${s}`).join(', '));
    host.replaceChildren(root);
    this.svg = root;
    this.viewport = viewport;
    this.size = { width: layout.width, height: layout.height };
    for (const s of STATES) {
      const count = this.el.legend.querySelector(`[data-state="${s}"] .count`);
      if (count) count.textContent = String(counts[s]);
    }
    this.home();
    const rendered = performance.now();
    host.dataset.layoutMs = String(Math.round(laidOut - started));
    host.dataset.workerLayoutMs = String(Math.round(layout.ms));
    host.dataset.renderMs = String(Math.round(rendered - laidOut));
    host.dataset.ready = 'true';
    return { layoutMs: laidOut - started, renderMs: rendered - laidOut };
  }

  apply() {
    const { x, y, k } = this.view;
    this.viewport?.setAttribute('transform', `translate(${x},${y}) scale(${k})`);
  }

  box() { return this.el.host.getBoundingClientRect(); }

  // The start view: the top of the graph, as wide as fits (never enlarged).
  home() {
    const { width } = this.box();
    const k = this.size.width > 0 ? Math.min(1, (width - 16) / this.size.width) : 1;
    this.view = { k, x: (width - this.size.width * k) / 2, y: 8 };
    this.apply();
  }

  fitRect(x0, y0, x1, y1, maxZoom) {
    const { width, height } = this.box();
    const k = Math.max(MIN_ZOOM, Math.min(maxZoom, (width - 32) / (x1 - x0), (height - 32) / (y1 - y0)));
    this.view = { k, x: width / 2 - ((x0 + x1) / 2) * k, y: height / 2 - ((y0 + y1) / 2) * k };
    this.apply();
  }

  fit() { if (this.size.width > 0) this.fitRect(0, 0, this.size.width, this.size.height, 1.5); }

  zoom(factor, cx, cy) {
    const { width, height } = this.box();
    const px = cx ?? width / 2, py = cy ?? height / 2;
    const k = Math.max(MIN_ZOOM, Math.min(MAX_ZOOM, this.view.k * factor));
    this.view = { k, x: px - ((px - this.view.x) * k) / this.view.k, y: py - ((py - this.view.y) * k) / this.view.k };
    this.apply();
  }

  pan(dx, dy) {
    this.view.x += dx;
    this.view.y += dy;
    this.apply();
  }

  // Marks these nodes and brings them into view; returns how many of them this view has.
  highlight(names) {
    for (const n of this.nodes.values()) n.g.classList.remove('hl');
    const found = names.map((name) => this.nodes.get(name)).filter(Boolean);
    if (!found.length) return 0;
    for (const n of found) n.g.classList.add('hl');
    const x0 = Math.min(...found.map((n) => n.x - n.w / 2)), x1 = Math.max(...found.map((n) => n.x + n.w / 2));
    const y0 = Math.min(...found.map((n) => n.y - n.h / 2)), y1 = Math.max(...found.map((n) => n.y + n.h / 2));
    this.fitRect(x0 - 40, y0 - 40, x1 + 40, y1 + 40, 1.2);
    return found.length;
  }

  bindInput() {
    const host = this.el.host;
    const pointers = new Map();
    let downOn = null, moved = 0, pinch = null;
    host.addEventListener('pointerdown', (e) => {
      host.setPointerCapture(e.pointerId);
      pointers.set(e.pointerId, { x: e.clientX, y: e.clientY });
      downOn = pointers.size === 1 ? e.target.closest?.('.node') : null;
      moved = 0;
      pinch = null;
    });
    host.addEventListener('pointermove', (e) => {
      const last = pointers.get(e.pointerId);
      if (!last) return;
      const now = { x: e.clientX, y: e.clientY };
      pointers.set(e.pointerId, now);
      if (pointers.size === 2) {
        const [a, b] = [...pointers.values()];
        const distance = Math.hypot(a.x - b.x, a.y - b.y);
        const r = this.box();
        if (pinch) this.zoom(distance / pinch, (a.x + b.x) / 2 - r.left, (a.y + b.y) / 2 - r.top);
        pinch = distance;
        moved = Infinity;
        return;
      }
      moved += Math.abs(now.x - last.x) + Math.abs(now.y - last.y);
      this.pan(now.x - last.x, now.y - last.y);
    });
    const up = (e) => {
      if (!pointers.delete(e.pointerId)) return;
      if (pointers.size < 2) pinch = null;
      if (e.type === 'pointerup' && downOn && moved < 5) this.onSelect(downOn.dataset.node);
      downOn = null;
    };
    host.addEventListener('pointerup', up);
    host.addEventListener('pointercancel', up);
    host.addEventListener('wheel', (e) => {
      e.preventDefault();
      const r = this.box();
      this.zoom(Math.exp(-e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
    }, { passive: false });
    host.addEventListener('keydown', (e) => {
      const step = 60;
      const actions = {
        ArrowLeft: () => this.pan(step, 0), ArrowRight: () => this.pan(-step, 0),
        ArrowUp: () => this.pan(0, step), ArrowDown: () => this.pan(0, -step),
        '+': () => this.zoom(1.25), '=': () => this.zoom(1.25), '-': () => this.zoom(0.8), 0: () => this.fit(),
      };
      const action = actions[e.key];
      if (action && this.viewport) { e.preventDefault(); action(); }
    });
    this.el.zoomIn.addEventListener('click', () => this.zoom(1.25));
    this.el.zoomOut.addEventListener('click', () => this.zoom(0.8));
    this.el.fit.addEventListener('click', () => this.fit());
  }
}
