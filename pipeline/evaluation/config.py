"""Evaluation and gating parameters (the ``gating`` section of ``params.yaml``)."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.config_errors import (
    ConfigError,
    check_at_least,
    check_each,
    check_inference,
    require,
    require_one_of,
)
from pipeline.resources import DATA_DIR

MEASURES = ("none", "mate_rate", "vs_gen0")
DEFAULT_BOOK = str(DATA_DIR / "openings.epd")


@dataclass(frozen=True)
class GatingConfig:
    """Matches between players, and the promotion decision."""

    simulations: int = 100
    """search simulations per move of a network player."""
    movetime_s: float = 0.0
    """seconds per move for every player instead (0: use nodes)."""
    max_plies: int = 400
    """a game this long is a draw (termination ``max_plies``)."""
    openings: str = ""
    """EPD/FEN book the games start from (a pair per opening, colours swapped); empty for the
    project's ``data/openings.epd``."""
    max_games: int = 200
    """games of the candidate-vs-best match (SPRT usually decides earlier)."""
    sprt_elo0: float = 0.0
    """SPRT H0: the candidate is at most this much stronger."""
    sprt_elo1: float = 30.0
    """SPRT H1: the candidate is at least this much stronger."""
    sprt_alpha: float = 0.05
    """false-promotion probability."""
    sprt_beta: float = 0.05
    """false-rejection probability."""
    always_promote: bool = False
    """AlphaZero style: promote every candidate, the match is only measured and logged."""
    stockfish_path: str = ""
    """Stockfish binary; empty finds ``stockfish`` on PATH or Debian's ``/usr/games/stockfish``."""
    ladder: tuple[str, ...] = ("skill=0:depth=1", "skill=3:depth=3", "skill=8:depth=6")
    """Stockfish levels the candidate also plays, as player specs without the kind
    (``skill=0:nodes=100``); empty skips the ladder."""
    ladder_games: int = 20
    """games against each ladder level."""
    precision: str = "auto"
    """number format of the network players' forward (``auto``, ``fp32`` or ``bf16``; see
    ``selfplay.precision``)."""
    compile: str = "auto"
    """their inference graph (``auto``, ``eager``, ``jit`` or ``inductor``; see
    ``selfplay.compile``)."""
    workers: int = 2
    """Ray actors playing games in parallel."""
    cpus_per_worker: float = 1.0
    """Ray ``num_cpus`` of each match actor."""
    gpus_per_worker: float = 0.0
    """Ray ``num_gpus`` of each match actor (fractions share a GPU: the cluster preset gates on
    GPU slices)."""
    engine_timeout_s: float = 10.0
    """seconds past its move limit before an engine is taken as frozen and restarted."""
    measure: str = "none"
    """the loop's learning measure, played after each generation's training with its network at
    ``simulations`` (and once for generation 0): ``none``; ``mate_rate``: the network plays the
    side to move of each held-out start against a Stockfish defence (``measure_defence``) and
    must mate within ``measure_max_plies`` plies (rate with a Wilson 95% interval; for endgame
    starts); ``vs_gen0``: score against generation 0 and against the random mover, colour-swapped
    pairs from the held-out starts (:mod:`pipeline.evaluation.measure`)."""
    measure_openings: str = ""
    """EPD/FEN file of the held-out starts of the measure; empty: the gating book (``openings``)."""
    measure_games: int = 24
    """mate_rate: starts played (the first of the file); vs_gen0: games against each opponent
    (pairs: even)."""
    measure_max_plies: int = 100
    """plies a measure game may last (a mate must come before); replaces ``max_plies`` for the
    measure."""
    measure_defence: str = "depth=10"
    """mate_rate: the Stockfish defending, as a player spec without the kind (``depth=10``)."""
    rate: bool = False
    """rate each promoted network on Stockfish's ``UCI_Elo`` scale as ``zerochess rate`` does
    (``ladder_games`` games a level, played in the gate's process; the first rating on a machine
    also measures the levels below ``UCI_Elo``'s minimum, once): the ``rating`` of ``gate.json``."""

    def __post_init__(self) -> None:
        check_at_least("gating", self, ("simulations", "max_plies", "max_games", "ladder_games", "workers",
                                        "measure_games", "measure_max_plies"), 1)  # fmt: skip
        check_at_least("gating", self, ("cpus_per_worker", "gpus_per_worker"), 0)
        if self.movetime_s < 0 or self.engine_timeout_s <= 0:
            raise ConfigError(
                f"gating.movetime_s must be >= 0 and gating.engine_timeout_s > 0, got "
                f"{self.movetime_s!r}, {self.engine_timeout_s!r}"
            )
        if not self.sprt_elo1 > self.sprt_elo0:
            raise ConfigError(f"gating.sprt_elo1 ({self.sprt_elo1}) must be > gating.sprt_elo0 ({self.sprt_elo0})")
        check_each("gating", self, ("sprt_alpha", "sprt_beta"), lambda value: 0 < value < 0.5, "in (0, 0.5)")
        require("gating.max_games", self.max_games, not self.max_games % 2, "even (games come in pairs)")
        self._check_measure()
        check_inference("gating", self.precision, self.compile)

    def _check_measure(self) -> None:
        require_one_of("gating.measure", self.measure, MEASURES)
        require("gating.measure_games", self.measure_games, self.measure != "vs_gen0" or not self.measure_games % 2,
                "even for vs_gen0 (games come in pairs)")  # fmt: skip
        if self.measure == "mate_rate" and not self.measure_defence.strip():
            raise ConfigError("gating.measure_defence must name the Stockfish defence for mate_rate "
                              "(e.g. depth=10), got ''")  # fmt: skip

    @property
    def book(self) -> str:
        return self.openings or DEFAULT_BOOK

    @property
    def measure_book(self) -> str:
        return self.measure_openings or self.book
