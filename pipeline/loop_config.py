"""Parameters of the whole loop (the ``run`` section of ``params.yaml``)."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

from pipeline.config_errors import ConfigError, check_at_least, require, require_one_of

MODES = ("sync", "async")


@dataclass(frozen=True)
class RunConfig:
    """The loop: self-play -> training -> gating, in generations or all at once."""

    mode: str = "sync"
    """``sync``: generation after generation (self-play, then training, then the gate;
    ``actors/loop.py``); ``async``: a self-play pool, a trainer and a gatekeeper run at the same
    time (``actors/async_loop.py``)."""
    generations: int = 10
    """sync: generations to play; async: candidates the trainer exports (and the gatekeeper
    gates) before the run ends.  A rerun continues up to this count.  0: no count, the run ends
    when ``hours`` is spent (which must then be > 0)."""
    hours: float = 0.0
    """wall-clock budget of the whole loop in hours, across resumes (``zerochess run --hours``;
    :mod:`pipeline.loop.budget`); 0: none. With ``generations`` too, whichever comes first ends
    the run: the sync loop finishes the generation in progress, the async loop stops feeding its
    roles and drains.  A finished run resumed with a larger budget goes on."""
    games_per_generation: int = 128
    """sync: self-play games per generation; async: games the pool plays before the trainer
    starts (the first window)."""
    model_name: str = "zerochess"
    """MLflow registered model the promoted nets are versions of (the latest promoted carries the
    alias ``champion``)."""
    shards: str = ""
    """where the self-play shards go: a folder or a pyarrow filesystem URI
    (``s3://bucket/run/shards``, ``gs://...``, ``file:///...``); empty: ``OUT/shards``.  The
    async loop needs a folder every role can read (shared storage on a cluster)."""
    candidate_every_steps: int = 200
    """async: optimizer steps between two candidates the trainer exports for gating."""
    train_samples_per_position: float = 4.0
    """async: the trainer's ratio control (KataGo): it trains at most this many samples (steps x
    batch size) per training position self-play has produced, and waits when it is ahead; when
    self-play produces faster than the trainer consumes, the status and the trainer's metrics say
    so."""
    trainer_cpus: float = 1.0
    """async: Ray ``num_cpus`` of the trainer actor."""
    trainer_gpus: float = 0.0
    """async: Ray ``num_gpus`` of the trainer actor (at most 1: the async trainer trains on one
    device, no DDP)."""
    trainer_resource: str = ""
    """async: a custom Ray resource the trainer actor needs one unit of (``trainer`` on a cluster
    whose training node declares it); empty: none."""
    selfplay_resource: str = ""
    """async: a custom Ray resource each self-play actor needs one unit of (``selfplay`` on the
    self-play nodes); empty: none."""
    gate_cpus: float = 0.0
    """async: Ray ``num_cpus`` of the gatekeeper actor (it only coordinates: its match actors
    take ``gating``'s resources)."""
    gate_resource: str = ""
    """async: a custom Ray resource of the gatekeeper actor; empty: none."""
    gates_in_flight: int = 1
    """async: candidates gated at the same time (a newer candidate waits while this many are
    being gated)."""
    role_max_restarts: int = 3
    """async: times the trainer or the gatekeeper is started again after its process or node died
    (the trainer resumes from its checkpoint, the gatekeeper gates the candidate again)."""
    retain_positions: int = 0
    """shard retention for long runs (both modes): once this many training positions lie in newer
    shards, an older shard is removed (``OUT/retention.jsonl`` lists it, so a resumed run does
    not play it again); never a shard not yet validated, one in a replay window still in use, or
    one among the newest ``retain_positions`` training positions.  0 keeps every shard. Must be 0
    or at least ``train.window_positions``, and 0 with ``train.window_growth`` > 0
    (:func:`check_retention`)."""

    def __post_init__(self) -> None:
        require_one_of("run.mode", self.mode, MODES)
        check_at_least("run", self, ("games_per_generation", "candidate_every_steps", "gates_in_flight"), 1)
        check_at_least("run", self, ("generations", "hours", "trainer_cpus", "trainer_gpus", "gate_cpus",
                                     "role_max_restarts", "retain_positions"), 0)  # fmt: skip
        require("run.hours", self.hours, math.isfinite(self.hours), "a finite number")
        if self.generations == 0 and self.hours == 0:
            raise ConfigError("run.generations is 0 (no count) and run.hours is 0 (no time budget): "
                              "the run would never end; set one of them")  # fmt: skip
        require("run.train_samples_per_position", self.train_samples_per_position,
                self.train_samples_per_position > 0, "> 0")  # fmt: skip
        if not self.model_name:
            raise ConfigError("run.model_name must not be empty")
        if self.mode == "async" and self.trainer_gpus > 1:
            raise ConfigError(
                f"run.trainer_gpus must be <= 1 with run.mode async (its trainer trains on one device, "
                f"no DDP), got {self.trainer_gpus!r}; for DDP over several GPUs use run.mode sync"
            )


    @property
    def generation_limit(self) -> int:
        """``generations``, or no limit (a count no run reaches) when it is 0
        and ``hours`` bounds the run (a copy that bypassed validation with
        both 0, as ``experiments/soak.py``'s stop does, ends at once, as before)."""
        return self.generations or (sys.maxsize if self.hours > 0 else 0)


def check_training_devices(run: RunConfig, devices: int) -> None:
    """The async trainer trains on one device: ``train.devices`` (``devices``)
    above 1, which asks the synchronous loop's trainer for DDP, is rejected
    with ``run.mode: async`` rather than silently ignored (0, "all present",
    is one device there: the GPU Ray gives the trainer actor)."""
    if run.mode == "async" and devices > 1:
        raise ConfigError(
            f"train.devices must be 0 or 1 with run.mode async (its trainer trains on one device, "
            f"no DDP), got {devices!r}; for DDP over several GPUs use run.mode sync"
        )


def check_async_measure(run: RunConfig, measure: str) -> None:
    """The learning measure (``gating.measure``) is played by the synchronous
    loop after each generation; the async loop has no generations to hang it
    on, so asking for it there is an error rather than silently nothing."""
    if run.mode == "async" and measure != "none":
        raise ConfigError(
            f"gating.measure must be none with run.mode async (the measure runs after each generation "
            f"of the sync loop), got {measure!r}; use run.mode sync, or experiments/learning.py on the run's nets"
        )


def check_retention(run: RunConfig, window_positions: int, window_growth: float) -> None:
    """Shard retention must never reach into a replay window: a positive
    ``run.retain_positions`` below ``train.window_positions`` is refused (a
    window built from the newest shards could then need a removed one), and
    so is any with ``train.window_growth`` > 0 (the growing window's size
    comes from every training position in the shard folder, which removing
    shards would shrink)."""
    retain = run.retain_positions
    if retain == 0:
        return
    if retain < window_positions:
        raise ConfigError(
            f"run.retain_positions ({retain}) must be 0 (keep every shard) or at least "
            f"train.window_positions ({window_positions}): a replay window reads the newest "
            f"{window_positions} training positions, retention would remove shards it needs"
        )
    if window_growth > 0:
        raise ConfigError(
            f"run.retain_positions ({retain}) must be 0 with train.window_growth > 0 (got {window_growth!r}): "
            f"the growing window's size comes from every training position in the shard folder, "
            f"which removing shards would shrink; use a fixed window (train.window_growth: 0)"
        )
