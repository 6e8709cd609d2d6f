"""The async loop's records: a self-play task, the roles' busy time, and the
ledger lines it writes (``candidate`` in ``ledger.jsonl``, a task's line in
``games.jsonl``; :meth:`as_entry` gives each line's JSON object, keys in the
order the run folders hold them)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Task:
    """A self-play task: its id (shard name), seed, games and net version."""

    name: str
    seed: int
    games: int
    version: int
    attempts: int = 0


@dataclass
class Busy:
    """Time each role spent working (for the busy fractions)."""

    selfplay_s: float = 0.0
    trainer_s: float = 0.0
    gate_s: float = 0.0
    started: float = field(default_factory=time.perf_counter)

    def fractions(self, pool_size: int) -> dict[str, float]:
        wall = max(time.perf_counter() - self.started, 1e-9)
        return {"selfplay": self.selfplay_s / (wall * max(pool_size, 1)), "trainer": self.trainer_s / wall,
                "gatekeeper": self.gate_s / wall, "wall_s": wall}  # fmt: skip


@dataclass(frozen=True)
class CandidateEntry:
    """A candidate the trainer exported: its number (``generation``), net file,
    trainer step, the positions self-play had produced (all, and those with a
    training target) and the trainer's node."""

    generation: int
    net: str
    step: int
    positions: int
    training_positions: int
    node: str

    def as_entry(self) -> dict[str, Any]:
        return {"generation": self.generation, "stage": "candidate", "net": self.net, "step": self.step,
                "positions": self.positions, "training_positions": self.training_positions, "node": self.node}  # fmt: skip

    @classmethod
    def from_entry(cls, entry: dict[str, Any]) -> CandidateEntry:
        return cls(entry["generation"], entry["net"], entry["step"], entry.get("positions", 0),
                   entry.get("training_positions", 0), entry.get("node", ""))  # fmt: skip


@dataclass(frozen=True)
class TaskRecord:
    """A finished async self-play task in ``games.jsonl``: the net version that
    played it, its name, game ids, positions (all, with a training target),
    node, the time it was recorded and its shard's digest
    (:class:`pipeline.shards.store.ShardDigest` as a dict; None: its writer gave none)."""

    version: int
    task: str
    games: list[str]
    positions: int
    training_positions: int
    node: str = ""
    time: float = field(default_factory=lambda: round(time.time(), 3))
    digest: dict[str, Any] | None = None

    def as_entry(self) -> dict[str, Any]:
        digest = {"digest": self.digest} if self.digest else {}
        return {"generation": self.version, "stage": "games", "task": self.task, "games": sorted(self.games),
                "positions": self.positions, "training_positions": self.training_positions, "node": self.node,
                "time": self.time, **digest}  # fmt: skip


# -- the synchronous loop's ledger lines --------------------------------------


@dataclass(frozen=True)
class SelfPlayEntry:
    """A generation's finished self-play: the summed figures of its tasks."""

    generation: int
    figures: dict[str, float]

    def as_entry(self) -> dict[str, Any]:
        return {"generation": self.generation, "stage": "selfplay", **self.figures}

    @classmethod
    def from_entry(cls, entry: dict[str, Any]) -> SelfPlayEntry:
        return cls(entry["generation"], {k: v for k, v in entry.items() if k not in ("generation", "stage")})


@dataclass(frozen=True)
class TrainEntry:
    """A generation's finished training: its net, steps, the checkpoint step it
    resumed from (None: it started afresh) and its final metrics."""

    generation: int
    net: str
    steps: int
    resumed_from_step: int | None
    metrics: dict[str, float]

    def losses(self) -> dict[str, float]:
        return {k: v for k, v in self.metrics.items() if k.startswith("loss/")}

    def as_entry(self) -> dict[str, Any]:
        return {"generation": self.generation, "stage": "train", "net": self.net, "steps": self.steps,
                "resumed_from_step": self.resumed_from_step, "metrics": self.metrics}  # fmt: skip

    @classmethod
    def from_entry(cls, entry: dict[str, Any]) -> TrainEntry:
        return cls(entry["generation"], entry["net"], entry["steps"], entry.get("resumed_from_step"), entry["metrics"])


@dataclass(frozen=True)
class MeasureEntry:
    """A generation's learning measure (``gating.measure``): its net and figures."""

    generation: int
    net: str
    figures: dict[str, float]

    def as_entry(self) -> dict[str, Any]:
        return {"generation": self.generation, "stage": "measure", "net": self.net, "figures": self.figures}


@dataclass
class GenerationSummary:
    """A finished generation's figures (the ledger's ``generation`` line,
    ``metrics.json``, the status line): self-play, training, the learning
    measure (empty when off) and the gate's."""

    generation: int
    selfplay: dict[str, float] = field(default_factory=dict)
    train: dict[str, float] = field(default_factory=dict)
    measure: dict[str, float] = field(default_factory=dict)
    gate: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        measure = {"measure": self.measure} if self.measure else {}
        return {"generation": self.generation, "selfplay": self.selfplay, "train": self.train, **measure,
                "gate": self.gate}  # fmt: skip
