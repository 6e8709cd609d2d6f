// zerochess native core: the PUCT tree (see search.h): nodes and edges, tree
// reuse, root preparation and noise, leaf collection, the evaluator's
// delivery.  Python reference: models/search_tree.py (GameTree).
#include "search.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <utility>

namespace zc {

namespace {

double terminal_value_of(Termination t) { return t == Termination::CHECKMATE ? -1.0 : 0.0; }

}  // namespace

SearchTree::SearchTree(const SearchParams& params, PolicyEncoding encoding, std::shared_ptr<EvalCache> cache,
                       std::uint64_t seed, const std::string& root_fen, const std::vector<Move>& moves)
    : params_(params), encoding_(encoding), cache_(std::move(cache)), rng_(seed) {
  Board board = Board::from_fen(root_fen);
  std::string status = board.status();
  if (!status.empty()) throw ChessError("invalid position for search: " + board.fen() + " (" + status + ")");
  history_.push(board);
  for (Move move : moves) {
    if (!board.is_legal(move)) throw ChessError("illegal move " + move.uci() + " in " + board.fen());
    Undo undo;
    board.make(move, undo);
    history_.push(board);
  }
  status = board.status();
  if (!status.empty()) throw ChessError("invalid position for search: " + board.fen() + " (" + status + ")");
  nodes_.reserve(64);
  edges_.reserve(64 * 32);
  root_ = new_root_node(board);
}

const Node& SearchTree::node(int id) const {
  if (id < 0 || id >= static_cast<int>(nodes_.size())) throw ChessError("no node " + std::to_string(id));
  return nodes_[id];
}

int SearchTree::new_root_node(const Board& board) {
  Node node;
  node.board = board;
  node.key = board.key();
  node.repetitions = history_.repetitions();
  node.row = board_row(board, node.repetitions);
  nodes_.push_back(node);
  return static_cast<int>(nodes_.size()) - 1;
}

bool SearchTree::root_terminal() const {
  const Node& root = nodes_[root_];
  if (root.terminal) return true;
  MoveList moves;
  root.board.legal_moves(moves);
  return terminal_reason(root.board, moves.size, root.repetitions) != Termination::NONE;
}

void SearchTree::advance(Move move) {
  const Board& current = nodes_[root_].board;
  if (!current.is_legal(move)) throw ChessError("illegal move " + move.uci() + " in " + current.fen());
  abort_pending();
  int child = -1;
  const Node& root = nodes_[root_];
  if (root.expanded) {
    for (int i = 0; i < root.num_edges; ++i) {
      const Edge& edge = edges_[root.edge_begin + i];
      if (edge.move == move) {
        child = edge.child;
        break;
      }
    }
  }
  Board board = current;
  Undo undo;
  board.make(move, undo);
  history_.push(board);
  // A terminal child (a two-fold draw in the tree: the game goes on) starts afresh.
  if (child < 0 || nodes_[child].pending || nodes_[child].terminal) {
    nodes_.clear();
    edges_.clear();
    root_ = new_root_node(board);
  } else {
    compact(child);
  }
  game_rows_valid_ = false;
  target_ = done_ = in_flight_ = 0;
  noised_root_ = -1;
  gumbel_.clear();
  root_counts_.clear();
  ++generation_;
}

void SearchTree::compact(int new_root) {
  // Copy into the spare buffers (their capacity is kept from the last
  // advance, so a game in steady state allocates nothing here).
  std::vector<Node>& nodes = spare_nodes_;
  std::vector<Edge>& edges = spare_edges_;
  nodes.clear();
  edges.clear();
  std::vector<int>& order = compact_order_;
  order.assign(1, new_root);
  nodes.push_back(nodes_[new_root]);
  nodes.back().parent = -1;
  for (std::size_t at = 0; at < order.size(); ++at) {
    const Node& old = nodes_[order[at]];
    Node& copy = nodes[at];
    copy.edge_begin = static_cast<std::int32_t>(edges.size());
    for (int i = 0; i < old.num_edges; ++i) {
      Edge edge = edges_[old.edge_begin + i];
      if (edge.child >= 0) {
        int id = static_cast<int>(nodes.size());
        order.push_back(edge.child);
        nodes.push_back(nodes_[edge.child]);
        nodes.back().parent = static_cast<std::int32_t>(at);
        edge.child = id;
      }
      edges.push_back(edge);
    }
  }
  nodes_.swap(nodes);
  edges_.swap(edges);
  root_ = 0;
}

void SearchTree::start(long long num_simulations, bool add_noise, const std::vector<std::pair<Move, double>>* gumbel) {
  if (num_simulations < 0) throw ChessError("num_simulations must be >= 0, got " + std::to_string(num_simulations));
  abort_pending();
  if (root_terminal()) throw ChessError("search started on a finished game: " + fen());
  has_given_gumbel_ = false;
  given_gumbel_.clear();
  if (gumbel) {
    MoveList legal;
    board().legal_moves(legal);
    for (Move move : legal) {
      bool found = false;
      for (const auto& item : *gumbel) found = found || (item.first == move && std::isfinite(item.second));
      if (!found) throw ChessError("gumbel noise has no finite value for " + move.uci() + " in " + fen());
    }
    given_gumbel_ = *gumbel;
    has_given_gumbel_ = true;
  }
  noise_ = add_noise;
  done_ = 0;
  in_flight_ = 0;
  const Node& root = nodes_[root_];
  long long kept = 0;
  if (root.expanded) {
    double total = 0.0;
    for (int i = 0; i < root.num_edges; ++i) total += edges_[root.edge_begin + i].n;
    kept = std::llround(total);
  }
  gumbel_.clear();
  root_counts_.clear();
  target_ = params_.gumbel ? num_simulations : std::max(num_simulations - kept, 0LL);
  if (root.expanded) prepare_root();
}

void SearchTree::prepare_root() {
  if (!params_.gumbel) {
    if (noise_) add_noise_(root_);
    return;
  }
  const Node& root = nodes_[root_];
  const int count = root.num_edges;
  const Edge* edge = edges_.data() + root.edge_begin;
  root_counts_.assign(count, 0);
  gumbel_.assign(count, 0.0);
  if (has_given_gumbel_) {
    for (int i = 0; i < count; ++i) {
      for (const auto& item : given_gumbel_) {
        if (item.first == edge[i].move) {
          gumbel_[i] = item.second;
          break;
        }
      }
    }
  } else if (noise_ && params_.gumbel_scale > 0.0) {
    for (int i = 0; i < count; ++i) {
      const double u = (static_cast<double>(rng_() >> 11) + 0.5) * 0x1.0p-53;  // in (0, 1)
      gumbel_[i] = -std::log(-std::log(u)) * params_.gumbel_scale;
    }
  }
}

int SearchTree::collect(LeafBatch& out, int limit) {
  if (limit <= 0) limit = params_.leaves_per_batch;
  const Node& root = nodes_[root_];
  if (!root.expanded) {
    if (root.pending) return 0;
    return reach_leaf(root_, nullptr, 0, out) ? 1 : 0;
  }
  int got = 0, misses = 0, attempts = 0;
  while (got < limit && done_ + in_flight_ < target_ && attempts < 4 * limit && !exhausted()) {
    ++attempts;
    if (simulate(out)) {
      ++got;
    } else if (last_was_collision_) {
      if (++misses > limit) break;
    }
  }
  return got;
}

int SearchTree::make_child(int parent, int edge_index, const PathStep* path, int path_size) {
  Node child;
  child.board = nodes_[parent].board;
  Undo undo;
  child.board.make(edges_[nodes_[parent].edge_begin + edge_index].move, undo);
  child.key = child.board.key();
  int repetitions = 0;
  if (child.board.halfmove_clock()) {
    repetitions = history_.occurrences(child.key);
    // path[0] is the root, already counted with the game's positions.
    for (int i = 1; i < path_size; ++i) repetitions += nodes_[path[i].node].key == child.key;
  }
  child.repetitions = repetitions;
  child.row = board_row(child.board, repetitions);
  child.parent = parent;
  nodes_.push_back(child);
  int id = static_cast<int>(nodes_.size()) - 1;
  edges_[nodes_[parent].edge_begin + edge_index].child = id;
  return id;
}

void SearchTree::set_moves(int node_id, const Move* moves, int count) {
  Node& node = nodes_[node_id];
  node.edge_begin = static_cast<std::int32_t>(edges_.size());
  node.num_edges = count;
  node.has_moves = true;
  for (int i = 0; i < count; ++i) {
    Edge edge;
    edge.move = moves[i];
    edges_.push_back(edge);
  }
}

bool SearchTree::reach_leaf(int node_id, const PathStep* path, int path_size, LeafBatch& out) {
  CacheEntryPtr cached;
  if (cache_) {
    CacheKey key = cache_key(nodes_[node_id]);
    cached = cache_->get(key, !deferred_cache_);
    if (cached && deferred_cache_) deferred_touches_.push_back(key);
  }
  MoveList generated;
  const Move* moves;
  int count;
  if (cached) {
    moves = cached->moves.data();
    count = static_cast<int>(cached->moves.size());
  } else {
    nodes_[node_id].board.legal_moves(generated);
    moves = generated.moves.data();
    count = generated.size;
  }
  Termination reason = terminal_reason(nodes_[node_id].board, count, nodes_[node_id].repetitions);
  if (reason != Termination::NONE) {
    if (node_id == root_) throw ChessError("search started on a finished game: " + nodes_[node_id].board.fen());
    Node& node = nodes_[node_id];
    node.terminal = true;
    node.terminal_value = terminal_value_of(reason);
    if (params_.solver) {
      node.proof = static_cast<std::int8_t>(node.terminal_value);
      node.proof_plies = 0;
    }
    backup(path, path_size, node_id, terminal_outcome(node.terminal_value), params_.solver);
    return false;
  }
  if (params_.twofold_draw && node_id != root_ && nodes_[node_id].repetitions >= 1) {
    Node& node = nodes_[node_id];  // a draw for the search, but not a proven one
    node.terminal = true;
    node.terminal_value = 0.0;
    backup(path, path_size, node_id, terminal_outcome(0.0), false);
    return false;
  }
  set_moves(node_id, moves, count);
  if (cached) {
    Node& node = nodes_[node_id];
    Edge* edge = edges_.data() + node.edge_begin;
    for (int i = 0; i < count; ++i) edge[i].prior = cached->priors[i];
    node.expanded = true;
    node.raw_value = cached->value;
    // find_mates may add nodes: `node` is stale from here.
    const bool proven = find_mates(node_id, path, path_size);
    const Outcome outcome =
        proven ? proof_outcome(nodes_[node_id]) : Outcome{cached->value, cached->draw, cached->moves_left};
    if (node_id == root_) {
      add_visit(nodes_[node_id], outcome);
      prepare_root();
    } else {
      backup(path, path_size, node_id, outcome, proven);
    }
    return false;
  }
  nodes_[node_id].pending = true;
  if (node_id != root_) ++in_flight_;
  Pending pending;
  pending.node = node_id;
  pending.path_begin = static_cast<std::int32_t>(pending_paths_.size());
  pending.path_size = path_size;
  pending.moves_begin = pending_moves_;
  pending_paths_.insert(pending_paths_.end(), path, path + path_size);
  pending_.push_back(pending);
  pending_moves_ += count;
  write_leaf(node_id, path, path_size, out);
  return true;
}

void SearchTree::write_leaf(int node_id, const PathStep* path, int path_size, LeafBatch& out) {
  Row steps[HISTORY_STEPS];
  const Node& node = nodes_[node_id];
  int count = 0;
  steps[count++] = node.row;
  for (int i = path_size - 1; i >= 0 && count < HISTORY_STEPS; --i) steps[count++] = nodes_[path[i].node].row;
  if (count < HISTORY_STEPS) {
    // steps[count - 1] is the root: continue with the game's positions before it.
    if (!game_rows_valid_) {
      history_.snapshot(game_rows_);
      game_rows_valid_ = true;
    }
    for (int j = 1; count < HISTORY_STEPS; ++j) steps[count++] = game_rows_[j];
  }
  std::size_t offset = out.planes.size();
  out.planes.resize(offset + PLANES_BYTES);
  write_planes(steps, board_meta(node.board), out.planes.data() + offset);
  Edge* edge = edges_.data() + node.edge_begin;
  for (int i = 0; i < node.num_edges; ++i) {
    if (edge[i].policy < 0) edge[i].policy = policy_index(encoding_, node.board, edge[i].move);
    out.rows.push_back(out.leaves);
    out.indices.push_back(edge[i].policy);
  }
  ++out.leaves;
}

void SearchTree::validate(const float* logits, long long num_logits, const float* values, long long num_values,
                          const float* aux) const {
  if (num_values != static_cast<long long>(pending_.size()) || num_logits != pending_moves_) {
    throw ChessError("evaluator returned " + std::to_string(num_logits) + " logits and " + std::to_string(num_values) +
                     " values for " + std::to_string(pending_moves_) + " moves of " + std::to_string(pending_.size()) +
                     " leaves");
  }
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    const Pending& p = pending_[i];
    const Node& node = nodes_[p.node];
    const double value = static_cast<double>(values[i]);
    bool finite = std::isfinite(value);
    for (int j = 0; j < node.num_edges && finite; ++j) finite = std::isfinite(logits[p.moves_begin + j]);
    if (!finite) {
      throw ChessError("evaluator returned a non-finite logit or value " + std::to_string(value) + " for " +
                       node.board.fen());
    }
    if (!(-1.0 - 1e-6 <= value && value <= 1.0 + 1e-6)) {
      throw ChessError("evaluator returned a value " + std::to_string(value) + " outside [-1, 1] for " +
                       node.board.fen());
    }
    if (!aux) continue;
    const double draw = static_cast<double>(aux[2 * i]), moves_left = static_cast<double>(aux[2 * i + 1]);
    if (!(0.0 - 1e-6 <= draw && draw <= 1.0 + 1e-6)) {  // false for NaN
      throw ChessError("evaluator returned a draw probability " + std::to_string(draw) + " outside [0, 1] for " +
                       node.board.fen());
    }
    if (!(std::isfinite(moves_left) && moves_left >= 0.0)) {
      throw ChessError("evaluator returned moves_left " + std::to_string(moves_left) + " (not finite and >= 0) for " +
                       node.board.fen());
    }
  }
}

void SearchTree::deliver(const float* logits, const float* values, const float* aux) {
  std::vector<double> priors;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    const Pending& p = pending_[i];
    const int id = p.node;
    const int count = nodes_[id].num_edges;
    priors.resize(count);
    softmax(logits + p.moves_begin, count, priors.data());
    const double value = static_cast<double>(values[i]);
    const double draw = aux ? static_cast<double>(aux[2 * i]) : 0.0;
    const double moves_left = aux ? static_cast<double>(aux[2 * i + 1]) : 0.0;
    Node& node = nodes_[id];
    node.pending = false;
    Edge* edge = edges_.data() + node.edge_begin;
    if (cache_ && cache_->max_size() > 0) {
      auto entry = std::make_shared<CacheEntry>();
      entry->moves.resize(count);
      for (int j = 0; j < count; ++j) entry->moves[j] = edge[j].move;
      entry->priors = priors;
      entry->value = value;
      entry->draw = draw;
      entry->moves_left = moves_left;
      if (deferred_cache_) {
        deferred_puts_.emplace_back(cache_key(node), std::move(entry));
      } else {
        cache_->put(cache_key(node), std::move(entry));
      }
    }
    for (int j = 0; j < count; ++j) edge[j].prior = priors[j];
    node.expanded = true;
    node.raw_value = value;
    // find_mates may add nodes: `node` is stale from here.
    const bool proven = find_mates(id, pending_paths_.data() + p.path_begin, p.path_size);
    const Outcome outcome = proven ? proof_outcome(nodes_[id]) : Outcome{value, draw, moves_left};
    if (id == root_) {
      prepare_root();
      add_visit(nodes_[id], outcome);
      continue;
    }
    --in_flight_;
    backup(pending_paths_.data() + p.path_begin, p.path_size, id, outcome, proven);
  }
  pending_.clear();
  pending_paths_.clear();
  pending_moves_ = 0;
}

void SearchTree::abort_pending() {
  for (const Pending& p : pending_) {
    Node& node = nodes_[p.node];
    node.pending = false;
    node.has_moves = false;
    node.num_edges = 0;
    if (p.node != root_) {
      revert_virtual_loss(pending_paths_.data() + p.path_begin, p.path_size);
      --in_flight_;
    }
  }
  pending_.clear();
  pending_paths_.clear();
  pending_moves_ = 0;
}

void SearchTree::flush_cache_puts() {
  if (cache_) {
    for (auto& put : deferred_puts_) cache_->put(put.first, std::move(put.second));
  }
  deferred_puts_.clear();
}

void SearchTree::flush_cache_touches() {
  if (cache_) {
    for (const CacheKey& key : deferred_touches_) cache_->touch(key);
  }
  deferred_touches_.clear();
}

void SearchTree::add_noise_(int node_id) {
  if (noised_root_ == node_id) return;
  noised_root_ = node_id;
  const double alpha = params_.dirichlet_alpha, eps = params_.dirichlet_epsilon;
  Node& node = nodes_[node_id];
  const int count = node.num_edges;
  if (count < 2 || eps == 0.0 || alpha == 0.0) return;
  std::gamma_distribution<double> gamma(alpha, 1.0);
  std::vector<double> noise(count);
  double total = 0.0;
  for (int i = 0; i < count; ++i) {
    noise[i] = gamma(rng_);
    total += noise[i];
  }
  Edge* edge = edges_.data() + node.edge_begin;
  for (int i = 0; i < count; ++i) {
    double share = total > 0.0 ? noise[i] / total : 1.0 / count;
    edge[i].prior = (1.0 - eps) * edge[i].prior + eps * share;
  }
}

}  // namespace zc
