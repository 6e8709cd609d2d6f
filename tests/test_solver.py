"""The MCTS-solver (``search.solver``) in both backends.

Checkmates and draws found by the search are proven and propagate up the
tree: a position is won when a move leads to a proven loss of the opponent
(a mating move is seen when its node is expanded), lost when every move
leads to a proven win of the opponent, drawn when every move is proven and
the best is a draw.  The search then plays proven wins, never chooses a
proven loss when another move exists, and the UCI analysis reports
``score mate N`` from the proof.  With a uniform evaluator (no knowledge)
it finds mates in 2 and 3 within 800 simulations.
"""

from __future__ import annotations

import dataclasses

import chess
import numpy as np
import pytest

from models.evaluation import UniformEvaluator
from models.driver_settings import GamesSettings, SelfPlayRules
from models.native_drivers import SelfPlayDriver
from models.native_tree import run_native_searches
from models.search_config import SearchConfig
from models.search_drivers import run_searches
from pipeline.uci.analysis import root_lines
from tests.helpers import BACKENDS
from tests.helpers.search_positions import MATE_IN_2, MATE_IN_3
from tests.helpers.searches import ALGORITHMS, after, assert_proves_mate, mates_within, uniform_search
from tests.helpers.uci import Session, final_infos

SOLVER = SearchConfig(num_simulations=800, leaves_per_batch=1, cache_size=10_000)


@pytest.mark.parametrize("threats", [False, True], ids=["solver", "threats"])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("mate", "fens"), [(2, MATE_IN_2), (3, MATE_IN_3)], ids=["mate-in-2", "mate-in-3"]
)
def test_uniform_search_proves_mates_in_2_and_3(
    mate: int, fens: list[str], backend: str, algorithm: str, threats: bool
) -> None:
    """With the solver alone and with its mate-threat look-ahead
    (``search.solver_threats``, tests/test_solver_threats.py)."""
    config = dataclasses.replace(SOLVER, algorithm=algorithm, solver_threats=threats)
    for fen in fens:
        board = chess.Board(fen)
        assert_proves_mate(board, uniform_search(board, config, backend), mate, config)


@pytest.mark.parametrize("backend", BACKENDS)
def test_without_the_solver_uniform_puct_misses_them(backend: str) -> None:
    """The same budget without the solver: proofs only from the tree walk, far fewer."""
    config = dataclasses.replace(SOLVER, solver=False)
    proven = 0
    for fen in MATE_IN_2:
        tree = uniform_search(chess.Board(fen), config, backend)
        assert tree.result().proof is None and tree.root.proof is None
        line = root_lines(tree)[0]
        proven += line.mate == 2
    assert proven <= len(MATE_IN_2) // 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_mate_in_one_is_seen_at_expansion_with_one_simulation(backend: str) -> None:
    board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1")  # Rd8#
    tree = uniform_search(board, SOLVER, backend, sims=1)
    result = tree.result()
    assert result.best_move.uci() == "d1d8"
    index = result.moves.index(result.best_move)
    assert (result.proof[index], result.proof_plies[index], result.visits[index]) == (1, 1, 1)
    assert tree.root.proof == 1 and tree.root.proof_plies == 1
    assert root_lines(tree)[0].mate == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_lost_root_is_proven_and_reported_as_mated(backend: str) -> None:
    board = chess.Board("k7/8/1K6/8/8/8/8/7R b - - 0 1")  # Kb8 (forced), Rh8#
    tree = uniform_search(board, SOLVER, backend, sims=50)
    result = tree.result()
    assert [m.uci() for m in result.moves] == ["a8b8"]
    assert (result.proof[0], result.proof_plies[0]) == (-1, 2)
    assert tree.root.proof == -1 and tree.root.proof_plies == 2
    assert root_lines(tree)[0].mate == -1
    assert int(result.visits.sum()) == 50  # proven nodes still spend the budget (exact values)
    assert result.root_value < -0.9


@pytest.mark.parametrize("backend", BACKENDS)
def test_proven_losses_are_avoided_and_get_no_more_visits(backend: str) -> None:
    """Black can take a rook with the king into a mate, or stay alive."""
    board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R2R2K1 b - - 0 1")
    tree = uniform_search(board, SOLVER, backend, sims=200)
    result = tree.result()
    assert result.best_move not in [m for m, p in zip(result.moves, result.proof) if p == -1]
    lost = [i for i, p in enumerate(result.proof) if p == -1]
    before = result.visits.copy()
    tree.start(600)
    (run_native_searches if backend == "native" else run_searches)([tree], UniformEvaluator())
    after = tree.result()
    assert int(after.visits.sum()) == 600
    for i in lost:
        assert after.visits[i] == before[i]
        assert after.proof[i] == -1


@pytest.mark.parametrize("backend", BACKENDS)
def test_stalemates_and_drawn_roots_are_proven_draws(backend: str) -> None:
    board = chess.Board("k7/8/8/8/8/8/6q1/7K w - - 0 1")  # Kxg2 is forced: bare kings
    tree = uniform_search(board, SOLVER, backend, sims=20)
    result = tree.result()
    assert [m.uci() for m in result.moves] == ["h1g2"]
    assert (result.proof[0], tree.root.proof, result.root_value) == (0, 0, 0.0)
    assert root_lines(tree)[0].mate is None
    # Queen moves that stalemate are proven draws, the mates proven wins.
    board = chess.Board("k7/2Q5/1K6/8/8/8/8/8 w - - 0 1")
    tree = uniform_search(board, SOLVER, backend, sims=400)
    result = tree.result()
    for move, proof in zip(result.moves, result.proof):
        board.push(move)
        if board.is_checkmate():
            assert proof == 1
        elif board.is_stalemate() and not np.isnan(proof):
            assert proof == 0
        board.pop()
    assert board.is_legal(result.best_move)
    assert after(board, result.best_move, lambda b: b.is_checkmate())


def test_self_play_plays_the_proven_wins() -> None:
    """From mates in 2, white mates at its second move in every game, even
    while the temperature samples the other moves."""
    search = SearchConfig(
        num_simulations=800, leaves_per_batch=4, cache_size=5000, temperature_plies=10
    )
    games = GamesSettings(games=6, games_in_flight=6, seed=0, start_fens=MATE_IN_2, max_plies=10)
    driver = SelfPlayDriver(search, games, SelfPlayRules(full_search_prob=0.0, fast_simulations=800, resign_threshold=-1.0))
    games = driver.play(UniformEvaluator())
    for game in games:
        assert (game.termination, game.result, len(game.moves)) == ("checkmate", "1-0", 3), (
            game.moves
        )


@pytest.mark.parametrize("backend", BACKENDS)
def test_uci_mate_distance_comes_from_the_proof(backend: str) -> None:
    """A walk limited to 2 plies cannot see a mate in 2 (3 plies); the proof does."""
    board = chess.Board(MATE_IN_2[1])
    with_solver = uniform_search(board, SOLVER, backend)
    assert root_lines(with_solver, horizon=2)[0].mate == 2
    without = uniform_search(board, dataclasses.replace(SOLVER, solver=False), backend)
    assert root_lines(without, horizon=2)[0].mate is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_uci_engine_reports_the_proven_mate(backend: str) -> None:
    """End to end: ``go nodes 800`` on a mate in 3 prints ``score mate 3``
    and plays the proven key move."""
    session = Session(backend=backend, leaves_per_batch=1)
    try:
        best, output = session.go(f"position fen {MATE_IN_3[0]}", "go nodes 800")
    finally:
        session.engine.handle("quit")
    first = final_infos(output)[0]
    assert first["score"] == "mate 3"
    assert first["pv"].split()[0] == best.uci()
    board = chess.Board(MATE_IN_3[0])
    assert after(
        board,
        best,
        lambda b: all(after(b, reply, lambda c: mates_within(c, 2)) for reply in list(b.legal_moves)),
    )
