// zerochess native core: the search's LRU evaluation cache (see search.h).
// Python reference: models/evaluation.py (EvalCache).
#include "search.h"

#include <iterator>
#include <mutex>
#include <utility>

namespace zc {

CacheEntryPtr EvalCache::get(const CacheKey& key, bool touch) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = data_.find(key);
  if (found == data_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  if (touch) order_.splice(order_.end(), order_, found->second.order);
  return found->second.entry;
}

void EvalCache::touch(const CacheKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = data_.find(key);
  if (found != data_.end()) order_.splice(order_.end(), order_, found->second.order);
}

void EvalCache::put(const CacheKey& key, CacheEntryPtr entry) {
  if (max_size_ <= 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = data_.find(key);
  if (found != data_.end()) {
    found->second.entry = std::move(entry);
    order_.splice(order_.end(), order_, found->second.order);
  } else {
    order_.push_back(key);
    data_.emplace(key, Slot{std::prev(order_.end()), std::move(entry)});
  }
  while (static_cast<long long>(data_.size()) > max_size_) {
    data_.erase(order_.front());
    order_.pop_front();
  }
}

long long EvalCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<long long>(data_.size());
}

long long EvalCache::hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
}

long long EvalCache::misses() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return misses_;
}

void EvalCache::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  data_.clear();
  order_.clear();
}

}  // namespace zc
