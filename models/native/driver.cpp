// Self-play driver: see driver.h and pipeline/selfplay/ (the rules).
#include "driver.h"

#include <chrono>
#include <cmath>
#include <utility>

namespace zc {

namespace {

// Keeps a copy of an evaluation's aux (two per leaf), or none.
void assign_aux(std::vector<float>& out, const float* aux, long long leaves) {
  if (aux) {
    out.assign(aux, aux + 2 * leaves);
  } else {
    out.clear();
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// Driver

SelfPlayCore::SelfPlayCore(const DriverConfig& config)
    : config_((check_driver_config(config), config)),
      cache_(std::make_shared<EvalCache>(config.search.cache_size)),
      pool_(config.threads) {
  check_start_fens(config_.start_fens);
  const int lanes = config_.games_in_flight >= 2 ? 2 : 1;
  lanes_.resize(lanes);
  per_lane_ = (config_.games_in_flight + lanes - 1) / lanes;
  if (per_lane_ < 1) per_lane_ = 1;
}

bool SelfPlayCore::done() const {
  if (started_ < config_.games) return false;
  for (const Lane& lane : lanes_) {
    if (!lane.games.empty()) return false;
  }
  return true;
}

std::vector<FinishedGame> SelfPlayCore::take_finished() {
  std::vector<FinishedGame> out;
  out.swap(finished_);
  return out;
}

void SelfPlayCore::set_results(int lane_index, const float* logits, long long num_logits, const float* values,
                               long long num_values, const float* aux) {
  Lane& lane = lanes_.at(lane_index);
  check_evaluation_size(lane.batch, num_logits, num_values);
  lane.logits.assign(logits, logits + num_logits);
  lane.values.assign(values, values + num_values);
  assign_aux(lane.aux, aux, num_values);
  lane.has_results = true;
}

void check_start_fens(std::vector<std::string>& fens) {
  if (fens.empty()) fens.push_back(Board::starting().fen());
  for (const std::string& fen : fens) {
    Board board = Board::from_fen(fen);
    std::string status = board.status();
    if (!status.empty()) throw ChessError("invalid start position " + fen + " (" + status + ")");
  }
}

namespace {

void check_range(const char* name, double value, double low, double high, bool open_low = false) {
  const bool ok = (open_low ? value > low : value >= low) && value <= high;  // false for NaN
  if (!ok) {
    throw ChessError(std::string(name) + " must be in " + (open_low ? "(" : "[") + std::to_string(low) + ", " +
                     std::to_string(high) + "], got " + std::to_string(value));
  }
}

void check_at_least(const char* name, long long value, long long low) {
  if (value < low) throw ChessError(std::string(name) + " must be >= " + std::to_string(low) + ", got " + std::to_string(value));
}

}  // namespace

void check_games_config(const GamesConfig& config) {
  check_at_least("games", config.games, 0);
  check_at_least("games_in_flight", config.games_in_flight, 1);
  check_at_least("random_plies", config.random_plies, 0);
  check_at_least("max_plies", config.max_plies, 1);
  check_at_least("threads", config.threads, 1);
}

void check_driver_config(const DriverConfig& config) {
  check_games_config(config);
  check_at_least("fast_simulations", config.fast_simulations, 1);
  check_at_least("resign_plies", config.resign_plies, 1);
  check_at_least("draw_adjudication_plies", config.draw_adjudication_plies, 0);
  check_at_least("draw_adjudication_window", config.draw_adjudication_window, 1);
  check_range("full_search_prob", config.full_search_prob, 0.0, 1.0);
  check_range("resign_threshold", config.resign_threshold, -1.0, 1.0);
  check_range("resign_playthrough", config.resign_playthrough, 0.0, 1.0);
  check_range("draw_adjudication_q", config.draw_adjudication_q, 0.0, 1.0, true);
  check_range("draw_adjudication_playthrough", config.draw_adjudication_playthrough, 0.0, 1.0);
}

Board draw_start_board(const std::vector<std::string>& fens, int random_plies, std::mt19937_64& rng) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int pick = uniform_int(rng, static_cast<int>(fens.size()));
    Board board = Board::from_fen(fens[pick]);
    GameLine line;
    line.push(board);
    MoveList moves;
    for (int ply = 0; ply < random_plies; ++ply) {
      moves.size = 0;
      board.legal_moves(moves);
      if (moves.size == 0) break;
      Undo undo;
      board.make(moves[uniform_int(rng, moves.size)], undo);
      line.push(board);
    }
    moves.size = 0;
    board.legal_moves(moves);
    if (terminal_reason(board, moves.size, line.repetitions()) == Termination::NONE) {
      // The recorded game starts here: earlier random plies are not history.
      return Board::from_fen(board.fen());
    }
  }
  throw ChessError("could not draw a playable start position in 100 tries");
}

Board SelfPlayCore::start_board(std::mt19937_64& rng) const {
  return draw_start_board(config_.start_fens, config_.random_plies, rng);
}

std::unique_ptr<SelfPlayCore::Game> SelfPlayCore::new_game(int index) {
  auto game = std::make_unique<Game>();
  game->index = index;
  game->rng.seed(mix_seed(config_.seed, static_cast<std::uint64_t>(index)));
  Board board = start_board(game->rng);
  const std::string fen = board.fen();
  game->tree =
      std::make_unique<SearchTree>(config_.search, config_.encoding, cache_, game->rng(), fen, std::vector<Move>{});
  game->tree->set_deferred_cache(true);
  game->record.index = index;
  game->record.start_fen = fen;
  const bool resign_enabled = config_.resign_threshold > -1.0;
  game->record.playthrough = resign_enabled && uniform01(game->rng) < config_.resign_playthrough;
  const bool draw_adjudication_enabled = config_.draw_adjudication_plies > 0;
  game->record.draw_playthrough =
      draw_adjudication_enabled && uniform01(game->rng) < config_.draw_adjudication_playthrough;
  start_search(*game);
  return game;
}

void SelfPlayCore::start_search(Game& game) {
  const bool full = uniform01(game.rng) < config_.full_search_prob;
  game.full_search = full;
  game.tree->start(full ? config_.search.num_simulations : config_.fast_simulations, full);
}

bool SelfPlayCore::resigns(Game& game, int side, double value) {
  if (!(config_.resign_threshold > -1.0)) return false;
  game.low_streak[side] = value < config_.resign_threshold ? game.low_streak[side] + 1 : 0;
  if (game.low_streak[side] < config_.resign_plies) return false;
  if (game.record.playthrough) {
    if (game.record.would_resign < 0) game.record.would_resign = side;
    return false;
  }
  return true;
}

// Called after every ply that did not end the game otherwise; value is the
// ply's root q (of either side: only |q| counts).
bool SelfPlayCore::adjudicates_draw(Game& game, double value) {
  if (config_.draw_adjudication_plies <= 0) return false;
  game.quiet_streak = std::abs(value) < config_.draw_adjudication_q ? game.quiet_streak + 1 : 0;
  const int plies = static_cast<int>(game.record.moves.size());
  if (plies < config_.draw_adjudication_plies || game.quiet_streak < config_.draw_adjudication_window) return false;
  if (game.record.draw_playthrough) {
    if (game.record.would_draw < 0) game.record.would_draw = plies;
    return false;
  }
  return true;
}

void SelfPlayCore::play_move(Game& game) {
  SearchTree& tree = *game.tree;
  FinishedGame& record = game.record;
  const RootStats stats = tree.result();
  const int ply = static_cast<int>(record.moves.size());
  const Move move = stats.moves[choose_move(stats, ply, config_.search, game.rng)];
  const Board& board = tree.board();
  const int side = board.turn();
  record.fens.push_back(board.fen());
  record.moves.push_back(move.uci());
  record.turns.push_back(side == WHITE ? 1 : 0);
  const std::size_t at = record.history.size();
  record.history.resize(at + HISTORY_STEPS);
  tree.history_snapshot(record.history.data() + at);
  record.meta.push_back(board_meta(board));
  record.root_q.push_back(stats.root_value);
  record.root_d.push_back(stats.root_draw);
  record.full_search.push_back(game.full_search ? 1 : 0);
  if (!stats.improved.empty()) {
    for (std::size_t i = 0; i < stats.moves.size(); ++i) {
      record.policy_index.push_back(stats.policy[i]);
      record.policy_visits.push_back(static_cast<std::int64_t>(std::nearbyint(stats.child_n[i])));
      record.policy_probs.push_back(static_cast<float>(stats.improved[i]));
    }
  } else {
    const std::size_t first = record.policy_visits.size();
    std::int64_t total = 0;
    for (std::size_t i = 0; i < stats.moves.size(); ++i) {
      const double visits = std::nearbyint(stats.child_n[i]);
      if (visits > 0.0) {
        record.policy_index.push_back(stats.policy[i]);
        record.policy_visits.push_back(static_cast<std::int64_t>(visits));
        total += static_cast<std::int64_t>(visits);
      }
    }
    for (std::size_t k = first; k < record.policy_visits.size(); ++k) {
      record.policy_probs.push_back(
          static_cast<float>(static_cast<double>(record.policy_visits[k]) / static_cast<double>(total)));
    }
  }
  record.policy_offsets.push_back(static_cast<std::int64_t>(record.policy_index.size()));
  if (resigns(game, side, stats.root_value)) {
    record.result = side == WHITE ? "0-1" : "1-0";
    record.termination = "resign";
    game.over = true;
    return;
  }
  tree.advance(move);
  const Board& after = tree.board();
  MoveList moves;
  after.legal_moves(moves);
  const Termination reason = terminal_reason(after, moves.size, tree.history().repetitions());
  if (reason != Termination::NONE) {
    if (reason == Termination::CHECKMATE) {
      record.result = after.turn() == WHITE ? "0-1" : "1-0";
    } else {
      record.result = "1/2-1/2";
    }
    record.termination = termination_name(reason);
    game.over = true;
    return;
  }
  if (static_cast<int>(record.moves.size()) >= config_.max_plies) {
    record.result = "1/2-1/2";
    record.termination = "max_plies";
    game.over = true;
    return;
  }
  if (adjudicates_draw(game, stats.root_value)) {
    record.result = "1/2-1/2";
    record.termination = "draw_adjudicated";
    game.over = true;
    return;
  }
  start_search(game);
}

void SelfPlayCore::finish(Game& game) {
  FinishedGame& record = game.record;
  stats_.games += 1;
  stats_.positions += static_cast<long long>(record.moves.size());
  for (std::uint8_t full : record.full_search) stats_.full_searches += full;
  stats_.resigned += record.termination == "resign";
  stats_.playthrough += record.playthrough;
  if (record.would_resign >= 0) {
    const char* loser_result = record.would_resign == WHITE ? "0-1" : "1-0";
    stats_.false_resigns += record.result != loser_result;
  }
  stats_.draws_adjudicated += record.termination == "draw_adjudicated";
  stats_.draw_playthrough += record.draw_playthrough;
  if (record.would_draw >= 0) stats_.false_draws += record.result != "1/2-1/2";
  finished_.push_back(std::move(record));
}

BatchSlot SelfPlayCore::slot(const Lane& lane, int i) const {
  Game& game = *lane.games[i];
  const float* aux = lane.aux.empty() ? nullptr : lane.aux.data();
  return BatchSlot{game.tree.get(), &game.part, Evaluation{lane.logits.data(), lane.values.data(), aux}};
}

void SelfPlayCore::copy_planes(int lane_index, std::uint8_t* out) const {
  const Lane& lane = lanes_.at(lane_index);
  const SlotOf slot_of = [&](int i) { return slot(lane, i); };
  zc::copy_planes(pool_, static_cast<int>(lane.games.size()), slot_of, out);
}

int SelfPlayCore::step(int lane_index) {
  Lane& lane = lanes_.at(lane_index);
  auto& games = lane.games;
  const SlotOf slot_of = [&](int i) { return slot(lane, i); };
  auto lap = std::chrono::steady_clock::now();
  const auto time = [&lap](double& seconds) {
    const auto now = std::chrono::steady_clock::now();
    seconds += std::chrono::duration<double>(now - lap).count();
    lap = now;
  };
  if (lane.has_results) {
    lane.has_results = false;
    deliver_batch(pool_, static_cast<int>(games.size()), slot_of);
    time(stats_.deliver_seconds);
    for (auto& game : games) game->tree->flush_cache_puts();
    time(stats_.cache_seconds);
  }
  pool_.parallel_for(static_cast<int>(games.size()), [&](int i) {
    Game& game = *games[i];
    if (game.tree->finished()) play_move(game);
  });
  time(stats_.play_seconds);
  std::vector<std::unique_ptr<Game>> kept;
  for (auto& game : games) {
    if (game->over) {
      finish(*game);
    } else {
      kept.push_back(std::move(game));
    }
  }
  games.swap(kept);
  while (started_ < config_.games && static_cast<int>(games.size()) < per_lane_) games.push_back(new_game(started_++));
  time(stats_.refill_seconds);
  const int n = static_cast<int>(games.size());
  collect_leaves(pool_, n, slot_of);
  time(stats_.collect_seconds);
  for (auto& game : games) game->tree->flush_cache_touches();
  time(stats_.cache_seconds);
  gather_batch(pool_, n, slot_of, lane.batch);
  time(stats_.gather_seconds);
  const long long leaves = lane.batch.leaves;
  if (leaves) {
    stats_.evaluations += leaves;
    stats_.batches += 1;
  }
  return static_cast<int>(leaves);
}

// ---------------------------------------------------------------------------
// Matches

static std::string game_over_result(const Board& after, Termination reason) {
  if (reason == Termination::CHECKMATE) return after.turn() == WHITE ? "0-1" : "1-0";
  return "1/2-1/2";
}

MatchCore::MatchCore(const MatchConfig& config) : config_((check_games_config(config), config)), pool_(config.threads) {
  check_start_fens(config_.start_fens);
  for (int p = 0; p < 2; ++p) caches_[p] = std::make_shared<EvalCache>(config_.search[p].cache_size);
}

int MatchCore::player_to_move(const Game& game) const {
  const bool white = game.trees[0]->board().turn() == WHITE;
  return white == game.record.a_is_white ? 0 : 1;
}

std::unique_ptr<MatchCore::Game> MatchCore::new_game(int index) {
  auto game = std::make_unique<Game>();
  game->rng.seed(mix_seed(config_.seed, static_cast<std::uint64_t>(index)));
  Board board = draw_start_board(config_.start_fens, config_.random_plies, game->rng);
  const std::string fen = board.fen();
  for (int p = 0; p < 2; ++p) {
    game->trees[p] = std::make_unique<SearchTree>(config_.search[p], config_.encoding, caches_[p], game->rng(), fen,
                                                  std::vector<Move>{});
    game->trees[p]->set_deferred_cache(true);
  }
  game->record.index = index;
  game->record.start_fen = fen;
  game->record.a_is_white = index % 2 == 0;
  game->mover = player_to_move(*game);
  game->trees[game->mover]->start(config_.search[game->mover].num_simulations, false);
  return game;
}

void MatchCore::play_move(Game& game) {
  SearchTree& tree = *game.trees[game.mover];
  const RootStats stats = tree.result();
  const int ply = static_cast<int>(game.record.moves.size());
  const Move move = stats.moves[choose_move(stats, ply, config_.search[game.mover], game.rng)];
  game.record.moves.push_back(move.uci());
  for (int p = 0; p < 2; ++p) game.trees[p]->advance(move);
  const Board& after = game.trees[0]->board();
  MoveList moves;
  after.legal_moves(moves);
  const Termination reason = terminal_reason(after, moves.size, game.trees[0]->history().repetitions());
  if (reason != Termination::NONE) {
    game.record.result = game_over_result(after, reason);
    game.record.termination = termination_name(reason);
    game.over = true;
    return;
  }
  if (static_cast<int>(game.record.moves.size()) >= config_.max_plies) {
    game.record.result = "1/2-1/2";
    game.record.termination = "max_plies";
    game.over = true;
    return;
  }
  game.mover = player_to_move(game);
  game.trees[game.mover]->start(config_.search[game.mover].num_simulations, false);
}

void MatchCore::set_results(int player, const float* logits, long long num_logits, const float* values,
                            long long num_values, const float* aux) {
  check_evaluation_size(batches_[player], num_logits, num_values);
  logits_[player].assign(logits, logits + num_logits);
  values_[player].assign(values, values + num_values);
  assign_aux(aux_[player], aux, num_values);
  has_results_[player] = true;
}

std::vector<MatchRecord> MatchCore::take_finished() {
  std::vector<MatchRecord> out;
  out.swap(finished_);
  return out;
}

BatchSlot MatchCore::slot(int player, int i) const {
  Game& game = *games_[i];
  if (player >= 0 && game.mover != player) return BatchSlot{};
  const int p = game.mover;
  const float* aux = aux_[p].empty() ? nullptr : aux_[p].data();
  const Evaluation evaluation = has_results_[p] ? Evaluation{logits_[p].data(), values_[p].data(), aux} : Evaluation{};
  return BatchSlot{game.trees[p].get(), &game.part, evaluation};
}

void MatchCore::copy_planes(int player, std::uint8_t* out) const {
  const SlotOf player_to_move = [&](int i) { return slot(player, i); };
  zc::copy_planes(pool_, static_cast<int>(games_.size()), player_to_move, out);
}

void MatchCore::step() {
  const SlotOf every_game = [&](int i) { return slot(-1, i); };
  if (has_results_[0] || has_results_[1]) {
    deliver_batch(pool_, static_cast<int>(games_.size()), every_game);
    for (auto& game : games_) game->trees[game->mover]->flush_cache_puts();
    has_results_[0] = has_results_[1] = false;
  }
  pool_.parallel_for(static_cast<int>(games_.size()), [&](int i) {
    Game& game = *games_[i];
    if (game.trees[game.mover]->finished()) play_move(game);
  });
  std::vector<std::unique_ptr<Game>> kept;
  for (auto& game : games_) {
    if (game->over) {
      finished_.push_back(std::move(game->record));
    } else {
      kept.push_back(std::move(game));
    }
  }
  games_.swap(kept);
  while (started_ < config_.games && static_cast<int>(games_.size()) < config_.games_in_flight) {
    games_.push_back(new_game(started_++));
  }
  const int n = static_cast<int>(games_.size());
  collect_leaves(pool_, n, every_game);
  for (auto& game : games_) game->trees[game->mover]->flush_cache_touches();
  for (int p = 0; p < 2; ++p) {
    const SlotOf player_to_move = [&](int i) { return slot(p, i); };
    gather_batch(pool_, n, player_to_move, batches_[p]);
  }
}

}  // namespace zc
