// zerochess native core: steps many started search trees together with one
// evaluator, one batch per round (models._native.run_searches without
// Python: the binding wraps the evaluator and the stop test).  Python
// reference: models/search_drivers.py (run_searches) and models/native_tree.py (run_native_searches, the pure-Python
// loop it mirrors).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "batching.h"
#include "search.h"

namespace zc {

// Writes a batch's planes (batch.leaves * PLANES_BYTES bytes) at its argument.
using PlanesWriter = std::function<void(std::uint8_t*)>;
// Evaluates a batch (rows, indices and leaves of `batch`, planes through the
// writer): one logit per listed move, one value per leaf, valid until the
// next call.  May throw; the round's pending leaves are then forgotten.
using BatchEvaluator = std::function<Evaluation(const LeafBatch& batch, const PlanesWriter& write_planes)>;
// Asked before every round but the first: true stops the loop.
using StopTest = std::function<bool()>;

// Rounds until every tree is finished (or should_stop, when given, says so):
// the unfinished trees collect leaves, the evaluator is called once on all of
// them, and the evaluation is validated and delivered.  Returns the number of
// evaluator calls.  On an exception the pending leaves of every tree are
// forgotten (SearchTree::abort_pending) and the exception is rethrown.
long long run_searches(const std::vector<SearchTree*>& trees, const BatchEvaluator& evaluate,
                       const StopTest& should_stop = nullptr);

}  // namespace zc
