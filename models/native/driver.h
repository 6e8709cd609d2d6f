// zerochess native core: many self-play games on C++ threads (the rules of
// pipeline/selfplay/worker.py::SelfPlayWorker).
//
// The games form one or two lanes.  A lane step (step()) delivers the lane's
// last evaluation, plays the moves of the finished searches, starts new games
// and collects the next leaves of every game of the lane into one contiguous
// batch; Python evaluates one lane's batch while the core steps the other
// (double buffering).  Work inside a step is spread over `threads` threads;
// the shared evaluation cache is written and its LRU order touched in game
// order between the parallel phases, and every game draws from its own RNG
// (seeded from the seed and the game index), so the games do not depend on
// the number of threads or on the overlap of evaluation and search.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "batching.h"
#include "encoding.h"
#include "search.h"
#include "thread_pool.h"

namespace zc {

// What both drivers play: how many games, how many at once, from which
// start positions, for how long, on how many threads.
struct GamesConfig {
  PolicyEncoding encoding = PolicyEncoding::AZ4672;
  int games = 0;
  int games_in_flight = 1;
  std::uint64_t seed = 0;
  std::vector<std::string> start_fens;  // empty: the starting position
  int random_plies = 0;
  int max_plies = 512;
  int threads = 1;
};

// The defaults are models/driver_settings.py's SelfPlayRules' (tests/test_native_defaults.py
// checks them); Python always sets every field.
struct DriverConfig : GamesConfig {
  SearchParams search;
  double full_search_prob = 0.25;
  int fast_simulations = 32;
  double resign_threshold = -0.95;  // <= -1 disables resigning
  int resign_plies = 3;
  double resign_playthrough = 0.1;
  // Draw adjudication: after at least draw_adjudication_plies plies (0 = off),
  // a game whose last draw_adjudication_window root |q| were all below
  // draw_adjudication_q ends as a draw ("draw_adjudicated"); a
  // draw_adjudication_playthrough share of games plays on and records it.
  int draw_adjudication_plies = 0;
  int draw_adjudication_window = 20;
  double draw_adjudication_q = 0.05;
  double draw_adjudication_playthrough = 0.1;
};

// ChessError naming the first field out of its range (the ranges of
// models.driver_settings.GamesSettings / SelfPlayRules); the start
// positions are checked when the driver starts.
void check_games_config(const GamesConfig& config);
void check_driver_config(const DriverConfig& config);

// A finished game, flat arrays (see models.native_drivers.NativeGame).
struct FinishedGame {
  int index = 0;
  std::string start_fen, result, termination;
  bool playthrough = false;
  int would_resign = -1;          // -1 none, WHITE, BLACK
  bool draw_playthrough = false;  // draw adjudication disabled in this game
  int would_draw = -1;            // its plies when it would have been adjudicated a draw; -1 never
  std::vector<std::string> fens, moves;
  std::vector<std::uint8_t> turns;  // 1 = white to move
  std::vector<Row> history;         // plies * 8 rows
  std::vector<Meta> meta;
  std::vector<double> root_q;
  std::vector<double> root_d;  // the root's draw probability (0 without aux)
  std::vector<std::uint8_t> full_search;
  std::vector<std::int64_t> policy_offsets{0}, policy_index, policy_visits;
  // pi of each listed move: PUCT visits / their sum (the visited moves);
  // Gumbel: the improved policy (every legal move; its visits may be 0).
  std::vector<float> policy_probs;
};

struct DriverStats {
  long long games = 0, positions = 0, full_searches = 0, evaluations = 0, batches = 0;
  long long resigned = 0, playthrough = 0, false_resigns = 0;
  long long draws_adjudicated = 0, draw_playthrough = 0, false_draws = 0;
  // Wall seconds of step()'s parts: handing the evaluations to the trees,
  // playing the finished searches' moves, ending and starting games,
  // collecting leaves, the cache's writes and LRU touches in game order
  // (one thread), and laying the batch out.
  double deliver_seconds = 0, play_seconds = 0, refill_seconds = 0;
  double collect_seconds = 0, cache_seconds = 0, gather_seconds = 0;
};

class SelfPlayCore {
 public:
  explicit SelfPlayCore(const DriverConfig& config);

  int lanes() const { return static_cast<int>(lanes_.size()); }
  // Deliver the lane's results (set_results), play, refill and collect;
  // returns the leaves now in batch(lane).
  int step(int lane);
  // The lane's rows and indices (planes stay with the games: copy_planes).
  const LeafBatch& batch(int lane) const { return lanes_.at(lane).batch; }
  // Writes the lane's batch planes (batch(lane).leaves * PLANES_BYTES bytes).
  void copy_planes(int lane, std::uint8_t* out) const;
  // Copies the evaluation of the lane's batch (aux: null, or two per leaf:
  // D and M); throws ChessError for wrong sizes.
  void set_results(int lane, const float* logits, long long num_logits, const float* values, long long num_values,
                   const float* aux = nullptr);
  std::vector<FinishedGame> take_finished();
  bool done() const;
  const DriverStats& stats() const { return stats_; }

 private:
  struct Game {
    int index = 0;
    std::mt19937_64 rng;
    std::unique_ptr<SearchTree> tree;
    FinishedGame record;
    bool full_search = true;
    int low_streak[2] = {0, 0};
    int quiet_streak = 0;  // consecutive plies with root |q| < draw_adjudication_q
    bool over = false;
    BatchPart part;  // its leaves in the lane's batch
  };
  struct Lane {
    std::vector<std::unique_ptr<Game>> games;
    LeafBatch batch;
    std::vector<float> logits, values, aux;  // aux empty: none
    bool has_results = false;
  };

  // Game i of the lane in the batching loop (batching.h).
  BatchSlot slot(const Lane& lane, int i) const;
  std::unique_ptr<Game> new_game(int index);
  Board start_board(std::mt19937_64& rng) const;
  void start_search(Game& game);
  void play_move(Game& game);
  bool resigns(Game& game, int side, double value);
  bool adjudicates_draw(Game& game, double value);
  void finish(Game& game);

  DriverConfig config_;
  std::shared_ptr<EvalCache> cache_;
  mutable ThreadPool pool_;  // copy_planes (const) spreads its copy over it
  std::vector<Lane> lanes_;
  int per_lane_ = 1;
  int started_ = 0;
  std::vector<FinishedGame> finished_;
  DriverStats stats_;
};

// The start positions of a driver: the starting position when `fens` is
// empty; ChessError naming an invalid one.
void check_start_fens(std::vector<std::string>& fens);

// A start position: one of `fens` plus `random_plies` random moves, never a
// finished game; the returned board has no history.
Board draw_start_board(const std::vector<std::string>& fens, int random_plies, std::mt19937_64& rng);

struct MatchConfig : GamesConfig {
  SearchParams search[2];  // player A, player B
};

struct MatchRecord {
  int index = 0;
  std::string start_fen, result, termination;
  bool a_is_white = true;
  std::vector<std::string> moves;
};

// Games between two players (A and B, each with its own search parameters,
// cache and evaluator), sides alternating: A is white in even games.  Each
// player keeps its own tree per game (reused after both sides' moves); a step
// delivers both players' evaluations, plays moves and collects the leaves of
// the trees of the players to move into batch(0) (A) and batch(1) (B).
class MatchCore {
 public:
  explicit MatchCore(const MatchConfig& config);
  void step();
  const LeafBatch& batch(int player) const { return batches_[player]; }
  void copy_planes(int player, std::uint8_t* out) const;
  void set_results(int player, const float* logits, long long num_logits, const float* values, long long num_values,
                   const float* aux = nullptr);
  std::vector<MatchRecord> take_finished();
  bool done() const { return started_ >= config_.games && games_.empty(); }

 private:
  struct Game {
    std::mt19937_64 rng;
    std::unique_ptr<SearchTree> trees[2];
    MatchRecord record;
    int mover = 0;  // player to move
    bool over = false;
    BatchPart part;  // its leaves in the batch of the player to move
  };
  // Game i in the batching loop (batching.h); with player >= 0, an empty
  // slot unless that player is to move.
  BatchSlot slot(int player, int i) const;
  std::unique_ptr<Game> new_game(int index);
  void play_move(Game& game);
  int player_to_move(const Game& game) const;

  MatchConfig config_;
  std::shared_ptr<EvalCache> caches_[2];
  mutable ThreadPool pool_;  // copy_planes (const) spreads its copy over it
  std::vector<std::unique_ptr<Game>> games_;
  LeafBatch batches_[2];
  std::vector<float> logits_[2], values_[2], aux_[2];  // aux_ empty: none
  bool has_results_[2] = {false, false};
  int started_ = 0;
  std::vector<MatchRecord> finished_;
};

}  // namespace zc
