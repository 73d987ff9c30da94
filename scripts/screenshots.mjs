// Retakes docs/page.md's screenshots of the graph view (docs/page-graph-1280.png, -390.png) from
// build/web in Debian's Chromium: the sample converted for lattice-advanced without folding, with
// the stem's rewrite and the MaxPool snap left out, so all four node states show; the graph
// collapsed at its start view, the stem's chain opened and its Conv selected.
// Run after scripts/build.sh: node scripts/screenshots.mjs
import { join } from 'node:path';

import { chromium } from 'playwright-core';

import { serve } from './serve.mjs';

const ROOT = join(import.meta.dirname, '..');
const server = await serve(join(ROOT, 'build/web'), 0);
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
const skips = ['LatticeStride2ConvBnReLUPattern:/stem/stem.0/Conv', 'LatticeMaxPool2dPattern:/down/down.1/MaxPool'];
try {
  for (const [width, height] of [[1280, 800], [390, 844]]) {
    const page = await browser.newPage({ viewport: { width, height } });
    await page.goto(`http://127.0.0.1:${server.address().port}/`);
    // The conversion shown and its files made (they come after "Done").
    const done = () => page.waitForFunction(() => document.querySelector('[data-testid="status"]').textContent.startsWith('Done') &&
      document.body.dataset.downloads === 'ready', null, { polling: 100 });
    await page.click('[data-testid="sample-model"]');
    await done();
    await page.selectOption('[data-testid="target-select"]', 'lattice-advanced');
    await done();
    await page.uncheck('[data-testid="fold-bn"]');
    await done();
    for (const id of skips) await page.uncheck(`[data-match-id="${id}"] input`);
    await page.click('[data-testid="convert"]');
    await done();
    await page.waitForSelector('[data-testid="graph"][data-ready="true"]');
    // The graph opens collapsed: the stem's chain opened, its Conv selected.
    await page.click('[data-testid="graph-group"][data-group="chain:/stem/stem.0/Conv"]');
    await page.click('[data-testid="graph"][data-ready="true"] [data-testid="graph-node"][data-node="/stem/stem.0/Conv"]');
    await page.$eval('#graph-heading', (h) => window.scrollTo(0, window.scrollY + h.getBoundingClientRect().top - 8));
    await page.mouse.move(0, 0);
    await page.screenshot({ path: join(ROOT, `docs/page-graph-${width}.png`) });
    await page.close();
  }
} finally {
  await browser.close();
  server.close();
}
