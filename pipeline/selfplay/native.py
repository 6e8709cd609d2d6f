"""The native backend of self-play (``search.backend: native``): the glue to
:class:`models.native_drivers.SelfPlayDriver`.

The driver keeps the games in flight in C++ on ``selfplay.search_threads``
threads, without the GIL, and hands the network one ``evaluate_batch`` call
per batch (two lanes, double-buffered on CUDA or with
``selfplay.overlap_inference``: the search fills one batch while the network
evaluates the other; on a CPU in turn, so the search does not take the
forward's cores).  A finished game comes back as arrays
(:class:`~models.native_drivers.NativeGame`), wrapped here as a
:class:`~pipeline.selfplay.records.NativeGameRecord`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from models.driver_settings import GamesSettings
from models.evaluation import Evaluator
from models.search_backend import policy_encoding
from models.search_config import SearchConfig
from pipeline.selfplay.config import SelfPlayConfig
from pipeline.selfplay.records import GameRecord, NativeGameRecord, SelfPlayStats

if TYPE_CHECKING:
    from models.native_drivers import NativeGame

__all__ = ["NATIVE_COUNTERS", "count_native", "native_overlap", "play_native"]

log = logging.getLogger(__name__)

NATIVE_COUNTERS = (
    "games", "positions", "full_searches", "evaluations", "batches", "resigned", "playthrough", "false_resigns",
    "draws_adjudicated", "draw_playthrough", "false_draws",
)  # fmt: skip
"""The :class:`SelfPlayStats` counters the driver counts too."""


def native_overlap(evaluator: Evaluator, selfplay: SelfPlayConfig) -> bool:
    """Whether the native driver evaluates one lane's batch while its
    search steps the other: when ``selfplay.overlap_inference`` asks for
    it or the network runs on a GPU.  On a CPU the search thread and the
    forward's threads compete for the same cores (``bench/selfplay.py``,
    2x32 net, 2 cores: 5,026-5,839 evaluations/s overlapped against
    5,760-6,874 in turn, network-bound share 0.84-0.94 against 0.98-1.00)."""
    device = getattr(evaluator, "device", None)
    return selfplay.overlap_inference or getattr(device, "type", "cpu") == "cuda"


def count_native(stats: SelfPlayStats, counters: dict[str, Any]) -> None:
    """Add the driver's counters to ``stats``."""
    for name in NATIVE_COUNTERS:
        setattr(stats, name, getattr(stats, name) + int(counters[name]))


def play_native(
    evaluator: Evaluator,
    search: SearchConfig,
    selfplay: SelfPlayConfig,
    start_fens: list[str],
    games: int,
    seed: int,
    id_prefix: str,
    on_move: Callable[[], None] | None,
) -> tuple[list[GameRecord], dict[str, Any]]:
    """``games`` (>= 1) games on the native core, and the driver's counters
    (eval/wait/wall seconds too); ``on_move`` is called for each move of a
    game when the game ends."""
    from models.native_drivers import SelfPlayDriver

    encoding = policy_encoding(evaluator)
    settings = GamesSettings(
        games=games,
        games_in_flight=selfplay.games_per_task,
        seed=seed,
        policy_encoding=encoding,
        start_fens=tuple(start_fens),
        random_plies=selfplay.random_plies,
        max_plies=selfplay.max_plies,
        threads=selfplay.search_threads,
        id_prefix=id_prefix,
    )
    # The selfplay section is a SelfPlayRules: the driver reads its rules' fields.
    driver = SelfPlayDriver(search, settings, selfplay, overlap=native_overlap(evaluator, selfplay))

    def finished(game: NativeGame) -> None:
        if on_move is not None:
            for _ in game.moves:
                on_move()

    played = driver.play(evaluator, on_game=finished)  # type: ignore[arg-type]
    records: list[GameRecord] = [NativeGameRecord(game, encoding) for game in played]
    for record in records:
        log.debug("%s: %s by %s after %d plies", record.game_id, record.result, record.termination,
                  record.num_plies)  # fmt: skip
    return records, dict(driver.stats)
