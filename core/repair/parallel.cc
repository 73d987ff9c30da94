#include "core/repair/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

// Threads natively, and in WebAssembly only in a module compiled and linked with -pthread.
#if !defined(__EMSCRIPTEN__) || defined(__EMSCRIPTEN_PTHREADS__)
#define LATTICE_REPAIR_THREADS 1
#else
#define LATTICE_REPAIR_THREADS 0
#endif

#if defined(__EMSCRIPTEN_PTHREADS__)
#include <emscripten/emscripten.h>

// The workers of the module's pthread pool (-sPTHREAD_POOL_SIZE), asked before any thread is made:
// a thread beyond them would need a new Worker, which a browser starts only once the caller returns
// to its event loop, so the caller, blocked waiting for it, would wait for ever.
EM_JS(int, lattice_pooled_workers, (), { return PThread.unusedWorkers.length; });
#endif

namespace lattice::repair {
namespace {

// Emscripten's default pthread stack (DEFAULT_PTHREAD_STACK_SIZE), taken from the heap.
constexpr uint64_t kStackBytes = uint64_t{2} << 20;

size_t default_threads() {
#if LATTICE_REPAIR_THREADS
  size_t n = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, kMaxThreads);
#if defined(__EMSCRIPTEN_PTHREADS__)
  static const size_t pooled = 1 + static_cast<size_t>(std::max(lattice_pooled_workers(), 0));
  n = std::min(n, pooled);
#endif
  return n;
#else
  return 1;
#endif
}

// Threads that wait for a job, run their share of it and wait again: the fit calls parallel_for
// hundreds of times (per block of rows summed, per panel factorised or solved), so threads are made
// once, not per call. Each call wakes every thread once and waits until each has checked in.
class Pool {
 public:
  explicit Pool(size_t threads) {
    for (size_t t = 1; t < threads; ++t) workers_.emplace_back([this] { work(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    start_.notify_all();
    for (auto& w : workers_) w.join();
  }
  size_t threads() const { return workers_.size() + 1; }

  // False, having done nothing, when another job holds the pool.
  bool run(size_t count, const std::function<void(size_t)>& fn) {
    if (busy_.exchange(true)) return false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fn_ = &fn;
      count_ = count;
      next_.store(0);
      waiting_ = workers_.size();
      ++job_;
    }
    start_.notify_all();
    drain();
    {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [&] { return waiting_ == 0; });
      fn_ = nullptr;
    }
    busy_.store(false);
    return true;
  }

 private:
  // Indices handed out one at a time: whichever thread is free takes the next, so uneven pieces
  // (a triangle's rows) even out; which thread computes an index never changes its result.
  void drain() {
    for (size_t i = next_.fetch_add(1); i < count_; i = next_.fetch_add(1)) (*fn_)(i);
  }

  void work() {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      start_.wait(lock, [&] { return stop_ || job_ != seen; });
      if (stop_) return;
      seen = job_;
      lock.unlock();
      drain();
      lock.lock();
      if (--waiting_ == 0) done_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  std::atomic<bool> busy_{false};
  std::atomic<size_t> next_{0};
  const std::function<void(size_t)>* fn_ = nullptr;
  size_t count_ = 0, waiting_ = 0;
  uint64_t job_ = 0;
  bool stop_ = false;
};

std::mutex pool_mutex;
std::unique_ptr<Pool> pool;
size_t requested = 0;  // set_thread_count's, 0 for the default

size_t wanted_threads() {
  if (!LATTICE_REPAIR_THREADS) return 1;
  return requested ? requested : default_threads();
}

Pool* shared_pool() {
  std::lock_guard<std::mutex> lock(pool_mutex);
  if (!pool) pool = std::make_unique<Pool>(wanted_threads());
  return pool.get();
}

}  // namespace

void parallel_for(size_t count, const std::function<void(size_t)>& fn) {
  if (count > 1 && wanted_threads() > 1) {
    if (shared_pool()->run(count, fn)) return;
  }
  for (size_t i = 0; i < count; ++i) fn(i);
}

size_t thread_count() {
  std::lock_guard<std::mutex> lock(pool_mutex);
  return wanted_threads();
}

void set_thread_count(size_t threads) {
  std::lock_guard<std::mutex> lock(pool_mutex);
  requested = LATTICE_REPAIR_THREADS ? threads : 0;
#if defined(__EMSCRIPTEN_PTHREADS__)
  requested = std::min(requested, default_threads());  // never more than the pool's workers
#endif
  pool.reset();
}

uint64_t thread_bytes() { return (thread_count() - 1) * kStackBytes; }

}  // namespace lattice::repair
