// zerochess native core: run_searches (see run_searches.h).  Python
// reference: models/search_drivers.py (run_searches) and models/native_tree.py (run_native_searches).
#include "run_searches.h"

namespace zc {

long long run_searches(const std::vector<SearchTree*>& trees, const BatchEvaluator& evaluate,
                       const StopTest& should_stop) {
  const int n = static_cast<int>(trees.size());
  ThreadPool pool(1);  // the calling thread: rounds are stepped in tree order
  std::vector<BatchPart> parts(trees.size());
  std::vector<bool> collecting(trees.size(), false);
  const SlotOf collect_slot = [&](int i) { return collecting[i] ? BatchSlot{trees[i], &parts[i], {}} : BatchSlot{}; };
  Evaluation evaluation;
  const SlotOf deliver_slot = [&](int i) { return BatchSlot{trees[i], &parts[i], evaluation}; };
  LeafBatch batch;
  long long calls = 0, rounds = 0;
  while (true) {
    bool any = false;
    for (int i = 0; i < n; ++i) {
      collecting[i] = !trees[i]->finished();
      any = any || collecting[i];
    }
    if (!any) return calls;
    if (should_stop && rounds > 0 && should_stop()) return calls;
    ++rounds;
    try {
      collect_leaves(pool, n, collect_slot);
      gather_batch(pool, n, collect_slot, batch);
      if (batch.leaves == 0) continue;
      evaluation = evaluate(batch, [&](std::uint8_t* out) { copy_planes(pool, n, collect_slot, out); });
      deliver_batch(pool, n, deliver_slot);
    } catch (...) {
      for (SearchTree* tree : trees) tree->abort_pending();
      throw;
    }
    ++calls;
  }
}

}  // namespace zc
