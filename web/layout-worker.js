// Lays out a graph with dagre (the layered layout Netron's descends from) off the page's main
// thread. In: {id, nodes: [{width, height}], edges: [[from, to]]} (indices). Out: {id, nodes:
// [{x, y}] (centres), edges: [[x, y, ...]] (polyline points), width, height, ms} or {id, error}.
/* global dagre, importScripts */
importScripts('dagre.min.js');

self.onmessage = ({ data }) => {
  const started = performance.now();
  try {
    const g = new dagre.graphlib.Graph({ multigraph: true });
    g.setGraph({ rankdir: 'TB', nodesep: 18, ranksep: 28, edgesep: 8, marginx: 16, marginy: 16 });
    g.setDefaultEdgeLabel(() => ({}));
    data.nodes.forEach((n, i) => g.setNode(String(i), { width: n.width, height: n.height }));
    data.edges.forEach(([from, to], i) => g.setEdge(String(from), String(to), {}, String(i)));
    dagre.layout(g);
    const nodes = data.nodes.map((_, i) => { const n = g.node(String(i)); return { x: n.x, y: n.y }; });
    const edges = data.edges.map(([from, to], i) => g.edge(String(from), String(to), String(i)).points.flatMap((p) => [p.x, p.y]));
    const { width, height } = g.graph();
    self.postMessage({ id: data.id, nodes, edges, width, height, ms: performance.now() - started });
  } catch (e) {
    self.postMessage({ id: data.id, error: e instanceof Error ? e.message : String(e) });
  }
};
