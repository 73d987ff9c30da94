// The fit alone (bindings/fit_bindings.cc fitLayer, the compiled code the Node CLI and the page run)
// on the shapes of ResNet-50's heaviest refits at 64 samples, on seeded data shaped like
// activations (non-negative, a fifth of them zero): what the repair's fit costs per layer without
// running a model. One line per layer: P features, rows, and the median time of REPEATS; with
// `rectified`, each fit is a layer's before a Relu (two fits on the same rows in one call).
//   node bench/fit_layer.mjs REPEATS [rectified]
import { loadFitModule } from '../wasm/node/engine.mjs';

const LAYERS = [
  // name, input [N, C, H, W], output channels, kernel, stride
  { name: 'layer2 3x3 (P 1,152)', input: [64, 128, 28, 28], out: 128, k: 3 },
  { name: 'layer3 3x3 (P 2,304)', input: [64, 256, 14, 14], out: 256, k: 3 },
  { name: 'layer3 1x1 (P 1,024)', input: [64, 1024, 14, 14], out: 256, k: 1 },
  { name: 'layer4 3x3 (P 4,608)', input: [64, 512, 7, 7], out: 512, k: 3 },
];
const repeats = Number(process.argv[2] ?? 1);
const rectified = process.argv.includes('rectified');

function activations(count, seed) {
  let s = seed >>> 0;
  const data = new Float32Array(count);
  for (let i = 0; i < count; ++i) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const u = s / 2 ** 32;
    data[i] = u < 0.2 ? 0 : (u - 0.2) * 2;
  }
  return data;
}

const module = await loadFitModule();
for (const layer of LAYERS) {
  const [n, c, h, w] = layer.input;
  const pad = (layer.k - 1) / 2;
  const input = { data: activations(n * c * h * w, 1), dims: layer.input };
  const target = { data: activations(n * layer.out * h * w, 2), dims: [n, layer.out, h, w] };
  const times = [];
  let fit;
  for (let r = 0; r < repeats; ++r) {
    const started = performance.now();
    fit = module.fitLayer({
      op: 'Conv', attributes: { kernel_shape: [layer.k, layer.k], pads: [pad, pad, pad, pad] },
      weightShape: [layer.out, c, layer.k, layer.k], input, target, ...(rectified ? { rectified: true } : {}),
    });
    if (fit.error) throw new Error(fit.error);
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  console.log(`${layer.name}: ${fit.rows} rows, ${(times[Math.floor(times.length / 2)] / 1000).toFixed(2)} s (residual ${fit.residualAfter.toFixed(4)})`);
}
