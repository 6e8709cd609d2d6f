"""The solver's mate-threat look-ahead (``search.solver_threats``) in both backends.

With the option on, expanding a node also plays out every move that does not
mate at once: when the opponent then has a mate in one (and the move does not
end the game in a draw), the move's child is created proven won for the
opponent in 1 ply, so the mover sees a proven loss in 2 plies.  A node whose
every move allows a mate in one is then proven lost at its expansion, a mate
in 2 is seen one level higher, and the search never plays such a move while
another exists.  Both backends do it identically (visit for visit).
"""

from __future__ import annotations

import dataclasses

import chess
import numpy as np
import pytest

from models.hash_evaluator import HashEvaluator
from models.native_tree import NativeTree, run_native_searches, search_params
from models.search_config import SearchConfig, SearchError, select_move
from models.search_drivers import run_searches
from models.search_tree import GameTree
from pipeline.uci.analysis import root_lines
from tests.helpers import BACKENDS
from tests.helpers.search_positions import MATE_IN_2, MATE_IN_3, NEAR_MATE
from tests.helpers.searches import (
    ALGORITHMS,
    after,
    assert_proves_mate,
    assert_same,
    assert_same_gumbel,
    gumbel_noise,
    tree_pair,
    uniform_search,
)

THREATS = SearchConfig(num_simulations=800, leaves_per_batch=1, cache_size=10_000, solver_threats=True)

# KQK/KRK mates in exactly 3 (pipeline.endgames seed 2024, Stockfish depth 22
# says mate 3, python-chess brute force finds no mate in 2).  With uniform
# priors a Gumbel search proves them within 800 simulations only with the
# threat look-ahead; PUCT (relative FPU, value 0 everywhere: it stays
# narrow) mostly does not, with or without it.
GUMBEL_MATE_IN_3 = [
    "1k6/8/8/3K4/8/8/2Q5/8 w - - 0 1",
    "8/8/1k1K4/8/8/8/Q7/8 w - - 0 1",
    "k7/8/8/3K4/8/7Q/8/8 w - - 0 1",
    "4Q3/8/8/8/8/8/4K1k1/8 w - - 0 1",
    "3k4/8/8/2K4Q/8/8/8/8 w - - 0 1",
    "8/8/3K4/k7/8/4R3/8/8 w - - 0 1",
    "6k1/4R3/8/5K2/8/8/8/8 w - - 0 1",
]
# Black to move: Kh7, a6 and a5 all allow Rh1# (Kf7 guards g7 and g8).
ALL_MOVES_ALLOW_MATE = "7k/p4K2/8/8/8/8/8/1R6 b - - 0 1"
# White to move: Kf7 (into ALL_MOVES_ALLOW_MATE) and Kg6 mate in 2, no mate in 1.
MATE_IN_2_BEFORE = "7k/p7/5K2/8/8/8/8/1R6 w - - 0 1"
# Some moves allow a mate in one, others do not.
SOME_MOVES_ALLOW_MATE = [
    "7k/p4K2/8/8/8/3b4/4n3/1R6 b - - 0 1",  # Kh7, Ba6 and Bb5 allow Rh1# or Rb8#, 15 moves not
    "6k1/5ppp/8/8/8/8/5PPP/3R2K1 b - - 0 1",  # Kh8 allows Rd8#
]


def _allows_mate_in_one(board: chess.Board, move: chess.Move) -> bool:
    """After ``move`` the game goes on and the opponent has a checkmating reply."""
    board.push(move)
    try:
        if board.outcome() is not None:
            return False
        return any(after(board, reply, lambda b: b.is_checkmate()) for reply in list(board.legal_moves))
    finally:
        board.pop()


@pytest.mark.parametrize("backend", BACKENDS)
def test_uniform_gumbel_with_threats_proves_more_mates_in_3(backend: str) -> None:
    config = dataclasses.replace(THREATS, algorithm="gumbel")
    for fen in GUMBEL_MATE_IN_3:
        board = chess.Board(fen)
        assert_proves_mate(board, uniform_search(board, config, backend), 3, config)


def test_without_threats_uniform_gumbel_misses_most_of_them() -> None:
    config = dataclasses.replace(THREATS, algorithm="gumbel", solver_threats=False)
    proven = 0
    for fen in GUMBEL_MATE_IN_3:
        tree = uniform_search(chess.Board(fen), config, "native")
        proven += tree.root.proof == 1 and tree.root.proof_plies == 5
    assert proven <= 2


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_root_whose_every_move_allows_mate_in_one_is_lost_at_expansion(backend: str, algorithm: str) -> None:
    board = chess.Board(ALL_MOVES_ALLOW_MATE)
    config = dataclasses.replace(THREATS, algorithm=algorithm)
    tree = uniform_search(board, config, backend, sims=1)
    result = tree.result()
    assert sorted(m.uci() for m in result.moves) == ["a7a5", "a7a6", "h8h7"]
    assert list(result.proof) == [-1, -1, -1] and list(result.proof_plies) == [2, 2, 2]
    assert tree.root.proof == -1 and tree.root.proof_plies == 2
    assert root_lines(tree)[0].mate == -1
    # Without the look-ahead one simulation proves nothing.
    tree = uniform_search(board, dataclasses.replace(config, solver_threats=False), backend, sims=1)
    assert tree.root.proof is None


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_one_level_up_a_mate_in_2_is_proven_when_its_key_move_is_expanded(backend: str, algorithm: str) -> None:
    """Kf7 leads to ALL_MOVES_ALLOW_MATE (Kg6 to a like position): proven
    lost at its expansion, so the root is a proven mate in 2 without
    expanding black's replies."""
    board = chess.Board(MATE_IN_2_BEFORE)
    config = dataclasses.replace(THREATS, algorithm=algorithm)
    tree = uniform_search(board, config, backend, sims=64)
    result = tree.result()
    assert result.best_move.uci() in ("f6f7", "f6g6")
    index = result.moves.index(result.best_move)
    assert (result.proof[index], result.proof_plies[index]) == (1, 3)
    assert tree.root.proof == 1 and tree.root.proof_plies == 3


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fen", SOME_MOVES_ALLOW_MATE)
def test_a_move_allowing_mate_in_one_is_never_played(fen: str, backend: str, algorithm: str) -> None:
    board = chess.Board(fen)
    config = dataclasses.replace(THREATS, algorithm=algorithm, temperature_plies=30)
    allowing = {move for move in board.legal_moves if _allows_mate_in_one(board, move)}
    assert allowing and len(allowing) < board.legal_moves.count()
    for sims in (1, 8, 64, 300):
        tree = uniform_search(board, config, backend, sims=sims)
        assert tree.root.proof != -1  # black has moves that hold: those are searched
        result = tree.result()
        for move, proof, plies, visits in zip(result.moves, result.proof, result.proof_plies, result.visits):
            if move in allowing:
                assert (proof, plies, visits) == (-1, 2, 0), (move, sims)
            else:
                assert not (proof == -1 and plies == 2), (move, sims)
        assert result.best_move not in allowing
        for seed in range(8):  # temperature sampling skips them too
            assert select_move(result, 0, config, np.random.default_rng(seed)) not in allowing


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_move_into_a_draw_is_not_a_threat_loss(backend: str) -> None:
    """At halfmove clock 99 Kh7 ends the game by the 50-move rule (Rh1 never
    comes): it is a proven draw, not a loss; the pawn moves reset the clock
    and are proven losses."""
    board = chess.Board("7k/p4K2/8/8/8/8/8/1R6 b - - 99 80")
    tree = uniform_search(board, THREATS, backend, sims=1)
    result = tree.result()
    proofs = {m.uci(): (p, n) for m, p, n in zip(result.moves, result.proof, result.proof_plies)}
    assert proofs == {"h8h7": (0, 0), "a7a6": (-1, 2), "a7a5": (-1, 2)}
    assert result.best_move.uci() == "h8h7" and tree.root.proof == 0


POSITIONS = (
    MATE_IN_2
    + MATE_IN_3
    + GUMBEL_MATE_IN_3[:3]
    + NEAR_MATE
    + SOME_MOVES_ALLOW_MATE
    + [ALL_MOVES_ALLOW_MATE, MATE_IN_2_BEFORE, "7k/p4K2/8/8/8/8/8/1R6 b - - 99 80"]
)
EQUALITY_CONFIGS = [
    pytest.param(dict(leaves_per_batch=1, cache_size=0), id="lpb1-nocache"),
    pytest.param(dict(leaves_per_batch=8, cache_size=10_000, fpu_mode="absolute", fpu_value=0.0), id="lpb8-cache"),
]


def _search_both(python_tree: GameTree, native_tree: NativeTree, evaluator, seed: int, context: str) -> None:
    """One search in each backend (the same Gumbel draws, from ``seed``) and
    the same visits, values and proofs."""
    gumbel = python_tree.config.algorithm == "gumbel"
    noise = gumbel_noise(python_tree.board, seed) if gumbel else None
    python_tree.start(gumbel=noise)
    native_tree.start(gumbel=noise)
    run_searches([python_tree], evaluator)
    run_native_searches([native_tree], evaluator)
    (assert_same_gumbel if gumbel else assert_same)(python_tree, native_tree, context)
    _assert_same_proofs(python_tree, native_tree, context)


def _assert_same_proofs(python_tree: GameTree, native_tree: NativeTree, context: str) -> None:
    expected, got = python_tree.result(), native_tree.result()
    proofs = {m.uci(): (p, n) for m, p, n in zip(expected.moves, expected.proof, expected.proof_plies)}
    for move, proof, plies in zip(got.moves, got.proof, got.proof_plies):
        want = proofs[move.uci()]
        assert (np.isnan(proof) and np.isnan(want[0])) or (proof, plies) == want, (context, move)
    assert (native_tree.root.proof, native_tree.root.proof_plies) == (
        python_tree.root.proof,
        python_tree.root.proof_plies,
    ), context


@pytest.mark.parametrize("overrides", EQUALITY_CONFIGS)
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_backends_match_with_threats(algorithm: str, overrides: dict) -> None:
    config = SearchConfig(num_simulations=120, algorithm=algorithm, solver_threats=True, **overrides)
    evaluator = HashEvaluator(seed=3)
    for index, board in enumerate(map(chess.Board, POSITIONS)):
        python_tree, native_tree = tree_pair(board, config)
        _search_both(python_tree, native_tree, evaluator, index, f"{board.fen()} {algorithm} {overrides}")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_backends_match_after_advancing_into_a_threat_child(algorithm: str) -> None:
    """Tree reuse keeps the unexpanded, proven child of a move that allows a
    mate in one as the new root; both backends then search it alike."""
    config = SearchConfig(
        num_simulations=60, algorithm=algorithm, solver_threats=True, leaves_per_batch=4, cache_size=0
    )
    evaluator = HashEvaluator(seed=5)
    board = chess.Board(SOME_MOVES_ALLOW_MATE[0])
    python_tree, native_tree = tree_pair(board, config)
    lines = [chess.Move.from_uci("d3a6"), None, None]  # a losing move, then the best moves
    for step, forced in enumerate(lines):
        _search_both(python_tree, native_tree, evaluator, step, f"{python_tree.board.fen()} step {step}")
        move = forced or python_tree.result().best_move
        if step == 0:
            index = python_tree.result().moves.index(move)
            assert python_tree.result().proof[index] == -1
        python_tree.advance(move)
        native_tree.advance(move)
        if step == 0:  # the reused root: the threat child, proven, not expanded yet
            assert python_tree.root.proof == native_tree.root.proof == 1
        if python_tree._is_terminal_root():  # noqa: SLF001
            break


@pytest.mark.parametrize("value", ["yes", 1, 0, None])
def test_the_option_must_be_a_bool(value: object) -> None:
    with pytest.raises(SearchError, match="search.solver_threats"):
        SearchConfig(solver_threats=value)


def test_the_option_reaches_the_native_core() -> None:
    assert search_params(SearchConfig()).solver_threats is False
    assert search_params(SearchConfig(solver_threats=True)).solver_threats is True
    assert SearchConfig().solver_threats is False
