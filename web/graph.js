// The whole-graph view: one box per node, marked by what conversion did to it — fill, border style
// and a corner glyph, so no state rests on colour alone — laid out by dagre in a worker
// (layout-worker.js) and drawn as SVG. The page scrolls over it like over any page (one finger,
// plain wheel); ctrl/⌘ + wheel or a pinch zooms, a mouse drag or two fingers pan. The graph is one
// tab stop (a roving tabindex): arrow keys move between nodes, Enter opens a node's properties,
// + and − zoom, 0 fits, Shift + arrows pan. A deep graph is drawn collapsed (collapse.js): a box
// may stand for a chain or a block of nodes, wears its worst member's state and opens on a click
// or Enter; a node inside one is selected or highlighted through its box.
import './messages.js';
import { opLabel } from './ops.js';

const { fromLayout, receive, toLayout } = self.pageMessages;

const NS = 'http://www.w3.org/2000/svg';
const NODE_H = 28, CHAR_W = 7, PAD_W = 18, MIN_W = 56;
const MIN_ZOOM = 0.02, MAX_ZOOM = 4, READABLE_ZOOM = 0.8;
export const STATES = ['applied', 'refused', 'unsupported', 'plain'];
// A collapsed box wears the first of its members' states in this order, as a node wears the first
// that holds of its own (app.js, statesOf).
const WORST = ['unsupported', 'applied', 'refused', 'plain'];
// What a screen reader says after the node's box text and name ("Relu /x/Relu, untouched"); the
// legend's words.
const SPOKEN = { applied: 'rewritten', refused: 'match refused or skipped', unsupported: 'the target cannot run it', plain: 'untouched' };
const DIRECTIONS = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };

export function svg(name, attrs = {}) {
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

// An arrowhead at the end of a polyline [x, y, x, y, ...], pointing along its last segment. All
// heads go in one path: a marker per edge would need one <path> per edge.
function arrowHead(pts) {
  const n = pts.length;
  const [x0, y0, x1, y1] = pts.slice(n - 4);
  const length = Math.hypot(x1 - x0, y1 - y0) || 1;
  const ux = (x1 - x0) / length, uy = (y1 - y0) / length;
  const bx = x1 - ux * 7, by = y1 - uy * 7;
  return `M${x1} ${y1}L${bx - uy * 3.5} ${by + ux * 3.5}L${bx + uy * 3.5} ${by - ux * 3.5}Z`;
}

export class GraphView {
  // `el`: {host, legend, zoomIn, zoomOut, fit}; onSelect(name) when a node is picked (click, Enter).
  constructor(el, onSelect) {
    this.el = el;
    this.onSelect = onSelect;
    this.pending = new Map();
    this.nextId = 0;
    this.layouts = new WeakMap();  // description -> layout, so switching views back is instant
    this.view = { x: 0, y: 0, k: 1 };
    this.nodes = new Map();  // name -> its box {g, x, y, w, h, names}: its own, or the collapsed one holding it
    this.collapse = true;  // deep graphs drawn collapsed (the page's "Collapse" switch)
    this.open = new Set();  // the collapsed boxes the user opened, by id
    this.onRedraw = null;  // redraws the page's graphs after a box is opened (else this one alone)
    this.shown = null;
    this.failed = null;  // why the layout worker cannot lay anything out
    this.current = null;  // the node holding the graph's one tab stop
    this.worker = null;  // started with the first layout (layoutWorker)
    this.bindInput();
    // A box resized (a window narrowed, a phone turned) keeps the graph in view: the start view or
    // Fit is taken again at the new size; a view the user moved keeps the point at its centre.
    new ResizeObserver(() => {
      const { width, height } = this.box();
      if (!this.viewport || !width || !this.at) return;
      if (this.mode) this[this.mode]();
      else this.pan((width - this.at.width) / 2, (height - this.at.height) / 2);
    }).observe(el.host);
  }

  // The layout worker and dagre (18 KB gzipped) load with the first graph to lay out, not with the
  // page: a page that never converts never needs them, and the first conversion runs meanwhile.
  layoutWorker() {
    if (this.worker) return this.worker;
    this.worker = new Worker('layout-worker.js');
    // A worker that fails to start (its script or dagre missing), dies or says what the page does
    // not know answers nothing more: every layout asked for, now or later, fails with the reason.
    const fail = (reason) => {
      this.failed = new Error(`the layout worker stopped (${reason})`);
      for (const { reject } of this.pending.values()) reject(this.failed);
      this.pending.clear();
      this.worker.terminate();
    };
    this.worker.onmessage = ({ data }) => receive(fromLayout, data, {
      laidOut: () => {
        const done = this.pending.get(data.id);
        this.pending.delete(data.id);
        if (data.error) done.reject(new Error(data.error)); else done.resolve(data);
      },
    }, (said) => fail(`it sent an ${said}`));
    this.worker.onerror = (e) => {
      e.preventDefault();
      fail(e.message || 'it could not be loaded');
    };
    return this.worker;
  }

  // One layout per description and set of opened boxes, kept.
  layout(description) {
    const key = this.collapse ? [...this.open].sort().join('\n') : false;
    if (!this.layouts.has(description)) this.layouts.set(description, new Map());
    const kept = this.layouts.get(description);
    if (!kept.has(key)) kept.set(key, this.lay(description));
    return kept.get(key);
  }

  async lay(description) {
    if (this.failed) throw this.failed;
    const edges = edgesOf(description);
    // Offline before its first use, the graph is drawn whole.
    const collapsed = this.collapse && await import('./collapse.js').then((m) => m.collapse(description, edges, new Set(this.open)), () => null);
    const { units, edges: unitEdges } = collapsed
      || { units: description.nodes.map((n, i) => ({ id: n.name, kind: 'node', members: [i], label: opLabel(n) })), edges };
    const nodes = units.map((u) => ({ width: Math.max(MIN_W, u.label.length * CHAR_W + PAD_W), height: NODE_H }));
    const id = this.nextId++;
    const result = await new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.layoutWorker().postMessage(toLayout.layout({ id, nodes, edges: unitEdges }));
    });
    return { ...result, units, sizes: nodes };
  }

  // Opens a collapsed box and draws again, the view's zoom kept and what the box held where it was.
  expand(id) {
    const box = [...this.nodes.values()].find((n) => n.g.dataset.group === id);
    if (!box) return;
    this.open.add(id);
    this.anchor = { names: box.names, x: this.view.x + box.x * this.view.k, y: this.view.y + box.y * this.view.k };
    if (this.onRedraw) this.onRedraw(); else this.show(this.shown, this.states);
  }

  // Collapsing on or off, every box closed again.
  setCollapse(on) {
    this.collapse = on;
    this.open.clear();
  }

  // Instead of a graph: a sentence saying why there is none.
  showMessage(message) {
    this.nodes = new Map();
    this.drawn = null;
    this.viewport = null;
    const p = document.createElement('p');
    p.className = 'graph-message';
    p.textContent = message;
    this.el.host.replaceChildren(p);
    this.el.host.dataset.ready = 'false';
  }

  // Draws `description` with each node's state (name -> state); resolves with the timings.
  async show(description, states) {
    const host = this.el.host;
    host.dataset.ready = 'false';
    const ticket = this.ticket = {};  // the last draw asked for is the one drawn
    const again = this.drawn === description;  // drawn again (a box opened): the view is kept
    const hadFocus = host.contains(document.activeElement);
    this.shown = description;
    this.states = states;
    const started = performance.now();
    const layout = await this.layout(description);
    if (this.ticket !== ticket) return null;  // another view was asked for meanwhile
    const laidOut = performance.now();
    const root = svg('svg', { class: 'graph-svg', role: 'group', 'aria-roledescription': 'graph',
      'aria-describedby': 'graph-hint' });
    const viewport = svg('g', { class: 'viewport' });
    const path = layout.edges.map((pts) => `M${pts.slice(0, 2).join(' ')}L${pts.slice(2).join(' ')}`).join('');
    viewport.append(svg('path', { class: 'edges', d: path }),
      svg('path', { class: 'arrows', d: layout.edges.filter((pts) => pts.length >= 4).map(arrowHead).join('') }));
    const previous = this.current;
    this.nodes = new Map();
    this.current = null;
    const counts = Object.fromEntries(STATES.map((s) => [s, 0]));
    const fragment = document.createDocumentFragment();
    const counted = svg('g', { class: 'counts', 'aria-hidden': 'true', 'pointer-events': 'none' });
    layout.units.forEach((unit, i) => {
      const { x, y } = layout.nodes[i];
      const { width: w, height: h } = layout.sizes[i];
      const names = unit.members.map((m) => description.nodes[m].name);
      const held = names.map((n) => states.get(n) ?? 'plain');
      for (const s of held) counts[s] += 1;
      const state = WORST.find((s) => held.includes(s));
      const many = unit.kind !== 'node';
      // A collapsed box says how many nodes it holds and their states with their counts, and opens
      // (aria-expanded): "layer1 (22 nodes): 10 rewritten, 12 untouched".
      const tally = (s) => held.filter((h) => h === s).length;
      const spoken = many ? `${unit.label}${unit.kind === 'block' ? '' : ` (${names.length} nodes)`}: ${WORST.filter((s) => held.includes(s))
        .map((s) => `${tally(s)} ${SPOKEN[s]}`).join(', ')}` : `${unit.label} ${names[0]}, ${SPOKEN[state]}`;
      const g = svg('g', { class: `node ${state}${many ? ' group' : ''}`, transform: `translate(${x - w / 2},${y - h / 2})`, role: 'button',
        tabindex: '-1', 'aria-label': spoken, 'data-state': state,
        ...(many ? { 'data-testid': 'graph-group', 'data-group': unit.id, 'aria-expanded': 'false' } : { 'data-testid': 'graph-node', 'data-node': names[0] }) });
      const text = svg('text', { x: w / 2, y: h / 2 + 4, 'text-anchor': 'middle', 'aria-hidden': 'true' });
      text.textContent = unit.label;
      g.append(svg('rect', { class: 'halo', x: -5, y: -5, width: w + 10, height: h + 10, rx: 8 }));
      if (many) g.append(svg('rect', { class: 'box stack', x: 3, y: 3, width: w, height: h, rx: 4 }));
      g.append(svg('rect', { class: 'box', width: w, height: h, rx: 4 }), text);
      if (state !== 'plain') g.append(svg('use', { href: `#glyph-${state}`, class: 'glyph', x: w - 6, y: -6, width: 12, height: 12 }));
      // Its worst state's count beside the glyph, outside the button, whose name says it in words
      // (a button's name must hold the text it shows, WCAG 2.5.3).
      if (many && state !== 'plain') counted.append(Object.assign(svg('text', { x: x + w / 2 + 8, y: y - h / 2 + 3 }), { textContent: String(tally(state)) }));
      fragment.append(g);
      const box = { g, x, y, w, h, names };
      for (const name of names) this.nodes.set(name, box);
    });
    viewport.append(fragment, counted);
    root.append(viewport);
    root.setAttribute('aria-label', `Model graph, ${description.nodes.length} nodes in ${layout.units.length} boxes: ` +
      STATES.map((s) => `${counts[s]} ${SPOKEN[s]}`).join(', '));
    host.replaceChildren(root);
    this.svg = root;
    this.viewport = viewport;
    this.drawn = description;
    this.size = { width: layout.width, height: layout.height };
    for (const s of STATES) {
      const count = this.el.legend.querySelector(`[data-state="${s}"] .count`);
      if (count) count.textContent = String(counts[s]);
    }
    // The tab stop stays on the node that had it when the other view has it too, else the first.
    this.setCurrent(this.nodes.has(previous) ? previous : description.nodes[0]?.name);
    if (hadFocus) this.nodes.get(this.current)?.g.focus({ preventScroll: true });
    const anchor = again && this.anchor;
    this.anchor = null;
    if (anchor) {
      // What the opened box held, where the box was, at the same zoom; moved just enough to bring
      // its start (its top, its left) into the graph's box.
      const boxes = anchor.names.map((n) => this.nodes.get(n)), { k } = this.view, { width, height } = this.box();
      const x0 = Math.min(...boxes.map((b) => b.x - b.w / 2)) * k, x1 = Math.max(...boxes.map((b) => b.x + b.w / 2)) * k;
      const y0 = Math.min(...boxes.map((b) => b.y - b.h / 2)) * k, y1 = Math.max(...boxes.map((b) => b.y + b.h / 2)) * k;
      const into = (t, lo, hi, size) => Math.max(16 - lo, Math.min(t, size - 16 - hi));
      const x = into(anchor.x - (x0 + x1) / 2, x0, x1, width), y = into(anchor.y - (y0 + y1) / 2, y0, y1, height);
      this.view = { k, x, y };
      this.apply();
    } else if (again && this.mode !== 'home') {
      if (this.mode) this[this.mode](); else this.apply();
    } else this.home();
    const rendered = performance.now();
    host.dataset.layoutMs = String(Math.round(laidOut - started));
    host.dataset.workerLayoutMs = String(Math.round(layout.ms));
    host.dataset.renderMs = String(Math.round(rendered - laidOut));
    host.dataset.ready = 'true';
    return { layoutMs: laidOut - started, renderMs: rendered - laidOut };
  }

  // `mode`: 'home' or 'fit' when the view is one of those, to be taken again after a resize.
  apply(mode = null) {
    this.mode = mode;
    this.at = this.box();  // the size the view was set for
    const { x, y, k } = this.view;
    this.viewport?.setAttribute('transform', `translate(${x},${y}) scale(${k})`);
  }

  box() { return this.el.host.getBoundingClientRect(); }

  // The start view, on every show: the graph at a zoom where its box text stays readable, its top
  // (the model's inputs) at the top of the box. As wide as the box, but never smaller than
  // READABLE_ZOOM (12 px text at 0.8 is 9.6 px, about the smallest a label is read at) and never
  // enlarged; a graph wider than that is centred on its first rank (on a phone, the model's input in
  // the middle of the box, whatever lies left or right of it). Fit (0) shows the whole graph.
  home() {
    const { width, height } = this.box();
    const { width: w } = this.size;
    const k = w > 0 ? Math.max(READABLE_ZOOM, Math.min(1, (width - 16) / w)) : 1;
    let x = (width - w * k) / 2;
    if (w * k > width - 16) {
      const top = Math.min(...[...this.nodes.values()].map((n) => n.y));
      const first = [...this.nodes.values()].filter((n) => n.y === top);
      const centre = (Math.min(...first.map((n) => n.x - n.w / 2)) + Math.max(...first.map((n) => n.x + n.w / 2))) / 2;
      x = width / 2 - centre * k;
    }
    // A graph that fits whole at this zoom sits in the middle, as Fit would put it.
    const h = this.size.height * k;
    this.view = { k, x, y: h <= height - 16 ? (height - h) / 2 : 8 };
    this.apply('home');
  }

  fitRect(x0, y0, x1, y1, maxZoom, mode) {
    const { width, height } = this.box();
    const k = Math.max(MIN_ZOOM, Math.min(maxZoom, (width - 16) / (x1 - x0), (height - 16) / (y1 - y0)));
    this.view = { k, x: width / 2 - ((x0 + x1) / 2) * k, y: height / 2 - ((y0 + y1) / 2) * k };
    this.apply(mode);
  }

  fit() { if (this.size.width > 0) this.fitRect(0, 0, this.size.width, this.size.height, 1.5, 'fit'); }

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

  // Marks these nodes (or the collapsed boxes holding them) and brings them into view; returns how
  // many of them this view has.
  highlight(names) {
    for (const n of this.nodes.values()) n.g.classList.remove('hl');
    const found = [...new Set(names.map((name) => this.nodes.get(name)).filter(Boolean))];
    if (!found.length) return 0;
    for (const n of found) n.g.classList.add('hl');
    const x0 = Math.min(...found.map((n) => n.x - n.w / 2)), x1 = Math.max(...found.map((n) => n.x + n.w / 2));
    const y0 = Math.min(...found.map((n) => n.y - n.h / 2)), y1 = Math.max(...found.map((n) => n.y + n.h / 2));
    this.fitRect(x0 - 40, y0 - 40, x1 + 40, y1 + 40, 1.2);
    return found.length;
  }

  // The node whose properties are shown: marked in the graph, and the graph's tab stop.
  select(name) {
    for (const n of this.nodes.values()) {
      n.g.classList.remove('selected');
      n.g.removeAttribute('aria-current');
    }
    const node = this.nodes.get(name);
    if (!node) return;
    node.g.classList.add('selected');
    node.g.setAttribute('aria-current', 'true');
    this.setCurrent(name);
  }

  setCurrent(name) {
    if (this.current && this.nodes.has(this.current)) this.nodes.get(this.current).g.setAttribute('tabindex', '-1');
    this.current = name ?? null;
    this.nodes.get(name)?.g.setAttribute('tabindex', '0');
  }

  // Keyboard focus to `name`, panning just enough to show it.
  focusNode(name) {
    const node = this.nodes.get(name);
    if (!node) return;
    this.setCurrent(name);
    node.g.focus({ preventScroll: true });
    const { width, height } = this.box();
    const { x, y, k } = this.view;
    const left = x + (node.x - node.w / 2) * k, right = x + (node.x + node.w / 2) * k;
    const top = y + (node.y - node.h / 2) * k, bottom = y + (node.y + node.h / 2) * k;
    const margin = 24;
    const dx = left < margin ? margin - left : right > width - margin ? width - margin - right : 0;
    const dy = top < margin ? margin - top : bottom > height - margin ? height - margin - bottom : 0;
    if (dx || dy) this.pan(dx, dy);
  }

  // The nearest node in an arrow's direction: ahead of the current one, preferring nodes in line.
  neighbour(name, [dx, dy]) {
    const from = this.nodes.get(name);
    let best = null, bestScore = Infinity;
    for (const [other, n] of this.nodes) {
      const ax = n.x - from.x, ay = n.y - from.y;
      const ahead = ax * dx + ay * dy;
      if (ahead <= 1) continue;
      const score = ahead + 2 * Math.abs(ax * dy + ay * dx);
      if (score < bestScore) { best = other; bestScore = score; }
    }
    return best;
  }

  // A click or Enter on a box: a node is selected, a collapsed box opens.
  pick(g) {
    if (g.dataset.group) return this.expand(g.dataset.group);
    this.select(g.dataset.node);
    this.onSelect(g.dataset.node);
  }

  bindInput() {
    const host = this.el.host;
    // Mouse: a drag pans. Captured once it moves, so a click without moving stays a click on the
    // node; the click that ends a drag selects nothing.
    let drag = null, dragged = false;
    host.addEventListener('pointerdown', (e) => {
      if (e.pointerType !== 'mouse' || e.button !== 0) return;  // touch: see the touch events below
      drag = { id: e.pointerId, x: e.clientX, y: e.clientY, moving: false };
    });
    host.addEventListener('pointermove', (e) => {
      if (!drag || e.pointerId !== drag.id) return;
      if (!drag.moving && Math.abs(e.clientX - drag.x) + Math.abs(e.clientY - drag.y) < 5) return;
      if (!drag.moving) host.setPointerCapture(e.pointerId);
      drag.moving = true;
      this.pan(e.clientX - drag.x, e.clientY - drag.y);
      drag.x = e.clientX;
      drag.y = e.clientY;
    });
    const up = () => {
      dragged = drag?.moving ?? false;
      drag = null;
      setTimeout(() => { dragged = false; });  // the click that follows a drag, if any, is past
    };
    host.addEventListener('pointerup', up);
    host.addEventListener('pointercancel', up);
    host.addEventListener('click', (e) => {
      const node = e.target.closest?.('.node');
      if (node && !dragged) this.pick(node);
    });
    // Touch: one finger is the page's (it scrolls); two fingers pan and pinch.
    let fingers = null;
    const twoFingers = (touches) => {
      const [a, b] = [touches[0], touches[1]];
      return { x: (a.clientX + b.clientX) / 2, y: (a.clientY + b.clientY) / 2, d: Math.hypot(a.clientX - b.clientX, a.clientY - b.clientY) };
    };
    host.addEventListener('touchstart', (e) => { fingers = e.touches.length === 2 ? twoFingers(e.touches) : null; }, { passive: true });
    host.addEventListener('touchmove', (e) => {
      if (e.touches.length !== 2 || !e.cancelable) return;
      e.preventDefault();
      const now = twoFingers(e.touches);
      if (fingers) {
        const r = this.box();
        this.pan(now.x - fingers.x, now.y - fingers.y);
        if (fingers.d > 0) this.zoom(now.d / fingers.d, now.x - r.left, now.y - r.top);
      }
      fingers = now;
    }, { passive: false });
    const lift = (e) => { if (e.touches.length < 2) fingers = null; };
    host.addEventListener('touchend', lift);
    host.addEventListener('touchcancel', lift);
    // Wheel: the page's, unless ctrl or ⌘ is held (a trackpad pinch arrives as ctrl + wheel).
    host.addEventListener('wheel', (e) => {
      if (!e.ctrlKey && !e.metaKey) return;
      e.preventDefault();
      const r = this.box();
      this.zoom(Math.exp(-e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
    }, { passive: false });
    host.addEventListener('keydown', (e) => {
      if (!this.viewport || e.altKey || e.ctrlKey || e.metaKey) return;
      const direction = DIRECTIONS[e.key];
      let action = null;
      if (direction && e.shiftKey) action = () => this.pan(-direction[0] * 60, -direction[1] * 60);
      else if (direction && this.current) action = () => this.focusNode(this.neighbour(this.current, direction) ?? this.current);
      else if (e.key === 'Enter' || e.key === ' ') {
        const node = e.target.closest?.('.node');
        if (node) action = () => this.pick(node);
      } else {
        action = { '+': () => this.zoom(1.25), '=': () => this.zoom(1.25), '-': () => this.zoom(0.8), 0: () => this.fit() }[e.key];
      }
      if (action) { e.preventDefault(); action(); }
    });
    this.el.zoomIn.addEventListener('click', () => this.zoom(1.25));
    this.el.zoomOut.addEventListener('click', () => this.zoom(0.8));
    this.el.fit.addEventListener('click', () => this.fit());
  }
}
