#!/usr/bin/env node
// A static file server for build/web on 127.0.0.1, for `scripts/start.sh` and the browser tests.
// Static files only, as any static host would serve them (.wasm as application/wasm), with the
// two headers that make the page cross-origin isolated (docs/page.md): only then may its workers
// share memory, which onnxruntime-web needs to run the check and the repair on more than one
// thread. Every file is the site's own, so requiring CORP of cross-origin resources costs nothing.
//   node scripts/serve.mjs [DIR] [PORT]     (PORT 0: any free port; prints the URL)
import { createReadStream, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.wasm': 'application/wasm', '.onnx': 'application/octet-stream',
  '.json': 'application/json', '.svg': 'image/svg+xml', '.png': 'image/png',
};

const ISOLATION = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

// `isolated: false` serves without those headers, as a host that does not send them would (the
// page then runs onnxruntime-web on one thread).
export function serve(root, port = 0, { isolated = true } = {}) {
  root = resolve(root);
  const headers = isolated ? ISOLATION : {};
  const server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname));
    let file = join(root, path);
    if (!file.startsWith(root)) return void res.writeHead(403).end();
    try {
      if (statSync(file).isDirectory()) file = join(file, 'index.html');
      const size = statSync(file).size;
      res.writeHead(200, { ...headers, 'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream', 'Content-Length': size });
      createReadStream(file).pipe(res);
    } catch {
      res.writeHead(404, { ...headers, 'Content-Type': 'text/plain' }).end('not found');
    }
  });
  return new Promise((ok) => server.listen(port, '127.0.0.1', () => ok(server)));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [dir = 'build/web', port = '8080'] = process.argv.slice(2);
  const server = await serve(dir, Number(port));
  console.log(`onnx-lattice page: http://127.0.0.1:${server.address().port}/`);
}
