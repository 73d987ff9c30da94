// A small before/after drawing of one rewrite: the matched chain of ops, an arrow, and the
// chain that replaced it. Plain SVG, built with DOM calls (no innerHTML of report text).
const NS = 'http://www.w3.org/2000/svg';
const BOX_W = 92, BOX_H = 24, GAP = 14, ROW = 40;

function el(name, attrs, text) {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

const SHORT = { BatchNormalization: 'BatchNorm', GlobalAveragePool: 'GlobalAvgPool' };

function row(svg, ops, y, fill) {
  ops.map((op) => SHORT[op] ?? op).forEach((op, i) => {
    const x = 70 + i * (BOX_W + GAP);
    svg.append(el('rect', { x, y, width: BOX_W, height: BOX_H, rx: 4, fill, stroke: '#5b6577' }));
    svg.append(el('text', { x: x + BOX_W / 2, y: y + 16, 'text-anchor': 'middle' }, op.length > 15 ? `${op.slice(0, 14)}…` : op));
    if (i > 0) svg.append(el('line', { x1: x - GAP, y1: y + BOX_H / 2, x2: x, y2: y + BOX_H / 2, stroke: '#5b6577' }));
  });
}

export function drawRewrite(match) {
  const after = match.applied ? match.new_node_ops : [];
  const width = 80 + Math.max(match.node_ops.length, after.length, 1) * (BOX_W + GAP);
  const svg = el('svg', { viewBox: `0 0 ${width} ${after.length ? 2 * ROW + 4 : ROW}`, width, role: 'img',
    'aria-label': `${match.node_ops.join(' → ')} becomes ${after.join(' → ') || 'unchanged'}` });
  svg.append(el('text', { x: 0, y: 20 }, 'before'));
  row(svg, match.node_ops, 4, '#f4f6f9');
  if (after.length) {
    svg.append(el('text', { x: 0, y: ROW + 20 }, 'after'));
    row(svg, after, ROW + 4, '#e6f0fb');
  }
  return svg;
}
