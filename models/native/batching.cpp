// zerochess native core: the batching loop's phases (see batching.h).
// Python reference: models/search_drivers.py (run_searches) and models/native_tree.py (run_native_searches) and
// pipeline/selfplay/worker.py.
#include "batching.h"

#include <cstring>
#include <string>

namespace zc {

void collect_leaves(ThreadPool& pool, int n, const SlotOf& slot_of) {
  pool.parallel_for(n, [&](int i) {
    const BatchSlot slot = slot_of(i);
    if (!slot.tree) return;
    slot.part->leaves.clear();
    slot.tree->collect(slot.part->leaves);
  });
}

void gather_batch(ThreadPool& pool, int n, const SlotOf& slot_of, LeafBatch& batch) {
  long long leaves = 0, moves = 0;
  for (int i = 0; i < n; ++i) {
    const BatchSlot slot = slot_of(i);
    if (!slot.tree) continue;
    BatchPart& part = *slot.part;
    part.leaf_begin = leaves;
    part.move_begin = moves;
    leaves += part.leaves.leaves;
    moves += static_cast<long long>(part.leaves.rows.size());
  }
  batch.leaves = static_cast<int>(leaves);
  batch.rows.resize(static_cast<std::size_t>(moves));
  batch.indices.resize(static_cast<std::size_t>(moves));
  pool.parallel_for(n, [&](int i) {
    const BatchSlot slot = slot_of(i);
    if (!slot.tree) return;
    const BatchPart& part = *slot.part;
    const LeafBatch& own = part.leaves;
    for (std::size_t j = 0; j < own.rows.size(); ++j) {
      batch.rows[part.move_begin + j] = own.rows[j] + part.leaf_begin;
      batch.indices[part.move_begin + j] = own.indices[j];
    }
  });
}

void copy_planes(ThreadPool& pool, int n, const SlotOf& slot_of, std::uint8_t* out) {
  pool.parallel_for(n, [&](int i) {
    const BatchSlot slot = slot_of(i);
    if (!slot.tree) return;
    const ByteBuffer& planes = slot.part->leaves.planes;
    if (planes.size()) std::memcpy(out + slot.part->leaf_begin * PLANES_BYTES, planes.data(), planes.size());
  });
}

namespace {

// The slot's share of the batch's aux (two per leaf), or null.
const float* aux_of(const BatchSlot& slot) {
  return slot.evaluation.aux ? slot.evaluation.aux + 2 * slot.part->leaf_begin : nullptr;
}

}  // namespace

void deliver_batch(ThreadPool& pool, int n, const SlotOf& slot_of) {
  pool.parallel_for(n, [&](int i) {
    const BatchSlot slot = slot_of(i);
    if (!slot.tree || slot.tree->pending_leaves() == 0) return;
    if (!slot.evaluation.logits) throw ChessError("no evaluation for a pending batch");
    const BatchPart& part = *slot.part;
    slot.tree->validate(slot.evaluation.logits + part.move_begin, slot.tree->pending_moves(),
                        slot.evaluation.values + part.leaf_begin, slot.tree->pending_leaves(), aux_of(slot));
  });
  pool.parallel_for(n, [&](int i) {
    const BatchSlot slot = slot_of(i);
    if (!slot.tree || slot.tree->pending_leaves() == 0) return;
    const BatchPart& part = *slot.part;
    slot.tree->deliver(slot.evaluation.logits + part.move_begin, slot.evaluation.values + part.leaf_begin,
                       aux_of(slot));
  });
}

void check_evaluation_size(const LeafBatch& batch, long long num_logits, long long num_values) {
  if (num_logits != static_cast<long long>(batch.rows.size()) || num_values != batch.leaves) {
    throw ChessError("evaluator returned " + std::to_string(num_logits) + " logits and " + std::to_string(num_values) +
                     " values for " + std::to_string(batch.rows.size()) + " moves of " + std::to_string(batch.leaves) +
                     " leaves");
  }
}

}  // namespace zc
