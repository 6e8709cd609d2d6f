// PUCT search: see search.h and models/search.py (the specification).
#include "search.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace zc {

// ---------------------------------------------------------------------------
// Evaluation cache

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

// ---------------------------------------------------------------------------
// Helpers

std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b) {
  auto splitmix = [](std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
  };
  return splitmix(splitmix(a) ^ (b + 0x632BE59BD9B4E019ULL));
}

void softmax(const float* logits, int count, double* out) {
  if (count <= 0) return;
  double top = static_cast<double>(logits[0]);
  for (int i = 1; i < count; ++i) top = std::max(top, static_cast<double>(logits[i]));
  double total = 0.0;
  for (int i = 0; i < count; ++i) {
    out[i] = std::exp(static_cast<double>(logits[i]) - top);
    total += out[i];
  }
  for (int i = 0; i < count; ++i) out[i] = out[i] / total;
}

int choose_move(const RootStats& stats, int ply, const SearchParams& params, std::mt19937_64& rng) {
  if (params.gumbel) return stats.best;
  for (int proof : stats.proof) {
    if (proof == 1) return stats.best;
  }
  if (ply >= params.temperature_plies || params.temperature == 0.0) return stats.best;
  const int count = static_cast<int>(stats.child_n.size());
  const bool proven = !stats.proof.empty();
  auto visits_of = [&](int i) { return proven && stats.proof[i] == -1 ? 0.0 : std::nearbyint(stats.child_n[i]); };
  double top = 0.0;
  for (int i = 0; i < count; ++i) top = std::max(top, visits_of(i));
  if (top <= 0.0) return stats.best;
  // N^(1/T) normalised by the largest, in log space (no overflow for small T).
  std::vector<double> weights(count, 0.0);
  double total = 0.0;
  for (int i = 0; i < count; ++i) {
    double visits = visits_of(i);
    if (visits > 0.0) weights[i] = std::exp((std::log(visits) - std::log(top)) / params.temperature);
    total += weights[i];
  }
  double pick = uniform01(rng) * total;
  int last = stats.best;
  for (int i = 0; i < count; ++i) {
    if (weights[i] <= 0.0) continue;
    last = i;
    if (pick < weights[i]) return i;
    pick -= weights[i];
  }
  return last;
}

static double terminal_value_of(Termination t) { return t == Termination::CHECKMATE ? -1.0 : 0.0; }

long long considered_visit(int considered, long long budget, long long simulation) {
  if (considered <= 1) return simulation;
  long long log2max = 0;
  while ((1LL << log2max) < considered) ++log2max;
  long long base = 0, width = considered;
  while (true) {
    const long long extra = std::max(1LL, budget / (log2max * width));
    if (simulation < extra * width) return base + simulation / width;
    simulation -= extra * width;
    base += extra;
    width = std::max(2LL, width / 2);
  }
}

// ---------------------------------------------------------------------------
// Tree

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
  if (child < 0 || nodes_[child].pending) {
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
  while (got < limit && done_ + in_flight_ < target_ && attempts < 4 * limit) {
    ++attempts;
    if (simulate(out)) {
      ++got;
    } else if (last_was_collision_) {
      if (++misses > limit) break;
    }
  }
  return got;
}

int SearchTree::select(int node_id) {
  const Node& node = nodes_[node_id];
  bool skip_lost = false;
  if (node.proven_child) {
    const int forced = solver_choice(node, skip_lost);
    if (forced >= 0) return forced;
  }
  if (params_.gumbel) {
    if (node_id == root_ && !root_counts_.empty()) return select_gumbel_root(node, skip_lost);
    return select_gumbel_interior(node, skip_lost);
  }
  return select_puct(node, skip_lost);
}

int SearchTree::solver_choice(const Node& node, bool& skip_lost) const {
  const Edge* edge = edges_.data() + node.edge_begin;
  int forced = -1, lost = 0;
  for (int i = 0; i < node.num_edges; ++i) {
    if (edge[i].proof == -1) {
      if (forced < 0 || edge[i].proof_plies < edge[forced].proof_plies ||
          (edge[i].proof_plies == edge[forced].proof_plies && edge[i].prior > edge[forced].prior)) {
        forced = i;
      }
    }
    lost += edge[i].proof == 1;
  }
  skip_lost = forced < 0 && lost > 0 && lost < node.num_edges;
  return forced;
}

bool SearchTree::update_proof(Node& node) const {
  const Edge* edge = edges_.data() + node.edge_begin;
  int best_win = -1, longest = 0;
  bool all_proven = true, draw = false;
  for (int i = 0; i < node.num_edges; ++i) {
    const int plies = edge[i].proof_plies + 1;
    switch (edge[i].proof) {
      case PROOF_NONE:
        all_proven = false;
        break;
      case -1:
        if (best_win < 0 || plies < best_win) best_win = plies;
        break;
      case 0:
        draw = true;
        break;
      default:
        longest = std::max(longest, plies);
    }
  }
  if (best_win >= 0) {
    node.proof = 1;
    node.proof_plies = best_win;
  } else if (all_proven && node.num_edges > 0) {
    node.proof = draw ? 0 : -1;
    node.proof_plies = draw ? 0 : longest;
  } else {
    return false;
  }
  return true;
}

int SearchTree::select_puct(const Node& node, bool skip_lost) const {
  const long long n_parent = node.visits;
  const double parent = static_cast<double>(n_parent);
  const double c = params_.c_puct_init + std::log((1.0 + parent + params_.c_puct_base) / params_.c_puct_base);
  double fpu;
  if (!params_.fpu_absolute) {
    fpu = (n_parent ? node.value_sum / parent : 0.0) - params_.fpu_value;
  } else {
    fpu = params_.fpu_value;
  }
  const double k = c * std::sqrt(static_cast<double>(std::max(n_parent, 1LL)));
  const Edge* edge = edges_.data() + node.edge_begin;
  int best_index = 0;
  double best_score = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < node.num_edges; ++i) {
    if (skip_lost && edge[i].proof == 1) continue;
    const double n = edge[i].n;
    const double score = (n != 0.0 ? edge[i].w / n : fpu) + k * edge[i].prior / (1.0 + n);
    if (score > best_score) {
      best_index = i;
      best_score = score;
    }
  }
  return best_index;
}

void SearchTree::gumbel_sigma(const Node& node) const {
  const int count = node.num_edges;
  const Edge* edge = edges_.data() + node.edge_begin;
  std::vector<double>& logits = scratch_logits_;
  std::vector<double>& sigma = scratch_sigma_;
  logits.resize(count);
  sigma.resize(count);
  const double tiny = std::numeric_limits<double>::min();
  for (int i = 0; i < count; ++i) logits[i] = std::log(std::max(edge[i].prior, tiny));
  double sum_n = 0.0, sum_p = 0.0, max_n = 0.0;
  for (int i = 0; i < count; ++i) {
    sum_n += edge[i].n;
    if (edge[i].n > 0.0) {
      sum_p += std::max(edge[i].prior, tiny);
      max_n = std::max(max_n, edge[i].n);
    }
  }
  double weighted = 0.0;
  for (int i = 0; i < count; ++i) {
    if (edge[i].n > 0.0) weighted += std::max(edge[i].prior, tiny) * (edge[i].w / edge[i].n) / sum_p;
  }
  const double mixed = (node.raw_value + sum_n * weighted) / (sum_n + 1.0);
  double low = std::numeric_limits<double>::infinity(), high = -low;
  for (int i = 0; i < count; ++i) {
    const double q = edge[i].n > 0.0 ? edge[i].w / edge[i].n : mixed;
    sigma[i] = q;
    low = std::min(low, q);
    high = std::max(high, q);
  }
  const double span = std::max(high - low, 1e-8);
  const double scale = (params_.gumbel_c_visit + max_n) * params_.gumbel_c_scale;
  for (int i = 0; i < count; ++i) sigma[i] = scale * ((sigma[i] - low) / span);
}

// softmax(logits + sigma) of the scratch vectors into scratch_policy_ (as
// models.search._softmax).
static void improved_policy(const std::vector<double>& logits, const std::vector<double>& sigma,
                            std::vector<double>& out) {
  const std::size_t count = logits.size();
  out.resize(count);
  double top = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < count; ++i) {
    out[i] = logits[i] + sigma[i];
    top = std::max(top, out[i]);
  }
  double total = 0.0;
  for (std::size_t i = 0; i < count; ++i) {
    out[i] = std::exp(out[i] - top);
    total += out[i];
  }
  for (std::size_t i = 0; i < count; ++i) out[i] = out[i] / total;
}

int SearchTree::select_gumbel_interior(const Node& node, bool skip_lost) const {
  gumbel_sigma(node);
  improved_policy(scratch_logits_, scratch_sigma_, scratch_policy_);
  const Edge* edge = edges_.data() + node.edge_begin;
  double total = 1.0;
  for (int i = 0; i < node.num_edges; ++i) total += edge[i].n;
  int best_index = 0;
  double best_score = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < node.num_edges; ++i) {
    if (skip_lost && edge[i].proof == 1) continue;
    const double score = scratch_policy_[i] - edge[i].n / total;
    if (score > best_score) {
      best_index = i;
      best_score = score;
    }
  }
  return best_index;
}

int SearchTree::select_gumbel_root(const Node& node, bool skip_lost) const {
  gumbel_sigma(node);
  long long simulation = 0;
  for (long long count : root_counts_) simulation += count;
  const int considered = std::min(params_.gumbel_considered, node.num_edges);
  const long long wanted = considered_visit(considered, target_, simulation);
  return gumbel_argmax(node, root_counts_.data(), gumbel_.data(), wanted, skip_lost);
}

int SearchTree::gumbel_argmax(const Node& node, const long long* counts, const double* gumbel, long long wanted,
                              bool skip_lost) const {
  const Edge* edge = edges_.data() + node.edge_begin;
  int best = -1, fallback = 0;
  double best_score = -std::numeric_limits<double>::infinity(), fallback_score = best_score;
  for (int i = 0; i < node.num_edges; ++i) {
    if (skip_lost && edge[i].proof == 1) continue;
    const double score = std::max(-1e9, gumbel[i] + scratch_logits_[i] + scratch_sigma_[i]);
    if (score > fallback_score) {
      fallback = i;
      fallback_score = score;
    }
    if (counts[i] == wanted && score > best_score) {
      best = i;
      best_score = score;
    }
  }
  return best >= 0 ? best : fallback;
}

int SearchTree::make_child(int parent, int edge_index, const PathStep* path, int path_size) {
  Node child;
  child.board = nodes_[parent].board;
  Undo undo;
  child.board.make(edges_[nodes_[parent].edge_begin + edge_index].move, undo);
  child.key = child.board.key();
  int repetitions = 0;
  if (child.board.halfmove_clock) {
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

bool SearchTree::simulate(LeafBatch& out) {
  last_was_collision_ = false;
  path_.clear();
  int node = root_;
  const double vloss = params_.virtual_loss;
  while (nodes_[node].expanded && !nodes_[node].terminal && (nodes_[node].proof == PROOF_NONE || node == root_)) {
    int index = select(node);
    if (node == root_ && !root_counts_.empty()) ++root_counts_[index];
    path_.push_back(PathStep{node, index});
    Edge& edge = edges_[nodes_[node].edge_begin + index];
    edge.n += vloss;
    edge.w -= vloss;
    int child = edge.child;
    if (child < 0) child = make_child(node, index, path_.data(), static_cast<int>(path_.size()));
    node = child;
  }
  const int size = static_cast<int>(path_.size());
  if (nodes_[node].terminal) {
    backup(path_.data(), size, node, nodes_[node].terminal_value);
    return false;
  }
  if (nodes_[node].proof != PROOF_NONE) {  // proven by the solver: its exact value
    backup(path_.data(), size, node, static_cast<double>(nodes_[node].proof));
    return false;
  }
  if (nodes_[node].pending) {
    revert_virtual_loss(path_.data(), size);
    ++collisions_;
    last_was_collision_ = true;
    return false;
  }
  return reach_leaf(node, path_.data(), size, out);
}

bool SearchTree::find_mates(int node_id, const PathStep* path, int path_size) {
  if (!params_.solver) return false;
  const bool threats = params_.solver_threats;
  Board board = nodes_[node_id].board;
  const int count = nodes_[node_id].num_edges;
  MoveList replies, answers;
  bool found = false;
  for (int i = 0; i < count; ++i) {
    const Move move = edges_[nodes_[node_id].edge_begin + i].move;
    const bool check = board.gives_check(move);
    if (!check && !threats) continue;  // a mate is a check: only checks are played out
    Undo undo;
    board.make(move, undo);
    replies.size = 0;
    board.legal_moves(replies);
    if (check && replies.size == 0) {
      Node child;
      child.board = board;
      child.key = board.key();
      child.row = board_row(board, 0);
      child.parent = node_id;
      child.terminal = true;
      child.terminal_value = -1.0;
      child.proof = -1;
      nodes_.push_back(child);
      Edge& edge = edges_[nodes_[node_id].edge_begin + i];
      edge.child = static_cast<std::int32_t>(nodes_.size()) - 1;
      edge.proof = -1;
      edge.proof_plies = 0;
      found = true;
    } else if (threats && replies.size > 0 && board.halfmove_clock < 100) {
      // Mate threat: does some reply (a check) leave no legal move?  Not when
      // the move ends the game in a draw (50-move rule, insufficient
      // material, threefold repetition).
      bool mated = false;
      for (int j = 0; j < replies.size && !mated; ++j) {
        const Move reply = replies[j];
        if (!board.gives_check(reply)) continue;
        Undo reply_undo;
        board.make(reply, reply_undo);
        answers.size = 0;
        board.legal_moves(answers);
        mated = answers.size == 0;
        board.unmake(reply, reply_undo);
      }
      if (mated && !board.is_insufficient_material()) {
        const int child = make_child(node_id, i, path, path_size);
        if (nodes_[child].repetitions < 2) {
          nodes_[child].proof = 1;
          nodes_[child].proof_plies = 1;
          Edge& edge = edges_[nodes_[node_id].edge_begin + i];
          edge.proof = 1;
          edge.proof_plies = 1;
          found = true;
        }
      }
    }
    board.unmake(move, undo);
  }
  if (!found) return false;
  nodes_[node_id].proven_child = true;
  return update_proof(nodes_[node_id]);
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
    backup(path, path_size, node_id, node.terminal_value, params_.solver);
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
    const double backed = proven ? static_cast<double>(nodes_[node_id].proof) : cached->value;
    if (node_id == root_) {
      nodes_[node_id].visits += 1;
      nodes_[node_id].value_sum += backed;
      prepare_root();
    } else {
      backup(path, path_size, node_id, backed, proven);
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

void SearchTree::validate(const float* logits, long long num_logits, const float* values,
                          long long num_values) const {
  if (num_values != static_cast<long long>(pending_.size()) || num_logits != pending_moves_) {
    throw ChessError("evaluator returned " + std::to_string(num_logits) + " logits and " +
                     std::to_string(num_values) + " values for " + std::to_string(pending_moves_) +
                     " moves of " + std::to_string(pending_.size()) + " leaves");
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
  }
}

void SearchTree::deliver(const float* logits, const float* values) {
  std::vector<double> priors;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    const Pending& p = pending_[i];
    const int id = p.node;
    const int count = nodes_[id].num_edges;
    priors.resize(count);
    softmax(logits + p.moves_begin, count, priors.data());
    const double value = static_cast<double>(values[i]);
    Node& node = nodes_[id];
    node.pending = false;
    Edge* edge = edges_.data() + node.edge_begin;
    if (cache_ && cache_->max_size() > 0) {
      auto entry = std::make_shared<CacheEntry>();
      entry->moves.resize(count);
      for (int j = 0; j < count; ++j) entry->moves[j] = edge[j].move;
      entry->priors = priors;
      entry->value = value;
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
    const double backed = proven ? static_cast<double>(nodes_[id].proof) : value;
    if (id == root_) {
      prepare_root();
      nodes_[id].visits += 1;
      nodes_[id].value_sum += backed;
      continue;
    }
    --in_flight_;
    backup(pending_paths_.data() + p.path_begin, p.path_size, id, backed, proven);
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

void SearchTree::backup(const PathStep* path, int path_size, int leaf, double value, bool proven) {
  nodes_[leaf].visits += 1;
  nodes_[leaf].value_sum += value;
  const double vloss = params_.virtual_loss;
  for (int i = path_size - 1; i >= 0; --i) {
    value = -value;
    Node& node = nodes_[path[i].node];
    Edge& edge = edges_[node.edge_begin + path[i].edge];
    edge.n += 1.0 - vloss;
    edge.w += value + vloss;
    node.visits += 1;
    node.value_sum += value;
  }
  if (path_size) ++done_;
  if (!proven) return;
  int child = leaf;
  for (int i = path_size - 1; i >= 0; --i) {
    Node& node = nodes_[path[i].node];
    Edge& edge = edges_[node.edge_begin + path[i].edge];
    edge.proof = nodes_[child].proof;
    edge.proof_plies = static_cast<std::int16_t>(std::min(nodes_[child].proof_plies, 32000));
    node.proven_child = true;
    if (node.proof != PROOF_NONE || !update_proof(node)) break;
    child = path[i].node;
  }
}

void SearchTree::revert_virtual_loss(const PathStep* path, int path_size) {
  const double vloss = params_.virtual_loss;
  for (int i = 0; i < path_size; ++i) {
    Edge& edge = edges_[nodes_[path[i].node].edge_begin + path[i].edge];
    edge.n -= vloss;
    edge.w += vloss;
  }
  if (path_size > 0 && !root_counts_.empty() && path[0].node == root_) --root_counts_[path[0].edge];
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

RootStats SearchTree::result() const {
  const Node& root = nodes_[root_];
  if (!root.expanded) throw ChessError("no search has run on " + root.board.fen());
  RootStats stats;
  const Edge* edge = edges_.data() + root.edge_begin;
  const int count = root.num_edges;
  stats.moves.resize(count);
  stats.policy.resize(count);
  stats.child_n.resize(count);
  stats.child_w.resize(count);
  stats.priors.resize(count);
  for (int i = 0; i < count; ++i) {
    stats.moves[i] = edge[i].move;
    stats.policy[i] = edge[i].policy >= 0 ? edge[i].policy : policy_index(encoding_, root.board, edge[i].move);
    stats.child_n[i] = edge[i].n;
    stats.child_w[i] = edge[i].w;
    stats.priors[i] = edge[i].prior;
  }
  bool skip_lost = false;  // some, not all, moves are proven losses
  if (params_.solver) {
    stats.proof.assign(count, PROOF_NONE);
    stats.proof_plies.assign(count, 0);
    int losing = 0;
    for (int i = 0; i < count; ++i) {
      if (edge[i].proof == PROOF_NONE) continue;
      stats.proof[i] = -edge[i].proof;
      stats.proof_plies[i] = edge[i].proof != 0 ? edge[i].proof_plies + 1 : 0;
      losing += stats.proof[i] == -1;
    }
    skip_lost = losing > 0 && losing < count;
  }
  int best = -1;
  if (params_.gumbel) {
    gumbel_sigma(root);
    improved_policy(scratch_logits_, scratch_sigma_, stats.improved);
    std::vector<long long> zeros;
    std::vector<double> no_noise;
    const long long* counts = root_counts_.data();
    const double* gumbel = gumbel_.data();
    if (static_cast<int>(root_counts_.size()) != count) {
      zeros.assign(count, 0);
      no_noise.assign(count, 0.0);
      counts = zeros.data();
      gumbel = no_noise.data();
    }
    long long top = -1;
    for (int i = 0; i < count; ++i) {
      if (!(skip_lost && edge[i].proof == 1)) top = std::max(top, counts[i]);
    }
    best = gumbel_argmax(root, counts, gumbel, top, skip_lost);
  } else {
    double best_visits = -1.0, best_prior = 0.0;
    for (int i = 0; i < count; ++i) {
      if (skip_lost && edge[i].proof == 1) continue;
      const double visits = std::nearbyint(edge[i].n);
      if (visits > best_visits || (visits == best_visits && edge[i].prior > best_prior)) {
        best = i;
        best_visits = visits;
        best_prior = edge[i].prior;
      }
    }
  }
  if (params_.solver) {  // the fastest proven win (ties: the higher prior, then the first)
    int win = -1;
    for (int i = 0; i < count; ++i) {
      if (stats.proof[i] != 1) continue;
      if (win < 0 || stats.proof_plies[i] < stats.proof_plies[win] ||
          (stats.proof_plies[i] == stats.proof_plies[win] && edge[i].prior > edge[win].prior)) {
        win = i;
      }
    }
    if (win >= 0) best = win;
  }
  stats.best = best;
  stats.root_value = root.visits ? root.value_sum / static_cast<double>(root.visits) : 0.0;
  return stats;
}

}  // namespace zc
