// Self-play driver: see driver.h and pipeline/selfplay.py (the rules).
#include "driver.h"

#include <cmath>
#include <cstring>
#include <utility>

namespace zc {

// ---------------------------------------------------------------------------
// Thread pool

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& thread : workers_) thread.join();
}

void ThreadPool::run_items() {
  while (true) {
    const int i = next_.fetch_add(1);
    if (i >= job_size_) return;
    try {
      (*job_)(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }
}

void ThreadPool::worker() {
  long long seen = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    run_items();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--busy_ == 0) done_.notify_all();
    }
  }
}

void ThreadPool::parallel_for(int n, const std::function<void(int)>& fn) {
  if (workers_.empty() || n <= 1) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_size_ = n;
    next_ = 0;
    busy_ = static_cast<int>(workers_.size());
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  run_items();
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return busy_ == 0; });
    job_ = nullptr;
    error = error_;
    error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

// ---------------------------------------------------------------------------
// Driver

SelfPlayCore::SelfPlayCore(const DriverConfig& config)
    : config_(config),
      cache_(std::make_shared<EvalCache>(config.search.cache_size)),
      pool_(config.threads < 1 ? 1 : config.threads) {
  if (config_.start_fens.empty()) config_.start_fens.push_back(Board::starting().fen());
  for (const std::string& fen : config_.start_fens) {
    Board board = Board::from_fen(fen);
    std::string status = board.status();
    if (!status.empty()) throw ChessError("invalid start position " + fen + " (" + status + ")");
  }
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
                               long long num_values) {
  Lane& lane = lanes_.at(lane_index);
  if (num_logits != static_cast<long long>(lane.batch.rows.size()) || num_values != lane.batch.leaves) {
    throw ChessError("evaluator returned " + std::to_string(num_logits) + " logits and " +
                     std::to_string(num_values) + " values for " + std::to_string(lane.batch.rows.size()) +
                     " moves of " + std::to_string(lane.batch.leaves) + " leaves");
  }
  lane.logits.assign(logits, logits + num_logits);
  lane.values.assign(values, values + num_values);
  lane.has_results = true;
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
  game->tree = std::make_unique<SearchTree>(config_.search, config_.encoding, cache_, game->rng(), fen,
                                            std::vector<Move>{});
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

void SelfPlayCore::copy_planes(int lane, std::uint8_t* out) const {
  for (const auto& game : lanes_.at(lane).games) {
    const ByteBuffer& planes = game->leaves.planes;
    if (planes.size()) std::memcpy(out + game->leaf_begin * PLANES_BYTES, planes.data(), planes.size());
  }
}

int SelfPlayCore::step(int lane_index) {
  Lane& lane = lanes_.at(lane_index);
  auto& games = lane.games;
  if (lane.has_results) {
    lane.has_results = false;
    const float* logits = lane.logits.data();
    const float* values = lane.values.data();
    const int n = static_cast<int>(games.size());
    pool_.parallel_for(n, [&](int i) {
      Game& game = *games[i];
      SearchTree& tree = *game.tree;
      if (tree.pending_leaves() == 0) return;
      tree.validate(logits + game.move_begin, tree.pending_moves(), values + game.leaf_begin, tree.pending_leaves());
    });
    pool_.parallel_for(n, [&](int i) {
      Game& game = *games[i];
      if (game.tree->pending_leaves()) game.tree->deliver(logits + game.move_begin, values + game.leaf_begin);
    });
    for (auto& game : games) game->tree->flush_cache_puts();
  }
  pool_.parallel_for(static_cast<int>(games.size()), [&](int i) {
    Game& game = *games[i];
    if (game.tree->finished()) play_move(game);
  });
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
  const int n = static_cast<int>(games.size());
  pool_.parallel_for(n, [&](int i) {
    Game& game = *games[i];
    game.leaves.clear();
    game.tree->collect(game.leaves);
  });
  long long leaves = 0, moves = 0;
  for (auto& game : games) {
    game->tree->flush_cache_touches();
    game->leaf_begin = leaves;
    game->move_begin = moves;
    leaves += game->leaves.leaves;
    moves += static_cast<long long>(game->leaves.rows.size());
  }
  LeafBatch& batch = lane.batch;
  batch.leaves = static_cast<int>(leaves);
  batch.rows.resize(static_cast<std::size_t>(moves));
  batch.indices.resize(static_cast<std::size_t>(moves));
  pool_.parallel_for(n, [&](int i) {
    const Game& game = *games[i];
    const LeafBatch& own = game.leaves;
    if (own.leaves == 0) return;
    for (std::size_t j = 0; j < own.rows.size(); ++j) {
      batch.rows[game.move_begin + j] = own.rows[j] + game.leaf_begin;
      batch.indices[game.move_begin + j] = own.indices[j];
    }
  });
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

MatchCore::MatchCore(const MatchConfig& config) : config_(config), pool_(config.threads < 1 ? 1 : config.threads) {
  if (config_.start_fens.empty()) config_.start_fens.push_back(Board::starting().fen());
  for (const std::string& fen : config_.start_fens) {
    Board board = Board::from_fen(fen);
    std::string status = board.status();
    if (!status.empty()) throw ChessError("invalid start position " + fen + " (" + status + ")");
  }
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
                            long long num_values) {
  const LeafBatch& batch = batches_[player];
  if (num_logits != static_cast<long long>(batch.rows.size()) || num_values != batch.leaves) {
    throw ChessError("evaluator returned " + std::to_string(num_logits) + " logits and " +
                     std::to_string(num_values) + " values for " + std::to_string(batch.rows.size()) +
                     " moves of " + std::to_string(batch.leaves) + " leaves");
  }
  logits_[player].assign(logits, logits + num_logits);
  values_[player].assign(values, values + num_values);
  has_results_[player] = true;
}

std::vector<MatchRecord> MatchCore::take_finished() {
  std::vector<MatchRecord> out;
  out.swap(finished_);
  return out;
}

void MatchCore::copy_planes(int player, std::uint8_t* out) const {
  for (const auto& game : games_) {
    if (game->mover != player) continue;
    const ByteBuffer& planes = game->leaves.planes;
    if (planes.size()) std::memcpy(out + game->leaf_begin * PLANES_BYTES, planes.data(), planes.size());
  }
}

void MatchCore::step() {
  const int n = static_cast<int>(games_.size());
  if (has_results_[0] || has_results_[1]) {
    pool_.parallel_for(n, [&](int i) {
      Game& game = *games_[i];
      SearchTree& tree = *game.trees[game.mover];
      if (tree.pending_leaves() == 0) return;
      if (!has_results_[game.mover]) throw ChessError("no evaluation for a pending batch");
      tree.validate(logits_[game.mover].data() + game.move_begin, tree.pending_moves(),
                    values_[game.mover].data() + game.leaf_begin, tree.pending_leaves());
    });
    pool_.parallel_for(n, [&](int i) {
      Game& game = *games_[i];
      SearchTree& tree = *game.trees[game.mover];
      if (tree.pending_leaves()) {
        tree.deliver(logits_[game.mover].data() + game.move_begin, values_[game.mover].data() + game.leaf_begin);
      }
    });
    for (auto& game : games_) game->trees[game->mover]->flush_cache_puts();
    has_results_[0] = has_results_[1] = false;
  }
  pool_.parallel_for(n, [&](int i) {
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
  const int count = static_cast<int>(games_.size());
  pool_.parallel_for(count, [&](int i) {
    Game& game = *games_[i];
    game.leaves.clear();
    game.trees[game.mover]->collect(game.leaves);
  });
  long long leaves[2] = {0, 0}, moves[2] = {0, 0};
  for (auto& game : games_) {
    const int p = game->mover;
    game->trees[p]->flush_cache_touches();
    game->leaf_begin = leaves[p];
    game->move_begin = moves[p];
    leaves[p] += game->leaves.leaves;
    moves[p] += static_cast<long long>(game->leaves.rows.size());
  }
  for (int p = 0; p < 2; ++p) {
    batches_[p].leaves = static_cast<int>(leaves[p]);
    batches_[p].rows.resize(static_cast<std::size_t>(moves[p]));
    batches_[p].indices.resize(static_cast<std::size_t>(moves[p]));
  }
  for (auto& game : games_) {
    LeafBatch& batch = batches_[game->mover];
    const LeafBatch& own = game->leaves;
    for (std::size_t j = 0; j < own.rows.size(); ++j) {
      batch.rows[game->move_begin + j] = own.rows[j] + game->leaf_begin;
      batch.indices[game->move_begin + j] = own.indices[j];
    }
  }
}

}  // namespace zc
