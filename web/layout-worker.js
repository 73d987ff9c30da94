// Lays out a graph with dagre (the layered layout Netron's descends from) off the page's main
// thread. Its messages are messages.js's: in, toLayout's layout (nodes' sizes, edges between their
// indices); out, fromLayout's laidOut (nodes' centres, each edge's polyline points [x, y, ...]).
/* global dagre, importScripts, pageMessages */
importScripts('dagre.min.js', 'messages.js');
const { fromLayout, receive, toLayout } = pageMessages;

// The order of nodes within each rank. dagre's own crossing minimisation builds a graph per rank
// for every sweep: measured in Node, it was three quarters of the layout time of a 1,007-node
// model (2.9 s in all) and more of ResNet-50's. A depth-first order from the sources (dagre's own
// starting point) and four barycenter sweeps keep CNN graphs readable at 4–6× the speed.
function orderRanks(g) {
  const layers = [];
  const seen = new Set();
  const sources = g.nodes().filter((v) => !g.children(v).length).sort((a, b) => g.node(a).rank - g.node(b).rank);
  for (const source of sources) {
    const stack = [source];
    while (stack.length) {
      const v = stack.pop();
      if (seen.has(v)) continue;
      seen.add(v);
      (layers[g.node(v).rank] ??= []).push(v);
      const next = g.successors(v) ?? [];
      for (let i = next.length - 1; i >= 0; --i) if (!seen.has(next[i])) stack.push(next[i]);
    }
  }
  const position = new Map();
  for (const layer of layers) layer?.forEach((v, i) => position.set(v, i));
  for (let sweep = 0; sweep < 4; ++sweep) {
    const down = sweep % 2 === 0;
    for (const layer of down ? layers : [...layers].reverse()) {
      if (!layer || layer.length < 2) continue;
      const barycenter = new Map(layer.map((v) => {
        const near = (down ? g.predecessors(v) : g.successors(v)) ?? [];
        return [v, near.length ? near.reduce((sum, w) => sum + position.get(w), 0) / near.length : position.get(v)];
      }));
      layer.sort((a, b) => barycenter.get(a) - barycenter.get(b));
      layer.forEach((v, i) => position.set(v, i));
    }
  }
  for (const layer of layers) layer?.forEach((v, i) => { g.node(v).order = i; });
}

function layout(data) {
  const started = performance.now();
  try {
    const g = new dagre.graphlib.Graph({ multigraph: true });
    g.setGraph({ rankdir: 'TB', nodesep: 18, ranksep: 28, edgesep: 8, marginx: 16, marginy: 16 });
    g.setDefaultEdgeLabel(() => ({}));
    data.nodes.forEach((n, i) => g.setNode(String(i), { width: n.width, height: n.height }));
    data.edges.forEach(([from, to], i) => g.setEdge(String(from), String(to), {}, String(i)));
    dagre.layout(g, { customOrder: orderRanks });
    const nodes = data.nodes.map((_, i) => { const n = g.node(String(i)); return { x: n.x, y: n.y }; });
    const edges = data.edges.map(([from, to], i) => g.edge(String(from), String(to), String(i)).points.flatMap((p) => [p.x, p.y]));
    const { width, height } = data.nodes.length ? g.graph() : { width: 0, height: 0 };
    self.postMessage(fromLayout.laidOut({ id: data.id, nodes, edges, width, height, ms: performance.now() - started }));
  } catch (e) {
    self.postMessage(fromLayout.laidOut({ id: data.id, error: e instanceof Error ? e.message : String(e) }));
  }
}

self.onmessage = ({ data }) => receive(toLayout, data, { layout },
  (said) => self.postMessage(fromLayout.laidOut({ id: data?.id, error: `the page sent an ${said}` })));
