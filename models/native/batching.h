// zerochess native core: the batching loop shared by run_searches and the
// two drivers (SelfPlayCore, MatchCore): many search trees collect their
// leaves apart, the leaves are laid out one after another as one evaluator
// batch (gather), and the evaluation is checked for every tree before any
// tree takes its share (validate, then deliver).  Python reference: the
// models/search_drivers.py (run_searches) and models/native_tree.py (run_native_searches' loop) and pipeline/selfplay/worker.py.
#pragma once

#include <cstdint>
#include <functional>

#include "search.h"
#include "thread_pool.h"

namespace zc {

// One tree's part of a batch: its own leaves and where they start in the
// batch (leaves and listed moves).
struct BatchPart {
  LeafBatch leaves;
  long long leaf_begin = 0, move_begin = 0;
};

// The evaluator's output for a whole batch: logits (one per listed move),
// values (one per leaf) and, optionally, aux (two per leaf: the draw
// probability D and the plies left M; null: D = M = 0).
struct Evaluation {
  const float* logits = nullptr;
  const float* values = nullptr;
  const float* aux = nullptr;
};

// Tree i of a batching loop: the tree (null: none), its part and the
// evaluation of the batch it belongs to (logits null: none arrived).
struct BatchSlot {
  SearchTree* tree = nullptr;
  BatchPart* part = nullptr;
  Evaluation evaluation;
};
using SlotOf = std::function<BatchSlot(int)>;

// Every slot with a tree clears its part and collects its next leaves
// (SearchTree::collect), in parallel.
void collect_leaves(ThreadPool& pool, int n, const SlotOf& slot_of);

// Lays the parts of the slots with a tree out one after another in slot
// order: sets each part's leaf_begin and move_begin, fills batch.leaves,
// batch.rows (offset to the batch) and batch.indices.  The planes stay with
// the parts: copy_planes writes them.
void gather_batch(ThreadPool& pool, int n, const SlotOf& slot_of, LeafBatch& batch);

// Writes the planes of the slots with a tree at their place in the batch
// (batch.leaves * PLANES_BYTES bytes at out), the slots spread over the
// pool: a batch of thousands of leaves is tens of MB of fresh pages, whose
// first writes cost about as much as the copy.
void copy_planes(ThreadPool& pool, int n, const SlotOf& slot_of, std::uint8_t* out);

// Validates the evaluation of every slot's pending leaves (ChessError naming
// the FEN; "no evaluation for a pending batch" when none arrived), then
// delivers it to the trees: a bad evaluation changes no tree.
void deliver_batch(ThreadPool& pool, int n, const SlotOf& slot_of);

// Throws ChessError unless the evaluator gave one logit per listed move and
// one value per leaf of `batch`.
void check_evaluation_size(const LeafBatch& batch, long long num_logits, long long num_values);

}  // namespace zc
