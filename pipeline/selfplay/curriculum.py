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
Stockfish: see :mod:`pipeline.selfplay.endgames`), from its ``start_positions`` file
(e.g. made by ``zerochess endgames --max-mate 6``), or both; a share
``full_games`` starts from the regular starts instead (``selfplay.start_positions``,
else the standard position).  After the last stage, every game uses the
regular starts.  A stage with ``until_mate_rate`` ends earlier, after the
first of its generations whose network reached that mate rate in the loop's
learning measure (``gating.measure: mate_rate``, synchronous loop); the
async loop's pool, which has network versions rather than generations,
advances by version only.

The stages are declared (and checked) with the rest of the ``selfplay``
section, :class:`~pipeline.selfplay.config.CurriculumStage`; this module
picks the stage in force and draws its starts.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import chess

from pipeline.selfplay.config import CurriculumStage, SelfPlayConfig
from pipeline.selfplay.endgames import endgame_fens
from pipeline.selfplay.starts import load_start_positions

__all__ = ["GENERATED_STARTS", "stage_for", "stage_index", "start_fens_for"]

GENERATED_STARTS = 2000
"""Endgame starts a stage with ``kinds`` generates per generation (a fraction of a second)."""


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
