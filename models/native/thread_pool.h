// zerochess native core: a small fixed thread pool (parallel_for) for the
// batching loops of the self-play and match drivers.  No Python twin.
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace zc {

// Runs fn(i) for i in [0, n) on the calling thread and the pool's workers;
// rethrows the first exception.  Calls from several threads (a lane's
// batch() copied while Python steps the other lane) take turns; fn must not
// call parallel_for on the same pool.
class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  void parallel_for(int n, const std::function<void(int)>& fn);

 private:
  void worker();
  void run_items();
  std::vector<std::thread> workers_;
  std::mutex call_mutex_;  // one parallel_for at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* job_ = nullptr;
  int job_size_ = 0;
  std::atomic<int> next_{0};
  int busy_ = 0;
  long long generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace zc
