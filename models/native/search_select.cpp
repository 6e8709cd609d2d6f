// zerochess native core: one simulation of the PUCT search (see search.h):
// selection, virtual loss and backup, the root's result and the self-play
// move choice.  Python reference: models/search_rules.py (selection,
// backup, select_move).
#include "search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace zc {

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

int SearchTree::select(int node_id) {
  const Node& node = nodes_[node_id];
  Skip skip = Skip::kNone;
  if (node_id == root_ && searches_alternatives()) {
    skip = Skip::kProven;
  } else if (node.proven_child) {
    bool skip_lost = false;
    const int forced = solver_choice(node, skip_lost);
    if (forced >= 0) return forced;
    if (skip_lost) skip = Skip::kLost;
  }
  if (params_.gumbel) {
    if (node_id == root_ && !root_counts_.empty()) return select_gumbel_root(node, skip);
    return select_gumbel_interior(node, skip);
  }
  return select_puct(node, skip);
}

bool SearchTree::searches_alternatives() const {
  return score_alternatives_ && nodes_[root_].expanded && nodes_[root_].proof != PROOF_NONE;
}

bool SearchTree::exhausted() const {
  if (!searches_alternatives()) return false;
  const Node& root = nodes_[root_];
  const Edge* edge = edges_.data() + root.edge_begin;
  for (int i = 0; i < root.num_edges; ++i) {
    if (edge[i].proof == PROOF_NONE) return false;
  }
  return true;
}

int SearchTree::select_puct(const Node& node, Skip skip) const {
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
  double parent_m = 0.0;
  const bool utility = moves_left_terms(node, parent_m);
  const Edge* edge = edges_.data() + node.edge_begin;
  int best_index = 0;
  double best_score = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < node.num_edges; ++i) {
    if (skipped(edge[i], skip)) continue;
    const double n = edge[i].n;
    double score = (n != 0.0 ? edge[i].w / n : fpu) + k * edge[i].prior / (1.0 + n);
    if (utility && n != 0.0) score += child_utility(edge[i], parent_m);
    if (score > best_score) {
      best_index = i;
      best_score = score;
    }
  }
  return best_index;
}

// Moves-left utility (models.search_rules.moves_left_utility): it applies at
// a visited node whose |Q| is above the threshold; parent_m is its mean M.
bool SearchTree::moves_left_terms(const Node& node, double& parent_m) const {
  if (params_.moves_left_slope == 0.0 || node.visits == 0) return false;
  const double parent = static_cast<double>(node.visits);
  if (!(std::abs(node.value_sum / parent) > params_.moves_left_threshold)) return false;
  parent_m = node.moves_left_sum / parent;
  return true;
}

// A visited child's utility (models.search_rules.child_utility), weighted by
// -sign(q) * (|q| - threshold) / (1 - threshold) with q = the edge's mean
// value (the parent's side): a drawn child gets none.
double SearchTree::child_utility(const Edge& edge, double parent_m) const {
  if (edge.child < 0 || nodes_[edge.child].visits == 0 || edge.n == 0.0) return 0.0;
  const double q = edge.w / edge.n;
  const double excess = std::abs(q) - params_.moves_left_threshold;
  if (!(excess > 0.0)) return 0.0;
  const double fraction = excess / (1.0 - params_.moves_left_threshold);
  const Node& child = nodes_[edge.child];
  const double child_m = child.moves_left_sum / static_cast<double>(child.visits) + 1.0;
  const double cap = params_.moves_left_cap;
  const double term = std::min(std::max(params_.moves_left_slope * (child_m - parent_m), -cap), cap);
  return q > 0.0 ? -term * fraction : term * fraction;
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
    backup(path_.data(), size, node, terminal_outcome(nodes_[node].terminal_value));
    return false;
  }
  if (nodes_[node].proof != PROOF_NONE) {  // proven by the solver: its exact value
    backup(path_.data(), size, node, proof_outcome(nodes_[node]));
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

void SearchTree::backup(const PathStep* path, int path_size, int leaf, Outcome outcome, bool proven) {
  add_visit(nodes_[leaf], outcome);
  const double vloss = params_.virtual_loss;
  for (int i = path_size - 1; i >= 0; --i) {
    outcome.value = -outcome.value;
    outcome.moves_left += 1.0;
    Node& node = nodes_[path[i].node];
    Edge& edge = edges_[node.edge_begin + path[i].edge];
    edge.n += 1.0 - vloss;
    edge.w += outcome.value + vloss;
    add_visit(node, outcome);
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
    best = gumbel_argmax(root, counts, gumbel, top, skip_lost ? Skip::kLost : Skip::kNone);
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
  stats.root_draw = root.visits ? root.draw_sum / static_cast<double>(root.visits) : 0.0;
  stats.root_moves_left = root.visits ? root.moves_left_sum / static_cast<double>(root.visits) : 0.0;
  return stats;
}

}  // namespace zc
