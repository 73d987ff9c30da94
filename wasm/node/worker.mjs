// Internal: the worker thread behind createConverter() (index.mjs). It runs the synchronous
// converter (engine.mjs), one call at a time, and answers {id, result} or {id, error}; onProgress
// events go back as {id, progress} while the call runs, before its answer.
//
// Cancelling (index.mjs, abort): each call shares `state` with the main thread. Before any file
// is written, an abort terminates this worker outright (nothing to clean up); the first file this
// worker creates flips the state to WRITING, under a compare-and-swap, so from then on an abort
// only marks the state, and the next write fails here: the core then removes its temporary files
// itself (core/cli/files.cc, write_together), and no file is left.
import { parentPort, receiveMessageOnPort } from 'node:worker_threads';
import { createEngine } from './engine.mjs';
import { fsHost } from './fs_host.mjs';
import { RUNNING, WRITING, ABORTED } from './call_state.mjs';

let call = null;  // the call being run: {state: Int32Array, ...}

const aborted = () => ({ error: 'aborted', code: 'ABORT_ERR' });
const isAborted = () => call !== null && Atomics.load(call.state, 0) === ABORTED;
const unlessAborted = (fn) => (...args) => (isAborted() ? aborted() : fn(...args));

const host = {
  ...fsHost,
  openTemporary(path) {
    if (call !== null && Atomics.compareExchange(call.state, 0, RUNNING, WRITING) === ABORTED) return aborted();
    return fsHost.openTemporary(path);
  },
  appendBytes: unlessAborted(fsHost.appendBytes),
  appendRange: unlessAborted(fsHost.appendRange),
  closeTemporary: unlessAborted(fsHost.closeTemporary),
};

const engine = await createEngine({ host });

// A resolver function lives on the main thread: each data file it gives is asked for once, over
// `port`, and waited for here (Atomics.wait on `flag`, then the answer taken off the port).
function remoteResolver({ port, flag }) {
  const files = new Map();
  return (location) => {
    if (!files.has(location)) {
      Atomics.store(flag, 0, 0);
      port.postMessage(location);
      Atomics.wait(flag, 0, 0);
      files.set(location, receiveMessageOnPort(port)?.message ?? null);
    }
    return files.get(location);
  };
}

function run({ method, args, progress, resolver }, id) {
  if (progress || resolver) {
    const options = { ...args.at(-1) };
    if (progress) options.onProgress = (event) => parentPort.postMessage({ id, progress: event });
    if (resolver) options.resolver = remoteResolver(resolver);
    args = [...args.slice(0, -1), options];
  }
  return engine[method](...args);
}

parentPort.on('message', (message) => {
  const { id } = message;
  call = { state: message.state };
  try {
    const result = run(message, id);
    // The outputs are moved to the main thread, not copied (the input, in shared memory, is not).
    const transfer = [result?.model?.buffer, result?.data?.buffer].filter((b) => b instanceof ArrayBuffer);
    parentPort.postMessage({ id, result }, transfer);
  } catch (e) {
    const { message: text, code, path, errno, name } = e;
    parentPort.postMessage({ id, error: { message: text ?? String(e), code, path, errno, name, aborted: isAborted() } });
  } finally {
    message.resolver?.port.close();
    call = null;
  }
});
