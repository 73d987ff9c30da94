// Every model a suite writes is checked by onnx's own checker (tests/node/check_model.py), as
// well as run in onnxruntime: the SPEC forbids writing a model either would refuse.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('./check_model.py', import.meta.url));
let service = null;

function start() {
  const child = spawn('/usr/bin/python3', [SCRIPT], { stdio: ['pipe', 'pipe', 'inherit'] });
  // Keeps the suite alive only while an answer is awaited; an idle checker never holds it open.
  const hold = (on) => {
    for (const handle of [child, child.stdin, child.stdout]) on ? handle.ref() : handle.unref();
  };
  hold(false);
  const waiting = [];
  createInterface({ input: child.stdout }).on('line', (line) => waiting.shift()?.(line));
  child.on('exit', (code) => {
    for (const resolve of waiting.splice(0)) resolve(`error the checker exited with status ${code}`);
    service = null;
  });
  const dir = mkdtempSync(join(tmpdir(), 'onnx-lattice-check-'));
  let n = 0;
  const ask = (path) => new Promise((resolve) => {
    waiting.push((answer) => {
      if (waiting.length === 0) hold(false);
      resolve(answer);
    });
    hold(true);
    child.stdin.write(`${path}\n`);
  });
  return {
    // "ok", "skip <why>" or "error <message>".
    async check(bytes) {
      const path = join(dir, `${n++}.onnx`);
      writeFileSync(path, bytes);
      try {
        return await ask(path);
      } finally {
        rmSync(path, { force: true });
      }
    },
    checkFile: ask,
  };
}

function verdict(answer) {
  if (answer.startsWith('error')) throw new Error(`onnx.checker refuses the model: ${answer.slice(6)}`);
  return answer;
}

// Resolves to "ok" or "skip <why>"; rejects with the checker's message.
export async function checkModel(bytes) {
  service ??= start();
  return verdict(await service.check(bytes));
}

// The same for a model file, its external data read from the file's folder.
export async function checkModelFile(path) {
  service ??= start();
  return verdict(await service.checkFile(path));
}
