// How the page writes ops, shapes and sizes: one place, so the drawings, the graph view and the
// properties panel say the same thing ("MaxPool 3×3 s1 p1", "Conv 3×3 s1 p1 · 64→64").
const SHORT = { BatchNormalization: 'BatchNorm', GlobalAveragePool: 'GlobalAvgPool' };

export const shortOp = (op) => SHORT[op] ?? op;

export function formatBytes(n) {
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(1)} MiB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${n} B`;
}

export function formatCount(n) {
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)} k`;
  return String(n);
}

const kernel = (k) => (k.length && k.every((v) => v === k[0]) ? `${k[0]}×${k[0]}` : k.join('×'));

// Pads [top, left, bottom, right] as "p1" when all equal, else the list.
function pads(p) {
  if (!p || p.every((v) => v === 0)) return null;
  return p.every((v) => v === p[0]) ? `p${p[0]}` : `p[${p.join(',')}]`;
}

function strides(s) {
  if (!s || !s.length) return 's1';
  return s.every((v) => v === s[0]) ? `s${s[0]}` : `s${s.join('×')}`;
}

// The attributes that matter to the hardware, in a few characters; '' for other ops.
export function opDetails(node) {
  const a = node.attributes ?? {};
  if (node.op === 'Conv' || node.op === 'ConvTranspose') {
    const weight = node.inputs[1]?.shape;
    const k = a.kernel_shape ?? (weight ? weight.slice(2) : []);
    const parts = [kernel(k), strides(a.strides), pads(a.pads), typeof a.auto_pad === 'string' && a.auto_pad !== 'NOTSET' ? a.auto_pad : null];
    if (a.dilations && a.dilations.some((d) => d !== 1)) parts.push(`d${a.dilations.join('×')}`);
    if (weight && typeof weight[0] === 'number' && typeof weight[1] === 'number') {
      const group = a.group ?? 1;
      const [cin, cout] = node.op === 'Conv' ? [weight[1] * group, weight[0]] : [weight[0], weight[1] * group];
      parts.push(`· ${cin}→${cout}`);
    }
    return parts.filter(Boolean).join(' ');
  }
  if (node.op === 'MaxPool' || node.op === 'AveragePool') {
    return [kernel(a.kernel_shape ?? []), strides(a.strides), pads(a.pads), a.ceil_mode ? 'ceil' : null].filter(Boolean).join(' ');
  }
  if (node.op === 'Pad' && Array.isArray(a.pads)) return pads(a.pads) ?? '';
  return '';
}

export function opLabel(node) {
  const details = opDetails(node);
  return details ? `${shortOp(node.op)} ${details}` : shortOp(node.op);
}

export function formatAttribute(value) {
  if (Array.isArray(value)) return `[${value.map((v) => (typeof v === 'number' ? +v.toPrecision(6) : v)).join(', ')}]`;
  if (typeof value === 'number') return String(+value.toPrecision(6));
  return String(value);
}
