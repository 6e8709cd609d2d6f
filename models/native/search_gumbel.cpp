// zerochess native core: Gumbel AlphaZero's selection (see search.h):
// sequential halving at the root, the improved policy below it.  Python
// reference: models/search_rules.py (Gumbel).
#include "search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace zc {

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
  double parent_m = 0.0;
  const bool utility = moves_left_terms(node, parent_m);
  for (int i = 0; i < count; ++i) {
    double q = edge[i].n > 0.0 ? edge[i].w / edge[i].n : mixed;
    if (utility && edge[i].n > 0.0) q += child_utility(edge[i], parent_m);
    sigma[i] = q;
    low = std::min(low, q);
    high = std::max(high, q);
  }
  const double span = std::max(high - low, 1e-8);
  const double scale = (params_.gumbel_c_visit + max_n) * params_.gumbel_c_scale;
  for (int i = 0; i < count; ++i) sigma[i] = scale * ((sigma[i] - low) / span);
}

// softmax(logits + sigma) (as models.search_rules._softmax).
void improved_policy(const std::vector<double>& logits, const std::vector<double>& sigma, std::vector<double>& out) {
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

int SearchTree::select_gumbel_interior(const Node& node, Skip skip) const {
  gumbel_sigma(node);
  improved_policy(scratch_logits_, scratch_sigma_, scratch_policy_);
  const Edge* edge = edges_.data() + node.edge_begin;
  double total = 1.0;
  for (int i = 0; i < node.num_edges; ++i) total += edge[i].n;
  int best_index = 0;
  double best_score = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < node.num_edges; ++i) {
    if (skipped(edge[i], skip)) continue;
    const double score = scratch_policy_[i] - edge[i].n / total;
    if (score > best_score) {
      best_index = i;
      best_score = score;
    }
  }
  return best_index;
}

int SearchTree::select_gumbel_root(const Node& node, Skip skip) const {
  gumbel_sigma(node);
  long long simulation = 0;
  for (long long count : root_counts_) simulation += count;
  const int considered = std::min(params_.gumbel_considered, node.num_edges);
  const long long wanted = considered_visit(considered, target_, simulation);
  return gumbel_argmax(node, root_counts_.data(), gumbel_.data(), wanted, skip);
}

int SearchTree::gumbel_argmax(const Node& node, const long long* counts, const double* gumbel, long long wanted,
                              Skip skip) const {
  const Edge* edge = edges_.data() + node.edge_begin;
  int best = -1, fallback = 0;
  double best_score = -std::numeric_limits<double>::infinity(), fallback_score = best_score;
  for (int i = 0; i < node.num_edges; ++i) {
    if (skipped(edge[i], skip)) continue;
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

}  // namespace zc
