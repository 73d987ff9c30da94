// Internal: the state a call shares between the main thread (index.mjs) and the worker
// (worker.mjs), in an Int32Array over a SharedArrayBuffer: how an abort may end the call.
export const RUNNING = 0;  // nothing written yet: the worker may be terminated
export const WRITING = 1;  // files are being written: the worker must fail its next write instead
export const ABORTED = 2;  // aborted (set by the main thread)
