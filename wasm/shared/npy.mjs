// numpy's .npy format (versions 1.0, 2.0 and 3.0) read into a typed array in C order. Imports
// nothing: the Node package and the page share it. The header is a Python dict literal, parsed
// here (never evaluated); pickled object arrays are refused, never unpickled.
//
// Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html

// The code of every error the data readers (npy, npz, preprocess, samples) throw: the user's data
// is not what they can read, or does not fit the model.
export const DATA_ERROR = 'ERR_ONNX_LATTICE_DATA';

// An error whose message starts with the file it is about.
export function dataError(file, message) {
  return Object.assign(new Error(file ? `${file}: ${message}` : message), { code: DATA_ERROR, file });
}

export const DEFAULT_MAX_BYTES = 2 ** 31;  // 2 GiB of array data
// numpy writes headers of a few hundred bytes (and refuses to read ones over 10000 by default);
// the limit only bounds what a corrupt length could make us decode.
export const MAX_HEADER_BYTES = 1 << 20;

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59];  // \x93NUMPY

// numpy's type character and size -> the ONNX element type, its typed array and item size.
const DTYPES = {
  f2: ['float16', Uint16Array], f4: ['float', Float32Array], f8: ['double', Float64Array],
  i1: ['int8', Int8Array], i2: ['int16', Int16Array], i4: ['int32', Int32Array], i8: ['int64', BigInt64Array],
  u1: ['uint8', Uint8Array], u2: ['uint16', Uint16Array], u4: ['uint32', Uint32Array], u8: ['uint64', BigUint64Array],
  b1: ['bool', Uint8Array],
};
// What the other numpy kinds are, for the refusal.
const REFUSED_KINDS = {
  O: 'pickled object arrays are refused, never unpickled',
  V: 'structured and void arrays are not supported: save one plain array per input (np.savez(path, **{name: array}))',
  S: 'byte-string arrays are not supported', a: 'byte-string arrays are not supported',
  U: 'unicode string arrays are not supported',
  c: 'complex arrays are not supported',
  M: 'datetime arrays are not supported', m: 'timedelta arrays are not supported',
};

// The numpy dtype name of an ONNX element type, for messages: what the user wrote in numpy.
export const NUMPY_NAME = {
  float16: 'float16', float: 'float32', double: 'float64', int8: 'int8', uint8: 'uint8', int16: 'int16',
  uint16: 'uint16', int32: 'int32', uint32: 'uint32', int64: 'int64', uint64: 'uint64', bool: 'bool',
};

// The typed array holding an ONNX element type (as onnxruntime's tensors do).
export const TYPED_ARRAY = Object.fromEntries(Object.values(DTYPES).map(([dtype, TypedArray]) => [dtype, TypedArray]));

// First bytes of a file as a Python bytes literal, to show what a file that is not what it should be is.
export function firstBytes(bytes) {
  let text = '';
  for (const b of bytes.subarray(0, 8)) {
    text += b >= 0x20 && b < 0x7f && b !== 0x27 && b !== 0x5c ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`;
  }
  return `'${text}${bytes.length > 8 ? '…' : ''}'`;
}

// What a file starting with these bytes probably is, for the message that it is not a .npy.
function guessKind(bytes) {
  const starts = (...sig) => sig.every((b, i) => bytes[i] === b);
  if (starts(0x50, 0x4b, 0x03, 0x04) || starts(0x50, 0x4b, 0x05, 0x06)) return ', a zip: .npz?';
  if (starts(0x89, 0x50, 0x4e, 0x47)) return ', a PNG image';
  if (starts(0xff, 0xd8, 0xff)) return ', a JPEG image';
  if (starts(0x80) && bytes.length > 1 && bytes[1] <= 5) return ', a Python pickle: save with np.save';
  return '';
}

// A parser of the Python literals a .npy header holds: a dict of str keys, str, int, True /
// False / None, tuples and lists (structured dtypes' descr is a list of tuples; it is parsed to be
// refused by name). Anything else (calls, expressions) is malformed.
function parseLiteral(text) {
  let at = 0;
  const fail = (what) => {
    throw new SyntaxError(`${what} at character ${at}`);
  };
  const space = () => {
    while (at < text.length && ' \t\r\n'.includes(text[at])) at += 1;
  };
  const value = (depth) => {
    if (depth > 16) fail('nesting too deep');
    space();
    const c = text[at];
    if (c === "'" || c === '"') {
      const end = text.indexOf(c, at + 1);
      if (end < 0) fail('unterminated string');
      const s = text.slice(at + 1, end);
      if (s.includes('\\')) fail('escape in a string');
      at = end + 1;
      return s;
    }
    if (c === '{' || c === '(' || c === '[') {
      const close = { '{': '}', '(': ')', '[': ']' }[c];
      at += 1;
      const items = [], entries = [];
      let sawComma = false;
      for (;;) {
        space();
        if (text[at] === close) {
          at += 1;
          break;
        }
        if (c === '{') {
          const key = value(depth + 1);
          if (typeof key !== 'string') fail('a key that is not a string');
          space();
          if (text[at] !== ':') fail("':' expected");
          at += 1;
          entries.push([key, value(depth + 1)]);
        } else {
          items.push(value(depth + 1));
        }
        space();
        if (text[at] === ',') {
          at += 1;
          sawComma = true;
        } else if (text[at] !== close) {
          fail(`',' or '${close}' expected`);
        }
      }
      if (c === '{') return { dict: entries };
      // (3) is the number 3, (3,) a tuple: numpy writes the comma for one dimension.
      if (c === '(' && items.length === 1 && !sawComma) return items[0];
      return c === '(' ? { tuple: items } : { list: items };
    }
    const word = /^(?:-?\d+L?|True|False|None)/.exec(text.slice(at, at + 32));
    if (!word) fail('unexpected character');
    at += word[0].length;
    if (word[0] === 'True') return true;
    if (word[0] === 'False') return false;
    if (word[0] === 'None') return null;
    return Number(word[0].replace('L', ''));  // 3L: Python 2's long
  };
  const result = value(0);
  space();
  if (at !== text.length) fail('text after the literal');
  return result;
}

function latin1(raw) {
  let text = '';
  for (let i = 0; i < raw.length; i += 8192) text += String.fromCharCode(...raw.subarray(i, i + 8192));
  return text;
}

// A parsed literal written back as Python would, for messages.
function repr(value) {
  if (typeof value === 'string') return `'${value}'`;
  if (value === true || value === false) return value ? 'True' : 'False';
  if (value === null) return 'None';
  if (value?.tuple) return `(${value.tuple.map(repr).join(', ')}${value.tuple.length === 1 ? ',' : ''})`;
  if (value?.list) return `[${value.list.map(repr).join(', ')}]`;
  if (value?.dict) return `{${value.dict.map(([k, v]) => `'${k}': ${repr(v)}`).join(', ')}}`;
  return String(value);
}

// {dtype, TypedArray, itemSize, bigEndian} of a descr such as '<f4', '|b1', '>i8'.
function parseDescr(descr, fail) {
  if (typeof descr !== 'string') {
    throw fail(`its dtype is structured (a list of fields): ${REFUSED_KINDS.V}`);
  }
  const m = /^([<>|=]?)([A-Za-z])(\d*)(\[.*\])?$/.exec(descr);
  if (!m) throw fail(`its dtype '${descr}' is not one numpy writes`);
  const [, order, kind, size, unit] = m;
  if (REFUSED_KINDS[kind]) throw fail(`its dtype is '${descr}': ${REFUSED_KINDS[kind]}`);
  const known = !unit && DTYPES[kind + size];
  if (!known) {
    throw fail(`its dtype '${descr}' is not supported (float16/32/64, int8…int64, uint8…uint64 and bool are)`);
  }
  const [dtype, TypedArray] = known;
  const itemSize = TypedArray.BYTES_PER_ELEMENT;
  if (order === '|' && itemSize > 1) throw fail(`its dtype '${descr}' has no byte order`);
  // '=' is the reader's native order, as numpy reads it; JavaScript's typed arrays are little-endian.
  return { dtype, TypedArray, itemSize, bigEndian: order === '>' && itemSize > 1 };
}

// The header's fields: {dtype, TypedArray, itemSize, bigEndian, fortranOrder, shape, dataOffset}.
function readHeader(bytes, name) {
  const fail = (message) => dataError(name, message);
  if (bytes.length < MAGIC.length || MAGIC.some((b, i) => bytes[i] !== b)) {
    throw fail(`not a .npy file (its first bytes are ${firstBytes(bytes)}${guessKind(bytes)})`);
  }
  if (bytes.length < 10) throw fail(`the file ends inside its header (${bytes.length} bytes)`);
  const [major, minor] = [bytes[6], bytes[7]];
  if (![1, 2, 3].includes(major) || minor !== 0) {
    throw fail(`.npy format version ${major}.${minor} is not supported (1.0, 2.0 and 3.0 are)`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let headerLength, headerStart;
  if (major === 1) {
    [headerLength, headerStart] = [view.getUint16(8, true), 10];
  } else {
    if (bytes.length < 12) throw fail(`the file ends inside its header (${bytes.length} bytes)`);
    [headerLength, headerStart] = [view.getUint32(8, true), 12];
  }
  if (headerLength > MAX_HEADER_BYTES) throw fail(`its header declares ${headerLength} bytes, over the limit of ${MAX_HEADER_BYTES}`);
  const dataOffset = headerStart + headerLength;
  if (dataOffset > bytes.length) {
    throw fail(`the file ends inside its header (the header declares ${headerLength} bytes, the file has ${bytes.length - headerStart} after the preamble)`);
  }
  // Versions 1.0 and 2.0 are latin-1, 3.0 UTF-8.
  const raw = bytes.subarray(headerStart, dataOffset);
  const text = major === 3 ? new TextDecoder('utf-8').decode(raw) : latin1(raw);
  let header;
  try {
    header = parseLiteral(text);
  } catch (e) {
    throw fail(`malformed header (${e.message}): ${JSON.stringify(text.trim().slice(0, 120))}`);
  }
  const keys = header?.dict?.map(([k]) => k);
  const expected = ['descr', 'fortran_order', 'shape'];
  if (!keys || keys.length !== 3 || !expected.every((k) => keys.includes(k))) {
    throw fail(`malformed header: a dict with exactly the keys ${expected.join(', ')} expected, got ${JSON.stringify(text.trim().slice(0, 120))}`);
  }
  const field = Object.fromEntries(header.dict);
  const descr = parseDescr(field.descr, fail);
  if (typeof field.fortran_order !== 'boolean') throw fail(`malformed header: fortran_order ${repr(field.fortran_order)} is not True or False`);
  const shape = field.shape?.tuple;
  if (!shape || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw fail(`malformed header: shape ${repr(field.shape)} is not a tuple of non-negative integers`);
  }
  return { ...descr, fortranOrder: field.fortran_order, shape, dataOffset };
}

// The element count and byte size of a shape, refused when over maxBytes before anything is
// allocated (BigInt: a product of dimensions can pass 2^53).
function sizeOf(shape, itemSize, dtype, maxBytes, fail) {
  let count = 1n;
  for (const d of shape) count *= BigInt(d);
  const bytes = count * BigInt(itemSize);
  if (bytes > BigInt(maxBytes)) {
    throw fail(`its shape [${shape.join(', ')}] of ${NUMPY_NAME[dtype]} needs ${bytes} bytes, over the limit of ${maxBytes} bytes (maxBytes)`);
  }
  return [Number(count), Number(bytes)];
}

// The element at C-order position i comes from Fortran-order position f: walk the C order with an
// odometer, moving f by the Fortran stride of each axis that steps.
function fortranToC(source, shape) {
  const out = new source.constructor(source.length);
  const rank = shape.length;
  const stride = new Array(rank);
  for (let axis = 0, s = 1; axis < rank; ++axis) {
    stride[axis] = s;
    s *= shape[axis];
  }
  const index = new Array(rank).fill(0);
  let f = 0;
  for (let i = 0; i < out.length; ++i) {
    out[i] = source[f];
    for (let axis = rank - 1; axis >= 0; --axis) {
      index[axis] += 1;
      f += stride[axis];
      if (index[axis] < shape[axis]) break;
      f -= stride[axis] * shape[axis];
      index[axis] = 0;
    }
  }
  return out;
}

// Reads a .npy file: {dtype (ONNX element type name), shape, data (typed array, C order), notes}.
// `data` is a view of `bytes` when the file's data is aligned, little-endian and in C order (no
// copy), else a copy. float16 data are the half bits (Uint16Array); bool data are 0 or 1.
export function readNpy(bytes, name, { maxBytes = DEFAULT_MAX_BYTES } = {}) {
  if (!(bytes instanceof Uint8Array)) throw new TypeError('readNpy: bytes must be a Uint8Array');
  const fail = (message) => dataError(name, message);
  const { dtype, TypedArray, itemSize, bigEndian, fortranOrder, shape, dataOffset } = readHeader(bytes, name);
  const [count, byteLength] = sizeOf(shape, itemSize, dtype, maxBytes, fail);
  const available = bytes.length - dataOffset;
  const shapeText = `[${shape.join(', ')}]`;
  if (available < byteLength) {
    throw fail(`truncated: its shape ${shapeText} of ${NUMPY_NAME[dtype]} needs ${byteLength} bytes of data, the file has ${available}`);
  }
  if (available > byteLength) {
    // np.load ignores them; here they mean the header's shape is not the data's, or several
    // arrays were saved into one file, so they are refused rather than silently dropped.
    throw fail(`${available - byteLength} bytes after the data its shape ${shapeText} of ${NUMPY_NAME[dtype]} needs (${byteLength}): ` +
      'a header that does not describe the data, or several arrays saved into one file');
  }
  const notes = [];
  const start = bytes.byteOffset + dataOffset;
  let data;
  if (!bigEndian && start % itemSize === 0) {
    data = new TypedArray(bytes.buffer, start, count);
  } else {
    data = new TypedArray(count);
    const out = new Uint8Array(data.buffer);
    out.set(bytes.subarray(dataOffset, dataOffset + byteLength));
    if (bigEndian) {
      for (let i = 0; i < byteLength; i += itemSize) out.subarray(i, i + itemSize).reverse();
      notes.push('big-endian data converted to little-endian');
    }
  }
  if (fortranOrder && shape.length > 1) {
    data = fortranToC(data, shape);
    notes.push('Fortran-order data transposed to C order');
  }
  if (dtype === 'bool' && data.some((b) => b > 1)) {
    // numpy reads any non-zero byte as True; onnxruntime expects 0 or 1.
    data = data.map((b) => (b ? 1 : 0));
    notes.push('bool bytes other than 0 and 1 read as true');
  }
  return { dtype, shape, data, notes };
}
