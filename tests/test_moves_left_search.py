"""Auxiliary leaf outputs in the search (draw probability D, plies left M) and
lc0's moves-left utility, on both backends.

* without aux the searches are those of before (bench/callgrind_search.py's
  digests check the native side bit for bit);
* D and M back up as visit averages, M one more per ply, finished games as
  D = 1 (draw) or 0 (mate) with M = 0;
* with ``moves_left_slope`` > 0 a tree whose M is known (here: the white
  king's file) prefers the shorter win and the longer loss, with PUCT and
  with Gumbel (the utility added to each visited child's completed Q), visit
  for visit the same on both backends (tests/test_native_search.py checks the same on
  hashed evaluations);
* bad aux and bad settings are errors naming the position or the field.
"""

from __future__ import annotations

from collections.abc import Sequence

import chess
import numpy as np
import pytest

from models.driver_settings import settings_from
from models.evaluation import EvalCache, EvaluationError, Leaf, LeafEvaluation, encode_leaves
from models.hash_evaluator import HashEvaluator, softmax
from models.native_drivers import SelfPlayDriver
from models.native_tree import NativeCache, NativeTree, run_native_searches
from models.policy import get_policy_map
from models.search_config import SearchConfig, SearchError
from models.search_drivers import run_search, run_searches
from models.search_node import Node
from models.search_rules import child_utility
from models.search_tree import GameTree

ROOK_ENDING = "7k/p7/8/8/4K3/8/8/1R6 w - - 0 1"
"""White (to move) wins; the root's moves: 8 king moves over the d, e and f
files and 14 rook moves."""
MATE_AND_STALEMATE = "k7/8/2K5/8/8/8/8/1Q6 w - - 0 1"
"""Qb7# mates, Qb6 stalemates."""
ROOK_CHECK_STALEMATE = "8/8/1rK5/8/k7/2Q5/8/8 w - - 14 8"
"""Black's rook checks; Kxb6 stalemates, four king moves go on."""
COLOUR_PLANE, OWN_KING, THEIR_KING = 112, 5, 11


class BatchEvaluatorOnLeaves:
    """``evaluate(leaves)`` for the python reference from ``evaluate_batch``
    (the softmax over each leaf's moves, as the core takes it)."""

    needs_planes = True
    policy_map = get_policy_map("az4672")

    def evaluate_batch(
        self, planes: np.ndarray, rows: np.ndarray, indices: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        raise NotImplementedError

    def evaluate(self, leaves: Sequence[Leaf]) -> list[LeafEvaluation]:
        indices = [self.policy_map.indices(leaf.board, leaf.moves).astype(np.int64) for leaf in leaves]
        rows = np.repeat(np.arange(len(leaves)), [len(part) for part in indices])
        logits, values, aux = self.evaluate_batch(encode_leaves(leaves), rows, np.concatenate(indices))
        results: list[LeafEvaluation] = []
        for row, (value, leaf_aux) in enumerate(zip(values, aux)):
            priors = softmax(logits[rows == row])
            results.append((priors, float(value), (float(leaf_aux[0]), float(leaf_aux[1]))))
        return results


class SideValueEvaluator(BatchEvaluatorOnLeaves):
    """Nearly uniform priors (hashed logits / 10: no exact ties, which the
    backends' priors would break apart at the last bit), the value
    ``white_value`` for white (its opposite for black), D = 0 and M as
    :meth:`moves_left` says."""

    def __init__(self, white_value: float, seed: int) -> None:
        self.white_value = white_value
        self.hashed = HashEvaluator(seed=seed)

    def moves_left(self, planes: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def evaluate_batch(
        self, planes: np.ndarray, rows: np.ndarray, indices: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        logits, _ = self.hashed.evaluate_batch(planes, rows, indices)
        black = planes[:, COLOUR_PLANE, 0, 0] == 1
        values = np.where(black, -self.white_value, self.white_value).astype(np.float32)
        aux = np.stack([np.zeros(len(planes)), self.moves_left(planes)], axis=1).astype(np.float32)
        return (logits / 10).astype(np.float32), values, aux


class KingFileEvaluator(SideValueEvaluator):
    """M = 10 + 8 * (the white king's file): a king move to the d file is a
    shorter game than one to the f file."""

    def __init__(self, white_value: float) -> None:
        super().__init__(white_value, seed=4)

    def moves_left(self, planes: np.ndarray) -> np.ndarray:
        black = planes[:, COLOUR_PLANE, 0, 0] == 1
        king = np.where(black[:, None, None], planes[:, THEIR_KING], planes[:, OWN_KING])
        return 10.0 + 8.0 * king.max(axis=1).argmax(axis=1)


class ConstantValueEvaluator(SideValueEvaluator):
    """The same M for every leaf."""

    def __init__(self, white_value: float, moves_left: float) -> None:
        super().__init__(white_value, seed=3)
        self.constant = moves_left

    def moves_left(self, planes: np.ndarray) -> np.ndarray:
        return np.full(len(planes), self.constant)


class ConstantAuxEvaluator(BatchEvaluatorOnLeaves):
    """Hashed priors and values, and the same D and M for every leaf."""

    def __init__(self, draw: float, moves_left: float) -> None:
        self.aux: object = (draw, moves_left)
        self.hashed = HashEvaluator(seed=6)

    def evaluate_batch(
        self, planes: np.ndarray, rows: np.ndarray, indices: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        logits, values = self.hashed.evaluate_batch(planes, rows, indices)
        return logits, values, np.tile(np.asarray(self.aux, dtype=np.float32), (len(planes), 1))


def _searched_pair(board: chess.Board, config: SearchConfig, evaluator: object) -> tuple[GameTree, NativeTree]:
    size = config.cache_size
    python_tree = GameTree(board.copy(), config, needs_planes=True, cache=EvalCache(size) if size else None)
    native_tree = NativeTree(board.copy(), config, cache=NativeCache(size) if size else None)
    python_tree.start()
    native_tree.start()
    run_searches([python_tree], evaluator)  # type: ignore[arg-type]
    run_native_searches([native_tree], evaluator)  # type: ignore[arg-type]
    return python_tree, native_tree


def _visits_by_move(tree: GameTree | NativeTree) -> dict[str, int]:
    result = tree.result()
    return {move.uci(): int(visits) for move, visits in zip(result.moves, result.visits)}


# ---------------------------------------------------------------- backing up D and M


def test_without_aux_and_without_slope_the_search_is_unchanged() -> None:
    config = SearchConfig(num_simulations=150, leaves_per_batch=4, cache_size=1_000)
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    plain = _searched_pair(board, config, HashEvaluator(seed=2))
    with_aux = _searched_pair(board, config, HashEvaluator(seed=2, aux=True))
    for before, after in zip(plain, with_aux):
        assert _visits_by_move(after) == _visits_by_move(before)
        assert after.result().root_value == before.result().root_value
        assert before.result().root_draw == 0.0
        assert after.result().root_draw > 0.0
    assert with_aux[1].result().root_draw == pytest.approx(with_aux[0].result().root_draw, abs=1e-12)
    assert with_aux[1].result().root_moves_left == pytest.approx(with_aux[0].result().root_moves_left, abs=1e-9)


def _evaluated_depths(node: Node, depth: int = 0) -> list[int]:
    """Depths of the expanded (evaluated once each, no cache) nodes under ``node``."""
    if not node.expanded:
        return []
    return [depth] + [d for child in node.children if child is not None for d in _evaluated_depths(child, depth + 1)]


def test_d_and_m_are_visit_averages_with_m_one_more_per_ply() -> None:
    config = SearchConfig(num_simulations=120, leaves_per_batch=4, cache_size=0)
    evaluator = ConstantAuxEvaluator(draw=0.25, moves_left=7.0)
    python_tree, native_tree = _searched_pair(chess.Board(), config, evaluator)
    depths = _evaluated_depths(python_tree.root)
    assert len(depths) == python_tree.root.visits == 121 and max(depths) >= 2
    expected = sum(7.0 + depth for depth in depths) / len(depths)
    for tree in (python_tree, native_tree):
        result = tree.result()
        assert result.root_draw == pytest.approx(0.25, abs=1e-12)
        assert result.root_moves_left == pytest.approx(expected, abs=1e-9)
    child = next(child for child in native_tree.root.children if child is not None and child.visits > 1)
    assert child.draw() == pytest.approx(0.25) and child.moves_left() > 7.0


@pytest.mark.parametrize("solver", [True, False])
def test_finished_games_back_up_draw_one_for_stalemate_zero_for_mate(solver: bool) -> None:
    # An optimistic first-play urgency: every root move is tried.
    config = SearchConfig(num_simulations=200, cache_size=0, solver=solver, fpu_mode="absolute", fpu_value=2.0)
    python_tree, native_tree = _searched_pair(
        chess.Board(MATE_AND_STALEMATE), config, ConstantAuxEvaluator(draw=0.5, moves_left=30.0)
    )
    for tree in (python_tree, native_tree):
        root = tree.root
        children = dict(zip([move.uci() for move in root.moves], root.children))
        mate, stalemate = children["b1b7"], children["b1b6"]
        assert mate is not None and mate.visits >= 1
        assert (mate.draw(), mate.moves_left()) == (0.0, 0.0)
        if not solver:  # the solver never enters a drawn move when a mate is proven
            assert stalemate is not None and stalemate.visits >= 1
            assert (stalemate.draw(), stalemate.moves_left()) == (1.0, 0.0)
    assert _visits_by_move(native_tree) == _visits_by_move(python_tree)
    assert native_tree.result().root_moves_left == pytest.approx(python_tree.result().root_moves_left, abs=1e-9)


def test_a_proven_win_backs_up_its_plies() -> None:
    result = run_search(
        chess.Board(MATE_AND_STALEMATE),
        ConstantAuxEvaluator(draw=0.5, moves_left=30.0),
        SearchConfig(num_simulations=50, backend="python", cache_size=0),
    )
    # The root is proven won in 1 at its expansion: every visit backs up M = 1, D = 0.
    assert (result.root_draw, result.root_moves_left) == (0.0, 1.0)


# ---------------------------------------------------------------- the utility


def _king_file_visits(white_value: float, slope: float, algorithm: str = "puct") -> dict[str, int]:
    config = SearchConfig(
        num_simulations=800, leaves_per_batch=4, cache_size=10_000, algorithm=algorithm,
        moves_left_threshold=0.5, moves_left_slope=slope, moves_left_cap=0.2,
    )  # fmt: skip
    python_tree, native_tree = _searched_pair(chess.Board(ROOK_ENDING), config, KingFileEvaluator(white_value))
    visits = _visits_by_move(python_tree)
    assert _visits_by_move(native_tree) == visits
    assert native_tree.result().best_move == python_tree.result().best_move
    if algorithm == "gumbel":
        expected = _improved_by_move(python_tree)
        got = _improved_by_move(native_tree)
        assert got.keys() == expected.keys()
        assert all(abs(got[move] - expected[move]) < 1e-6 for move in expected)  # priors: float32
    return visits


def _improved_by_move(tree: GameTree | NativeTree) -> dict[str, float]:
    result = tree.result()
    assert result.improved_policy is not None
    return {move.uci(): float(p) for move, p in zip(result.moves, result.improved_policy)}


def _file_visits(visits: dict[str, int], file: str) -> int:
    return sum(count for move, count in visits.items() if move.startswith("e4") and move[2] == file)


@pytest.mark.parametrize("algorithm", ["puct", "gumbel"])
def test_winning_prefers_the_shorter_game_losing_the_longer(algorithm: str) -> None:
    neutral = _king_file_visits(0.9, slope=0.0, algorithm=algorithm)
    d_file, f_file = _file_visits(neutral, "d"), _file_visits(neutral, "f")
    if algorithm == "puct":
        assert d_file < 1.5 * f_file and f_file < 1.5 * d_file  # only the priors differ
    else:  # sequential halving keeps few moves; its noise happened to favour the d file
        assert d_file > 3 * f_file
    winning = _king_file_visits(0.9, slope=0.02, algorithm=algorithm)
    assert _file_visits(winning, "d") > 3 * _file_visits(winning, "f")
    assert max(winning, key=winning.__getitem__)[2] == "d"
    losing = _king_file_visits(-0.9, slope=0.02, algorithm=algorithm)
    assert _file_visits(losing, "f") > 3 * _file_visits(losing, "d")
    assert max(losing, key=losing.__getitem__)[2] == "f"


@pytest.mark.parametrize("algorithm", ["puct", "gumbel"])
def test_below_the_threshold_the_utility_does_nothing(algorithm: str) -> None:
    assert _king_file_visits(0.4, slope=0.02, algorithm=algorithm) == _king_file_visits(
        0.4, slope=0.0, algorithm=algorithm
    )


@pytest.mark.parametrize("algorithm", ["puct", "gumbel"])
def test_a_stalemate_gains_nothing_for_ending_the_game_at_once(algorithm: str) -> None:
    # A KQKR game's position: the rook checks, and Kxb6 stalemates.  Every
    # leaf says White wins (0.95) with 40 plies left; the stalemate ends the
    # game now (q = 0, M = 0).  Weighted by the node's Q (the rule before
    # 2026-12-04), a slope of 0.3 capped at 1.0 lifted it by up to 0.75 and
    # PUCT gave it 24 of 400 visits; weighted by its own q it gains nothing.
    config = SearchConfig(
        num_simulations=400, leaves_per_batch=4, cache_size=0, algorithm=algorithm,
        moves_left_threshold=0.8, moves_left_slope=0.3, moves_left_cap=1.0,
    )  # fmt: skip
    python_tree, native_tree = _searched_pair(
        chess.Board(ROOK_CHECK_STALEMATE), config, ConstantValueEvaluator(0.95, moves_left=40.0)
    )
    visits = _visits_by_move(python_tree)
    assert _visits_by_move(native_tree) == visits
    assert python_tree.result().best_move.uci() != "c6b6"
    if algorithm == "puct":
        assert visits["c6b6"] <= 12
    moves = [move.uci() for move in python_tree.root.moves]
    stalemate = python_tree.root.children[moves.index("c6b6")]
    assert stalemate is not None and stalemate.visits >= 1
    assert child_utility(stalemate, 0.0, 40.0, config) == 0.0
    winning = python_tree.root.children[moves.index("c6c7")]
    assert winning is not None and winning.visits >= 1
    assert child_utility(winning, 0.95, 1.0, config) < 0.0  # longer than the node's M: a cost to the winner
    assert child_utility(winning, -0.95, 1.0, config) > 0.0  # and a gain to the loser
    assert child_utility(winning, 0.5, 1.0, config) == 0.0  # |q| not above the threshold


def test_native_self_play_takes_aux_and_the_utility() -> None:
    search = SearchConfig(num_simulations=16, leaves_per_batch=4, cache_size=1_000, temperature_plies=0)
    options = dict(games=4, games_in_flight=2, seed=5, start_fens=[ROOK_ENDING], max_plies=30)

    def play(config: SearchConfig, evaluator: HashEvaluator) -> list[list[str]]:
        driver = SelfPlayDriver(config, *settings_from(**options))
        return [game.moves for game in driver.play(evaluator)]

    plain = play(search, HashEvaluator(seed=1))
    assert play(search, HashEvaluator(seed=1, aux=True)) == plain
    steered = SearchConfig(**{**search.__dict__, "moves_left_threshold": 0.0, "moves_left_slope": 0.05})
    assert play(steered, HashEvaluator(seed=1, aux=True)) != plain


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("moves_left_threshold", 1.0),
        ("moves_left_threshold", -0.1),
        ("moves_left_threshold", float("nan")),
        ("moves_left_slope", -0.001),
        ("moves_left_slope", float("inf")),
        ("moves_left_cap", -0.2),
        ("moves_left_cap", float("nan")),
    ],
)
def test_bad_settings_name_the_field(field: str, value: float) -> None:
    with pytest.raises(SearchError, match=f"search.{field}"):
        SearchConfig(**{field: value})


class BadAuxEvaluator(ConstantAuxEvaluator):
    def __init__(self, aux: object) -> None:
        super().__init__(0.0, 0.0)
        self.aux = aux

    def evaluate(self, leaves: Sequence[Leaf]) -> list[LeafEvaluation]:
        return [(priors, value, self.aux) for priors, value, _ in super().evaluate(leaves)]  # type: ignore[misc]


@pytest.mark.parametrize(
    ("aux", "match"),
    [((1.5, 3.0), "draw probability 1.5"), ((0.1, -2.0), "moves_left -2"), ((0.1, 2.0, 3.0), "shape")],
)
def test_bad_aux_names_the_position_on_both_backends(aux: tuple, match: str) -> None:
    board = chess.Board(ROOK_ENDING)
    with pytest.raises(EvaluationError, match=match):
        run_search(board, BadAuxEvaluator(aux), SearchConfig(num_simulations=8, backend="python"))
    tree = NativeTree(board, SearchConfig(num_simulations=8))
    tree.start()
    with pytest.raises(ValueError, match=match if match == "shape" else "7k/p7"):
        run_native_searches([tree], BadAuxEvaluator(aux))
