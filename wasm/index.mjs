// The Node.js API (index.d.ts, README.md). createConverter(): every conversion runs in a worker
// thread the converter owns, so the calling thread never blocks; createSyncConverter(): the same
// calls run on the calling thread and return their results (it is what that worker runs, so it
// costs nothing to keep).
import { setImmediate as nextTurn } from 'node:timers/promises';
import { MessageChannel, Worker } from 'node:worker_threads';
import { ABORTED, RUNNING } from './node/call_state.mjs';
import { check, fitRanges, repair } from './node/check_node.mjs';
import { codedError } from './node/coded_error.mjs';
import { createEngine, resolverFrom, splitProgress, toBytes } from './node/engine.mjs';

// The FPQ twin's module loads on the first twin (fpq.mjs), in both converters.
const fpqTwin = async (bytes) => (await import('./node/fpq.mjs')).fpqTwin(bytes);

// check() (check_node.mjs) runs both models in onnxruntime-node in a worker thread of its own, so
// it is asynchronous in both converters.
export async function createSyncConverter() {
  const { _heapBytes, _module, ...converter } = await createEngine();
  return { ...converter, check, repair, fitRanges, fpqTwin };
}

const optionsError = (message) => codedError(message, 'ERR_ONNX_LATTICE_OPTIONS');

function abortError(reason) {
  const e = codedError('the operation was aborted', 'ERR_ONNX_LATTICE_ABORTED');
  e.name = 'AbortError';
  if (reason !== undefined) e.cause = reason;
  return e;
}

// The worker's error as an Error of the same kind, on this thread.
function rebuilt({ message, code, path, errno, name }) {
  return codedError(message, code ?? 'ERR_ONNX_LATTICE_MODEL', { path, errno }, name === 'TypeError' ? TypeError : Error);
}

// The input for the worker: a copy in shared memory, which posting does not copy again (cloning a
// 98 MB model into the message blocked this thread for seconds), made in 1 MiB steps so that a
// timer on this thread still runs between them. The caller's buffer is left as it is.
const kCopyStep = 1 << 20;
async function shared(bytes) {
  const copy = new Uint8Array(new SharedArrayBuffer(bytes.length));
  for (let at = 0; at < bytes.length; at += kCopyStep) {
    if (at > 0) await nextTurn();
    copy.set(bytes.subarray(at, at + kCopyStep), at);
  }
  return copy;
}

// Calls go to the worker one at a time, in order; the worker starts with the first call, keeps the
// process alive only while a call is in flight, and is started again after close(), an abort that
// ended it, or running out of memory.
class Calls {
  #worker = null;
  #queue = [];
  #current = null;
  #nextId = 1;

  run(method, args, { onProgress, signal, resolver } = {}) {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortError(signal.reason));
        return;
      }
      const call = {
        id: this.#nextId++, method, args, onProgress, signal, resolver, resolve, reject,
        state: new Int32Array(new SharedArrayBuffer(4)),
      };
      if (signal) {
        call.onAbort = () => this.#abort(call);
        signal.addEventListener('abort', call.onAbort, { once: true });
      }
      this.#queue.push(call);
      this.#next();
    });
  }

  // Ends the worker once the call in flight has settled (an abort ends it first); waiting calls
  // are rejected as aborted. The converter may still be used: a later call starts a new worker.
  async close() {
    for (const call of this.#queue.splice(0)) this.#settle(call, abortError(), undefined);
    const current = this.#current;
    if (current) {
      const settled = new Promise((resolve) => { current.onSettled = resolve; });
      this.#abort(current);
      await settled;
    }
    await this.#stop();
  }

  #start() {
    // Node's flags but --input-type, which a worker started from a file refuses (`node --input-type=module -e`).
    const execArgv = process.execArgv.filter((flag) => !flag.startsWith('--input-type'));
    const worker = new Worker(new URL('./node/worker.mjs', import.meta.url), { execArgv });
    worker.on('message', (message) => this.#message(message));
    const died = (why) => {
      if (this.#worker !== worker) return;
      this.#worker = null;
      if (this.#current) this.#settle(this.#current, codedError(`the converter's worker stopped: ${why}`, 'ERR_ONNX_LATTICE_MEMORY'));
    };
    worker.on('error', (e) => died(e.message));
    worker.on('exit', (code) => died(`exit code ${code}`));
    return worker;
  }

  #stop() {
    const worker = this.#worker;
    this.#worker = null;
    return worker ? worker.terminate() : Promise.resolve();
  }

  #next() {
    if (this.#current || this.#queue.length === 0) return;
    const call = this.#queue.shift();
    this.#current = call;
    this.#worker ??= this.#start();
    this.#worker.ref();
    const message = { id: call.id, method: call.method, args: call.args, progress: Boolean(call.onProgress), state: call.state };
    const transfer = [];
    if (call.resolver) {
      // The worker asks for each data file by its location and waits on `flag` for the answer.
      const { port1, port2 } = new MessageChannel();
      const flag = new Int32Array(new SharedArrayBuffer(4));
      port1.on('message', async (location) => {
        const bytes = call.resolver(location);
        port1.postMessage(bytes ? await shared(bytes) : null);
        Atomics.store(flag, 0, 1);
        Atomics.notify(flag, 0);
      });
      call.port = port1;
      message.resolver = { port: port2, flag };
      transfer.push(port2);
    }
    try {
      this.#worker.postMessage(message, transfer);
    } catch (e) {
      this.#settle(call, optionsError(`the options cannot be sent to the converter's worker: ${e.message}`));
    }
  }

  #message({ id, progress, result, error }) {
    const call = this.#current;
    if (!call || call.id !== id) return;  // a call already settled (aborted)
    if (progress) {
      try {
        call.onProgress(progress);
      } catch {
        // the listener's own failure is not the conversion's
      }
      return;
    }
    if (error) {
      if (error.code === 'ERR_ONNX_LATTICE_MEMORY') this.#stop();  // a fresh module for the next call
      this.#settle(call, error.aborted ? abortError(call.signal?.reason) : rebuilt(error));
    } else {
      this.#settle(call, null, result);
    }
  }

  #abort(call) {
    const waiting = this.#queue.indexOf(call);
    if (waiting >= 0) {
      this.#queue.splice(waiting, 1);
      this.#settle(call, abortError(call.signal?.reason));
    } else if (call === this.#current) {
      if (Atomics.compareExchange(call.state, 0, RUNNING, ABORTED) === RUNNING) {
        // Nothing written yet: the worker is ended at once, and the call with it.
        this.#stop();
        this.#settle(call, abortError(call.signal?.reason));
      } else {
        Atomics.store(call.state, 0, ABORTED);  // writing: its next write fails, and the core cleans up
      }
    }
  }

  #settle(call, error, result) {
    call.signal?.removeEventListener('abort', call.onAbort);
    call.port?.close();
    if (this.#current === call) {
      this.#current = null;
      if (this.#queue.length === 0) this.#worker?.unref();
    }
    if (error) call.reject(error);
    else call.resolve(result);
    call.onSettled?.();
    this.#next();
  }
}

// onProgress and signal are the call's, not conversion options; the rest is checked in the worker.
function callOptions(options) {
  const { options: rest, onProgress } = splitProgress(options ?? {});
  if (rest === null || typeof rest !== 'object') throw optionsError('options must be an object');
  const { signal, ...conversion } = rest;
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw optionsError('options.signal must be an AbortSignal');
  return { conversion, onProgress, signal };
}

export async function createConverter() {
  // The catalogue, the hardware table, the option table and the version, read once from a module
  // on this thread (the fit runs in the worker's).
  const { patterns, hardware, options: optionTable, version } = await createEngine({ fit: false });
  const catalogue = JSON.stringify(patterns());
  const table = JSON.stringify(hardware());
  const optionsJson = JSON.stringify(optionTable());
  const calls = new Calls();

  const inMemory = (method) => async (bytes, options) => {
    const input = toBytes(bytes);
    const { conversion, onProgress, signal } = callOptions(options);
    const { resolver, ...rest } = conversion;
    const lookup = resolverFrom(resolver);
    return calls.run(method, [await shared(input), rest], { onProgress, signal, resolver: lookup });
  };
  const convert = inMemory('convert');
  return {
    convert,
    convertFile: async (input, output, options) => {
      const { conversion, onProgress, signal } = callOptions(options);
      return calls.run('convertFile', [input, output ?? null, conversion], { onProgress, signal });
    },
    inspect: async (bytes, options) => (await convert(bytes, { ...options, dryRun: true })).report,
    describe: inMemory('describe'),
    check,
    repair,
    fitRanges,
    fpqTwin,
    patterns: () => JSON.parse(catalogue),
    hardware: () => JSON.parse(table),
    options: () => JSON.parse(optionsJson),
    version,
    close: () => calls.close(),
  };
}
