// Images -> input tensor: resize, colour and scale, defined exactly so the Node package and the
// page give bit-identical tensors from the same decoded pixels, and a batch of images gathered
// into the one array of N samples they feed. Imports nothing but its sibling npy.mjs; decoding is
// the caller's (pngjs and jpeg-js in Node, the browser in the page).
//
// Every step is float64 arithmetic in a fixed order (JavaScript has no fused or reordered float
// operations), rounded once to float32 when stored:
//   1. resize each colour by bilinear interpolation with half-pixel centres (the geometry of
//      OpenCV's INTER_LINEAR without antialias, in floating point rather than its fixed point):
//      output column x samples f = (x + 0.5)·(srcW / dstW) − 0.5, clamped to [0, srcW − 1];
//      x0 = ⌊f⌋, x1 = min(x0 + 1, srcW − 1), wx = f − x0; rows alike; then
//      v = (1 − wy)·((1 − wx)·p[y0][x0] + wx·p[y0][x1]) + wy·((1 − wx)·p[y1][x0] + wx·p[y1][x1]).
//      Same size: every pixel exactly. 'pad' (letterbox) scales by s = min(dstW/srcW, dstH/srcH)
//      into a box of ⌊srcW·s + 0.5⌋ × ⌊srcH·s + 0.5⌋ pixels, at ⌊(dst − box)/2⌋ from the top
//      left, and the pixels around it are raw value 0 (black) before scaling.
//   2. colour: 3 channels in RGB or BGR order; 1 channel: luma 0.299·R + 0.587·G + 0.114·B
//      (ITU-R BT.601) of the resized colours. Alpha is ignored (not composited).
//   3. scale: '0,1' v/255, '0,2' v/128 (Lattice's unsigned 1.7 input range [0, 2): 255 →
//      1.9921875), '-1,1' v/127.5 − 1, 'imagenet' (v/255 − mean)/std with torchvision's RGB
//      statistics, each colour's own (with 'bgr' the first channel is blue with blue's mean).
import { DATA_ERROR, DEFAULT_MAX_BYTES, dataError } from './npy.mjs';

export const PREPROCESSING_DEFAULTS = Object.freeze({ resize: 'stretch', scale: '0,1', order: 'rgb' });
export const PREPROCESSING_CHOICES = Object.freeze({
  resize: ['stretch', 'pad'], scale: ['0,1', '0,2', '-1,1', 'imagenet'], order: ['rgb', 'bgr'],
  layout: ['nchw', 'nhwc'], channels: [1, 3],
});
const IMAGENET_MEAN = [0.485, 0.456, 0.406], IMAGENET_STD = [0.229, 0.224, 0.225];  // R, G, B
const FLOATING = new Set(['float', 'double', 'float16']);

// Like check.mjs's: a caller's mistake in the options, not in the data.
const OPTIONS_ERROR = 'ERR_ONNX_LATTICE_OPTIONS';
const optionsError = (message) => Object.assign(new Error(message), { code: OPTIONS_ERROR });

// The full preprocessing record (defaults filled in) or an error naming the bad option and the
// choices. `height`, `width`, `channels` and `layout` are checked when given (imageTensor needs
// them; readSamples fills them from the model's input).
export function validatePreprocessing(options = {}) {
  if (options === null || typeof options !== 'object') throw optionsError('the preprocessing options must be an object');
  const record = { ...PREPROCESSING_DEFAULTS };
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined) continue;
    if (key === 'height' || key === 'width') {
      if (!Number.isInteger(value) || value < 1) throw optionsError(`preprocessing ${key} must be a positive integer, not ${JSON.stringify(value)}`);
    } else if (PREPROCESSING_CHOICES[key]) {
      if (!PREPROCESSING_CHOICES[key].includes(value)) {
        throw optionsError(`preprocessing ${key} must be one of ${PREPROCESSING_CHOICES[key].map((c) => `'${c}'`).join(', ')}, not ${JSON.stringify(value)}`);
      }
    } else {
      throw optionsError(`unknown preprocessing option '${key}' (known: ${['height', 'width', ...Object.keys(PREPROCESSING_CHOICES)].join(', ')})`);
    }
    record[key] = value;
  }
  if (record.scale === 'imagenet' && record.channels === 1) {
    throw optionsError("preprocessing scale 'imagenet' has RGB statistics; a 1-channel input takes '0,1', '0,2' or '-1,1'");
  }
  return record;
}

// How an image feeds `input` ({name, type, shape}): {layout, channels, height, width}, height and
// width null when dynamic. [N, C, H, W] with C 1 or 3 is NCHW, else [N, H, W, C] with C 1 or 3 NHWC.
export function imageLayout(input) {
  const shape = Array.isArray(input.shape) ? input.shape : null;
  const shown = shape ? `[${shape.join(', ')}]` : 'of unknown shape';
  const fixed = (d) => (typeof d === 'number' && d >= 0 ? d : null);
  let layout = null;
  if (shape?.length === 4) {
    if ([1, 3].includes(fixed(shape[1]))) layout = 'nchw';
    else if ([1, 3].includes(fixed(shape[3]))) layout = 'nhwc';
  }
  if (!layout) throw dataError(null, `input '${input.name}' ${shown}: images need a 4-D input with 1 or 3 channels ([N, C, H, W] or [N, H, W, C])`);
  if (!FLOATING.has(input.type)) {
    throw dataError(null, `input '${input.name}' is ${input.type}: images are fed as scaled floats, so they need a float input (give an .npy of the values instead)`);
  }
  const [height, width, channels] = layout === 'nchw' ? [shape[2], shape[3], shape[1]] : [shape[1], shape[2], shape[3]];
  if (fixed(height) === 0 || fixed(width) === 0) throw dataError(null, `input '${input.name}' ${shown} has no pixels`);
  return { layout, channels, height: fixed(height), width: fixed(width) };
}

// For each output pixel along one axis: the two source pixels and the weight of the second.
function taps(source, target) {
  const ratio = source / target;
  const first = new Int32Array(target), second = new Int32Array(target), weight = new Float64Array(target);
  for (let i = 0; i < target; ++i) {
    const f = Math.min(Math.max((i + 0.5) * ratio - 0.5, 0), source - 1);
    first[i] = Math.floor(f);
    second[i] = Math.min(first[i] + 1, source - 1);
    weight[i] = f - first[i];
  }
  return { first, second, weight };
}

// v (a raw colour value, 0…255, or between after interpolation) scaled; `colour` 0, 1, 2 is R, G, B.
function scaler(scale) {
  switch (scale) {
    case '0,1': return (v) => v / 255;
    case '0,2': return (v) => v / 128;
    case '-1,1': return (v) => v / 127.5 - 1;
    default: return (v, colour) => (v / 255 - IMAGENET_MEAN[colour]) / IMAGENET_STD[colour];
  }
}

// One sample (C×H×W for 'nchw', H×W×C for 'nhwc') from decoded RGBA pixels.
export function imageTensor(rgba, options) {
  const { height, width, channels, layout, resize, scale, order } = validatePreprocessing(options);
  for (const [key, value] of Object.entries({ height, width, channels, layout })) {
    if (value === undefined) throw optionsError(`imageTensor needs the ${key}`);
  }
  const { width: srcW, height: srcH, data } = rgba;
  if (!Number.isInteger(srcW) || !Number.isInteger(srcH) || srcW < 1 || srcH < 1 || data?.length !== srcW * srcH * 4) {
    throw new TypeError('imageTensor: rgba must be {width, height, data} with width·height·4 bytes');
  }
  let boxW = width, boxH = height, left = 0, top = 0;
  if (resize === 'pad') {
    const s = Math.min(width / srcW, height / srcH);
    boxW = Math.min(width, Math.max(1, Math.floor(srcW * s + 0.5)));
    boxH = Math.min(height, Math.max(1, Math.floor(srcH * s + 0.5)));
    left = Math.floor((width - boxW) / 2);
    top = Math.floor((height - boxH) / 2);
  }
  const cols = taps(srcW, boxW), rows = taps(srcH, boxH);
  const scaled = scaler(scale);
  // The colour (0 R, 1 G, 2 B) of each output channel; -1 for luma.
  const colours = channels === 1 ? [-1] : order === 'rgb' ? [0, 1, 2] : [2, 1, 0];
  const out = new Float32Array(channels * height * width);
  const [channelStride, pixelStride] = layout === 'nchw' ? [height * width, 1] : [1, channels];
  const rgb = [0, 0, 0];
  for (let y = 0; y < height; ++y) {
    const by = y - top;
    const insideY = by >= 0 && by < boxH;
    for (let x = 0; x < width; ++x) {
      const bx = x - left;
      if (insideY && bx >= 0 && bx < boxW) {
        const r0 = rows.first[by] * srcW, r1 = rows.second[by] * srcW, wy = rows.weight[by];
        const c0 = cols.first[bx], c1 = cols.second[bx], wx = cols.weight[bx];
        for (let c = 0; c < 3; ++c) {
          const upper = (1 - wx) * data[(r0 + c0) * 4 + c] + wx * data[(r0 + c1) * 4 + c];
          const lower = (1 - wx) * data[(r1 + c0) * 4 + c] + wx * data[(r1 + c1) * 4 + c];
          rgb[c] = (1 - wy) * upper + wy * lower;
        }
      } else {
        rgb[0] = rgb[1] = rgb[2] = 0;  // the letterbox: black
      }
      const at = (y * width + x) * pixelStride;
      for (let k = 0; k < channels; ++k) {
        const colour = colours[k];
        const v = colour < 0 ? 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] : rgb[colour];
        out[at + k * channelStride] = scaled(v, colour);
      }
    }
  }
  return out;
}

// Whether decoded RGBA pixels hold any colour (a pixel whose red, green and blue differ).
function inColour({ data }) {
  for (let i = 0; i < data.length; i += 4) if (data[i] !== data[i + 1] || data[i + 1] !== data[i + 2]) return true;
  return false;
}

// Images for a model's one image input, gathered one at a time (each decoded just before, so
// that only one image's pixels are held) into one float32 array of `count` samples:
//   const batch = imageBatch(inputs, preprocessing, { count, source });
//   for (const file of files) batch.add(await decode(file), file.name);
//   const { arrays, preprocessing } = batch.finish();  // arrays for samplesForInputs
// A dynamic height or width is the preprocessing option's, else the first image's: every image is
// resized to it (a batch is one size). The whole array is refused over maxBytes before it is
// allocated.
export function imageBatch(inputs, preprocessing, { count, maxBytes = DEFAULT_MAX_BYTES, source = 'images' }) {
  if (inputs.length !== 1) {
    throw dataError(source, `images feed a model of one input; this one has ${inputs.length} ` +
      `(${inputs.map((i) => i.name).join(', ')}): give an .npz with one array per input name`);
  }
  const [input] = inputs;
  let layout;
  try {
    layout = imageLayout(input);
  } catch (e) {
    throw e.code === DATA_ERROR ? dataError(source, e.message) : e;
  }
  const record = validatePreprocessing({ ...preprocessing, channels: layout.channels, layout: layout.layout });
  for (const axis of ['height', 'width']) {
    if (layout[axis] !== null && record[axis] !== undefined && record[axis] !== layout[axis]) {
      throw optionsError(`preprocessing ${axis} ${record[axis]} is not input '${input.name}''s ${layout[axis]}`);
    }
  }
  let data, added = 0, colourImages = 0;
  return {
    add(rgba, name) {
      if (added === count) throw new RangeError(`imageBatch: more than the ${count} images announced`);
      if (!data) {
        record.height ??= layout.height ?? rgba.height;
        record.width ??= layout.width ?? rgba.width;
        const bytes = count * record.channels * record.height * record.width * 4;
        if (bytes > maxBytes) {
          throw dataError(source, `${count} images of ${record.channels}×${record.height}×${record.width} float32 ` +
            `need ${bytes} bytes, over the limit of ${maxBytes} bytes (maxBytes)`);
        }
        data = new Float32Array(bytes / 4);
      }
      const sample = imageTensor(rgba, record);
      data.set(sample, added * sample.length);
      added += 1;
      // A colour image read into one channel is said (its luma is what the model sees).
      if (record.channels === 1 && inColour(rgba)) colourImages += 1;
    },
    finish() {
      if (added !== count) throw new RangeError(`imageBatch: ${added} images added of the ${count} announced`);
      const { channels, height, width } = record;
      const shape = record.layout === 'nchw' ? [count, channels, height, width] : [count, height, width, channels];
      return { arrays: new Map([[null, { dtype: 'float', shape, data, notes: [] }]]), preprocessing: { ...record, ...(colourImages ? { colour_to_luma: colourImages } : {}) } };
    },
  };
}
