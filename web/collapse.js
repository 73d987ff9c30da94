// Which boxes the graph view draws: a deep model drawn one box per node is a column too long to
// read when fitted (ResNet-50: 122 ranks, labels under 2 px at Fit), so nodes are gathered into
// boxes until the graph is at most MAX_RANKS boxes deep, the finest gathering that gets there:
//  - a chain: a run of nodes each read by the next alone, each reading only the one before
//    ("Conv · Relu · Conv"), as a model's straight stretches are;
//  - a block: the nodes whose names share a namespace (`/layer1/layer1.0/...`: exporters name
//    nodes after the module they came from, and Model Explorer gathers them so), from the
//    deepest namespaces up to the top-level ones until the graph is shallow enough.
// A box the user opened (by its id, in `open`) shows what it holds instead, one level finer: a
// block its inner blocks, chains and nodes, a chain its nodes. Loaded with the first graph drawn
// collapsed, off the page's first load.
import { opLabel, shortOp } from './ops.js';

// 12 px labels stay 9 px or more at Fit in a 600 px box (the graph's at 1280×800) up to 13 ranks
// of 28 px boxes 28 px apart; one less leaves room for a box two ranks tall.
export const MAX_RANKS = 12;

// `/layer1/layer1.0/conv1/Conv` → ['/layer1', '/layer1/layer1.0', '/layer1/layer1.0/conv1'].
function namespaces(name) {
  const parts = name.split('/').slice(0, -1);
  const out = [];
  for (let i = 1; i < parts.length; ++i) if (parts[i]) out.push(parts.slice(0, i + 1).join('/'));
  return out;
}

// The longest path in boxes; an edge back to a box on the path (a block a node outside it sits
// inside of) is passed over, as the layout reverses it.
function depth(count, edges) {
  const next = Array.from({ length: count }, () => []);
  for (const [a, b] of edges) next[a].push(b);
  const memo = new Array(count).fill(0), onPath = new Uint8Array(count);
  const visit = (root) => {
    const stack = [[root, 0]];
    onPath[root] = 1;
    while (stack.length) {
      const top = stack[stack.length - 1];
      const [v, i] = top;
      if (i < next[v].length) {
        top[1] += 1;
        const w = next[v][i];
        if (!memo[w] && !onPath[w]) { onPath[w] = 1; stack.push([w, 0]); }
        continue;
      }
      memo[v] = 1 + Math.max(0, ...next[v].filter((w) => !onPath[w]).map((w) => memo[w]));
      onPath[v] = 0;
      stack.pop();
    }
  };
  for (let v = 0; v < count; ++v) if (!memo[v]) visit(v);
  return Math.max(0, ...memo);
}

function chainLabel(ops) {
  const names = ops.map(shortOp);
  return names.length <= 5 ? names.join(' · ') : `${names.slice(0, 2).join(' · ')} · … · ${names.at(-1)} (${names.length} ops)`;
}

// Boxes with every namespace `level` deep or deeper closed (Infinity: none) and chains closed
// (`chains` false: none), less what `open` opens.
function gather(description, edges, paths, size, open, level, chains) {
  const { nodes } = description;
  // A node's block: its shallowest closed namespace from `level` down holding more than itself,
  // skipping one that holds just what the next one in does (opening it would show the same box).
  const blockOf = paths.map((path) => {
    for (let d = level - 1; d < path.length; ++d) {
      const ns = path[d];
      if (open.has(ns) || size.get(ns) < 2) continue;
      if (d + 1 < path.length && size.get(path[d + 1]) === size.get(ns)) continue;
      return ns;
    }
    return null;
  });
  const readers = nodes.map(() => new Set()), producers = nodes.map(() => new Set());
  for (const [a, b] of edges) { readers[a].add(b); producers[b].add(a); }
  const free = (i) => blockOf[i] === null;
  // b continues a's chain: a is read by b alone, and b reads a alone.
  const links = (a, b) => free(a) && free(b) && readers[a].size === 1 && producers[b].size === 1;
  const units = [], unitOf = new Array(nodes.length);
  const add = (unit) => { for (const m of unit.members) unitOf[m] = units.length; units.push(unit); };
  const blocks = new Map();
  nodes.forEach((node, i) => {
    if (unitOf[i] !== undefined) return;
    if (!free(i)) {
      const ns = blockOf[i];
      if (!blocks.has(ns)) { blocks.set(ns, units.length); units.push({ id: ns, kind: 'block', members: [], label: '' }); }
      units[blocks.get(ns)].members.push(i);
      unitOf[i] = blocks.get(ns);
      return;
    }
    // A chain starts at a node that does not continue one.
    const [before] = producers[i];
    if (chains && producers[i].size === 1 && links(before, i)) return;
    const members = [i];
    if (chains) for (let v = i; readers[v].size === 1;) { const [w] = readers[v]; if (!links(v, w)) break; members.push(w); v = w; }
    const id = `chain:${node.name}`;
    if (members.length > 1 && !open.has(id)) add({ id, kind: 'chain', members, label: chainLabel(members.map((m) => nodes[m].op)) });
    else for (const m of members) add({ id: nodes[m].name, kind: 'node', members: [m], label: opLabel(nodes[m]) });
  });
  // Chain members after a node visited first (a chain's start comes later in the node list than a
  // member only in a graph out of topological order) were skipped above: each its own box.
  nodes.forEach((node, i) => { if (unitOf[i] === undefined) add({ id: node.name, kind: 'node', members: [i], label: opLabel(node) }); });
  for (const u of blocks.values()) {
    const unit = units[u];
    unit.label = `${unit.id.slice(unit.id.lastIndexOf('/') + 1)} (${unit.members.length} nodes)`;
  }
  const seen = new Set(), unitEdges = [];
  for (const [a, b] of edges) {
    const [u, v] = [unitOf[a], unitOf[b]];
    if (u !== v && !seen.has(`${u} ${v}`)) { seen.add(`${u} ${v}`); unitEdges.push([u, v]); }
  }
  return { units, unitOf, edges: unitEdges, ranks: depth(units.length, unitEdges) };
}

// `edges`: [[from, to]] node indices (graph.js's edgesOf); `open`: the ids of boxes the user
// opened. Returns {units: [{id, kind: 'node' | 'chain' | 'block', members: [node index], label}],
// edges: [[from, to]] unit indices, ranks}. The gathering is the first, finest first, at most
// MAX_RANKS deep with nothing opened — every node its own box, chains, then blocks from the
// deepest namespaces up — else the coarsest; it stays while boxes are opened, so opening one only
// ever shows more.
export function collapse(description, edges, open = new Set()) {
  const paths = description.nodes.map((n) => namespaces(n.name));
  const size = new Map();
  for (const path of paths) for (const ns of path) size.set(ns, (size.get(ns) ?? 0) + 1);
  const deepest = Math.max(0, ...paths.map((p) => p.length));
  // A namespace whose nodes lie in one chain is drawn as (part of) that chain, which names its ops:
  // a block box would only hide them (`/conv1`: Pad and Conv, in "Pad · Conv · Relu · MaxPool").
  const chains = gather(description, edges, paths, size, new Set(), Infinity, true);
  const linear = new Set(size.keys()), chainOf = new Map();
  paths.forEach((path, i) => path.forEach((ns) => {
    if (!chainOf.has(ns)) chainOf.set(ns, chains.unitOf[i]);
    else if (chainOf.get(ns) !== chains.unitOf[i]) linear.delete(ns);
  }));
  const tries = [[Infinity, false], [Infinity, true]];
  for (let level = deepest; level >= 1; --level) tries.push([level, true]);
  let chosen = tries.at(-1);
  for (const [level, chained] of tries) {
    const found = gather(description, edges, paths, size, linear, level, chained);
    if (found.ranks <= MAX_RANKS) { if (!open.size) return found; chosen = [level, chained]; break; }
  }
  return gather(description, edges, paths, size, new Set([...linear, ...open]), ...chosen);
}
