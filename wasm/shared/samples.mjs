// The user's arrays -> the model's feeds: which array feeds which graph input, whether its shape
// fits, its values converted to the input's element type as numpy's astype would (refusing where
// numpy's result is undefined or wraps), the samples counted on axis 0, and the labels. Imports
// nothing but its sibling modules: the Node package and the page share it.
import { fromHalf, toHalf } from './half.mjs';
import { DEFAULT_MAX_BYTES, NUMPY_NAME, TYPED_ARRAY, dataError } from './npy.mjs';
import { isImage, kindOfName } from './sample_files.mjs';

// ONNX element type -> onnxruntime's tensor type name (check.mjs's ELEMENT).
const ORT_TYPE = {
  float: 'float32', double: 'float64', float16: 'float16', int8: 'int8', uint8: 'uint8', int16: 'int16',
  uint16: 'uint16', int32: 'int32', uint32: 'uint32', int64: 'int64', uint64: 'uint64', bool: 'bool',
};
const FLOATING = new Set(['float', 'double', 'float16']);
const WIDE = new Set(['int64', 'uint64']);
// The range of each integer type, as BigInt (exact for the 64-bit ones).
const RANGE = {
  int8: [-(2n ** 7n), 2n ** 7n - 1n], uint8: [0n, 2n ** 8n - 1n], int16: [-(2n ** 15n), 2n ** 15n - 1n],
  uint16: [0n, 2n ** 16n - 1n], int32: [-(2n ** 31n), 2n ** 31n - 1n], uint32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n], uint64: [0n, 2n ** 64n - 1n],
};

const shapeText = (shape) => `[${shape.map((d) => (typeof d === 'number' && d >= 0 ? d : d === '?' ? '?' : String(d))).join(', ')}]`;
const numel = (shape) => shape.reduce((a, b) => a * b, 1);

// The index of flat element `at` in `shape`, for messages.
function indexOf(at, shape) {
  const index = new Array(shape.length);
  for (let axis = shape.length - 1; axis >= 0; --axis) {
    index[axis] = at % shape[axis];
    at = Math.floor(at / shape[axis]);
  }
  return `[${index.join(', ')}]`;
}

// A BigInt rounded to the nearest double with `bits` significant bits, ties to even, in one
// rounding (Number() then Math.fround would round twice beyond 2^53).
function bigToFloat(v, bits) {
  if (v >= -(2n ** 53n) && v <= 2n ** 53n) return Number(v);  // exact: rounded once when stored
  const negative = v < 0n;
  let a = negative ? -v : v;
  const excess = a.toString(2).length - bits;
  if (excess > 0) {
    const unit = 1n << BigInt(excess), rest = a % unit, half = unit >> 1n;
    a -= rest;
    if (rest > half || (rest === half && (a / unit) % 2n === 1n)) a += unit;
  }
  return negative ? -Number(a) : Number(a);
}

// The values of an array as a reader of one element at a time: doubles for the floating and
// 32-bit types, BigInts for the 64-bit ones.
function elementReader(dtype, data) {
  if (dtype === 'float16') return (i) => fromHalf(data[i]);
  return (i) => data[i];
}

// `array` ({dtype, shape, data}) as `type`: {data, converted}. `where` names it in messages.
export function convertArray(array, type, where) {
  const { dtype, shape, data } = array;
  if (dtype === type) return { data, converted: false };
  const TypedArray = TYPED_ARRAY[type];
  if (!TypedArray) throw dataError(where, `cannot convert to ${type}`);
  const n = data.length;
  const out = new TypedArray(n);
  const read = elementReader(dtype, data);
  const refuse = (i, why) => {
    throw dataError(where, `value ${read(i)} at index ${indexOf(i, shape)} ${why}`);
  };
  const fromBig = WIDE.has(dtype);
  if (type === 'bool') {
    // numpy: any non-zero value (NaN included) is True.
    const zero = fromBig ? 0n : 0;
    for (let i = 0; i < n; ++i) out[i] = dtype === 'float16' ? (data[i] & 0x7fff ? 1 : 0) : data[i] !== zero ? 1 : 0;
  } else if (FLOATING.has(type)) {
    const bits = type === 'float' ? 24 : 53;
    for (let i = 0; i < n; ++i) {
      const v = fromBig ? bigToFloat(data[i], bits) : read(i);  // integers to 2^53: exact
      out[i] = type === 'float16' ? toHalf(v) : v;  // a Float32Array rounds to nearest, ties to even
    }
  } else {
    const [lo, hi] = RANGE[type];
    const wide = WIDE.has(type), fromFloat = FLOATING.has(dtype);
    const [low, high] = [Number(lo), Number(hi)];  // exact for the ≤ 32-bit types
    const misfit = `does not fit ${NUMPY_NAME[type]} (numpy's astype would wrap it or give an undefined value)`;
    for (let i = 0; i < n; ++i) {
      let v = read(i);
      if (fromFloat) {
        if (!Number.isFinite(v)) refuse(i, `cannot become ${NUMPY_NAME[type]} (numpy's astype gives an undefined value)`);
        v = Math.trunc(v);  // toward zero, as astype
      }
      if (typeof v === 'number' && !wide) {
        if (v < low || v > high) refuse(i, misfit);
        out[i] = v;
      } else {
        const big = BigInt(v);
        if (big < lo || big > hi) refuse(i, misfit);
        out[i] = wide ? big : Number(big);
      }
    }
  }
  return { data: out, converted: true };
}

// What each graph input reads: [[input, key]] where key is the array's name (null: the one
// array of a .npy). Errors name the model's inputs and the file's arrays.
function assign(arrays, inputs, source) {
  const inputNames = inputs.map((i) => i.name);
  if (!inputs.length) throw dataError(source, 'the model has no graph inputs to feed');
  if (arrays.has(null)) {
    if (arrays.size > 1) throw new TypeError('samplesForInputs: the key null stands for a .npy\'s only array');
    if (inputs.length > 1) {
      throw dataError(source, `one array for a model of ${inputs.length} inputs (${inputNames.join(', ')}): ` +
        'give an .npz with one array per input name (np.savez(path, **{name: array}))');
    }
    return [[inputs[0], null]];
  }
  const keys = [...arrays.keys()];
  const missing = inputNames.filter((n) => !arrays.has(n));
  const unknown = keys.filter((k) => !inputNames.includes(k));
  if (missing.length || unknown.length) {
    const what = [
      missing.length && `no array for input${missing.length > 1 ? 's' : ''} ${missing.map((n) => `'${n}'`).join(', ')}`,
      unknown.length && `array${unknown.length > 1 ? 's' : ''} ${unknown.map((n) => `'${n}'`).join(', ')} ${unknown.length > 1 ? 'are' : 'is'} no input of the model`,
    ].filter(Boolean).join('; ');
    throw dataError(source, `${what} (the model's inputs: ${inputNames.join(', ')}; the file's arrays: ${keys.join(', ') || 'none'}; ` +
      "an array named 'labels' holds the labels)");
  }
  return inputs.map((input) => [input, input.name]);
}

// Where the labels are among files named `names` (picked, dropped or in one folder) that are
// images but for one: that one, when it is a .npy, under any name (images have no other use for
// one); -1 otherwise. Node's folders and the page's picks read labels by this one rule.
export function labelsBesideImages(names) {
  const others = names.flatMap((n, i) => (isImage(kindOfName(n)) ? [] : [i]));
  return others.length === 1 && names.length > 1 && kindOfName(names[others[0]]) === 'npy' ? others[0] : -1;
}

// The class labels: a 1-D array of `samples` integers (integer-valued floats accepted) as Int32Array.
function labelsOf(labels, samples, where) {
  if (labels.shape.length !== 1 || labels.shape[0] !== samples) {
    throw dataError(where, `labels of shape ${shapeText(labels.shape)} do not fit ${samples} samples: a 1-D array of ${samples} class indices expected`);
  }
  if (labels.dtype === 'bool') throw dataError(where, 'labels are bool: class indices (integers) expected');
  const read = elementReader(labels.dtype, labels.data);
  const out = new Int32Array(samples);
  for (let i = 0; i < samples; ++i) {
    const v = read(i);
    const n = typeof v === 'bigint' ? v : Number.isInteger(v) ? BigInt(v) : null;
    if (n === null) throw dataError(where, `label ${v} at index ${i} is not an integer class index`);
    if (n < RANGE.int32[0] || n > RANGE.int32[1]) throw dataError(where, `label ${v} at index ${i} is out of the int32 range`);
    out[i] = Number(n);
  }
  return out;
}

// The feeds of every graph input from the user's arrays. `arrays`: Map(name -> {dtype, shape,
// data}), the key null for a .npy's one array; `inputs`: the model description's inputs
// ({name, type, shape}, shape entries numbers, symbols or '?'). Axis 0 counts the samples: it is
// compared only across inputs, never with the model's own batch dimension, since the check feeds
// the samples one batch at a time; every other fixed dimension must equal the data's, dynamic
// ones take it. An array named 'labels' in an .npz is the labels unless an input has that name.
export function samplesForInputs(arrays, inputs, { source = 'data', labels } = {}) {
  const entries = new Map(arrays);
  let labelArray = labels, labelWhere = labels?.source ?? `${source}: labels`;
  if (entries.has('labels') && !inputs.some((i) => i.name === 'labels')) {
    if (labels) throw dataError(source, "labels given twice: the file's array 'labels' and the labels option");
    labelArray = entries.get('labels');
    labelWhere = `${source}: array 'labels'`;
    entries.delete('labels');
  }
  const feeds = {}, conversions = [], counts = [];
  for (const [input, key] of assign(entries, inputs, source)) {
    const array = entries.get(key);
    const where = key === null ? source : `${source}: array '${key}'`;
    const declared = Array.isArray(input.shape) ? ` ${shapeText(input.shape)}` : '';
    const misfit = (why) => dataError(where, `shape ${shapeText(array.shape)} does not fit input '${input.name}'${declared} (${why})`);
    if (!array.shape.length) throw misfit('a 0-d array has no sample axis');
    if (Array.isArray(input.shape)) {
      if (array.shape.length !== input.shape.length) {
        throw misfit(`rank ${array.shape.length} ≠ ${input.shape.length}; axis 0 counts the samples, so one sample is x[None]`);
      }
      input.shape.forEach((d, axis) => {
        if (axis > 0 && typeof d === 'number' && d >= 0 && d !== array.shape[axis]) throw misfit(`axis ${axis}: ${array.shape[axis]} ≠ ${d}`);
      });
    }
    counts.push([input.name, array.shape[0]]);
    if (!ORT_TYPE[input.type]) throw dataError(where, `input '${input.name}' is of type ${input.type}, which cannot be fed from data`);
    const { data, converted } = convertArray(array, input.type, where);
    if (converted) conversions.push(`${input.name}: ${NUMPY_NAME[array.dtype]} → ${NUMPY_NAME[input.type]}`);
    feeds[input.name] = { type: ORT_TYPE[input.type], dims: [...array.shape], data };
  }
  const samples = counts[0][1];
  if (counts.some(([, n]) => n !== samples)) {
    throw dataError(source, `the inputs' sample counts (axis 0) differ: ${counts.map(([name, n]) => `'${name}' ${n}`).join(', ')}`);
  }
  if (!samples) throw dataError(source, 'no samples (axis 0 is 0)');
  return {
    feeds, samples, conversions,
    labels: labelArray ? labelsOf(labelArray, samples, labelWhere) : undefined,
    source,
  };
}

// Several files' arrays joined along axis 0, in the order given (a folder's files sorted by
// name): `list` is [{source, arrays: Map}]; every file must hold the same array names, each of
// one dtype and of one shape beyond axis 0. Refused before allocating when over maxBytes.
export function concatSamples(list, { maxBytes = DEFAULT_MAX_BYTES } = {}) {
  if (!list.length) throw dataError(null, 'no files to join');
  const [first] = list;
  const keys = [...first.arrays.keys()];
  const what = (key) => (key === null ? 'its array' : `array '${key}'`);
  for (const file of list.slice(1)) {
    const other = [...file.arrays.keys()];
    if (other.length !== keys.length || !other.every((k) => first.arrays.has(k))) {
      throw dataError(file.source, `holds arrays ${other.join(', ')}, ${first.source} ${keys.join(', ')}: every file must hold the same`);
    }
  }
  const joined = new Map();
  for (const key of keys) {
    const head = first.arrays.get(key);
    if (!head.shape.length) throw dataError(first.source, `${what(key)} is 0-d: files are joined along axis 0`);
    let samples = 0;
    for (const file of list) {
      const array = file.arrays.get(key);
      if (array.dtype !== head.dtype) {
        throw dataError(file.source, `${what(key)} is ${NUMPY_NAME[array.dtype]}, ${first.source}'s ${NUMPY_NAME[head.dtype]}: the files must agree`);
      }
      const same = array.shape.length === head.shape.length && array.shape.every((d, axis) => axis === 0 || d === head.shape[axis]);
      if (!same) {
        throw dataError(file.source, `${what(key)} has shape ${shapeText(array.shape)}, ${first.source}'s ${shapeText(head.shape)}: they must agree beyond axis 0`);
      }
      samples += array.shape[0];
    }
    const shape = [samples, ...head.shape.slice(1)];
    const TypedArray = TYPED_ARRAY[head.dtype];
    const bytes = numel(shape) * TypedArray.BYTES_PER_ELEMENT;
    if (bytes > maxBytes) {
      throw dataError(first.source, `joined, the files' ${key === null ? 'arrays' : `arrays '${key}'`} of shape ${shapeText(shape)} need ${bytes} bytes, over the limit of ${maxBytes} bytes (maxBytes)`);
    }
    const data = new TypedArray(numel(shape));
    let at = 0;
    for (const file of list) {
      data.set(file.arrays.get(key).data, at);
      at += file.arrays.get(key).data.length;
    }
    joined.set(key, { dtype: head.dtype, shape, data, notes: list.flatMap((f) => f.arrays.get(key).notes ?? []) });
  }
  return joined;
}

// The element type of an in-memory array: typed arrays by their class (a Uint16Array feeding a
// float16 input holds half bits, a Uint8Array feeding a bool input bools, as onnxruntime's
// tensors do); plain Arrays of numbers are doubles, of BigInts int64, of booleans bool.
function dtypeOf(data, input) {
  if (data instanceof Uint16Array && input?.type === 'float16') return 'float16';
  if (data instanceof Uint8Array && input?.type === 'bool') return 'bool';
  if (data instanceof Uint8ClampedArray) return 'uint8';
  for (const [dtype, TypedArray] of Object.entries(TYPED_ARRAY)) {
    if (dtype !== 'float16' && dtype !== 'bool' && data instanceof TypedArray) return dtype;
  }
  if (Array.isArray(data)) {
    if (data.every((v) => typeof v === 'bigint')) return 'int64';
    if (data.every((v) => typeof v === 'boolean')) return 'bool';
    if (data.every((v) => typeof v === 'number')) return 'double';
  }
  return null;
}

// The API's in-memory samples, {inputName: {data: TypedArray | Array, dims}}, as arrays for
// samplesForInputs (plain Arrays become typed arrays of their dtype).
export function arraysFromTensors(tensors, inputs, source = 'samples') {
  if (tensors === null || typeof tensors !== 'object') throw dataError(source, 'expected {inputName: {data, dims}}');
  const arrays = new Map();
  for (const [name, tensor] of Object.entries(tensors)) {
    const where = `${source}: '${name}'`;
    const { data, dims } = tensor ?? {};
    const dtype = dtypeOf(data, inputs.find((i) => i.name === name));
    if (!dtype) throw dataError(where, 'data must be a typed array or an Array of numbers, BigInts or booleans');
    if (!Array.isArray(dims) || !dims.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw dataError(where, 'dims must be a list of non-negative integers');
    }
    if (numel(dims) !== data.length) throw dataError(where, `dims ${shapeText(dims)} hold ${numel(dims)} values, data has ${data.length}`);
    const typed = Array.isArray(data) ? TYPED_ARRAY[dtype].from(data, (v) => (dtype === 'bool' ? (v ? 1 : 0) : v)) : data;
    arrays.set(name, { dtype, shape: [...dims], data: typed, notes: [] });
  }
  return arrays;
}

// Labels given in memory (a typed array or an Array) as an array for samplesForInputs.
export function labelsFromValues(values, source = 'labels') {
  const dtype = dtypeOf(values, null);
  if (!dtype) throw dataError(source, 'labels must be a typed array or an Array of integers');
  const data = Array.isArray(values) ? TYPED_ARRAY[dtype].from(values, (v) => (dtype === 'bool' ? (v ? 1 : 0) : v)) : values;
  return { dtype, shape: [data.length], data, notes: [], source };
}
