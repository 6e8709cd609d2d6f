// zerochess native core: the MCTS-solver of the PUCT search (see search.h):
// proofs of won, lost and drawn nodes, mates and mate threats found at an
// expansion.  Python reference: models/search_rules.py (solver).
#include "search.h"

#include <algorithm>
#include <cstdint>

namespace zc {

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
      case PROOF_NONE: all_proven = false; break;
      case -1:
        if (best_win < 0 || plies < best_win) best_win = plies;
        break;
      case 0: draw = true; break;
      default: longest = std::max(longest, plies);
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
    } else if (threats && replies.size > 0 && board.halfmove_clock() < 100) {
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

}  // namespace zc
