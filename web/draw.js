// The before/after drawing of one rewrite: the matched chain and the chain that replaced it, each
// box carrying the attributes that matter (kernel, stride, pads, channels). The "after" row shows
// the nodes as they are in the converted model — after folding when folding is on — so a BatchNorm
// that folding removed a moment later is not drawn. Plain HTML lists, so rows wrap on a phone.
import { opLabel, shortOp } from './ops.js';

function chain(label, nodes, className) {
  const row = document.createElement('div');
  row.className = `chain ${className}`;
  const name = document.createElement('span');
  name.className = 'chain-label';
  name.textContent = label;
  const list = document.createElement('ol');
  list.className = 'ops';
  for (const node of nodes) {
    const item = document.createElement('li');
    item.className = 'op';
    item.textContent = node.label;
    item.title = node.name;
    list.append(item);
  }
  row.append(name, list);
  return row;
}

// `before(name)` and `after(name)` find a node in the input and the converted model's description
// (undefined when it is not there); without them the boxes show op types only.
export function drawRewrite(match, before, after) {
  const box = (name, op, find) => {
    const node = find?.(name);
    return { name, label: node ? opLabel(node) : shortOp(op) };
  };
  const drawing = document.createElement('div');
  drawing.className = 'drawing';
  drawing.append(chain('before', match.nodes.map((n, i) => box(n, match.node_ops[i], before)), 'before'));
  if (match.applied) {
    // Emitted nodes a later pass removed (an SPPF BatchNorm folded into its Conv) are not drawn.
    const final = match.new_nodes.map((n, i) => [n, match.new_node_ops[i]]).filter(([n]) => !after || after(n));
    drawing.append(chain('after', final.map(([n, op]) => box(n, op, after)), 'after'));
  }
  return drawing;
}
