#pragma once
// The repair fit's threads: one persistent pool that the normal equations' sums, the Cholesky
// factorisation and the triangular solves hand their independent pieces to. The fit runs while
// nothing else computes (onnxruntime waits for it), so it may take every core.
//
// Work is split by what is computed, never by the terms of a sum: each piece writes its own
// entries, each entry summed by one thread in the order one thread would sum it, so the results
// are the same to the last bit whatever the thread count (a Catch2 test holds 1 thread and 4 to
// that).
//
// Threads: min(hardware threads, kMaxThreads), the caller included; in WebAssembly no more than
// the module's pthread pool holds (a thread created while the caller blocks on it would never start
// in a browser), and one in a module built without pthreads (the single-thread fit module and the
// wasm tests), where parallel_for is the plain loop.
#include <cstddef>
#include <cstdint>
#include <functional>

namespace lattice::repair {

inline constexpr size_t kMaxThreads = 4;
// A job of fewer multiply-adds than this (about 0.1 ms) stays on the calling thread: waking the
// pool would cost more than it saves.
inline constexpr size_t kParallelWork = size_t{1} << 18;

// fn(0) .. fn(count - 1), each once, spread over the pool's threads, the caller's among them;
// returns when all have returned. fn must not throw. A call made while the pool is busy (another
// caller, or from inside fn) runs its loop on the calling thread alone.
void parallel_for(size_t count, const std::function<void(size_t)>& fn);

// The threads parallel_for uses (at least 1).
size_t thread_count();

// Sets the thread count (0: the default above), for the tests; natively any number, in a module
// without pthreads always 1. Not to be called while a parallel_for runs.
void set_thread_count(size_t threads);

// Heap bytes the pool's threads take beyond the caller's (their stacks, which WebAssembly's
// pthreads allocate from the module's heap at the first fit): part of what fit_bytes budgets.
uint64_t thread_bytes();

}  // namespace lattice::repair
