// The two runtimes the repair runs its models in, side by side on one forward pass of ResNet-50
// (batch 1, graph optimisations off, as the check and the repair run them): onnxruntime-node, as
// the Node CLI uses it, and onnxruntime-web's WebAssembly build (SIMD, one thread), as the page
// does, here run in Node. The page's repair runs both models over every calibration sample, so
// the ratio is the floor of the page's onnxruntime time against the Node CLI's.
//   node bench/runtimes.mjs MODEL REPEATS
import { readFileSync } from 'node:fs';

import ortNode from 'onnxruntime-node';
import * as ortWeb from 'onnxruntime-web';

const [model, repeatsArg] = process.argv.slice(2);
const repeats = Number(repeatsArg);
if (!model || !(repeats >= 1)) {
  console.error('usage: node bench/runtimes.mjs MODEL REPEATS');
  process.exit(2);
}
ortWeb.env.wasm.numThreads = 1;
const bytes = readFileSync(model);
const SAMPLES = 8;

// Milliseconds per sample over SAMPLES runs of one sample, after one run to warm up.
async function perSample(ort, options) {
  const session = await ort.InferenceSession.create(bytes, { graphOptimizationLevel: 'disabled', ...options });
  const [name] = session.inputNames;
  const dims = [1, 3, 224, 224];
  const data = new Float32Array(3 * 224 * 224).map((_, i) => Math.sin(i * 0.01));
  const run = () => session.run({ [name]: new ort.Tensor('float32', data, dims) });
  await run();
  const started = performance.now();
  for (let i = 0; i < SAMPLES; ++i) await run();
  const ms = (performance.now() - started) / SAMPLES;
  await session.release();
  return ms;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const node = [], web = [];
// Alternating, so both see the same machine.
for (let r = 0; r < repeats; ++r) {
  node.push(await perSample(ortNode, { intraOpNumThreads: 1 }));
  web.push(await perSample(ortWeb, {}));
}
console.log(`one forward pass, batch 1, median of ${repeats}: onnxruntime-node (one thread) ${median(node).toFixed(0)} ms, ` +
  `onnxruntime-web (WebAssembly SIMD, one thread) ${median(web).toFixed(0)} ms: ${(median(web) / median(node)).toFixed(2)}x`);
