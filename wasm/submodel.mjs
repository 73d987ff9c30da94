// A part of an ONNX model as a model of its own: the nodes that compute some tensors from others,
// with the initializers they read. The repair runs a model layer by layer; running the whole model
// for every layer cost one full pass per refitted layer (two before a Relu), where running only
// the part between the tensors it holds and the next layer's costs about one pass in all.
// Cut at the protocol-buffer wire level: nodes, initializers and the model's other fields are
// copied as they are, never decoded or re-encoded, so the part computes what the whole does.
// One module for both shells (the repair's, in Node and the page); no dependencies.

const utf8 = new TextDecoder();
const encoder = new TextEncoder();

function readVarint(bytes, at) {
  let value = 0, scale = 1, byte;
  do {
    if (at >= bytes.length) throw new Error('a varint runs past the end of the model');
    byte = bytes[at++];
    value += (byte & 127) * scale;
    scale *= 128;
  } while (byte & 128);
  return [value, at];
}

// The fields of the message in bytes[from, to): {number, start, end, payload: [from, to) of a
// length-delimited field's contents}.
function fields(bytes, from, to) {
  const out = [];
  let at = from;
  while (at < to) {
    const start = at;
    let key, length;
    [key, at] = readVarint(bytes, at);
    const number = Math.floor(key / 8), wire = key % 8;
    let payload = null;
    if (wire === 0) [, at] = readVarint(bytes, at);
    else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else if (wire === 2) {
      [length, at] = readVarint(bytes, at);
      payload = [at, at + length];
      at += length;
    } else {
      throw new Error(`wire type ${wire} (a group), which ONNX does not use`);
    }
    if (at > to) throw new Error('a field runs past the end of its message');
    out.push({ number, start, end: at, payload });
  }
  return out;
}

const text = (bytes, [from, to]) => utf8.decode(bytes.subarray(from, to));
const firstText = (bytes, payload, number) => {
  const f = fields(bytes, ...payload).findLast((x) => x.number === number && x.payload);
  return f ? text(bytes, f.payload) : '';
};

// Every tensor name a node's subgraphs (If, Loop, Scan: AttributeProto g = 6, graphs = 11) read,
// their own included: a part that keeps such a node must compute whatever of the outer graph
// they may take from it. Names the inner graphs make themselves are kept too, which costs at
// most a node more in the part (an inner name is found in the outer graph only if it is there).
function subgraphReads(bytes, [from, to], into) {
  for (const g of fields(bytes, from, to)) {
    if (g.number !== 1 || !g.payload) continue;  // GraphProto.node
    for (const f of fields(bytes, ...g.payload)) {
      if (f.number === 1 && f.payload) into.add(text(bytes, f.payload));  // NodeProto.input
      if (f.number === 5 && f.payload) attributeReads(bytes, f.payload, into);
    }
  }
}
function attributeReads(bytes, payload, into) {
  for (const a of fields(bytes, ...payload)) if ((a.number === 6 || a.number === 11) && a.payload) subgraphReads(bytes, a.payload, into);
}

// The model's graph as spans of its bytes: each node with the names it reads and writes, the
// initializers and graph inputs by name; and the model's other fields (IR version, opsets,
// functions, metadata), which every part carries.
export function indexModel(bytes) {
  const model = { bytes, top: [], nodes: [], initializers: new Map(), inputs: new Map(), name: null };
  for (const f of fields(bytes, 0, bytes.length)) {
    if (f.number !== 7 || !f.payload) { model.top.push([f.start, f.end]); continue; }
    // Protocol buffers merge a message field given twice: every graph field adds to the one graph.
    for (const g of fields(bytes, ...f.payload)) {
      if (!g.payload) continue;
      if (g.number === 1) {
        const node = { span: [g.start, g.end], inputs: [], outputs: [] };
        for (const n of fields(bytes, ...g.payload)) {
          if (n.number === 1 && n.payload) node.inputs.push(text(bytes, n.payload));
          else if (n.number === 2 && n.payload) node.outputs.push(text(bytes, n.payload));
          else if (n.number === 5 && n.payload) {
            const inner = new Set();
            attributeReads(bytes, n.payload, inner);
            if (inner.size) node.inner = inner;
          }
        }
        model.nodes.push(node);
      } else if (g.number === 5) {
        model.initializers.set(firstText(bytes, g.payload, 8), [g.start, g.end]);  // TensorProto.name
      } else if (g.number === 15) {
        // SparseTensorProto: its name is its values' (field 1, a TensorProto).
        const values = fields(bytes, ...g.payload).findLast((x) => x.number === 1 && x.payload);
        if (values) model.initializers.set(firstText(bytes, values.payload, 8), [g.start, g.end]);
      } else if (g.number === 11) {
        model.inputs.set(firstText(bytes, g.payload, 1), [g.start, g.end]);
      } else if (g.number === 2) {
        model.name = [g.start, g.end];
      }
    }
  }
  return model;
}

function varint(n) {
  const out = [];
  for (; n > 127; n = Math.floor(n / 128)) out.push((n % 128) | 128);
  out.push(n);
  return out;
}
// Byte arrays as one (also the converter's output parts, engine.mjs): this module has no imports,
// so the page and Node share it.
export function joinParts(parts) {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
const lengthField = (number, payload) => joinParts([Uint8Array.from([...varint(number * 8 + 2), ...varint(payload.length)]), payload]);
const varintField = (number, value) => Uint8Array.from([...varint(number * 8), ...varint(value)]);

// ONNX's element types by the runtime's tensor type names.
const ELEMENT_TYPES = {
  float32: 1, uint8: 2, int8: 3, uint16: 4, int16: 5, int32: 6, int64: 7, string: 8, bool: 9,
  float16: 10, float64: 11, uint32: 12, uint64: 13,
};

// A graph input for a tensor the part is given: its type and rank, its first dimension (the
// samples) left free so that every batch runs in one session.
function givenInput(name, { type, dims }) {
  const elementType = ELEMENT_TYPES[type];
  if (!elementType) throw new Error(`'${name}': a tensor of type ${type} cannot be given to a part of the model`);
  const dim = (d, i) => lengthField(1, i === 0 ? lengthField(2, encoder.encode('n')) : varintField(1, d));
  const shape = lengthField(2, joinParts(dims.map(dim)));
  const tensorType = lengthField(1, joinParts([varintField(1, elementType), shape]));
  return lengthField(11, joinParts([lengthField(1, encoder.encode(name)), lengthField(2, tensorType)]));
}

// The nodes (indices, in the model's order) that compute `wanted` from `given` (names the caller
// holds): every node that writes a wanted name not given, and what those read, back to given
// names, initializers and graph inputs.
export function partNodes(model, given, wanted) {
  const needed = new Set(wanted);
  const kept = [];
  for (let i = model.nodes.length - 1; i >= 0; --i) {
    const node = model.nodes[i];
    if (!node.outputs.some((o) => o && needed.has(o) && !given.has(o))) continue;
    kept.push(i);
    for (const name of node.inputs) if (name) needed.add(name);
    for (const name of node.inner ?? []) needed.add(name);
  }
  return kept.reverse();
}

// The part of `model` (indexModel's) computing `outputs` from the tensors in `given` (a Map of
// name to {type, dims}): {bytes, inputs (the given names it reads), nodes}. A name it needs that
// is neither given, computed in it, nor an initializer is an error (an inner graph's own names
// excepted, which the outer graph does not know).
export function submodel(model, given, outputs) {
  const nodes = partNodes(model, given, outputs);
  const written = new Set(nodes.flatMap((i) => model.nodes[i].outputs));
  const parts = [], inputs = [], initializers = [];
  for (const i of nodes) {
    const node = model.nodes[i];
    for (const name of [...node.inputs, ...(node.inner ?? [])]) {
      if (!name || written.has(name) || inputs.includes(name) || initializers.includes(name)) continue;
      if (given.has(name)) inputs.push(name);
      else if (model.initializers.has(name)) initializers.push(name);
      else if (model.inputs.has(name) || node.inputs.includes(name)) throw new Error(`a part of the model needs '${name}', which it was not given`);
    }
  }
  for (const name of outputs) {
    if (!written.has(name)) throw new Error(`no node of the model computes '${name}' from what was given`);
  }
  const span = ([from, to]) => model.bytes.subarray(from, to);
  if (model.name) parts.push(span(model.name));
  for (const i of nodes) parts.push(span(model.nodes[i].span));
  for (const name of initializers) parts.push(span(model.initializers.get(name)));
  for (const name of inputs) parts.push(givenInput(name, given.get(name)));
  for (const name of outputs) parts.push(lengthField(12, lengthField(1, encoder.encode(name))));
  const graph = lengthField(7, joinParts(parts));
  return { bytes: joinParts([...model.top.map(span), graph]), inputs, nodes };
}
