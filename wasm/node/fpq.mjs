// The FPQ twin in Node (core/fixed_point/twin.h): a copy of a converted model with every value in
// Lattice FPQ's fixed point, in standard ONNX. Its module (onnx_lattice_fpq, bindings/fpq_bindings.cc)
// is loaded on the first twin only: a conversion or a check without --simulate fpq never loads it.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

import { codedError } from './coded_error.mjs';
import { guard, toBytes } from './engine.mjs';

const require = createRequire(import.meta.url);
let loaded = null;
const state = { broken: null };

async function fpqModule() {
  loaded ??= require('../dist/onnx_lattice_fpq.js')({
    wasmBinary: readFileSync(new URL('../dist/onnx_lattice_fpq.wasm', import.meta.url)), printErr: () => {},
  });
  return loaded;
}

// fpqTwin(model bytes, {valuesOnly}) -> {model: the twin's bytes, twin: what it holds in which
// representation and what it leaves in float}; with valuesOnly, {twin} alone (any opset). A model
// the twin cannot be made of rejects with its code (ERR_ONNX_LATTICE_MODEL: unreadable bytes, an
// opset below 11 for the model).
export async function fpqTwin(bytes, { valuesOnly = false } = {}) {
  const input = toBytes(bytes);
  const module = await fpqModule();
  const result = guard(state, () => module.fpqTwin(input, valuesOnly));
  if (result.error !== undefined) throw codedError(result.error, result.code);
  return { ...(valuesOnly ? {} : { model: result.model }), twin: JSON.parse(result.twin) };
}
