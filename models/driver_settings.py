"""The settings of the native drivers, declared once.

:class:`GamesSettings` is what both drivers play (how many games, how many at
a time, from where, on how many threads); :class:`SelfPlayRules` is what only
self-play adds (playout cap randomization, resigning, draw adjudication).
Both check their values when built; :func:`models.native_drivers.native_config`
copies them, field by field under the same names, into the core's config.

C++ twin: ``GamesConfig`` and ``DriverConfig`` in models/native/driver.h
(checked again by ``check_games_config`` / ``check_driver_config``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

import chess
import numpy as np

from models.policy import get_policy_map

__all__ = [
    "NO_ADJUDICATION",
    "DriverConfigError",
    "GamesSettings",
    "SelfPlayRules",
    "settings_from",
]


class DriverConfigError(ValueError):
    """An invalid driver setting; the message names the field."""


def _check_count(name: str, value: object, low: int | None) -> None:
    """An integer (not a bool) >= ``low`` (any integer for None)."""
    if (
        not isinstance(value, (int, np.integer))
        or isinstance(value, bool)
        or (low is not None and value < low)
    ):
        raise DriverConfigError(
            f"{name} must be an integer{'' if low is None else f' >= {low}'}, got {value!r}"
        )


def _check_share(name: str, value: float, low: float = 0.0, *, open_low: bool = False) -> None:
    inside = (low < value if open_low else low <= value) and value <= 1.0  # false for NaN
    if not inside:
        raise DriverConfigError(
            f"{name} must be in {'(' if open_low else '['}{low:g}, 1], got {value!r}"
        )


def _check_start_fens(start_fens: tuple[str, ...]) -> None:
    if not start_fens:
        raise DriverConfigError("start_fens must not be empty")
    for index, fen in enumerate(start_fens):
        try:
            board = chess.Board(fen)
        except ValueError as error:
            raise DriverConfigError(
                f"start_fens[{index}] is not a FEN: {fen!r} ({error})"
            ) from error
        if not board.is_valid() or board.outcome() is not None:
            raise DriverConfigError(
                f"start_fens[{index}] is not playable: {fen!r} ({board.status()!r})"
            )


@dataclass(frozen=True)
class GamesSettings:
    """What a driver plays: ``games`` games, ``games_in_flight`` at a time,
    each from one of ``start_fens`` (the starting position by default) plus
    ``random_plies`` random moves, ended at ``max_plies``; the core steps
    them on ``threads`` C++ threads.  The same ``seed`` gives the same games
    for a deterministic evaluator.  Game ids are ``{id_prefix}-{index:05d}``."""

    games: int
    games_in_flight: int
    seed: int
    policy_encoding: str = "az4672"
    start_fens: tuple[str, ...] | None = None  # None: the starting position
    random_plies: int = 0
    max_plies: int = 512
    threads: int = 1
    id_prefix: str = "game"

    def __post_init__(self) -> None:
        for name, low in (
            ("games", 0),
            ("games_in_flight", 1),
            ("random_plies", 0),
            ("max_plies", 1),
            ("threads", 1),
        ):
            _check_count(name, getattr(self, name), low)
        _check_count("seed", self.seed, None)
        get_policy_map(self.policy_encoding)  # raises for an unknown encoding
        if isinstance(self.start_fens, str):
            raise DriverConfigError(
                f"start_fens must be a list of FENs, got the string {self.start_fens!r}"
            )
        fens = (chess.STARTING_FEN,) if self.start_fens is None else tuple(self.start_fens)
        object.__setattr__(self, "start_fens", fens)
        _check_start_fens(self.start_fens)


@dataclass(frozen=True)
class SelfPlayRules:
    """The rules only self-play has (pipeline.selfplay.SelfPlayWorker's),
    with the defaults of ``params.yaml``'s ``selfplay`` section, which extends
    this class (:class:`pipeline.selfplay.config.SelfPlayConfig`).
    :data:`NO_ADJUDICATION` plays every move with the
    full search and never resigns.

    A ``full_search_prob`` share of moves get the full search, the others
    ``fast_simulations`` simulations and no training row.  A side whose root
    value stayed below ``resign_threshold`` (-1: never) for ``resign_plies``
    of its moves resigns, except in a ``resign_playthrough`` share of games.
    Draw adjudication (``draw_adjudication_plies`` > 0; 0 is off): once a game
    has that many plies and the root |q| of its last
    ``draw_adjudication_window`` plies all stayed below ``draw_adjudication_q``,
    it ends as a draw, except in a ``draw_adjudication_playthrough`` share.
    """

    full_search_prob: float = 0.25
    """playout cap randomization (KataGo): the share of moves searched with
    ``search.num_simulations`` and recorded as training targets; the others get
    ``fast_simulations``, no noise, and are stored with ``full_search = false``.  1.0 turns it
    off."""
    fast_simulations: int = 32
    """simulations of a fast (cheap) search."""
    resign_threshold: float = -0.95
    """a side resigns when its root value stays below this for ``resign_plies`` consecutive own
    moves; -1 disables resigning."""
    resign_plies: int = 3
    """consecutive own moves below the threshold to resign."""
    resign_playthrough: float = 0.1
    """share of games where resigning is disabled, to measure how often a resignation would have
    been wrong."""
    draw_adjudication_plies: int = 0
    """not AlphaZero (lc0/KataGo practice): a game of at least this many plies whose root |q|
    stayed below ``draw_adjudication_q`` for its last ``draw_adjudication_window`` plies (either
    side's searches) ends as a draw, z = 0 (termination ``draw_adjudicated``); 0 turns it off."""
    draw_adjudication_window: int = 20
    """consecutive plies of small root |q| that adjudicate a draw."""
    draw_adjudication_q: float = 0.05
    """root |q| below which a ply counts as drawish."""
    draw_adjudication_playthrough: float = 0.1
    """share of games where draw adjudication is disabled, to measure how often an adjudicated
    draw would have been a decisive game (``false_draws``)."""

    key_prefix: ClassVar[str] = ""
    """Put before a field's name in error messages (``selfplay.`` for the config section)."""

    def __post_init__(self) -> None:
        """The one check of these fields (the ``selfplay`` section's included)."""
        key = self.key_prefix
        for name, low in (("fast_simulations", 1), ("resign_plies", 1), ("draw_adjudication_plies", 0),
                          ("draw_adjudication_window", 1)):  # fmt: skip
            _check_count(key + name, getattr(self, name), low)
        for name in ("full_search_prob", "resign_playthrough", "draw_adjudication_playthrough"):
            _check_share(key + name, getattr(self, name))
        _check_share(key + "resign_threshold", self.resign_threshold, low=-1.0)
        _check_share(key + "draw_adjudication_q", self.draw_adjudication_q, open_low=True)


NO_ADJUDICATION = SelfPlayRules(full_search_prob=1.0, resign_threshold=-1.0)
"""Every move searched in full, no resigning (draw adjudication is off by default)."""


def settings_from(**keywords: object) -> tuple[GamesSettings, SelfPlayRules]:
    """Both settings from flat keywords (the names of ``params.yaml``'s
    ``selfplay`` section and of the two dataclasses); DriverConfigError
    names a keyword neither has."""
    games_names = {field.name for field in fields(GamesSettings)}
    rules_names = {field.name for field in fields(SelfPlayRules)}
    unknown = sorted(set(keywords) - games_names - rules_names)
    if unknown:
        raise DriverConfigError(f"unknown driver setting(s) {unknown}")
    games = GamesSettings(**{k: v for k, v in keywords.items() if k in games_names})  # type: ignore[arg-type]
    rules = SelfPlayRules(**{k: v for k, v in keywords.items() if k in rules_names})  # type: ignore[arg-type]
    return games, rules
