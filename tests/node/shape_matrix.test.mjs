// The fixture matrix on the torchvision zoo: each architecture exported by torch with a dynamic
// batch and with a dynamic height and width (torch writes no value_info, so each is also a "no
// value_info" model) gives its static export's applied matches wherever the patterns' needed
// dimensions are known, otherwise a refusal naming the dimension; pinning the input shape with
// inputShapes gives exactly the static export's matches. (The committed fixtures' twins are
// checked in tests/cpp/symbolic_shapes_test.cc.)
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { createSyncConverter } from '../../wasm/index.mjs';
import { ZOO } from './helpers.mjs';

const lattice = await createSyncConverter();
const SIZES = { densenet121: 64, googlenet: 64 };
const applied = (report) => report.matches.filter((m) => m.applied).map((m) => m.id).sort();

for (const name of ['resnet18', 'mobilenet_v2', 'mobilenet_v3_small', 'efficientnet_b0', 'densenet121', 'googlenet', 'regnet_x_400mf', 'resnet50']) {
  for (const twin of ['dynamic_batch', 'dynamic_hw']) {
    const path = join(ZOO, 'twins', `${name}.${twin}.onnx`);
    test(`${name} exported with ${twin}: the static export's matches, or refusals naming the dimension; pinned, the same`,
      { skip: !existsSync(path) && `no ${path}: run scripts/test.sh` }, (t) => {
        const size = SIZES[name] ?? 224;
        const expected = applied(lattice.inspect(readFileSync(join(ZOO, `${name}.onnx`))));
        const bytes = readFileSync(path);
        const report = lattice.inspect(bytes);
        const got = applied(report);
        for (const id of got) assert.ok(expected.includes(id), `${id} applies only in the ${twin} export`);
        const refused = expected.filter((id) => !got.includes(id));
        for (const id of refused) {
          const m = report.matches.find((r) => r.id === id);
          assert.ok(m, `${id} is reported`);
          assert.match(m.reason, /which is unknown|would not be valid/, id);
        }
        const pinned = lattice.inspect(bytes, { inputShapes: { input: [1, 3, size, size] } });
        assert.deepEqual(applied(pinned), expected);
        t.diagnostic(`${name} ${twin}: ${got.length} of ${expected.length} applied, ${refused.length} refused naming a dimension; pinned: ${applied(pinned).length}`);
      });
  }
}
