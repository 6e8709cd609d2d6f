// zerochess native core: PUCT tree search (AlphaZero), the C++ twin of the
// models/search_tree.py (GameTree) and the other models/search_*.py modules, which are its specification: the same
// selection formula, first-play urgency, virtual loss, batched leaf
// collection, tree reuse, evaluation cache and terminal rules, with the same
// arithmetic in the same order (double everywhere) so that both give the same
// visit counts for the same priors and values.
//
// Implemented in eval_cache.cpp (EvalCache), search_tree.cpp (nodes, reuse,
// leaves, delivery), search_select.cpp (selection, backup, result, move
// choice), search_gumbel.cpp (Gumbel AlphaZero) and search_solver.cpp
// (MCTS-solver); run_searches.h steps many trees with one evaluator.
//
// Signs (as in the Python reference): Node::value_sum / visits is the mean value
// from the node's side to move; Edge::w / Edge::n is the mean value of the move
// from the side choosing it.  Node::draw_sum / visits is the mean draw
// probability D (no sign flip) and Node::moves_left_sum / visits the mean
// plies M left to the game's end (one more per ply up the tree); see
// models/search_node.py.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "board.h"
#include "encoding.h"

namespace zc {

// models.search_config.SearchConfig (validated on the Python side).
struct SearchParams {
  int num_simulations = 200;
  double c_puct_init = 1.25;
  double c_puct_base = 19652.0;
  bool fpu_absolute = false;  // fpu_mode == "absolute"
  double fpu_value = 0.25;
  double dirichlet_alpha = 0.3;
  double dirichlet_epsilon = 0.25;
  double temperature = 1.0;
  int temperature_plies = 30;
  int leaves_per_batch = 8;
  double virtual_loss = 1.0;
  long long cache_size = 200000;
  // Gumbel AlphaZero (algorithm == "gumbel"; see models/search_rules.py).
  bool gumbel = false;
  int gumbel_considered = 16;
  double gumbel_scale = 1.0;
  double gumbel_c_visit = 50.0;
  double gumbel_c_scale = 0.1;
  // MCTS-solver: proven wins, losses and draws propagate up the tree.
  bool solver = true;
  // Solver, at an expansion: a move after which the opponent mates in one is
  // proven lost (its child proven won in 1 ply); needs `solver`.
  bool solver_threats = false;
  // A position below the root that occurred before (in the game or on the
  // path) is a draw, not a proven one (lc0's two-fold draw).
  bool twofold_draw = false;
  // Moves-left utility (models.search_config.SearchConfig, select_puct):
  // slope 0 disables it.
  double moves_left_threshold = 0.8;
  double moves_left_slope = 0.0;
  double moves_left_cap = 0.2;
};

// Node::proof / Edge::proof: -1 lost, 0 drawn, 1 won for the side to move at
// the node (the edge: at its child), PROOF_NONE unproven.
constexpr std::int8_t PROOF_NONE = 2;

// What a leaf backs up: its value (side to move), draw probability D and
// plies left M (models.search_node.terminal_outcome / proof_outcome).
struct Outcome {
  double value = 0.0, draw = 0.0, moves_left = 0.0;
};

// One cached evaluation: the legal moves (generation order) and their priors.
struct CacheEntry {
  std::vector<Move> moves;
  std::vector<double> priors;
  double value = 0.0;
  double draw = 0.0, moves_left = 0.0;  // the evaluator's D and M (0 without)
};
using CacheEntryPtr = std::shared_ptr<const CacheEntry>;

struct CacheKey {
  std::uint64_t key;
  int repetitions;  // min(repetitions, 2)
  bool operator==(const CacheKey& o) const { return key == o.key && repetitions == o.repetitions; }
};
struct CacheKeyHash {
  std::size_t operator()(const CacheKey& k) const {
    return static_cast<std::size_t>(k.key ^ (static_cast<std::uint64_t>(k.repetitions) * 0x9E3779B97F4A7C15ULL));
  }
};

// LRU evaluation cache (models.evaluation.EvalCache), shareable between trees
// and threads (one mutex).
class EvalCache {
 public:
  explicit EvalCache(long long max_size) : max_size_(max_size) {}
  // The entry or null; `touch` marks it most recently used (as EvalCache.get).
  CacheEntryPtr get(const CacheKey& key, bool touch = true);
  void touch(const CacheKey& key);
  void put(const CacheKey& key, CacheEntryPtr entry);
  long long size() const;
  long long max_size() const { return max_size_; }
  long long hits() const;
  long long misses() const;
  void clear();

 private:
  struct Slot {
    std::list<CacheKey>::iterator order;
    CacheEntryPtr entry;
  };
  long long max_size_;
  mutable std::mutex mutex_;
  std::list<CacheKey> order_;  // least recently used first
  std::unordered_map<CacheKey, Slot, CacheKeyHash> data_;
  long long hits_ = 0, misses_ = 0;
};

struct Edge {
  double prior = 0.0;
  double n = 0.0;
  double w = 0.0;
  std::int32_t child = -1;
  std::int32_t policy = -1;  // policy index of the move (-1 until computed)
  Move move;
  std::int8_t proof = PROOF_NONE;  // the child's proof (solver), mirrored here
  std::int16_t proof_plies = 0;    // and its plies
};

// The moves a selection passes over (solver): none, the moves into proven
// wins of the opponent, or every proven move (a proven root searched with
// score_alternatives).
enum class Skip : std::uint8_t { kNone, kLost, kProven };

inline bool skipped(const Edge& edge, Skip skip) {
  if (skip == Skip::kProven) return edge.proof != PROOF_NONE;
  return skip == Skip::kLost && edge.proof == 1;
}

struct Node {
  Board board;
  Row row{};
  std::uint64_t key = 0;
  std::int32_t repetitions = 0;
  std::int32_t edge_begin = 0;
  std::int32_t num_edges = 0;
  std::int32_t parent = -1;  // for views only
  long long visits = 0;
  double value_sum = 0.0;
  double draw_sum = 0.0;        // D backed up (no sign flip)
  double moves_left_sum = 0.0;  // M backed up (+1 per ply up)
  double terminal_value = 0.0;
  bool terminal = false;
  bool pending = false;
  bool expanded = false;      // priors set
  bool has_moves = false;     // edges allocated (pending or expanded)
  bool proven_child = false;  // solver: some edge has a proof
  std::int8_t proof = PROOF_NONE;
  std::int32_t proof_plies = 0;
  double raw_value = 0.0;  // the evaluator's value (Gumbel's mixed value)
};

// A finished game: its value, D = 1 for a draw (0 for a mate), M = 0.
inline Outcome terminal_outcome(double value) { return Outcome{value, value == 0.0 ? 1.0 : 0.0, 0.0}; }
// A node proven by the solver: its proof, D = 1 for a proven draw, M = its proof's plies.
inline Outcome proof_outcome(const Node& node) {
  return Outcome{static_cast<double>(node.proof), node.proof == 0 ? 1.0 : 0.0, static_cast<double>(node.proof_plies)};
}
// One visit of `node` backing up `outcome`.
inline void add_visit(Node& node, const Outcome& outcome) {
  node.visits += 1;
  node.value_sum += outcome.value;
  node.draw_sum += outcome.draw;
  node.moves_left_sum += outcome.moves_left;
}

// A growable byte buffer whose new bytes are not zero-filled (planes are
// written whole right after a resize).
class ByteBuffer {
 public:
  std::uint8_t* data() { return data_.get(); }
  const std::uint8_t* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  void clear() { size_ = 0; }
  void resize(std::size_t size) {
    if (size > capacity_) {
      std::size_t capacity = std::max(size, 2 * capacity_);
      std::unique_ptr<std::uint8_t[]> fresh(new std::uint8_t[capacity]);
      if (size_) std::memcpy(fresh.get(), data_.get(), size_);
      data_ = std::move(fresh);
      capacity_ = capacity;
    }
    size_ = size;
  }

 private:
  std::unique_ptr<std::uint8_t[]> data_;
  std::size_t size_ = 0, capacity_ = 0;
};

// The leaves of one evaluator call: planes, and for each listed move the
// leaf's row and policy index.
struct LeafBatch {
  ByteBuffer planes;  // leaves * PLANES_BYTES
  std::vector<std::int64_t> rows;
  std::vector<std::int64_t> indices;
  int leaves = 0;
  void clear() {
    planes.clear();
    rows.clear();
    indices.clear();
    leaves = 0;
  }
};

// What a search reports at its root (models.search_config.SearchResult, raw).
struct RootStats {
  std::vector<Move> moves;
  std::vector<int> policy;  // policy index per move
  std::vector<double> child_n, child_w, priors;
  double root_value = 0.0;
  double root_draw = 0.0, root_moves_left = 0.0;  // mean D and M of the root
  // PUCT: most visited, ties to the higher prior, then the first; Gumbel:
  // the sequential-halving winner; solver: the fastest proven win, never a
  // proven loss when another move is not one.
  int best = 0;
  std::vector<double> improved;  // Gumbel: the improved policy (else empty)
  std::vector<int> proof;        // solver: per move, for the mover (1, 0, -1, PROOF_NONE); else empty
  std::vector<int> proof_plies;  // plies of a proven win or loss, counting the move
};

class SearchTree {
 public:
  // The game line is root_fen followed by `moves` (the python-chess move
  // stack); the search position is its end.  Throws ChessError naming the
  // FEN for an invalid position or an illegal move.
  SearchTree(const SearchParams& params, PolicyEncoding encoding, std::shared_ptr<EvalCache> cache, std::uint64_t seed,
             const std::string& root_fen, const std::vector<Move>& moves);

  const SearchParams& params() const { return params_; }
  const Board& board() const { return nodes_[root_].board; }
  std::string fen() const { return board().fen(); }
  PolicyEncoding encoding() const { return encoding_; }

  void advance(Move move);  // ChessError for an illegal move
  // Gumbel: `gumbel` (if not null) gives the root noise of every legal move
  // (ChessError naming a missing move); else add_noise draws it.
  void start(long long num_simulations, bool add_noise, const std::vector<std::pair<Move, double>>* gumbel = nullptr);
  bool finished() const { return nodes_[root_].expanded && (done_ >= target_ || (in_flight_ == 0 && exhausted())); }
  // Analysis (models.search_tree.GameTree.score_alternatives): at a proven
  // root, simulations go to the unproven root moves only.
  void set_score_alternatives(bool on) { score_alternatives_ = on; }
  bool score_alternatives() const { return score_alternatives_; }
  // With score_alternatives: the root and each of its moves are proven.
  bool exhausted() const;
  long long simulations_done() const { return done_; }
  long long collisions() const { return collisions_; }
  int pending_leaves() const { return static_cast<int>(pending_.size()); }
  bool root_terminal() const;  // game over at the root

  // Collects up to `limit` leaves (<= 0: leaves_per_batch) into `out`,
  // appending planes, rows (offset by out.leaves) and indices.
  int collect(LeafBatch& out, int limit = 0);
  // Checks the evaluation of the pending leaves (logits in collection
  // order; aux: null or [leaves, 2] draw probability and moves left);
  // throws ChessError naming the FEN.
  void validate(const float* logits, long long num_logits, const float* values, long long num_values,
                const float* aux = nullptr) const;
  // Expands the pending leaves and backs the values (and D, M: 0 without
  // aux) up (validate first).
  void deliver(const float* logits, const float* values, const float* aux = nullptr);
  // Forgets the pending leaves (after a failed evaluation): virtual loss
  // reverted, the nodes unexpanded again.
  void abort_pending();
  int pending_moves() const { return pending_moves_; }

  RootStats result() const;
  void history_snapshot(Row* out8) const { history_.snapshot(out8); }
  const GameLine& history() const { return history_; }
  int root_repetitions() const { return nodes_[root_].repetitions; }

  // Driver mode: cache puts and LRU touches are kept and applied later in a
  // fixed order (flush_cache), so that threads do not change the results.
  void set_deferred_cache(bool deferred) { deferred_cache_ = deferred; }
  void flush_cache_puts();
  void flush_cache_touches();

  // Read-only node access for the views (ids are valid until advance()).
  int root_id() const { return root_; }
  int node_count() const { return static_cast<int>(nodes_.size()); }
  const Node& node(int id) const;
  const Edge* edges(int id) const { return edges_.data() + nodes_[id].edge_begin; }
  long long generation() const { return generation_; }

  std::mt19937_64& rng() { return rng_; }

 private:
  struct PathStep {
    std::int32_t node;
    std::int32_t edge;  // index within the node's edges
  };
  struct Pending {
    std::int32_t node;
    std::int32_t path_begin;
    std::int32_t path_size;
    std::int32_t moves_begin;  // offset of its logits in the delivery
  };

  int new_root_node(const Board& board);
  int make_child(int parent, int edge_index, const PathStep* path, int path_size);
  int select(int node_id);
  int select_puct(const Node& node, Skip skip) const;
  // The parent M at ``node`` where the moves-left utility applies; false where
  // it does not (models.search_rules.moves_left_utility).
  bool moves_left_terms(const Node& node, double& parent_m) const;
  // The moves-left utility of a visited child, weighted by its own mean value
  // (models.search_rules.child_utility).
  double child_utility(const Edge& edge, double parent_m) const;
  int select_gumbel_interior(const Node& node, Skip skip) const;
  int select_gumbel_root(const Node& node, Skip skip) const;
  // Whether root selections skip the proven moves (score_alternatives at a proven root).
  bool searches_alternatives() const;
  // The solver's choice at a node with proven children: the fastest move
  // into a proven loss (returned), else -1 with skip_lost set when some
  // (not all) moves lead to proven wins of the opponent.
  int solver_choice(const Node& node, bool& skip_lost) const;
  bool update_proof(Node& node) const;
  // Solver, at an expansion: the moves that checkmate get their (terminal)
  // child now; with solver_threats, the moves after which the opponent mates
  // in one get their child now, proven won (for the opponent) in 1 ply.
  // `path` leads to the node (its repetitions).  True when the node is
  // proven by them.
  bool find_mates(int node_id, const PathStep* path, int path_size);
  // Logits (log priors) and sigma(completed Q) of a node into scratch_logits_/scratch_sigma_.
  void gumbel_sigma(const Node& node) const;
  // argmax of max(-1e9, g + logit + sigma) over the moves with `wanted`
  // visits in `counts` (all allowed moves when none has them).
  int gumbel_argmax(const Node& node, const long long* counts, const double* gumbel, long long wanted,
                    Skip skip) const;
  void prepare_root();
  // Returns true when a leaf went to `out`.
  bool simulate(LeafBatch& out);
  bool reach_leaf(int node_id, const PathStep* path, int path_size, LeafBatch& out);
  void backup(const PathStep* path, int path_size, int leaf, Outcome outcome, bool proven = false);
  void revert_virtual_loss(const PathStep* path, int path_size);
  void add_noise_(int node_id);
  void set_moves(int node_id, const Move* moves, int count);
  void write_leaf(int node_id, const PathStep* path, int path_size, LeafBatch& out);
  void compact(int new_root);
  CacheKey cache_key(const Node& node) const { return CacheKey{node.key, node.repetitions < 2 ? node.repetitions : 2}; }

  SearchParams params_;
  PolicyEncoding encoding_;
  std::shared_ptr<EvalCache> cache_;
  std::mt19937_64 rng_;
  GameLine history_;
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  int root_ = 0;
  long long target_ = 0, done_ = 0, in_flight_ = 0;
  bool noise_ = false;
  int noised_root_ = -1;
  bool last_was_collision_ = false;
  long long collisions_ = 0;
  long long generation_ = 0;
  bool game_rows_valid_ = false;
  Row game_rows_[HISTORY_STEPS];
  std::vector<Node> spare_nodes_;  // compaction target, swapped with nodes_
  std::vector<Edge> spare_edges_;
  std::vector<int> compact_order_;
  std::vector<PathStep> path_;           // scratch path of the current simulation
  std::vector<PathStep> pending_paths_;  // paths of the pending leaves
  std::vector<Pending> pending_;
  int pending_moves_ = 0;
  bool deferred_cache_ = false;
  bool score_alternatives_ = false;
  std::vector<std::pair<CacheKey, CacheEntryPtr>> deferred_puts_;
  std::vector<CacheKey> deferred_touches_;
  // Gumbel: root noise and this search's visits per root move (empty until
  // the root is expanded), the given noise, scratch.
  std::vector<double> gumbel_;
  std::vector<long long> root_counts_;
  std::vector<std::pair<Move, double>> given_gumbel_;
  bool has_given_gumbel_ = false;
  mutable std::vector<double> scratch_logits_, scratch_sigma_, scratch_policy_;
};

// Sequential halving's schedule (mctx): the visits a root move must have to
// get simulation `simulation` of `budget` over `considered` moves.
long long considered_visit(int considered, long long budget, long long simulation);

// Softmax in double of `count` logits (max subtracted), into out.
void softmax(const float* logits, int count, double* out);
// softmax(logits + sigma) in double (max subtracted), into out (Gumbel's
// improved policy, as models.search_rules._softmax).
void improved_policy(const std::vector<double>& logits, const std::vector<double>& sigma, std::vector<double>& out);

// Self-play move choice (models.search_config.select_move): sample proportional to
// N^(1/T) for plies < temperature_plies (T > 0), else the best move.
// A Gumbel search and a proven win always give the best move; the sampling
// skips proven losses when another move was visited.
int choose_move(const RootStats& stats, int ply, const SearchParams& params, std::mt19937_64& rng);

// Uniform double in [0, 1) from 53 bits.
inline double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
// Uniform integer in [0, n).
inline int uniform_int(std::mt19937_64& rng, int n) {
  return static_cast<int>(static_cast<std::uint64_t>(uniform01(rng) * n));
}
std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b);

}  // namespace zc
