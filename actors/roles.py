"""The three roles of the asynchronous loop (``run.mode: async``), each a class
that :mod:`actors.async_loop` wraps with ``ray.remote``:

* :class:`PoolActor` — one self-play actor of the pool.  Every task names the
  net version it must be played with and carries that net's weights as an
  object-store reference (``ray.put`` once per promotion: the bytes reach a
  node once, every actor there maps them); the actor switches nets between
  tasks, so a promotion reaches the pool within one task.  It plays through
  :class:`actors.selfplay.SelfPlayActor` (the same worker, shards, names and
  checks as the synchronous loop) and tags every position with the version
  (the shard's ``generation`` column).
* :class:`TrainerActor` — trains continuously on the replay window with the
  project's training code (:class:`pipeline.training.module.AlphaZeroModule`'s
  loss, its optimizer and schedule, :func:`pipeline.training.window.build_window`
  and :func:`pipeline.training.data.batch_stream`).  Training runs in segments
  of ``run.candidate_every_steps`` steps; each segment reads a window rebuilt
  from the shard folder at its start (so it picks up the shards that landed),
  and ends with a candidate net exported for the gatekeeper.  Its state
  (weights, optimizer, schedule, step, window, candidates) is checkpointed
  atomically every ``train.checkpoint_every`` steps and at every candidate; a
  new actor (after a SIGKILL or a lost node) resumes from it.  It trains on
  ``train.device`` with ``train.precision``'s autocast (bf16/16-mixed on CUDA),
  on one device (no DDP: ``train.devices`` above 1 is the synchronous loop's,
  rejected with ``run.mode: async`` when the config loads).
* :class:`GatekeeperActor` — gates a candidate with :func:`actors.gate.run_gate`
  (SPRT against the best, then the Stockfish ladder, on match actors).

The driver (:mod:`actors.async_loop`) owns the bookkeeping: it alone writes the
ledgers and MLflow, so the roles stay small and restartable.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import time
from pathlib import Path
from typing import Any

import torch

log = logging.getLogger(__name__)

TRAINER_STATE = "state.pt"


def _node() -> str:
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

    def ready(self) -> dict[str, Any]:
        """Answers once the actor runs: where it runs."""
        return {"node": _node(), "pid": os.getpid()}

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
        seconds = time.perf_counter() - started
        self.busy_s += seconds
        return {**summary, "version": version, "node": _node(), "busy_s": seconds}


class TrainerActor:
    """The continuous trainer (wrapped by ``ray.remote``); see the module docstring.

    Args:
        config: the config as plain data.
        shards: the shard folder the window is built from.
        out: the trainer's folder (``OUT/trainer``): ``state.pt`` and the
            exported ``candidateNNNN.pt``.
        init_net: the net training starts from when there is no state yet.
    """

    def __init__(self, config: dict[str, Any], shards: str, out: str, init_net: str) -> None:
        from pipeline.config import Config, from_dict
        from pipeline.training.module import AlphaZeroModule
        from pipeline.training.optim import build_optimizer, build_scheduler

        self.config = from_dict(Config, config, source="trainer config")
        train = self.config.train
        if train.threads:
            torch.set_num_threads(train.threads)
        torch.manual_seed(train.seed)
        self.shards = shards
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        from models.net import pick_device

        self.device = pick_device(train.device)
        self.module = AlphaZeroModule(self.config.net, train)
        self.module.net.to(self.device)  # before the optimizer: its state lives beside the weights
        self.optimizer = build_optimizer(self.module.net, train)
        fp16 = train.precision == "16-mixed" and self.device.type == "cuda"
        self.scaler = torch.amp.GradScaler("cuda", enabled=fp16)  # fp16 gradients need scaling; bf16 not
        self.scheduler = build_scheduler(self.optimizer, train)
        self.step = 0
        self.window: dict[str, Any] | None = None  # the window of the current segment
        self.window_start = 0  # the step at which that window's stream started
        self.candidates: list[dict[str, Any]] = []
        self.resumed_from: int | None = None
        self._stream: Any = None
        self._stream_at = -1
        state_path = self.out / TRAINER_STATE
        if state_path.exists():
            self._load(state_path)
            self.resumed_from = self.step
            log.info("trainer resumes from %s at step %d", state_path, self.step)
        else:
            from pipeline.checkpoint import load_weights

            load_weights(self.module.net, init_net)
        self.module.net.train()

    # -- state ----------------------------------------------------------------

    def _load(self, path: Path) -> None:
        from pipeline.training.checkpointing import read_checkpoint

        state = read_checkpoint(path)
        self.module.net.load_state_dict(state["state_dict"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.step = int(state["step"])
        self.window = state["window"]
        self.window_start = int(state["window_start"])
        self.candidates = list(state["candidates"])

    def _save(self) -> None:
        from pipeline.atomic import atomic_write

        state = {
            "state_dict": self.module.net.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "step": self.step,
            "window": self.window,
            "window_start": self.window_start,
            "candidates": self.candidates,
            "net_config": self.module.net.config.to_dict(),
        }
        with atomic_write(self.out / TRAINER_STATE) as handle:
            torch.save(state, handle)

    # -- data -----------------------------------------------------------------

    def _new_window(self) -> None:
        from pipeline.training.window import build_window

        window = build_window(self.shards, self.config.train, self.config.net.policy_encoding)
        self.window = window.to_dict()
        self.window_start = self.step
        self._stream = None

    def _batches(self) -> Any:
        """The batch stream of the current window, positioned at ``self.step``."""
        from pipeline.training.data import StreamSpec, batch_stream
        from pipeline.training.window import Window

        if self._stream is None or self._stream_at != self.step:
            window = Window.from_dict(self.window, "trainer window")
            train = self.config.train
            spec = StreamSpec(window.pieces, train.batch_size, train.shuffle_buffer,
                              train.seed + self.window_start, 0, self.config.net.policy_encoding,
                              train.value_target, train.q_ratio)  # fmt: skip
            self._stream = batch_stream(spec, skip=self.step - self.window_start)
            self._stream_at = self.step
        return self._stream

    # -- training -------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return {"step": self.step, "candidates": self.candidates, "resumed_from": self.resumed_from,
                "node": _node(), "pid": os.getpid()}  # fmt: skip

    def run(self, until_step: int, every: int) -> dict[str, Any]:
        """Train up to ``until_step`` (the ratio control's allowance), stopping
        at the next candidate boundary; export a candidate there.

        Returns the step reached, the mean losses of the steps done, the
        window size, the time spent and every candidate exported so far."""
        started = time.perf_counter()
        boundary = (self.step // every + 1) * every
        target = min(until_step, boundary)
        sums: dict[str, float] = {}
        done = 0
        if self.window is None or (self.step % every == 0 and self.window_start != self.step):
            self._new_window()  # a new segment reads the shards that landed since the last
        while self.step < target:
            try:
                batch = next(self._batches())
            except (ValueError, OSError) as error:  # a shard of the window went bad or away
                log.warning("trainer: the window's data failed (%s): rebuilding the window", error)
                self._new_window()
                batch = next(self._batches())
            terms = self._train_step(batch)
            for key, value in terms.items():
                sums[key] = sums.get(key, 0.0) + value
            done += 1
            self.step += 1
            self._stream_at = self.step
            if self.step % self.config.train.checkpoint_every == 0 and self.step % every:
                self._save()
        exported = None
        if self.step == boundary and not any(c["step"] == self.step for c in self.candidates):
            exported = self._export(len(self.candidates) + 1)
        from pipeline.training.window import Window

        window = Window.from_dict(self.window, "trainer window")
        return {
            "step": self.step,
            "steps": done,
            "losses": {key: value / done for key, value in sums.items()} if done else {},
            "window_positions": window.positions,
            "window_shards": len(window.pieces),
            "busy_s": time.perf_counter() - started,
            "exported": exported,
            "candidates": self.candidates,
            "resumed_from": self.resumed_from,
            "node": _node(),
        }

    def _train_step(self, batch: Any) -> dict[str, float]:
        batch = tuple(tensor.to(self.device, non_blocking=True) for tensor in batch)
        self.optimizer.zero_grad(set_to_none=True)
        precision = self.config.train.precision
        half = {"bf16-mixed": torch.bfloat16, "16-mixed": torch.float16}.get(precision)
        with torch.autocast(self.device.type, dtype=half, enabled=half is not None and self.device.type == "cuda"):
            terms = self.module.losses(batch)
        self.scaler.scale(terms.objective).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.scheduler.step()
        values = {"loss/policy": terms.policy, "loss/value": terms.value, "loss/l2": terms.l2,
                  "loss/total": terms.total}  # fmt: skip
        out = {key: float(value.detach()) for key, value in values.items()}
        return {key: value for key, value in out.items() if math.isfinite(value)}

    def _export(self, index: int) -> dict[str, Any]:
        """Save candidate ``index`` (a net file), then the state that lists it."""
        from pipeline.checkpoint import save_net

        import copy

        path = self.out / f"candidate{index:04d}.pt"
        save_net(copy.deepcopy(self.module.net).cpu().eval(), path)
        candidate = {"index": index, "net": str(path), "step": self.step}
        self.candidates.append(candidate)
        self._save()
        return candidate


class GatekeeperActor:
    """Gates candidates (wrapped by ``ray.remote``; ``run_gate`` starts its match actors)."""

    def __init__(self, config: dict[str, Any]) -> None:
        from pipeline.config import Config, from_dict

        self.config = from_dict(Config, config, source="gatekeeper config")

    def ready(self) -> dict[str, Any]:
        return {"node": _node(), "pid": os.getpid()}

    def gate(self, index: int, candidate: str, best: str, out: str) -> dict[str, Any]:
        from actors.gate import run_gate

        started = time.perf_counter()
        decision = run_gate(self.config, candidate, best, out)
        return {"index": index, **decision.as_dict(), "busy_s": time.perf_counter() - started,
                "node": _node()}  # fmt: skip
