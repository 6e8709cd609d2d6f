"""A curriculum of self-play start positions: easy endgames first, full games later.

``selfplay.curriculum`` is a list of stages; each self-play generation plays
from the starts of the stage in force (not zero-knowledge: a deviation from
AlphaZero, which always starts from the initial position)::

    selfplay:
      curriculum:
        - {until_generation: 4, kinds: [KQK, KRK], until_mate_rate: 0.8}
        - {until_generation: 10, kinds: [KQK, KRK, KBBK, KBNK, KPK, KQKR], full_games: 0.25}
        - {until_generation: 0, kinds: [KQK, KRK, KBBK, KBNK, KPK, KQKR], full_games: 0.5}

A stage is in force from the generation after the previous stage's
``until_generation`` through its own (0: with no end, last stage only).  Its
games start from endgame positions of its ``kinds`` (generated afresh for
each generation, seeded by ``selfplay.seed`` and the generation, without
Stockfish: see :mod:`pipeline.endgames`), from its ``start_positions`` file
(e.g. made by ``zerochess endgames --max-mate 6``), or both; a share
``full_games`` starts from the regular starts instead (``selfplay.start_positions``,
else the standard position).  After the last stage, every game uses the
regular starts.  A stage with ``until_mate_rate`` ends earlier, after the
first of its generations whose network reached that mate rate in the loop's
learning measure (``gating.measure: mate_rate``, synchronous loop); the
async loop's pool, which has network versions rather than generations,
advances by version only.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import chess

from pipeline.config_errors import ConfigError
from pipeline.endgames import endgame_fens, parse_kind

if TYPE_CHECKING:
    from pipeline.config import SelfPlayConfig

__all__ = [
    "CurriculumStage",
    "GENERATED_STARTS",
    "check_curriculum",
    "check_curriculum_measure",
    "stage_for",
    "stage_index",
    "start_fens_for",
]

GENERATED_STARTS = 2000
"""Endgame starts a stage with ``kinds`` generates per generation (a fraction of a second)."""


@dataclass(frozen=True)
class CurriculumStage:
    """One stage of ``selfplay.curriculum``.

    Attributes:
        until_generation: the last generation of the stage; 0 for no end
            (the last stage only).
        kinds: endgame kinds (``KQK``, ``KRK``, ``KBBK``, ``KBNK``, ``KPK``,
            ``KQKR``..., see :mod:`pipeline.endgames`) whose starts are generated.
        start_positions: an EPD/FEN file of further starts (empty: none).
        full_games: share of the stage's games that start from the regular
            starts (``selfplay.start_positions``, else the standard position).
        until_mate_rate: when > 0, the stage also ends after the first of its
            generations whose network's measured mate rate
            (``gating.measure: mate_rate``) reaches this; 0: by generation only.
    """

    until_generation: int = 0
    kinds: tuple[str, ...] = ()
    start_positions: str = ""
    full_games: float = 0.0
    until_mate_rate: float = 0.0

    def __post_init__(self) -> None:
        if self.until_generation < 0:
            raise ConfigError(f"selfplay.curriculum until_generation must be >= 0, got {self.until_generation}")
        if not 0.0 <= self.full_games <= 1.0:
            raise ConfigError(f"selfplay.curriculum full_games must be in [0, 1], got {self.full_games!r}")
        if not 0.0 <= self.until_mate_rate <= 1.0:
            raise ConfigError(f"selfplay.curriculum until_mate_rate must be in [0, 1], got {self.until_mate_rate!r}")
        for kind in self.kinds:
            parse_kind(kind)
        if self.full_games < 1.0 and not (self.kinds or self.start_positions):
            raise ConfigError("a selfplay.curriculum stage needs kinds or start_positions (or full_games: 1)")


def check_curriculum(stages: Sequence[CurriculumStage]) -> None:
    """Stages end in increasing generations; only the last may have no end (0)."""
    previous = 0
    for index, stage in enumerate(stages):
        last = index == len(stages) - 1
        if stage.until_generation == 0 and not last:
            raise ConfigError(f"selfplay.curriculum[{index}]: only the last stage may have until_generation 0")
        if stage.until_generation and stage.until_generation <= previous:
            raise ConfigError(
                f"selfplay.curriculum[{index}].until_generation must be > {previous} (stages in order), "
                f"got {stage.until_generation}"
            )
        previous = stage.until_generation


def check_curriculum_measure(stages: Sequence[CurriculumStage], measure: str) -> None:
    """A stage that ends on a mate rate needs the loop to measure one."""
    for index, stage in enumerate(stages):
        if stage.until_mate_rate > 0 and measure != "mate_rate":
            raise ConfigError(
                f"selfplay.curriculum[{index}].until_mate_rate ({stage.until_mate_rate}) needs "
                f"gating.measure: mate_rate, got {measure!r}"
            )


def stage_index(
    stages: Sequence[CurriculumStage], generation: int, mate_rates: Mapping[int, float] | None = None
) -> int | None:
    """Index of the stage in force at ``generation`` (None: past the
    curriculum, or none).  ``mate_rates`` holds the measured mate rate of
    earlier generations' networks: a stage with ``until_mate_rate`` ends after
    the first of its generations that reached it, before its
    ``until_generation``; the next stage starts right after."""
    rates = mate_rates or {}
    start = 0  # the last generation of the previous stage
    for index, stage in enumerate(stages):
        end = stage.until_generation  # 0: no end
        if stage.until_mate_rate > 0:
            reached = [g for g in sorted(rates) if start < g < generation and (end == 0 or g <= end)
                       and rates[g] >= stage.until_mate_rate]  # fmt: skip
            end = reached[0] if reached else end
        if end == 0 or generation <= end:
            return index
        start = end
    return None


def stage_for(
    stages: Sequence[CurriculumStage], generation: int, mate_rates: Mapping[int, float] | None = None
) -> CurriculumStage | None:
    """The stage in force at ``generation`` (None: past the curriculum, or none)."""
    index = stage_index(stages, generation, mate_rates)
    return None if index is None else stages[index]


def start_fens_for(
    selfplay: SelfPlayConfig, generation: int, mate_rates: Mapping[int, float] | None = None
) -> list[str] | None:
    """The start positions of ``generation``'s self-play (None: the standard start).

    Without a curriculum stage in force: ``selfplay.start_positions`` (as
    before).  With one: its endgame starts, plus the regular starts repeated
    so that they make up its ``full_games`` share; the list is shuffled
    (seeded) and the worker draws from it uniformly.
    """
    from pipeline.selfplay import load_start_positions  # pipeline.selfplay imports pipeline.config

    regular = load_start_positions(selfplay.start_positions) if selfplay.start_positions else None
    stage = stage_for(selfplay.curriculum, generation, mate_rates)
    if stage is None or stage.full_games >= 1.0:
        return regular
    seed = selfplay.seed * 1_000_003 + generation
    fens: list[str] = []
    if stage.start_positions:
        fens += load_start_positions(stage.start_positions)
    if stage.kinds:
        fens += endgame_fens(stage.kinds, GENERATED_STARTS, seed)
    if stage.full_games > 0.0:
        base = regular or [chess.STARTING_FEN]
        copies = max(1, round(stage.full_games / (1.0 - stage.full_games) * len(fens)))
        fens += [base[i % len(base)] for i in range(copies)]
    random.Random(seed).shuffle(fens)
    return fens
