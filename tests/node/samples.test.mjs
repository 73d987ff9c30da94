// The user's data (wasm/shared/npy.mjs, npz.mjs, preprocess.mjs, samples.mjs; wasm/node/samples_node.mjs): files
// written by real numpy and Pillow (tests/fixtures/make_samples.py) read back exactly, images
// preprocessed as an independent numpy implementation of docs/data.md's formulas does, every
// malformed case refused with its message, and mutated files never throwing anything but a data error.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { strToU8, unzipSync, zipSync } from 'fflate';

import { fromHalf, toHalf } from '../../wasm/shared/half.mjs';
import { DATA_ERROR, readNpy } from '../../wasm/shared/npy.mjs';
import { readNpz } from '../../wasm/shared/npz.mjs';
import { PREPROCESSING_DEFAULTS, imageLayout, imageTensor, validatePreprocessing } from '../../wasm/shared/preprocess.mjs';
import { isImage, kindOfBytes, kindOfName } from '../../wasm/shared/sample_files.mjs';
import { concatSamples, samplesForInputs } from '../../wasm/shared/samples.mjs';
import { decodeImage, readSamples } from '../../wasm/node/samples_node.mjs';
import { FIXTURES, scratch } from './helpers.mjs';

const dir = scratch();
const made = spawnSync('/usr/bin/python3', [join(FIXTURES, 'make_samples.py'), dir], { encoding: 'utf8' });
assert.equal(made.status, 0, `make_samples.py failed: ${made.stderr}`);
const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
const path = (name) => join(dir, name);
const file = (name) => new Uint8Array(readFileSync(path(name)));
const bytesOf = (typed) => Buffer.from(typed.buffer, typed.byteOffset, typed.byteLength);
const assertBytes = (typed, expected, what) => assert.ok(bytesOf(typed).equals(readFileSync(path(expected))), `${what}: values differ from numpy's`);
const asFloat32 = (expected) => new Float32Array(new Uint8Array(readFileSync(path(expected))).buffer);
const dataError = (pattern) => (e) => {
  assert.equal(e.code, DATA_ERROR, e.stack);
  assert.match(e.message, pattern);
  return true;
};

// A .npy with the given header text and data bytes, padded as numpy pads (to 64 bytes).
function npy(header, data = new Uint8Array(0), version = 1) {
  const preamble = version === 1 ? 10 : 12;
  let text = header;
  while ((preamble + text.length + 1) % 64) text += ' ';
  text += '\n';
  const out = new Uint8Array(preamble + text.length + data.length);
  out.set([0x93, ...Buffer.from('NUMPY'), version, 0]);
  const view = new DataView(out.buffer);
  if (version === 1) view.setUint16(8, text.length, true);
  else view.setUint32(8, text.length, true);
  out.set(Buffer.from(text, 'latin1'), preamble);
  out.set(data, preamble + text.length);
  return out;
}
const f4 = (shape) => `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape}), }`;
const input = (name, shape, type = 'float') => ({ name, type, shape });

test('readNpy: every dtype, Fortran order, big-endian, 0-d, empty, versions 2.0 and 3.0, as numpy wrote them', () => {
  for (const c of manifest.npy) {
    const array = readNpy(file(c.file), c.file);
    assert.equal(array.dtype, c.dtype, c.file);
    assert.deepEqual(array.shape, c.shape, c.file);
    assertBytes(array.data, c.expected, c.file);
    assert.equal(array.notes.some((n) => /Fortran/.test(n)), Boolean(c.fortran), `${c.file}: ${array.notes}`);
    assert.equal(array.notes.some((n) => /big-endian/.test(n)), Boolean(c.bigendian), `${c.file}: ${array.notes}`);
  }
  const types = { float: Float32Array, double: Float64Array, float16: Uint16Array, int64: BigInt64Array, uint64: BigUint64Array, bool: Uint8Array };
  for (const [dtype, TypedArray] of Object.entries(types)) {
    assert.ok(readNpy(file(manifest.npy.find((c) => c.dtype === dtype).file), 'x').data instanceof TypedArray, dtype);
  }
});

test('readNpy: data at an unaligned offset is copied; aligned little-endian data is a view of the bytes', () => {
  const bytes = file('float64.npy');
  const shifted = new Uint8Array(bytes.length + 1).subarray(1);
  shifted.set(bytes);
  const copy = readNpy(shifted, 'float64.npy');
  assert.notEqual(copy.data.buffer, shifted.buffer);
  assertBytes(copy.data, 'float64.expected.bin', 'unaligned');
  assert.equal(readNpy(bytes, 'float64.npy').data.buffer, bytes.buffer);
});

test('readNpy: Fortran order is transposed to C order and said', () => {
  const array = readNpy(file('fortran.npy'), 'fortran.npy');
  assert.deepEqual(array.shape, [2, 3, 4]);
  assert.deepEqual([...array.data], Array.from({ length: 24 }, (_, i) => i * 1.5));
  assert.deepEqual(array.notes, ['Fortran-order data transposed to C order']);
});

test('readNpy: not a .npy (bad magic) names what it looks like', () => {
  assert.throws(() => readNpy(file('stored.npz'), 'calib.npy'), (e) => {
    assert.equal(e.message, "calib.npy: not a .npy file (its first bytes are 'PK\\x03\\x04\\x14\\x00\\x00\\x00…', a zip: .npz?)");
    assert.equal(e.code, DATA_ERROR);
    assert.equal(e.file, 'calib.npy');
    return true;
  });
  assert.throws(() => readNpy(file('rgb.png'), 'x.npy'), dataError(/^x\.npy: not a \.npy file .*a PNG image\)$/));
});

test('readNpy: an unsupported version and malformed headers are refused, never evaluated', () => {
  const v4 = npy(f4('1,'), new Uint8Array(4));
  v4[6] = 4;
  assert.throws(() => readNpy(v4, 'v.npy'), dataError(/^v\.npy: \.npy format version 4\.0 is not supported \(1\.0, 2\.0 and 3\.0 are\)$/));
  assert.throws(() => readNpy(npy("{'descr': '<f4', 'fortran_order': False, 'shape': __import__('os').system('ls')}"), 'h.npy'),
    dataError(/^h\.npy: malformed header \(unexpected character at character \d+\)/));
  assert.throws(() => readNpy(npy("{'descr': '<f4', 'fortran_order': False}"), 'h.npy'),
    dataError(/^h\.npy: malformed header: a dict with exactly the keys descr, fortran_order, shape expected/));
  assert.throws(() => readNpy(npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", new Uint8Array(4)), 'h.npy'),
    dataError(/^h\.npy: malformed header: fortran_order 0 is not True or False$/));
  assert.throws(() => readNpy(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}"), 'h.npy'),
    dataError(/^h\.npy: malformed header: shape \(-1,\) is not a tuple of non-negative integers$/));
  assert.throws(() => readNpy(npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}"), 's.npy'),
    dataError(/^s\.npy: its dtype is structured \(a list of fields\)/));
  assert.throws(() => readNpy(npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,)}"), 'c.npy'), dataError(/complex arrays are not supported/));
  assert.throws(() => readNpy(npy("{'descr': '<U3', 'fortran_order': False, 'shape': (1,)}"), 'u.npy'), dataError(/string arrays are not supported/));
  assert.throws(() => readNpy(npy("{'descr': '<M8[s]', 'fortran_order': False, 'shape': (1,)}"), 'd.npy'), dataError(/datetime arrays are not supported/));
  assert.throws(() => readNpy(npy(f4('1,')).subarray(0, 40), 't.npy'), dataError(/^t\.npy: the file ends inside its header/));
});

test('readNpy: a pickled object array is refused, never unpickled', () => {
  assert.throws(() => readNpy(file('object.npy'), 'object.npy'),
    dataError(/^object\.npy: its dtype is '\|O': pickled object arrays are refused, never unpickled$/));
});

test('readNpy: truncated data says the bytes the shape needs and the bytes the file has; extra bytes are refused', () => {
  const bytes = file('float32.npy');
  assert.throws(() => readNpy(bytes.subarray(0, bytes.length - 4), 'float32.npy'),
    dataError(/^float32\.npy: truncated: its shape \[4, 5\] of float32 needs 80 bytes of data, the file has 76$/));
  const longer = new Uint8Array(bytes.length + 3);
  longer.set(bytes);
  assert.throws(() => readNpy(longer, 'float32.npy'), dataError(/^float32\.npy: 3 bytes after the data its shape \[4, 5\] of float32 needs \(80\)/));
});

test('readNpy: an absurd shape is refused with the bytes it would need, before any allocation', () => {
  assert.throws(() => readNpy(npy(f4('10**12,'.replace('10**12', String(10 ** 12)))), 'huge.npy'),
    dataError(/^huge\.npy: its shape \[1000000000000\] of float32 needs 4000000000000 bytes, over the limit of 2147483648 bytes \(maxBytes\)$/));
  // A product past 2^64 is still exact.
  assert.throws(() => readNpy(npy(f4('4294967296, 4294967296, 4294967296')), 'h.npy'), dataError(/needs 316912650057057350374175801344 bytes/));
  assert.throws(() => readNpy(file('float32.npy'), 'small.npy', { maxBytes: 79 }), dataError(/needs 80 bytes, over the limit of 79 bytes/));
});

test('readNpz: stored (np.savez) and deflated (np.savez_compressed), arrays by name', () => {
  for (const name of ['stored.npz', 'deflated.npz']) {
    const arrays = readNpz(file(name), name, unzipSync);
    assert.deepEqual([...arrays.keys()], ['image', 'mask', 'labels']);
    assertBytes(arrays.get('image').data, manifest.npz.image_f64.expected, name);
    assertBytes(arrays.get('mask').data, manifest.npz.mask.expected, name);
    assert.deepEqual([...arrays.get('labels').data].map(Number), manifest.npz.labels);
  }
});

// A zip of the given entries (fflate), with `patch` applied to its bytes.
function zip(entries, { level = 0, patch } = {}) {
  const bytes = zipSync(Object.fromEntries(Object.entries(entries).map(([k, v]) => [k, [v, { level }]])));
  patch?.(bytes, new DataView(bytes.buffer));
  return bytes;
}
const centralDirectory = (bytes) => bytes.findLastIndex((_, i) => bytes[i] === 0x50 && bytes[i + 1] === 0x4b && bytes[i + 2] === 1 && bytes[i + 3] === 2);

test('readNpz: a corrupt zip, a non-.npy entry, a duplicate name and an oversized entry are refused naming the entry', () => {
  const good = file('deflated.npz');
  assert.throws(() => readNpz(good.subarray(0, good.length - 30), 'data.npz', unzipSync), dataError(/^data\.npz: corrupt zip \(/));
  assert.throws(() => readNpz(file('float32.npy'), 'data.npz', unzipSync), dataError(/^data\.npz: not an \.npz file \(not a zip archive\)$/));
  const flipped = good.slice();
  flipped[60] ^= 0xff;  // inside the first entry's deflated data
  assert.throws(() => readNpz(flipped, 'data.npz', unzipSync), dataError(/^data\.npz: (corrupt zip|entry 'image\.npy': )/));
  const npyBytes = file('float32.npy');
  assert.throws(() => readNpz(zip({ 'a.npy': npyBytes, 'notes.txt': strToU8('hi') }), 'data.npz', unzipSync),
    dataError(/^data\.npz: entry 'notes\.txt': not a \.npy array/));
  const twice = zip({ 'a.npy': npyBytes, 'b.npy': npyBytes }, {
    patch: (bytes) => bytes.forEach((b, i) => { if (b === 0x62 && bytes[i + 1] === 0x2e && bytes[i + 2] === 0x6e) bytes[i] = 0x61; }),
  });
  assert.throws(() => readNpz(twice, 'data.npz', unzipSync), dataError(/^data\.npz: entry 'a\.npy': appears twice in the archive$/));
  // An entry whose central directory declares 3 GB uncompressed: refused before inflating.
  const bomb = zip({ 'x.npy': npyBytes }, { level: 6, patch: (bytes, view) => view.setUint32(centralDirectory(bytes) + 24, 3e9, true) });
  assert.throws(() => readNpz(bomb, 'data.npz', unzipSync), dataError(/^data\.npz: entry 'x\.npy': its uncompressed size is 3000000000 bytes, over the limit of 2147483648 bytes \(maxBytes\)$/));
  const ratio = zip({ 'x.npy': npyBytes }, { level: 6, patch: (bytes, view) => view.setUint32(centralDirectory(bytes) + 24, 1e9, true) });
  assert.throws(() => readNpz(ratio, 'data.npz', unzipSync), dataError(/^data\.npz: entry 'x\.npy': corrupt zip: it declares 1000000000 bytes uncompressed from \d+ bytes stored$/));
  assert.throws(() => readNpz(zip({ 'x.npy': file('object.npy') }), 'data.npz', unzipSync),
    (e) => dataError(/^data\.npz: entry 'x\.npy': its dtype is '\|O': pickled object arrays are refused/)(e) && e.file === 'data.npz');
  assert.throws(() => readNpz(zip({}), 'data.npz', unzipSync), dataError(/^data\.npz: the archive holds no arrays$/));
});

const npzInputs = [input('image', ['N', 3, 4, 4]), input('mask', ['N', 1, 4, 4], 'int64')];

test('samplesForInputs: an .npz feeds inputs by name, converts as astype, and gives the labels', () => {
  const result = samplesForInputs(readNpz(file('stored.npz'), 'stored.npz', unzipSync), npzInputs, { source: 'stored.npz' });
  assert.equal(result.samples, 6);
  assert.equal(result.source, 'stored.npz');
  assert.deepEqual(result.conversions, ['image: float64 → float32']);
  assert.deepEqual(result.feeds.image.dims, [6, 3, 4, 4]);
  assert.equal(result.feeds.image.type, 'float32');
  assertBytes(result.feeds.image.data, manifest.npz.image.expected, 'image');
  assert.equal(result.feeds.mask.type, 'int64');
  assertBytes(result.feeds.mask.data, manifest.npz.mask.expected, 'mask');
  assert.deepEqual(result.labels, Int32Array.from(manifest.npz.labels));
  // A fixed batch of 1 still takes 6 samples: the check runs them one batch at a time.
  const fixed = samplesForInputs(readNpz(file('stored.npz'), 'stored.npz', unzipSync), [input('image', [1, 3, 4, 4]), input('mask', [1, 1, 4, 4], 'int64')], { source: 's' });
  assert.equal(fixed.samples, 6);
});

test('samplesForInputs: every conversion gives what numpy\'s astype gives (ties to even, once; truncation; bool)', () => {
  for (const c of manifest.convert) {
    const array = readNpy(file(c.file), c.file);
    const result = samplesForInputs(new Map([[null, array]]), [input('x', ['N', ...c.shape.slice(1)], c.to)], { source: c.file });
    assertBytes(result.feeds.x.data, c.expected, c.file);
    assert.equal(result.conversions.length, 1, c.file);
  }
  assert.equal(toHalf(fromHalf(0x3c01)), 0x3c01);
});

test('samplesForInputs: values numpy would make undefined or wrap are refused, naming the element', () => {
  const one = (dtype, data, type) => samplesForInputs(new Map([[null, { dtype, shape: [1, data.length], data }]]), [input('x', [1, data.length], type)], { source: 'v.npy' });
  assert.throws(() => one('float', Float32Array.of(1, NaN), 'int32'), dataError(/^v\.npy: value NaN at index \[0, 1\] cannot become int32/));
  assert.throws(() => one('double', Float64Array.of(Infinity), 'uint8'), dataError(/value Infinity at index \[0, 0\] cannot become uint8/));
  assert.throws(() => one('double', Float64Array.of(256), 'uint8'), dataError(/value 256 at index \[0, 0\] does not fit uint8/));
  assert.throws(() => one('int32', Int32Array.of(-1), 'uint32'), dataError(/value -1 at index \[0, 0\] does not fit uint32/));
  assert.throws(() => one('int64', BigInt64Array.of(2n ** 40n), 'int32'), dataError(/value 1099511627776 at index \[0, 0\] does not fit int32/));
});

test('samplesForInputs: a shape that does not fit the input names both shapes and the axis', () => {
  const array = { dtype: 'float', shape: [50, 3, 32, 32], data: new Float32Array(50 * 3 * 32 * 32) };
  assert.throws(() => samplesForInputs(new Map([[null, array]]), [input('image', ['N', 1, 32, 32])], { source: 'heldout.npy' }), (e) => {
    assert.equal(e.message, "heldout.npy: shape [50, 3, 32, 32] does not fit input 'image' [N, 1, 32, 32] (axis 1: 3 ≠ 1)");
    assert.equal(e.code, DATA_ERROR);
    return true;
  });
  assert.throws(() => samplesForInputs(new Map([[null, array]]), [input('image', ['?', 3, 32])], { source: 'h.npy' }),
    dataError(/^h\.npy: shape \[50, 3, 32, 32\] does not fit input 'image' \[\?, 3, 32\] \(rank 4 ≠ 3; axis 0 counts the samples, so one sample is x\[None\]\)$/));
  assert.throws(() => samplesForInputs(new Map([[null, array]]), [input('a', ['N', 3, 32, 32]), input('b', ['N', 3, 32, 32])], { source: 'h.npy' }),
    dataError(/^h\.npy: one array for a model of 2 inputs \(a, b\): give an \.npz/));
  const arrays = readNpz(file('stored.npz'), 'stored.npz', unzipSync);
  arrays.set('mask', { ...arrays.get('mask'), shape: [5, 1, 4, 4], data: arrays.get('mask').data.subarray(0, 80) });
  assert.throws(() => samplesForInputs(arrays, npzInputs, { source: 'stored.npz' }),
    dataError(/^stored\.npz: the inputs' sample counts \(axis 0\) differ: 'image' 6, 'mask' 5$/));
});

test('samplesForInputs: an .npz missing an input, or with an unknown array, names both lists', () => {
  const arrays = readNpz(file('stored.npz'), 'stored.npz', unzipSync);
  assert.throws(() => samplesForInputs(arrays, [...npzInputs, input('extra', ['N', 2])], { source: 'stored.npz' }),
    dataError(/^stored\.npz: no array for input 'extra' \(the model's inputs: image, mask, extra; the file's arrays: image, mask;/));
  assert.throws(() => samplesForInputs(arrays, [npzInputs[0]], { source: 'stored.npz' }),
    dataError(/^stored\.npz: array 'mask' is no input of the model \(the model's inputs: image; the file's arrays: image, mask; an array named 'labels' holds the labels\)$/));
});

test('samplesForInputs: labels must be N integers', () => {
  const arrays = () => readNpz(file('stored.npz'), 'stored.npz', unzipSync);
  const labels = (data, shape = [data.length]) => ({ dtype: 'int64', shape, data: BigInt64Array.from(data.map(BigInt)), source: 'labels.npy' });
  const given = arrays();
  given.delete('labels');
  assert.throws(() => samplesForInputs(given, npzInputs, { source: 's', labels: labels([1, 2, 3]) }),
    dataError(/^labels\.npy: labels of shape \[3\] do not fit 6 samples: a 1-D array of 6 class indices expected$/));
  assert.throws(() => samplesForInputs(given, npzInputs, { source: 's', labels: labels([1, 2, 3, 4, 5, 6], [6, 1]) }), dataError(/labels of shape \[6, 1\] do not fit 6 samples/));
  assert.throws(() => samplesForInputs(given, npzInputs, { source: 's', labels: { dtype: 'double', shape: [6], data: Float64Array.of(0, 1, 2, 3, 4, 4.5) } }),
    dataError(/^s: labels: label 4\.5 at index 5 is not an integer class index$/));
  assert.deepEqual(samplesForInputs(given, npzInputs, { source: 's', labels: { dtype: 'float', shape: [6], data: Float32Array.of(0, 1, 2, 3, 4, 5) } }).labels, Int32Array.of(0, 1, 2, 3, 4, 5));
  assert.throws(() => samplesForInputs(arrays(), npzInputs, { source: 's', labels: labels([1, 2, 3, 4, 5, 6]) }), dataError(/^s: labels given twice/));
});

test('concatSamples: files joined along axis 0, shapes and dtypes checked', () => {
  const a = { dtype: 'float', shape: [2, 3], data: Float32Array.of(1, 2, 3, 4, 5, 6), notes: [] };
  const b = { dtype: 'float', shape: [1, 3], data: Float32Array.of(7, 8, 9), notes: [] };
  const joined = concatSamples([{ source: 'a.npy', arrays: new Map([[null, a]]) }, { source: 'b.npy', arrays: new Map([[null, b]]) }]);
  assert.deepEqual(joined.get(null).shape, [3, 3]);
  assert.deepEqual([...joined.get(null).data], [1, 2, 3, 4, 5, 6, 7, 8, 9]);
  const c = { dtype: 'float', shape: [1, 4], data: new Float32Array(4), notes: [] };
  assert.throws(() => concatSamples([{ source: 'a.npy', arrays: new Map([[null, a]]) }, { source: 'c.npy', arrays: new Map([[null, c]]) }]),
    dataError(/^c\.npy: its array has shape \[1, 4\], a\.npy's \[2, 3\]: they must agree beyond axis 0$/));
  const d = { dtype: 'double', shape: [1, 3], data: new Float64Array(3), notes: [] };
  assert.throws(() => concatSamples([{ source: 'a.npy', arrays: new Map([[null, a]]) }, { source: 'd.npy', arrays: new Map([[null, d]]) }]),
    dataError(/^d\.npy: its array is float64, a\.npy's float32: the files must agree$/));
});

test('decodeImage: PNGs decode to Pillow\'s pixels exactly; JPEGs within a decoder\'s rounding, EXIF orientation applied', (t) => {
  for (const c of manifest.decoded) {
    const rgba = decodeImage(file(c.file), c.file);
    assert.deepEqual([rgba.height, rgba.width, 4], c.shape, c.file);
    const expected = readFileSync(path(c.expected));
    if (c.exact) {
      assert.ok(Buffer.from(rgba.data).equals(expected), c.file);
    } else {
      let max = 0, sum = 0;
      for (let i = 0; i < expected.length; ++i) {
        const d = Math.abs(rgba.data[i] - expected[i]);
        max = Math.max(max, d);
        sum += d;
      }
      t.diagnostic(`${c.file}: jpeg-js against Pillow (libjpeg): max |Δ| ${max}, mean ${(sum / expected.length).toFixed(3)} levels`);
      // Without chroma subsampling the decoders differ by the IDCT's rounding; with 4:2:0, jpeg-js
      // replicates the chroma where libjpeg interpolates it ("fancy upsampling"): large at sharp
      // colour edges, small on average.
      const [maxAllowed, meanAllowed] = c.subsampled ? [128, 5] : [4, 1];
      assert.ok(max <= maxAllowed && sum / expected.length < meanAllowed, `${c.file}: max ${max}, mean ${sum / expected.length}`);
    }
  }
});

test('imageTensor: the documented bilinear resize, letterbox, luma and scales, as numpy computes them', () => {
  for (const c of manifest.images) {
    const rgba = decodeImage(file(c.file), c.file);
    const tensor = imageTensor(rgba, c.options);
    const expected = asFloat32(c.expected);
    assert.equal(tensor.length, expected.length);
    let max = 0;
    for (let i = 0; i < expected.length; ++i) max = Math.max(max, Math.abs(tensor[i] - expected[i]));
    assert.ok(max <= 1e-6, `${c.file} ${JSON.stringify(c.options)}: max |Δ| ${max}`);
    if (c.same_size) assert.ok(bytesOf(tensor).equals(bytesOf(expected)), `${c.file}: same size must be exact`);
  }
  // Lattice's unsigned 1.7 range: 255 → 1.9921875; the letterbox is black before scaling.
  const white = { width: 2, height: 1, data: new Uint8Array(8).fill(255) };
  assert.deepEqual([...imageTensor(white, { height: 2, width: 2, channels: 1, layout: 'nchw', resize: 'pad', scale: '0,2' })], [1.9921875, 1.9921875, 0, 0]);
  assert.deepEqual([...imageTensor(white, { height: 2, width: 2, channels: 1, layout: 'nchw', resize: 'pad', scale: '-1,1' })], [1, 1, -1, -1]);
});

test('imageLayout and validatePreprocessing: NCHW or NHWC with 1 or 3 channels; bad options named', () => {
  assert.deepEqual(imageLayout(input('x', ['N', 3, 224, 224])), { layout: 'nchw', channels: 3, height: 224, width: 224 });
  assert.deepEqual(imageLayout(input('x', [1, 'h', 'w', 1])), { layout: 'nhwc', channels: 1, height: null, width: null });
  assert.throws(() => imageLayout(input('tokens', ['N', 128])), dataError(/^input 'tokens' \[N, 128\]: images need a 4-D input with 1 or 3 channels/));
  assert.throws(() => imageLayout(input('x', [1, 3, 8, 8], 'uint8')), dataError(/^input 'x' is uint8: images are fed as scaled floats/));
  assert.deepEqual(validatePreprocessing({}), PREPROCESSING_DEFAULTS);
  const optionsError = (pattern) => (e) => e.code === 'ERR_ONNX_LATTICE_OPTIONS' && pattern.test(e.message);
  assert.throws(() => validatePreprocessing({ scale: '0,255' }), optionsError(/^preprocessing scale must be one of '0,1', '0,2', '-1,1', 'imagenet', not "0,255"$/));
  assert.throws(() => validatePreprocessing({ resise: 'pad' }), optionsError(/^unknown preprocessing option 'resise'/));
  assert.throws(() => validatePreprocessing({ scale: 'imagenet', channels: 1 }), optionsError(/a 1-channel input takes/));
});

test('readSamples: files, folders, bytes and in-memory arrays', async () => {
  const npz = await readSamples(path('deflated.npz'), npzInputs);
  assert.equal(npz.source, 'deflated.npz');
  assert.equal(npz.samples, 6);
  assert.deepEqual(npz.labels, Int32Array.from(manifest.npz.labels));
  assert.equal(npz.preprocessing, undefined);
  const bytes = await readSamples(file('stored.npz'), npzInputs);
  assert.equal(bytes.source, '(bytes)');
  assertBytes(bytes.feeds.image.data, manifest.npz.image.expected, 'bytes');

  const folder = await readSamples(path('npy_folder'), [input('x', ['N', 3, 4, 4])]);
  assert.equal(folder.source, 'npy_folder/ (3 .npy)');
  assert.equal(folder.samples, 6);
  assertBytes(folder.feeds.x.data, manifest.npy_folder.expected, 'folder');

  const images = await readSamples(path('image_folder'), [input('image', [1, 3, 16, 20])], { labels: path('image_labels.npy'), preprocessing: { scale: '0,2' } });
  assert.equal(images.source, 'image_folder/ (2 PNG, 1 JPEG)');
  assert.deepEqual(images.feeds.image.dims, [3, 3, 16, 20]);
  assert.deepEqual(images.preprocessing, { resize: 'stretch', scale: '0,2', order: 'rgb', channels: 3, layout: 'nchw', height: 16, width: 20 });
  assert.deepEqual(images.labels, Int32Array.of(2, 0, 1));
  const first = imageTensor(decodeImage(file('rgb.png'), 'rgb.png'), images.preprocessing);
  assert.deepEqual(images.feeds.image.data.subarray(0, first.length), first);

  const one = await readSamples(path('gray.png'), [input('g', ['N', 'H', 'W', 1], 'float16')]);
  assert.deepEqual(one.feeds.g.dims, [1, 23, 37, 1]);
  assert.deepEqual(one.conversions, ['g: float32 → float16']);

  const memory = await readSamples({ x: { data: [1, 2, 3, 4], dims: [2, 2] } }, [input('x', ['N', 2], 'int64')], { labels: [0, 1] });
  assert.deepEqual(memory.feeds.x, { type: 'int64', dims: [2, 2], data: BigInt64Array.of(1n, 2n, 3n, 4n) });
  assert.deepEqual(memory.labels, Int32Array.of(0, 1));
});

test('readSamples: a file that is not an image, WebP, a huge PNG, mixed folders and images for a model they cannot feed', async () => {
  const img = [input('image', [1, 3, 8, 8])];
  await assert.rejects(readSamples(path('not_an_image.png'), img), dataError(/^not_an_image\.png: not a \.npy, \.npz, PNG or JPEG file \(its first bytes are 'hello, t…'\)$/));
  await assert.rejects(readSamples(path('tiny.webp'), img), dataError(/^tiny\.webp: a WebP image: the Node side reads PNG and JPEG .* the page, which reads WebP$/));
  const huge = file('rgb.png').slice();
  new DataView(huge.buffer).setUint32(16, 100000);
  new DataView(huge.buffer).setUint32(20, 100000);
  await assert.rejects(readSamples(huge, img), dataError(/^\(bytes\): 100000 × 100000 pixels would need 40000000000 bytes decoded \(RGBA\), over the limit of 100 megapixels$/));
  const broken = file('rgb.png').slice(0, 100);
  await assert.rejects(readSamples(broken, img), dataError(/^\(bytes\): not a readable PNG \(pngjs: /));
  const mixed = join(dir, 'mixed');
  mkdirSync(mixed);
  writeFileSync(join(mixed, 'a.npy'), file('float32.npy'));
  writeFileSync(join(mixed, 'b.png'), file('rgb.png'));
  // Images with one .npy take it as their labels; with two, the folder mixes kinds.
  writeFileSync(join(mixed, 'c.npy'), file('float32.npy'));
  await assert.rejects(readSamples(mixed, img), dataError(/^mixed\/: mixes \.npy files \(a\.npy\) and images \(b\.png\): use one kind$/));
  await assert.rejects(readSamples(path('rgb.png'), [input('tokens', ['N', 16])]), dataError(/^rgb\.png: input 'tokens' \[N, 16\]: images need a 4-D input with 1 or 3 channels/));
  await assert.rejects(readSamples(path('rgb.png'), npzInputs), dataError(/^rgb\.png: images feed a model of one input; this one has 2 \(image, mask\)/));
  const sizes = join(dir, 'sizes');
  mkdirSync(sizes);
  writeFileSync(join(sizes, 'a.png'), file('rgb.png'));
  writeFileSync(join(sizes, 'b.png'), file('small.png'));
  // A dynamic size is the first image's: the second is resized to it.
  const first = await readSamples(sizes, [input('image', ['N', 3, 'H', 'W'])]);
  assert.deepEqual(first.feeds.image.dims, [2, 3, 23, 37]);
  assert.deepEqual([first.preprocessing.height, first.preprocessing.width], [23, 37]);
  const resized = await readSamples(sizes, [input('image', ['N', 3, 'H', 'W'])], { preprocessing: { height: 12, width: 12 } });
  assert.deepEqual(resized.feeds.image.dims, [2, 3, 12, 12]);
  await assert.rejects(readSamples(path('image_folder'), img, { labels: [1, 2] }), dataError(/^labels: labels of shape \[2\] do not fit 3 samples/));
  await assert.rejects(readSamples(path('missing.npy'), img), dataError(/missing\.npy: cannot be read \(ENOENT\)$/));
  await assert.rejects(readSamples(path('rgb.png'), img, { labels: path('missing.npy') }), dataError(/missing\.npy: cannot be read \(ENOENT\)$/));
  await assert.rejects(readSamples(path('rgb.png'), img, { preprocessing: { height: 5 } }),
    (e) => e.code === 'ERR_ONNX_LATTICE_OPTIONS' && e.message === "preprocessing height 5 is not input 'image''s 8");
});

// Seeded mutations of valid files: every read returns or throws a data error, never anything
// else, and never hangs.
test('fuzz: mutated and truncated .npy and .npz files give a result or a data error', () => {
  let state = 12345;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 15), z | 1);
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
    return ((z ^ (z >>> 14)) >>> 0) / 2 ** 32;
  };
  const pick = (n) => Math.floor(next() * n);
  const seeds = [
    ...['float32.npy', 'float16.npy', 'int64.npy', 'bool.npy', 'fortran.npy', 'bigendian_f8.npy', 'version3.npy', 'scalar.npy'].map((n) => ['npy', file(n)]),
    ['npz', file('stored.npz')], ['npz', file('deflated.npz')],
  ];
  const start = Date.now();
  const outcomes = { ok: 0, refused: 0 };
  let runs = 0;
  for (; runs < 4000 && Date.now() - start < 5000; ++runs) {
    const [kind, original] = seeds[pick(seeds.length)];
    let bytes = original.slice();
    const mutation = pick(4);
    if (mutation === 0) {
      bytes = bytes.subarray(0, pick(bytes.length));
    } else {
      for (let k = 1 + pick(6); k > 0; --k) {
        // Half of the changes in the first 128 bytes (the .npy header, the zip's first local header).
        const at = next() < 0.5 ? pick(Math.min(128, bytes.length)) : pick(bytes.length);
        bytes[at] = mutation === 1 ? pick(256) : mutation === 2 ? bytes[at] ^ (1 << pick(8)) : '0123456789(),\' '.charCodeAt(pick(15));
      }
    }
    try {
      if (kind === 'npy') readNpy(bytes, 'f.npy', { maxBytes: 1 << 24 });
      else readNpz(bytes, 'f.npz', unzipSync, { maxBytes: 1 << 24 });
      outcomes.ok += 1;
    } catch (e) {
      assert.ok(e instanceof Error && e.code === DATA_ERROR, `run ${runs} (${kind}, mutation ${mutation}): ${e?.stack ?? e}`);
      assert.match(e.message, /^f\.np[yz]: /);
      outcomes.refused += 1;
    }
  }
  assert.ok(runs >= 500, `only ${runs} runs in 5 s`);
  assert.ok(outcomes.refused > 0 && outcomes.ok > 0, JSON.stringify(outcomes));
});

test('one table of sample files: numpy\'s and Pillow\'s files are known by their first bytes and by their names alike', () => {
  const dir = scratch();
  const made = spawnSync('/usr/bin/python3', ['-c', `
import numpy as np, sys
from PIL import Image
d = sys.argv[1]
np.save(d + '/a.npy', np.zeros((2, 3), np.float32))
np.savez(d + '/b.npz', x=np.ones(4, np.float32))
np.savez_compressed(d + '/c.npz', x=np.ones(4, np.float32))
img = Image.new('RGB', (8, 8), (10, 200, 30))
img.save(d + '/d.png'); img.save(d + '/e.jpg'); img.save(d + '/f.JPEG'); img.save(d + '/g.webp')
`, dir], { encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
  const expected = { 'a.npy': 'npy', 'b.npz': 'npz', 'c.npz': 'npz', 'd.png': 'png', 'e.jpg': 'jpeg', 'f.JPEG': 'jpeg', 'g.webp': 'webp' };
  for (const [name, kind] of Object.entries(expected)) {
    assert.equal(kindOfBytes(readFileSync(join(dir, name))), kind, `${name} by its bytes`);
    assert.equal(kindOfName(name), kind, `${name} by its name`);
    assert.equal(isImage(kind), !['npy', 'npz'].includes(kind));
  }
  assert.equal(kindOfBytes(new TextEncoder().encode('not a sample file')), null);
  assert.equal(kindOfName('model.onnx'), null);
});
