// Trained models that other people built and exported (tests/fixtures/make_wild.py: public
// models that npm packages ship, on real photos and rendered text), judged in each task's own
// terms by an independent harness (wild_tasks.mjs): every converted model loads and runs in
// onnxruntime, and after `--repair` from at most 128 samples the repaired model does the task as
// the original does on held-out samples no fit saw, at least as well as each floor below.
// The floors are what the repair reaches today less a margin of a few held-out samples; the
// figures and what is left are in docs/repair.md.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { CLIS, scratch } from './helpers.mjs';
import { taskFigure } from './wild_tasks.mjs';

const WILD = process.env.ONNX_LATTICE_WILD ?? join(process.env.ONNX_LATTICE_CACHE ?? join(process.env.HOME, '.cache/onnx-lattice'), 'wild');
const manifest = JSON.parse(readFileSync(join(WILD, 'manifest.json'), 'utf8'));
const dir = scratch();
const cache = new Map();

// The held-out figure each repaired model must reach (the task's figure: wild_tasks.mjs).
const FLOORS = {
  blazeface: 0.9,
  ocr_cls: 0.9,
  ocr_det: 0.8,
  ocr_rec: 0.7,
  // Its stride-2 convs are all in the target's asymmetric form (tf2onnx's SAME padding), and the
  // one rewrite that would change it (its peaks' MaxPool, read by a Reshape) is refused: the
  // conversion is exact, and the repair keeps it so.
  mlsd: 1,
};

async function figure(name, entry, candidate) {
  return taskFigure(entry.kind, join(WILD, entry.path), candidate, join(WILD, entry.heldout.path), {
    inputName: entry.input, labels: join(WILD, entry.heldout.labels), dictionary: entry.dictionary && join(WILD, entry.dictionary), cache,
  });
}

function convert(name, entry, extra = []) {
  const out = join(dir, `${name}${extra.length ? '.repaired' : ''}.onnx`), report = `${out}.json`;
  const r = CLIS.node(['convert', join(WILD, entry.path), '-o', out, '--report', report, '--quiet',
    ...(entry.inputShape ? ['--input-shape', entry.inputShape] : []), ...extra]);
  assert.equal(r.status, 0, `${name}: ${r.stderr}`);
  return { out, report: JSON.parse(readFileSync(report, 'utf8')) };
}

for (const [name, entry] of Object.entries(manifest.models)) {
  test(`${name} (${entry.package}): the converted model runs; repaired from ${entry.calibration.count} samples it does the task as the original on held-out samples`, async () => {
    assert.ok(existsSync(join(WILD, entry.path)), `${name}: run tests/fixtures/make_wild.py`);
    const self = await figure(name, entry, join(WILD, entry.path));
    assert.equal(self.figure, 1, 'the original against itself');
    // Runs in onnxruntime at the sizes it declares: the harness loads and runs it on every sample.
    const converted = convert(name, entry);
    const plain = await figure(name, entry, converted.out);
    assert.ok(Number.isFinite(plain.figure));
    const repaired = convert(name, entry, ['--repair', '--calibration', join(WILD, entry.calibration.path)]);
    const { repair } = repaired.report;
    // A conversion whose rewrites are all exact leaves the repair nothing to refit.
    const lossy = converted.report.matches.some((m) => m.applied && !m.numerically_equivalent);
    assert.equal(repair.layers.some((l) => l.refitted), lossy);
    // Every stride-2 layer the rewrite put before a MaxPool is refitted through the pool.
    for (const m of repaired.report.matches.filter((x) => x.applied && x.pattern === 'LatticeStride2ConvBnReLUPattern')) {
      const layer = repair.layers.find((l) => l.match_id === m.id);
      assert.ok(layer?.refitted, `${m.id} is refitted (left: ${JSON.stringify(repair.left.find((l) => l.match_id === m.id))})`);
    }
    const fixed = await figure(name, entry, repaired.out);
    assert.ok(fixed.figure >= FLOORS[name], `${name}: repaired ${fixed.figure} (converted ${plain.figure}) against the floor ${FLOORS[name]}`);
    if (lossy) assert.ok(fixed.figure > plain.figure, `${name}: the repair improves on the conversion (${plain.figure} → ${fixed.figure})`);
    else assert.equal(plain.figure, 1, `${name}: an exact conversion does the task as the original`);
  });
}
