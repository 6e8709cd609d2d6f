"""The three roles of the asynchronous loop (``run.mode: async``), each a class
that :mod:`actors.async_loop` wraps with ``ray.remote``:

* :class:`PoolActor` — one self-play actor of the pool.  Every task names the
  net version it must be played with and carries that net's weights as an
  object-store reference (``ray.put`` once per promotion: the bytes reach a
  node once, every actor there maps them); the actor switches nets between
  tasks, so a promotion reaches the pool within one task.  It plays through
  :class:`actors.selfplay.SelfPlayActor` (the same worker, shards, names and
  checks as the synchronous loop) and tags every position with the version
  (the shard's ``generation`` column).  It answers with the shard's digest
  (:class:`pipeline.shards.store.ShardDigest`): the driver verifies the file
  against it instead of reading the shard back.
* :class:`TrainerActor` — trains continuously on the replay window
  (:class:`pipeline.training.continuous.ContinuousTrainer`, which exports a
  candidate net every ``run.candidate_every_steps`` steps and resumes from its
  state after a SIGKILL or a lost node).
* :class:`GatekeeperActor` — gates a candidate with
  :func:`pipeline.evaluation.gating.run_gate` (SPRT against the best, then the
  Stockfish ladder, on the match actors of :mod:`actors.evaluation`).

The driver (:mod:`actors.async_loop`) owns the bookkeeping: it alone writes the
ledgers and MLflow, so the roles stay small and restartable.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import asdict, dataclass
from typing import Any

from pipeline.config import Config, from_dict
from pipeline.evaluation.gating import GateDecision


@dataclass(frozen=True)
class Placement:
    """Where a role's actor runs (its answer once it runs)."""

    node: str
    pid: int


@dataclass(frozen=True)
class GateResult:
    """A gatekeeper's verdict on candidate ``index``, the time it took and where."""

    index: int
    decision: GateDecision
    busy_s: float
    node: str


def node_id() -> str:
    """This process's Ray node id (its host name outside Ray)."""
    import ray

    if not ray.is_initialized():  # get_runtime_context() would start a local Ray
        return socket.gethostname()
    return ray.get_runtime_context().get_node_id()


class PoolActor:
    """A self-play actor of the pool (wrapped by ``ray.remote``).

    Args:
        config: the config as plain data (``pipeline.config.to_dict``).
        out: the shard folder (or URI).
    """

    def __init__(self, config: dict[str, Any], out: str) -> None:
        self.config = config
        self.out = out
        self.version: int | None = None
        self.inner: Any = None
        self.busy_s = 0.0

    def ready(self) -> Placement:
        """Answers once the actor runs: where it runs."""
        return Placement(node_id(), os.getpid())

    def play(self, task: str, seed: int, games: int, version: int, weights: list[Any]) -> dict[str, Any]:
        """Play task ``task`` with net ``version`` (``weights[0]``: an object
        ref of its ``net_state``, boxed so that Ray does not fetch it for a
        task whose version the actor already has); returns the task summary."""
        import ray

        from actors.selfplay import SelfPlayActor

        started = time.perf_counter()
        if version != self.version or self.inner is None:
            state = ray.get(weights[0])
            self.inner = SelfPlayActor(self.config, state, self.out, generation=version)
            self.version = version
        summary = self.inner.play_task(task, seed, games)
        digest = self._digest(str(summary["path"]))
        seconds = time.perf_counter() - started
        self.busy_s += seconds
        return {**summary, "version": version, "node": node_id(), "busy_s": seconds, **digest}

    def _digest(self, path: str) -> dict[str, Any]:
        """``{"digest": ...}`` of the shard just written (its rows were validated
        as it was written; with ``train.check_legality`` its moves are checked
        here too), for the driver to verify; nothing for a shard on a URI
        (the driver reads those back)."""
        from pipeline.shards import read_shard
        from pipeline.shards.store import shard_digest

        if "://" in path:
            return {}
        if self.config.get("train", {}).get("check_legality"):
            read_shard(path, check_legality=True)  # ShardError: the task fails and is played again
        return {"digest": shard_digest(path).as_dict()}


class TrainerActor:
    """The continuous trainer as a Ray actor (wrapped by ``ray.remote``): a
    :class:`pipeline.training.continuous.ContinuousTrainer` whose reports carry
    the node it runs on and cross Ray as plain data.

    Args:
        config: the config as plain data.
        shards: the shard folder the window is built from.
        out: the trainer's folder (``OUT/trainer``).
        init_net: the net training starts from when there is no state yet.
    """

    def __init__(self, config: dict[str, Any], shards: str, out: str, init_net: str) -> None:
        from pipeline.training.continuous import ContinuousTrainer

        self.trainer = ContinuousTrainer(from_dict(Config, config, source="trainer config"), shards, out, init_net)

    @property
    def resumed_from(self) -> int | None:
        """The step the trainer resumed from (None: a new trainer)."""
        return self.trainer.resumed_from

    @property
    def candidates(self) -> list[dict[str, Any]]:
        """Every candidate exported so far, as plain data."""
        return [asdict(candidate) for candidate in self.trainer.candidates]

    def run(self, until_step: int, every: int) -> dict[str, Any]:
        """:meth:`ContinuousTrainer.run` (``TrainerReport.as_dict``, with this node)."""
        report = self.trainer.run(until_step, every)
        report.node = node_id()
        return report.as_dict()


class GatekeeperActor:
    """Gates candidates (wrapped by ``ray.remote``; ``run_gate`` starts its match actors)."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = from_dict(Config, config, source="gatekeeper config")

    def ready(self) -> Placement:
        """Answers once the actor runs: where it runs."""
        return Placement(node_id(), os.getpid())

    def gate(self, index: int, candidate: str, best: str, out: str) -> GateResult:
        """Gate ``candidate`` against ``best``, its games and ``gate.json`` under ``out``."""
        from actors.evaluation import run_tournament
        from pipeline.evaluation.gating import run_gate

        started = time.perf_counter()
        decision = run_gate(self.config, candidate, best, out, play=run_tournament)
        return GateResult(index, decision, time.perf_counter() - started, node_id())
