// The sizes a check feeds the models, and what running them at those sizes would cost. One module
// for the Node CLI (before the conversion writes anything), the Node API and the page.
//
// A check at sizes that reduce a model to a pixel tests nothing: a detector fed 1×1 images
// "passes" whatever its rewrites did. So a dynamic batch (axis 0) is 1, and any other dynamic
// dimension is never guessed silently: the caller gives it, and the error (or the page's prompt)
// proposes a size derived from the model (proposeShape).

// Why a size is proposed for the spatial axes: the coarsest feature map keeps this many pixels
// a side, and never under MIN_SPATIAL.
export const COARSEST_PIXELS = 4;
export const MIN_SPATIAL = 32;
const MAX_SPATIAL = 4096;

// The check holds its inputs in memory and hands them to the runtime: past this, refused with the
// bytes they would need (typed arrays cannot be larger, and no check needs it).
export const MAX_INPUT_BYTES = 2 ** 31;

const ELEMENT_BYTES = {
  float: 4, double: 8, float16: 2, bfloat16: 2, int8: 1, uint8: 1, int16: 2, uint16: 2, int32: 4, uint32: 4,
  int64: 8, uint64: 8, bool: 1,
};
const STRIDED = new Set(['Conv', 'ConvInteger', 'QLinearConv', 'MaxPool', 'AveragePool', 'LpPool']);

const fixed = (d) => typeof d === 'number' && d >= 0;
const largest = (list, fallback = 1) => (Array.isArray(list) && list.length ? Math.max(...list) : fallback);

// The model's deepest stride: along each path, the product of its convs' and pools' strides
// (a ConvTranspose divides by its own), the largest over every tensor.
export function deepestStride(description) {
  const factor = new Map();
  let deepest = 1;
  for (const node of description.nodes) {
    let f = Math.max(1, ...node.inputs.map((i) => factor.get(i.name) ?? 1));
    const strides = largest(node.attributes?.strides);
    if (STRIDED.has(node.op) && !node.domain) f *= strides;
    else if (node.op === 'ConvTranspose' && !node.domain) f = Math.max(1, Math.floor(f / strides));
    for (const o of node.outputs) factor.set(o.name, f);
    deepest = Math.max(deepest, f);
  }
  return deepest;
}

// Which axes of a rank-4 input hold its image: NCHW, or NHWC when the last axis is a fixed
// channel count (1, 3 or 4) and the second is not.
function spatialAxes(shape) {
  if (shape.length === 4 && [1, 3, 4].includes(shape[3]) && !fixed(shape[1])) return [1, 2];
  return shape.map((_, axis) => axis).filter((axis) => axis >= 2);
}

// The channels a dynamic axis 1 holds: what the first Conv reading the input takes.
function channelsOf(description, input) {
  for (const node of description.nodes) {
    if (node.op !== 'Conv' || node.domain || node.inputs[0]?.name !== input.name) continue;
    const weight = node.inputs[1]?.shape;
    if (Array.isArray(weight) && fixed(weight[1])) return weight[1] * (node.attributes?.group ?? 1);
  }
  return null;
}

// A size for each of the input's dynamic dimensions: the batch 1, channels from the first Conv,
// spatial axes COARSEST_PIXELS × the deepest stride (at least MIN_SPATIAL). {dims, rule}, or
// null when some dimension has no rule (the caller must give it).
export function proposeShape(description, input) {
  if (!Array.isArray(input.shape)) return null;
  const shape = input.shape;
  if (shape.every(fixed)) return null;
  const stride = deepestStride(description);
  const spatial = Math.min(MAX_SPATIAL, Math.max(MIN_SPATIAL, COARSEST_PIXELS * stride));
  const axes = spatialAxes(shape);
  const rules = new Set();
  const dims = shape.map((d, axis) => {
    if (fixed(d)) return d;
    if (axis === 0 && shape.length >= 2) return 1;
    if (axes.includes(axis)) {
      rules.add(`${spatial} on each side: the model's deepest stride is ${stride}, so its coarsest feature map keeps ` +
        `${Math.floor(spatial / stride)}×${Math.floor(spatial / stride)} pixels; never under ${MIN_SPATIAL}`);
      return spatial;
    }
    if (axis === 1) {
      const channels = channelsOf(description, input);
      if (channels !== null) rules.add(`${channels} channels, what its first Conv takes`);
      return channels;
    }
    return null;
  });
  if (dims.some((d) => d === null)) return null;
  return { dims, rule: [...rules].join('; ') || 'a batch of 1' };
}

// What the check feeds each graph input: its declared shape with `given` shapes ({name: dims}) in
// place, a dynamic batch as 1. {shapes: {name: dims}, missing: [{input, axes, proposed}]}: an
// input in `missing` has some other dynamic dimension nobody gave.
export function checkShapes(description, given = {}) {
  const shapes = {}, missing = [];
  for (const input of description.inputs) {
    const dims = given[input.name];
    if (dims) {
      shapes[input.name] = [...dims];
      continue;
    }
    const shape = Array.isArray(input.shape) ? input.shape : null;
    const axes = shape ? shape.flatMap((d, axis) => (fixed(d) || (axis === 0 && shape.length >= 2) ? [] : [axis])) : [];
    if (!shape || axes.length) {
      missing.push({ input, axes, proposed: proposeShape(description, input) });
      continue;
    }
    shapes[input.name] = shape.map((d) => (fixed(d) ? d : 1));
  }
  return { shapes, missing };
}

// How a caller gives the check its sizes: the API's option or the CLI's flag, in that caller's words.
const SIZE_OPTION = {
  api: { name: 'inputShapes', example: (name, dims) => `inputShapes: {'${name}': [${dims.join(', ')}]}` },
  cli: { name: '--check-shape', example: (name, dims) => `--check-shape ${name}:${dims.join(',')}` },
};

// The message for inputs the check cannot size, naming each dimension and proposing sizes.
export function missingSizesMessage(missing, style = 'api') {
  const option = SIZE_OPTION[style];
  return missing.map(({ input, axes, proposed }) => {
    if (!Array.isArray(input.shape)) return `input '${input.name}' has no declared shape: give the check its size with ${option.name}`;
    const which = axes.map((axis) => `${input.shape[axis] === '?' ? 'an unknown dimension' : `'${input.shape[axis]}'`} (axis ${axis})`).join(', ');
    const advice = proposed
      ? `e.g. ${option.example(input.name, proposed.dims)} (${proposed.rule})`
      : `with ${option.name} (no size can be derived from the model for it)`;
    return `input '${input.name}' [${input.shape.join(', ')}] has ${which}: the check never guesses such a size, give it, ${advice}`;
  }).join('; ');
}

// Bytes as people read them, however large (never a wrapped 64-bit figure).
export function bytesText(n) {
  if (!Number.isFinite(n)) return 'more bytes than can be counted';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let unit = 0;
  while (n >= 1024 && unit < units.length - 1) {
    n /= 1024;
    unit += 1;
  }
  const digits = unit === 0 ? 0 : 1;
  return n >= 1e6 ? `${n.toExponential(1)} ${units[unit]}` : `${n.toFixed(digits)} ${units[unit]}`;
}

const elements = (dims) => dims.reduce((a, b) => a * b, 1);

// The bytes of one sample set fed at `shapes` (doubles: no overflow, however absurd the sizes).
export function inputBytes(description, shapes) {
  let total = 0;
  for (const input of description.inputs) {
    const dims = shapes[input.name];
    if (dims) total += elements(dims) * (ELEMENT_BYTES[input.type] ?? 4);
  }
  return total;
}

// About what the runtime needs at its peak for a model described at the check's sizes (its
// inputs pinned to them, so the converter inferred every activation's shape): the weights twice
// (the model's bytes it is given, and the initializers it makes of them), the inputs and every
// activation (the layerwise check keeps them all; a shape left unknown counts nothing).
function runtimePeak(weightBytes, description, shapes) {
  let activations = 0;
  for (const node of description.nodes) {
    for (const o of node.outputs) {
      if (Array.isArray(o.shape) && o.shape.every(fixed)) activations += 4 * elements(o.shape);
    }
  }
  return 2 * weightBytes + inputBytes(description, shapes) + activations;
}

// The refusal of sizes whose inputs or activations could not be held, before anything runs, with
// the bytes needed and what to lower; null when they fit in `limit` bytes.
export function sizesTooLarge(description, shapes, { weightBytes = 0, limit, where } = {}) {
  const inputs = inputBytes(description, shapes);
  const sizes = Object.entries(shapes).map(([name, dims]) => `${name} [${dims.join(', ')}]`).join(', ');
  const lower = 'lower these sizes, or give fewer samples';
  if (inputs > MAX_INPUT_BYTES) {
    return `the check's inputs at ${sizes} would need ${bytesText(inputs)}, more than the ${bytesText(MAX_INPUT_BYTES)} ` +
      `a check holds: ${lower}`;
  }
  if (limit !== undefined && 2 * weightBytes > limit) {
    return `holding the model's ${bytesText(weightBytes)} of weights would take about ${bytesText(2 * weightBytes)}, more than ` +
      `the ${bytesText(limit)} ${where}, whatever the sizes`;
  }
  const peak = runtimePeak(weightBytes, description, shapes);
  if (limit !== undefined && peak > limit) {
    return `running the models at ${sizes} would need about ${bytesText(peak)} (twice the weights, the inputs and every ` +
      `activation), more than the ${bytesText(limit)} ${where}: ${lower}`;
  }
  return null;
}
