"""Draw adjudication by move count (``selfplay.draw_adjudication_*``) on both
self-play backends.

The rule: after a ply that did not end the game otherwise, a game of at least
``draw_adjudication_plies`` plies whose last ``draw_adjudication_window``
root |q| were all below ``draw_adjudication_q`` ends as a draw, termination
``draw_adjudicated``; a ``draw_adjudication_playthrough`` share of games plays
on and records when it would have happened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import chess
import numpy as np
import pytest

from models.encoding import COLOUR_PLANE, MOVE_COUNT_PLANE
from models.evaluation import Leaf
from models.hash_evaluator import HashEvaluator
from models.driver_settings import DriverConfigError, settings_from
from models.native_drivers import SelfPlayDriver
from models.policy import get_policy_map
from models.search_config import SearchConfig
from pipeline.config import Config, ConfigError, SelfPlayConfig, from_dict
from pipeline.selfplay import GameRecord, SelfPlayWorker, game_positions
from tests.helpers import BACKENDS
from tests.helpers.searches import TINY_SEARCH

# No noise, no sampling, no cache: both backends search the same trees (tests/test_selfplay.py).
SAME_SEARCH = replace(TINY_SEARCH, dirichlet_epsilon=0.0, temperature_plies=0, cache_size=0)
BASE = SelfPlayConfig(resign_threshold=-1.0, full_search_prob=1.0, games_per_task=3, max_plies=30)
DRAWS = replace(BASE, draw_adjudication_plies=6, draw_adjudication_window=3, draw_adjudication_q=0.02,
                draw_adjudication_playthrough=0.0)  # fmt: skip
STARTS = [
    chess.STARTING_FEN,
    "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
    "rnbqkb1r/pp2pppp/3p1n2/8/3NP3/8/PPP2PPP/RNBQKB1R w KQkq - 1 5",
]


class QuietHash(HashEvaluator):
    """:class:`HashEvaluator` with values scaled to +-0.18: root |q| wanders
    around the adjudication threshold, the same on both backends."""

    def evaluate_batch(
        self, planes: np.ndarray, rows: np.ndarray, indices: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        logits, values = super().evaluate_batch(planes, rows, indices)
        return logits, values * np.float32(0.2)

    def evaluate(self, leaves: Sequence[Leaf]) -> list[tuple[np.ndarray, float]]:
        # the same float32 product as evaluate_batch
        return [(priors, float(np.float32(value) * np.float32(0.2))) for priors, value in super().evaluate(leaves)]


class QuietThenWhiteLost:
    """Uniform priors; value 0 before ply ``turn_ply``, then lost for white
    (-0.99 for white to move, +0.99 for black)."""

    needs_planes = False

    def __init__(self, turn_ply: int) -> None:
        self.turn_ply = turn_ply

    def _value(self, ply: int, black_to_move: bool) -> float:
        if ply < self.turn_ply:
            return 0.0
        return 0.99 if black_to_move else -0.99

    def evaluate(self, leaves: Sequence[Leaf]) -> list[tuple[np.ndarray, float]]:
        uniform = [np.full(len(leaf.moves), 1 / len(leaf.moves)) for leaf in leaves]
        values = [self._value(leaf.board.ply(), leaf.board.turn == chess.BLACK) for leaf in leaves]
        return list(zip(uniform, values))

    def evaluate_batch(
        self, planes: np.ndarray, rows: np.ndarray, indices: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        values = [
            self._value(int(ply), bool(black))
            for ply, black in zip(planes[:, MOVE_COUNT_PLANE, 0, 0], planes[:, COLOUR_PLANE, 0, 0])
        ]
        return np.zeros(len(indices), np.float32), np.asarray(values, np.float32)


def expected_draw_ply(root_q: Sequence[float], config: SelfPlayConfig) -> int | None:
    """The rule, stated over a game's root q: the plies after which it is adjudicated."""
    streak = 0
    for plies, value in enumerate(root_q, 1):
        streak = streak + 1 if abs(value) < config.draw_adjudication_q else 0
        if plies >= config.draw_adjudication_plies and streak >= config.draw_adjudication_window:
            return plies
    return None


def _play(backend: str, config: SelfPlayConfig, evaluator: object, games: int = 2, start: str | None = None,
          seed: int = 0, search: SearchConfig = TINY_SEARCH) -> tuple[SelfPlayWorker, list[GameRecord]]:  # fmt: skip
    worker = SelfPlayWorker(evaluator, replace(search, backend=backend), config, [start] if start else None)
    return worker, worker.play(games, seed=seed)


def _root_q(record: GameRecord) -> list[float]:
    return [ply.root_value for ply in record.plies]


def test_both_backends_adjudicate_the_same_game_at_the_same_ply() -> None:
    policy_map = get_policy_map("az4672")
    seen = set()
    for start in STARTS:
        _, (unadjudicated,) = _play("python", BASE, QuietHash(seed=1), games=1, start=start, search=SAME_SEARCH)
        assert unadjudicated.termination == "max_plies"
        expected = expected_draw_ply(_root_q(unadjudicated), DRAWS)
        assert expected is not None
        seen.add(expected)
        rows = {}
        for backend in BACKENDS:
            worker, (record,) = _play(backend, DRAWS, QuietHash(seed=1), games=1, start=start, search=SAME_SEARCH)
            assert (record.result, record.termination, record.num_plies) == ("1/2-1/2", "draw_adjudicated", expected)
            assert [ply.move for ply in record.plies] == [ply.move for ply in unadjudicated.plies[:expected]]
            assert worker.stats.draws_adjudicated == 1
            rows[backend] = [
                (row.ply, row.z, row.termination, row.result, row.root_q)
                for row in game_positions(record, policy_map, 0)
            ]
        assert rows["native"] == rows["python"]
        assert {(z, termination) for _, z, termination, _, _ in rows["native"]} == {(0, "draw_adjudicated")}
    assert seen != {DRAWS.draw_adjudication_plies}  # the window, not only the ply count, decided somewhere


@pytest.mark.parametrize(("plies", "window", "length"), [(10, 4, 10), (4, 6, 6), (1, 1, 1)])
def test_quiet_games_end_at_the_later_of_plies_and_window(backend: str, plies: int, window: int, length: int) -> None:
    config = replace(DRAWS, draw_adjudication_plies=plies, draw_adjudication_window=window, draw_adjudication_q=0.5)
    worker, records = _play(backend, config, QuietThenWhiteLost(turn_ply=1000), games=3)
    for record in records:
        assert (record.result, record.termination, record.num_plies) == ("1/2-1/2", "draw_adjudicated", length)
        assert {record.z(ply) for ply in range(record.num_plies)} == {0}
        assert not record.draw_playthrough and record.would_draw is None
    assert worker.stats.draws_adjudicated == 3 and worker.stats.positions == 3 * length


def test_loud_plies_reset_the_window(backend: str) -> None:
    # From ply 4 every root |q| is ~0.99: the window never fills again.
    config = replace(DRAWS, draw_adjudication_plies=6, draw_adjudication_window=3, draw_adjudication_q=0.5,
                     max_plies=14)  # fmt: skip
    worker, records = _play(backend, config, QuietThenWhiteLost(turn_ply=4))
    assert all(record.termination == "max_plies" for record in records)
    assert worker.stats.draws_adjudicated == 0


def test_off_by_default_changes_nothing(backend: str) -> None:
    assert SelfPlayConfig().draw_adjudication_plies == 0
    quiet = QuietThenWhiteLost(turn_ply=1000)
    worker, records = _play(backend, replace(BASE, max_plies=12), quiet, seed=5)
    tuned = replace(BASE, max_plies=12, draw_adjudication_window=1, draw_adjudication_q=1.0,
                    draw_adjudication_playthrough=1.0)  # fmt: skip
    _, same = _play(backend, tuned, quiet, seed=5)
    for record, other in zip(records, same, strict=True):
        assert (record.termination, record.num_plies) == ("max_plies", 12)
        assert not record.draw_playthrough and record.would_draw is None
        assert [ply.move for ply in record.plies] == [ply.move for ply in other.plies]
    stats = worker.stats
    assert (stats.draws_adjudicated, stats.draw_playthrough, stats.false_draws) == (0, 0, 0)


def test_playthrough_games_record_the_ply_and_count_false_draws(backend: str) -> None:
    # Quiet until ply 12: the draw would come at ply 6; then white is lost and resigns.
    config = replace(DRAWS, draw_adjudication_plies=6, draw_adjudication_window=3, draw_adjudication_q=0.5,
                     draw_adjudication_playthrough=1.0, resign_threshold=-0.9, resign_plies=2,
                     resign_playthrough=0.0)  # fmt: skip
    worker, records = _play(backend, config, QuietThenWhiteLost(turn_ply=12), games=3)
    for record in records:
        assert record.draw_playthrough and record.would_draw == 6
        assert (record.result, record.termination) == ("0-1", "resign")
        assert record.false_draw
    stats = worker.stats
    assert (stats.draw_playthrough, stats.false_draws, stats.draws_adjudicated, stats.resigned) == (3, 3, 0, 3)
    drawn = replace(config, resign_threshold=-1.0, max_plies=10)
    worker, records = _play(backend, drawn, QuietThenWhiteLost(turn_ply=1000))
    assert all(record.would_draw == 6 and not record.false_draw for record in records)
    assert (worker.stats.draw_playthrough, worker.stats.false_draws) == (2, 0)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("draw_adjudication_plies", -1),
        ("draw_adjudication_window", 0),
        ("draw_adjudication_q", 0.0),
        ("draw_adjudication_q", 1.5),
        ("draw_adjudication_playthrough", 1.1),
        ("draw_adjudication_playthrough", -0.1),
    ],
)
def test_invalid_settings_are_rejected_naming_the_key(key: str, value: float) -> None:
    with pytest.raises(ConfigError, match=f"selfplay.{key}"):
        from_dict(Config, {"selfplay": {key: value}}, source="test")
    with pytest.raises(DriverConfigError, match=key):
        SelfPlayDriver(TINY_SEARCH, *settings_from(games=1, games_in_flight=1, seed=0, **{key: value}))


def test_unknown_key_is_rejected() -> None:
    with pytest.raises(ConfigError, match="selfplay.draw_adjudication_ply"):
        from_dict(Config, {"selfplay": {"draw_adjudication_ply": 10}}, source="test")
