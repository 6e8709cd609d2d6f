"""The ``selfplay`` section of ``params.yaml``: :class:`SelfPlayConfig` and
the curriculum stages it holds (:class:`CurriculumStage`).

The bottom of :mod:`pipeline.selfplay`: every other module of the package may
import it, it imports none of them but :mod:`pipeline.selfplay.endgames`
(an endgame kind is checked when a stage is declared).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from models.driver_settings import SelfPlayRules
from pipeline.config_errors import ConfigError, check_at_least, check_inference, require
from pipeline.selfplay.endgames import parse_kind

__all__ = ["CurriculumStage", "SelfPlayConfig", "check_curriculum", "check_curriculum_measure"]


@dataclass(frozen=True)
class CurriculumStage:
    """One stage of ``selfplay.curriculum``.

    Attributes:
        until_generation: the last generation of the stage; 0 for no end
            (the last stage only).
        kinds: endgame kinds (``KQK``, ``KRK``, ``KBBK``, ``KBNK``, ``KPK``,
            ``KQKR``..., see :mod:`pipeline.selfplay.endgames`) whose starts are generated.
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
        require("selfplay.curriculum until_generation", self.until_generation, self.until_generation >= 0, ">= 0")
        for name in ("full_games", "until_mate_rate"):
            value = getattr(self, name)
            require(f"selfplay.curriculum {name}", value, 0.0 <= value <= 1.0, "in [0, 1]")
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



@dataclass(frozen=True)
class SelfPlayConfig(SelfPlayRules):
    """Self-play games and the workers that play them: the rules of the games
    (the fields of :class:`models.driver_settings.SelfPlayRules`) and how they
    are played."""

    games_per_task: int = 64
    """games one worker task plays side by side (their leaves share each network batch) and
    writes as one shard."""
    overlap_inference: bool = False
    """python backend (``search.backend: python``): split the games into two lanes so the network
    evaluates one lane's leaves while the search works on the other's.  Worth it when the network
    runs on a GPU; on a 2-core CPU the two compete for the cores (see ``bench/selfplay.py``).
    The native backend always has two lanes and overlaps them when this is true or the network
    runs on CUDA; on a CPU it evaluates them in turn (measured: +15-18% evaluations/s,
    network-bound share 0.98-1.00 against 0.84-0.94 with the 2x32 net on 2 cores)."""
    search_threads: int = 1
    """C++ threads of the native search that drive one worker's games (``search.backend:
    native``; the python backend searches on one thread).  1 on a small CPU, where the network
    needs the cores; 4-8 per GPU actor, with enough games in flight (``games_per_task``) to fill
    both the threads and the batches."""
    max_plies: int = 512
    """a game reaching this many plies ends as a draw (termination ``max_plies``)."""
    start_positions: str = ""
    """EPD or FEN file (one position a line, ``#`` starts a comment) to draw start positions
    from; empty for the standard start."""
    random_plies: int = 0
    """uniformly random moves played from the start position before the game is recorded, for
    diversity."""
    seed: int = 0
    """seed for noise, temperature sampling and start positions."""
    device: str = "auto"
    """``auto`` (CUDA when present, else CPU), ``cpu`` or ``cuda``."""
    precision: str = "auto"
    """number format of the network's forward: ``auto`` (bf16 autocast on CUDA; on a CPU, bf16
    only where it computes bf16 natively, AMX-BF16 or AVX512-BF16, and a start-up calibration
    shows it faster; else fp32), ``fp32`` or ``bf16`` (:mod:`models.precision`).  Reduced
    precision differs from CPU to CPU: the tiny preset (DVC, tests) pins ``fp32``.  Also the
    default of ``zerochess uci``/``play``/``analyse --precision``."""
    compile: str = "auto"
    """the inference graph (:mod:`models.inference_net`): ``auto`` (``jit`` on a CPU, ``eager``
    on CUDA), ``eager`` (eager, batch norm folded), ``jit`` (traced and frozen: +5-10% over
    ``eager`` measured with both CPU nets, built in under a second) or ``inductor``
    (``torch.compile``, one graph per batch-size bucket, ~10 s to build each on 2 cores).  A
    failed compilation falls back to ``eager`` with a warning."""
    workers: int = 2
    """self-play actors on Ray."""
    cpus_per_worker: float = 1.0
    """Ray ``num_cpus`` of each actor."""
    gpus_per_worker: float = 0.0
    """Ray ``num_gpus`` of each actor (fractions share a GPU)."""
    threads_per_worker: int = 1
    """``torch.set_num_threads`` inside each actor."""
    max_restarts: int = 3
    """Ray restarts of a dead actor."""
    max_task_retries: int = 3
    """Ray retries of a task whose actor died."""
    adjudicate_material: bool = False
    """not zero-knowledge (a deviation from AlphaZero, which draws every game at its length
    limit): a game reaching ``max_plies`` is won by the side ahead by at least
    ``material_margin`` points (P1 N3 B3 R5 Q9), else drawn; termination ``material``
    (:mod:`pipeline.selfplay.adjudication`)."""
    material_margin: int = 3
    """points ahead that win a material adjudication."""
    adjudicate_stockfish: bool = False
    """not zero-knowledge: a game reaching ``max_plies`` is scored by a short Stockfish search of
    its final position: a win beyond ``stockfish_adjudication_cp`` (or a mate score), else a
    draw; termination ``stockfish_adjudication``. Stockfish missing is an error before the games
    start."""
    stockfish_adjudication_cp: int = 300
    """centipawns beyond which Stockfish's score wins."""
    stockfish_adjudication_nodes: int = 20000
    """nodes of that Stockfish search."""
    stockfish_path: str = ""
    """Stockfish binary for the adjudication; empty: ``stockfish`` on PATH, else
    ``/usr/games/stockfish``."""
    curriculum: tuple[CurriculumStage, ...] = ()
    """not zero-knowledge: stages of endgame start positions, mixed with full games, by
    generation (:mod:`pipeline.selfplay.curriculum`); empty: every game from ``start_positions``."""

    key_prefix: ClassVar[str] = "selfplay."

    def __post_init__(self) -> None:
        super().__post_init__()  # the rules' fields: checked once, in models.driver_settings
        check_at_least("selfplay", self, ("games_per_task", "max_plies", "workers", "threads_per_worker",
                                          "search_threads", "material_margin", "stockfish_adjudication_nodes"),
                       1)  # fmt: skip
        check_at_least("selfplay", self, ("random_plies", "cpus_per_worker", "gpus_per_worker", "max_restarts",
                                          "max_task_retries"), 0)  # fmt: skip
        require("selfplay.device", self.device, self.device in ("auto", "cpu", "cuda"), "auto, cpu or cuda")
        check_inference("selfplay", self.precision, self.compile)
        require("selfplay.stockfish_adjudication_cp", self.stockfish_adjudication_cp,
                self.stockfish_adjudication_cp >= 0, ">= 0")  # fmt: skip
        both = self.adjudicate_material and self.adjudicate_stockfish
        require("selfplay.adjudicate_material", True, not both, "false when selfplay.adjudicate_stockfish is on")
        check_curriculum(self.curriculum)

    @property
    def resign_enabled(self) -> bool:
        return self.resign_threshold > -1.0

    @property
    def draw_adjudication_enabled(self) -> bool:
        return self.draw_adjudication_plies > 0
