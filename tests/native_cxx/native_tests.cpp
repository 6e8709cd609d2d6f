// C++ tests of the native core (models/native/, without the Python
// bindings): perft on the published positions, make/unmake and Zobrist-key
// invariants over seeded random games, a search smoke test through
// run_searches with a deterministic fake evaluator, and the self-play driver
// stepped the same way, and the three-piece distance-to-mate tables.  Built and run by `make native-test` (and so by
// tests/test_native_cxx.py); prints "all passed" when every check holds.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "board.h"
#include "check.h"
#include "driver.h"
#include "run_searches.h"
#include "search.h"
#include "tablebase.h"

using namespace zc;

namespace {

// ---------------------------------------------------------------------------
// Perft (https://www.chessprogramming.org/Perft_Results).

std::uint64_t perft_of(const char* fen, int depth) {
  Board board = Board::from_fen(fen);
  return perft(board, depth);
}

TEST(perft_start_position) {
  CHECK_EQ(perft_of("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", 4), 197281u);
}

TEST(perft_kiwipete) {
  CHECK_EQ(perft_of("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 3), 97862u);
}

TEST(perft_position_3) { CHECK_EQ(perft_of("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", 4), 43238u); }

TEST(perft_position_4) {
  CHECK_EQ(perft_of("r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", 3), 9467u);
}

TEST(perft_position_5) { CHECK_EQ(perft_of("rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8", 3), 62379u); }

TEST(perft_depth_zero_and_negative) {
  Board board = Board::starting();
  CHECK_EQ(perft(board, 0), 1u);
  CHECK_THROWS(perft(board, -1));
}

// ---------------------------------------------------------------------------
// Make/unmake and keys over seeded random games.

TEST(make_unmake_and_keys_in_random_games) {
  std::mt19937_64 rng(20261202);
  const char* starts[] = {
      "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
      "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
      "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
      "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
  };
  long long positions = 0, moves_checked = 0;
  for (int game = 0; game < 120; ++game) {
    Board board = Board::from_fen(starts[game % 4]);
    for (int ply = 0; ply < 160; ++ply) {
      MoveList moves;
      board.legal_moves(moves);
      if (moves.size == 0) break;
      CHECK_EQ(board.key(), board.compute_key());
      // Every legal move: key after make == key from scratch, unmake restores.
      moves_checked += check_make_unmake(board);
      // The FEN round trip keeps the position and its key.
      const Board again = Board::from_fen(board.fen());
      CHECK_EQ(again.key(), board.key());
      CHECK(again.fen() == board.fen());
      const Board before = board;
      Undo undo;
      const Move move = moves[static_cast<int>(rng() % static_cast<std::uint64_t>(moves.size))];
      board.make(move, undo);
      CHECK_EQ(board.key(), board.compute_key());
      Board undone = board;
      undone.unmake(move, undo);
      CHECK(same_position(undone, before));
      ++positions;
    }
  }
  CHECK(positions > 5000);
  CHECK(moves_checked > 100000);
}

// ---------------------------------------------------------------------------
// Distance-to-mate tables: the longest three-piece mates are the published
// ones (KQK 10 moves, KRK 16); a mated position is -1, the lone king's
// capture of the queen a draw; malformed names are errors naming them.

TEST(tablebase_three_pieces) {
  tablebase::Generator generator;
  const auto& kqk = generator.table("KQvK");
  CHECK_EQ(kqk.size(), tablebase::table_size(1));
  int longest = 0;
  for (const std::int8_t v : kqk) longest = std::max(longest, static_cast<int>(v));
  CHECK_EQ(longest, 19);
  int rook_longest = 0;
  for (const std::int8_t v : generator.table("KRvK")) rook_longest = std::max(rook_longest, static_cast<int>(v));
  CHECK_EQ(rook_longest, 31);
  // Black to move, Kg8, White Kg6 and Qa8: mated.  index = ((stm*64 + wk)*64 + bk)*64 + q
  CHECK_EQ(static_cast<int>(kqk[((1u * 64 + 46) * 64 + 62) * 64 + 56]), -1);
  // Black to move, Kc3 next to an undefended Qd2 (White Kg1): a draw.
  CHECK_EQ(static_cast<int>(kqk[((1u * 64 + 6) * 64 + 18) * 64 + 11]), 0);
  // Two pieces on one square, and White to move while Black is in check.
  CHECK_EQ(static_cast<int>(kqk[((0u * 64 + 6) * 64 + 18) * 64 + 6]), static_cast<int>(tablebase::INVALID));
  CHECK_EQ(static_cast<int>(kqk[((0u * 64 + 46) * 64 + 62) * 64 + 56]), static_cast<int>(tablebase::INVALID));
  for (const char* bad : {"KQK", "KPvK", "KQRBvK", "QvK"}) {
    try {
      generator.table(bad);
      CHECK(false);
    } catch (const ChessError& error) {
      CHECK(std::string(error.what()).find(std::string("'") + bad + "'") != std::string::npos);
    }
  }
}

TEST(legal_move_parser) {
  const Board board = Board::starting();
  const auto where = [] { return std::string("in the start position"); };
  CHECK(legal_move(board, "e2e4", where) == Move(12, 28));
  try {
    legal_move(board, "e2e5", where);
    CHECK(false);
  } catch (const ChessError& error) {
    CHECK(std::string(error.what()) == "illegal move 'e2e5' in the start position");
  }
  try {
    legal_move(board, "zz", where, false);
    CHECK(false);
  } catch (const ChessError& error) {
    CHECK(std::string(error.what()) == "invalid UCI move 'zz' in the start position");
  }
}

// ---------------------------------------------------------------------------
// Search through run_searches with a fake evaluator.

std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Deterministic: each leaf's value and each move's logit are hashes of the
// leaf's planes (and the move's policy index).
struct FakeEvaluator {
  bool with_aux = false;  // D = 0.25, M = 5 for every leaf
  std::vector<float> logits, values, aux;
  std::vector<std::uint8_t> planes;
  long long calls = 0;
  Evaluation operator()(const LeafBatch& batch, const PlanesWriter& write_planes) {
    ++calls;
    planes.assign(static_cast<std::size_t>(batch.leaves) * PLANES_BYTES, 0);
    write_planes(planes.data());
    std::vector<std::uint64_t> hashes(batch.leaves);
    for (int leaf = 0; leaf < batch.leaves; ++leaf) {
      std::uint64_t h = 0;
      for (int i = 0; i < PLANES_BYTES; ++i) h = h * 1099511628211ull + planes[leaf * PLANES_BYTES + i];
      hashes[leaf] = splitmix(h);
    }
    values.resize(batch.leaves);
    for (int leaf = 0; leaf < batch.leaves; ++leaf)
      values[leaf] = static_cast<float>((hashes[leaf] % 1001) / 1000.0 * 1.8 - 0.9);
    logits.resize(batch.rows.size());
    for (std::size_t j = 0; j < batch.rows.size(); ++j) {
      const std::uint64_t h = splitmix(hashes[batch.rows[j]] ^ static_cast<std::uint64_t>(batch.indices[j] + 1));
      logits[j] = static_cast<float>((h % 1001) / 1000.0 * 6.0 - 3.0);
    }
    aux.clear();
    for (int leaf = 0; with_aux && leaf < batch.leaves; ++leaf) aux.insert(aux.end(), {0.25f, 5.0f});
    return Evaluation{logits.data(), values.data(), with_aux ? aux.data() : nullptr};
  }
};

SearchParams smoke_params(bool solver) {
  SearchParams params;
  params.num_simulations = 300;
  params.solver = solver;
  params.cache_size = 10000;
  return params;
}

const char* const BACK_RANK_MATE = "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1";  // d1d8 mates

std::vector<std::unique_ptr<SearchTree>> smoke_trees(const SearchParams& params) {
  auto cache = std::make_shared<EvalCache>(params.cache_size);
  std::vector<std::unique_ptr<SearchTree>> trees;
  const char* fens[] = {"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", BACK_RANK_MATE,
                        "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"};
  std::uint64_t seed = 7;
  for (const char* fen : fens) {
    trees.push_back(
        std::make_unique<SearchTree>(params, PolicyEncoding::AZ4672, cache, seed++, fen, std::vector<Move>{}));
    trees.back()->start(params.num_simulations, false);
  }
  return trees;
}

std::vector<SearchTree*> pointers(const std::vector<std::unique_ptr<SearchTree>>& trees) {
  std::vector<SearchTree*> out;
  for (const auto& tree : trees) out.push_back(tree.get());
  return out;
}

TEST(run_searches_smoke) {
  for (bool solver : {true, false}) {
    const SearchParams params = smoke_params(solver);
    auto trees = smoke_trees(params);
    FakeEvaluator fake;
    const long long calls =
        run_searches(pointers(trees), [&](const LeafBatch& b, const PlanesWriter& w) { return fake(b, w); });
    CHECK(calls > 0);
    CHECK_EQ(calls, fake.calls);
    for (const auto& tree : trees) {
      CHECK(tree->finished());
      CHECK_EQ(tree->pending_leaves(), 0);
      const RootStats stats = tree->result();
      CHECK(stats.best >= 0 && stats.best < static_cast<int>(stats.moves.size()));
      double visits = 0.0;
      for (double n : stats.child_n) visits += n;
      CHECK(std::fabs(visits - params.num_simulations) < 1e-6);
      CHECK(stats.root_value >= -1.0 && stats.root_value <= 1.0);
    }
    const RootStats mate = trees[1]->result();
    CHECK(mate.moves[mate.best].uci() == "d1d8");
    if (solver) CHECK_EQ(mate.proof[mate.best], 1);

    // The same trees and evaluator search identically.
    auto again = smoke_trees(params);
    FakeEvaluator fake_again;
    run_searches(pointers(again), [&](const LeafBatch& b, const PlanesWriter& w) { return fake_again(b, w); });
    for (std::size_t i = 0; i < trees.size(); ++i) {
      CHECK(trees[i]->result().child_n == again[i]->result().child_n);
      CHECK(trees[i]->result().child_w == again[i]->result().child_w);
    }
  }
}

TEST(run_searches_with_aux_outputs) {
  // D and M leave the visits alone until the moves-left utility is on; the
  // root's D is the leaves' (no mate in the opening), its M at least theirs.
  SearchParams params = smoke_params(false);
  auto plain = smoke_trees(params);
  auto with_aux = smoke_trees(params);
  FakeEvaluator fake, fake_aux;
  fake_aux.with_aux = true;
  run_searches(pointers(plain), [&](const LeafBatch& b, const PlanesWriter& w) { return fake(b, w); });
  run_searches(pointers(with_aux), [&](const LeafBatch& b, const PlanesWriter& w) { return fake_aux(b, w); });
  const RootStats opening = with_aux[0]->result();
  CHECK(opening.child_n == plain[0]->result().child_n);
  CHECK(std::fabs(opening.root_draw - 0.25) < 1e-12);
  CHECK(opening.root_moves_left > 5.0);
  CHECK_EQ(plain[0]->result().root_draw, 0.0);
  params.moves_left_threshold = 0.0;
  params.moves_left_slope = 0.05;
  auto steered = smoke_trees(params);
  FakeEvaluator fake_steered;
  fake_steered.with_aux = true;
  run_searches(pointers(steered), [&](const LeafBatch& b, const PlanesWriter& w) { return fake_steered(b, w); });
  CHECK(steered[0]->result().child_n != opening.child_n);
}

TEST(run_searches_stops_and_forgets_on_errors) {
  const SearchParams params = smoke_params(true);
  auto trees = smoke_trees(params);
  FakeEvaluator fake;
  int asked = 0;
  const long long calls = run_searches(
      pointers(trees), [&](const LeafBatch& b, const PlanesWriter& w) { return fake(b, w); },
      [&] { return ++asked >= 3; });
  CHECK_EQ(calls, 3);
  CHECK(!trees[0]->finished());

  // An evaluator that throws: the exception comes through, no leaf stays pending.
  CHECK_THROWS(run_searches(pointers(trees), [](const LeafBatch&, const PlanesWriter&) -> Evaluation {
    throw std::runtime_error("evaluator failed");
  }));
  for (const auto& tree : trees) CHECK_EQ(tree->pending_leaves(), 0);

  // A non-finite value is refused before any tree takes its share.
  const long long done = trees[0]->simulations_done();
  CHECK_THROWS(run_searches(pointers(trees), [&](const LeafBatch& b, const PlanesWriter& w) {
    Evaluation evaluation = fake(b, w);
    fake.values[0] = std::nanf("");
    return evaluation;
  }));
  CHECK_EQ(trees[0]->simulations_done(), done);
  for (const auto& tree : trees) CHECK_EQ(tree->pending_leaves(), 0);
}

// ---------------------------------------------------------------------------
// The self-play driver stepped with the fake evaluator.

TEST(self_play_core_smoke) {
  DriverConfig config;
  config.search = smoke_params(true);
  config.search.num_simulations = 24;
  config.games = 3;
  config.games_in_flight = 2;
  config.seed = 11;
  config.max_plies = 12;
  config.threads = 2;
  config.full_search_prob = 1.0;  // every move a training row
  config.resign_threshold = -1.0;  // no resigning
  SelfPlayCore core(config);
  FakeEvaluator fake;
  std::vector<std::uint8_t> planes;
  int steps = 0;
  while (!core.done() && steps < 100000) {
    for (int lane = 0; lane < core.lanes(); ++lane) {
      const int leaves = core.step(lane);
      ++steps;
      if (leaves == 0) continue;
      const LeafBatch& batch = core.batch(lane);
      const Evaluation evaluation = fake(batch, [&](std::uint8_t* out) { core.copy_planes(lane, out); });
      core.set_results(lane, evaluation.logits, static_cast<long long>(batch.rows.size()), evaluation.values,
                       batch.leaves);
    }
  }
  CHECK(core.done());
  const std::vector<FinishedGame> games = core.take_finished();
  CHECK_EQ(games.size(), 3u);
  for (const FinishedGame& game : games) {
    CHECK(!game.result.empty());
    CHECK(game.moves.size() <= 12u);
    CHECK_EQ(game.policy_offsets.size(), game.moves.size() + 1);
  }
  CHECK_THROWS(core.set_results(0, nullptr, 1, nullptr, 1));
}

}  // namespace

int main() { return check::run_all(); }
