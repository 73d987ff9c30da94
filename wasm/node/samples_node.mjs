// The user's data in Node: a .npy, an .npz, a PNG or JPEG image, a folder of .npy files or of
// images, bytes, or in-memory arrays -> the model's feeds (samples.mjs). Reading files and
// decoding images is the Node side's; everything after the decoded pixels or the file's bytes is
// shared with the page.
import { readFile, readdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';

import { unzipSync } from 'fflate';
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';

import { DEFAULT_MAX_BYTES, dataError, firstBytes, readNpy } from '../shared/npy.mjs';
import { readNpz } from '../shared/npz.mjs';
import { imageBatch } from '../shared/preprocess.mjs';
import { isImage, kindOfBytes, kindOfName } from '../shared/sample_files.mjs';
import { arraysFromTensors, concatSamples, labelsBesideImages, labelsFromValues, samplesForInputs } from '../shared/samples.mjs';

// Decoded images are refused over 100 megapixels (jpeg-js's own default), before decoding.
export const MAX_IMAGE_PIXELS = 100e6;

const webpError = (name) => dataError(name, 'a WebP image: the Node side reads PNG and JPEG (there is no well-kept ' +
  'pure-JavaScript WebP decoder); convert it to PNG, or use the page, which reads WebP');

function tooLarge(name, width, height) {
  if (width * height <= MAX_IMAGE_PIXELS) return null;
  return dataError(name, `${width} × ${height} pixels would need ${width * height * 4} bytes decoded (RGBA), ` +
    `over the limit of ${MAX_IMAGE_PIXELS / 1e6} megapixels`);
}

// A JPEG's size from its frame header (SOFn), read before decoding to refuse a huge one by its size.
function jpegSize(bytes) {
  for (let at = 2; at + 9 < bytes.length;) {
    if (bytes[at] !== 0xff) return null;
    const marker = bytes[at + 1];
    if (marker === 0xff) {
      at += 1;  // fill byte
      continue;
    }
    if (marker >= 0xc0 && marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(marker)) {
      return { height: (bytes[at + 5] << 8) | bytes[at + 6], width: (bytes[at + 7] << 8) | bytes[at + 8] };
    }
    at += 2 + ((bytes[at + 2] << 8) | bytes[at + 3]);
  }
  return null;
}

const starts = (bytes, ...signature) => bytes.length >= signature.length && signature.every((b, i) => bytes[i] === b);

// EXIF orientation (1…8) from jpeg-js's exifBuffer (which starts one byte into 'Exif\0\0' on some
// versions, hence the search for the TIFF header); 1 when absent or unreadable.
function exifOrientation(exif) {
  if (!exif) return 1;
  for (let tiff = 0; tiff < 3 && tiff + 8 <= exif.length; ++tiff) {
    const little = starts(exif.subarray(tiff), 0x49, 0x49, 0x2a, 0);
    if (!little && !starts(exif.subarray(tiff), 0x4d, 0x4d, 0, 0x2a)) continue;
    const view = new DataView(exif.buffer, exif.byteOffset + tiff, exif.length - tiff);
    const ifd = view.getUint32(4, little);
    if (ifd + 2 > view.byteLength) return 1;
    const entries = view.getUint16(ifd, little);
    for (let k = 0; k < entries && ifd + 14 + 12 * k <= view.byteLength; ++k) {
      const entry = ifd + 2 + 12 * k;
      if (view.getUint16(entry, little) === 0x0112) {
        const value = view.getUint16(entry + 8, little);
        return value >= 1 && value <= 8 ? value : 1;
      }
    }
    return 1;
  }
  return 1;
}

// RGBA pixels turned upright as EXIF orientation says, as browsers display (and decode for the
// page) JPEG photos: a phone's portrait photo is stored sideways with orientation 6.
function orient(rgba, orientation) {
  if (orientation === 1) return rgba;
  const { width: w, height: h, data } = rgba;
  const swap = orientation >= 5;
  const [width, height] = swap ? [h, w] : [w, h];
  // The source pixel of display pixel (x, y), per orientation.
  const source = {
    2: (x, y) => [w - 1 - x, y], 3: (x, y) => [w - 1 - x, h - 1 - y], 4: (x, y) => [x, h - 1 - y],
    5: (x, y) => [y, x], 6: (x, y) => [y, h - 1 - x], 7: (x, y) => [w - 1 - y, h - 1 - x], 8: (x, y) => [w - 1 - y, x],
  }[orientation];
  const out = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; ++y) {
    for (let x = 0; x < width; ++x) {
      const [sx, sy] = source(x, y);
      out.set(data.subarray((sy * w + sx) * 4, (sy * w + sx) * 4 + 4), (y * width + x) * 4);
    }
  }
  return { width, height, data: out };
}

// {width, height, data: RGBA bytes} of a PNG or JPEG, refused over MAX_IMAGE_PIXELS before decoding.
export function decodeImage(bytes, name) {
  const kind = kindOfBytes(bytes);
  if (kind === 'webp') throw webpError(name);
  if (kind === 'png') {
    const ihdr = bytes.length >= 24 && String.fromCharCode(...bytes.subarray(12, 16)) === 'IHDR';
    if (!ihdr) throw dataError(name, 'not a readable PNG (no IHDR chunk first)');
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const large = tooLarge(name, view.getUint32(16), view.getUint32(20));
    if (large) throw large;
    try {
      // 16-bit samples are reduced to 8 (round(v·255/65535)); palettes and gray expand to RGBA.
      const png = PNG.sync.read(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
      return { width: png.width, height: png.height, data: png.data };
    } catch (e) {
      throw dataError(name, `not a readable PNG (pngjs: ${e.message})`);
    }
  }
  if (kind === 'jpeg') {
    const size = jpegSize(bytes);
    const large = size && tooLarge(name, size.width, size.height);
    if (large) throw large;
    let image;
    try {
      image = jpeg.decode(bytes, {
        useTArray: true, formatAsRGBA: true,
        maxResolutionInMP: MAX_IMAGE_PIXELS / 1e6, maxMemoryUsageInMB: Math.ceil((MAX_IMAGE_PIXELS * 8) / 2 ** 20),
      });
    } catch (e) {
      throw dataError(name, `not a readable JPEG (jpeg-js: ${e.message})`);
    }
    return orient({ width: image.width, height: image.height, data: image.data }, exifOrientation(image.exifBuffer));
  }
  throw dataError(name, `not a PNG or JPEG image (its first bytes are ${firstBytes(bytes)})`);
}

// A .npy's one array, under the key null (samplesForInputs feeds it to the only input).
const npyArrays = (bytes, name, maxBytes) => new Map([[null, readNpy(bytes, name, { maxBytes })]]);


// A folder: .npy files joined along axis 0, or images, in name order (code-unit order: zero-pad
// numbered names). Hidden files (.DS_Store) are skipped; anything else is an error.
async function readFolder(dir, inputs, preprocessing, maxBytes) {
  const folder = `${basename(dir)}/`;
  const names = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.')) continue;
    if (!entry.isFile()) throw dataError(`${folder}${entry.name}`, 'a folder of samples holds files only');
    names.push(entry.name);
  }
  names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  if (!names.length) throw dataError(folder, 'no files');
  const kinds = names.map(kindOfName);
  names.forEach((n, i) => {
    if (!kinds[i]) throw dataError(`${folder}${n}`, 'neither a .npy file nor a PNG or JPEG image');
    if (kinds[i] === 'npz') throw dataError(`${folder}${n}`, 'an .npz in a folder: a folder holds .npy files or images; give the .npz itself');
    if (kinds[i] === 'webp') throw webpError(`${folder}${n}`);
  });
  const images = kinds.filter((k) => isImage(k)).length;
  // Images with one .npy: their labels (samples.mjs, labelsBesideImages).
  let labels;
  const at = labelsBesideImages(names);
  if (at >= 0) {
    labels = join(dir, names[at]);
    names.splice(at, 1);
    kinds.splice(at, 1);
  }
  if (images && images < names.length) {
    throw dataError(folder, `mixes .npy files (${names.find((n, i) => kinds[i] === 'npy')}) and images ` +
      `(${names.find((n, i) => isImage(kinds[i]))}): use one kind`);
  }
  if (!images) {
    const list = [];
    for (const n of names) list.push({ source: `${folder}${n}`, arrays: npyArrays(await readFile(join(dir, n)), `${folder}${n}`, maxBytes) });
    return { arrays: concatSamples(list, { maxBytes }), source: `${folder} (${names.length} .npy)` };
  }
  // Read and decoded one at a time: only one image's pixels are held.
  const batch = imageBatch(inputs, preprocessing, { count: names.length, maxBytes, source: folder });
  const counts = {};
  for (const n of names) {
    const bytes = await readFile(join(dir, n));
    const kind = kindOfBytes(bytes);
    batch.add(decodeImage(bytes, `${folder}${n}`), `${folder}${n}`);
    counts[kind] = (counts[kind] ?? 0) + 1;
  }
  const source = `${folder} (${Object.entries(counts).map(([k, count]) => `${count} ${k.toUpperCase()}`).join(', ')})`;
  return { ...batch.finish(), source, ...(labels ? { labels } : {}) };
}

// A file or the bytes given: arrays, or an image as one sample.
function readBytes(bytes, name, inputs, preprocessing, maxBytes) {
  const kind = kindOfBytes(bytes);
  if (kind === 'npz') return { arrays: readNpz(bytes, name, unzipSync, { maxBytes }), source: name };
  // A file named .npy that is not one: readNpy says what it looks like.
  if (kind === 'npy' || name.toLowerCase().endsWith('.npy')) return { arrays: npyArrays(bytes, name, maxBytes), source: name };
  if (isImage(kind)) {
    const batch = imageBatch(inputs, preprocessing, { count: 1, maxBytes, source: name });
    batch.add(decodeImage(bytes, name), name);
    return { ...batch.finish(), source: name };
  }
  throw dataError(name, `not a .npy, .npz, PNG or JPEG file (its first bytes are ${firstBytes(bytes)})`);
}

// A file system call whose failure (no such file, no permission) is the user's: a data error.
async function io(call, path) {
  try {
    return await call(path);
  } catch (e) {
    throw dataError(path, `cannot be read (${e.code ?? e.message})`);
  }
}

async function readLabels(labels, maxBytes) {
  if (labels === undefined || labels === null) return undefined;
  if (typeof labels === 'string') {
    const name = basename(labels);
    const array = readNpy(await io(readFile, labels), name, { maxBytes });
    return { ...array, source: name };
  }
  if (labels.dtype && labels.shape && labels.data) return labels;  // already a read array
  return labelsFromValues(labels);
}

// The samples to feed `inputs` (the model description's graph inputs) from `source`: a path (a
// .npy, an .npz, a PNG or JPEG, or a folder of .npy files or of images, with one .npy of their
// labels under any name), bytes (Uint8Array, sniffed), or in-memory arrays {inputName: {data,
// dims}}. `labels`: a .npy path or values.
// Returns samplesForInputs's {feeds, samples, conversions, labels, source}, plus for images the
// preprocessing record.
export async function readSamples(source, inputs, { labels, preprocessing, maxBytes = DEFAULT_MAX_BYTES } = {}) {
  let read;
  if (typeof source === 'string') {
    const name = basename(source);
    const info = await io(stat, source);
    if (info.isDirectory()) {
      read = await readFolder(source, inputs, preprocessing, maxBytes);
    } else {
      if (info.size > maxBytes + 2 ** 20) {
        // An .npz can compress, so only a file larger than any array it could hold is refused unread.
        throw dataError(name, `${info.size} bytes, over the limit of ${maxBytes} bytes (maxBytes)`);
      }
      read = readBytes(await io(readFile, source), name, inputs, preprocessing, maxBytes);
    }
  } else if (source instanceof Uint8Array) {
    read = readBytes(source, '(bytes)', inputs, preprocessing, maxBytes);
  } else {
    read = { arrays: arraysFromTensors(source, inputs, '(in memory)'), source: '(in memory)' };
  }
  if (labels !== undefined && read.labels) {
    throw dataError(source, `holds its images' labels (${basename(read.labels)}) and labels are given too: give one of them`);
  }
  const result = samplesForInputs(read.arrays, inputs, { source: read.source, labels: await readLabels(labels ?? read.labels, maxBytes) });
  return read.preprocessing ? { ...result, preprocessing: read.preprocessing } : result;
}
