"""The async loop's continuous trainer (``run.mode: async``), without Ray:
:class:`actors.roles.TrainerActor` wraps it.

It trains continuously on the replay window with the project's training code
(:class:`pipeline.training.module.AlphaZeroModule`'s loss, its optimizer and
schedule, :func:`pipeline.training.window.build_window` and
:class:`pipeline.training.moving.MovingStream`).  Training runs in segments of
``run.candidate_every_steps`` steps; each segment reads a window rebuilt from
the shard folder at its start, and ends with a candidate net exported for
the gatekeeper.  Within a segment the trainer looks at the folder every
:data:`WINDOW_REFRESH_S` seconds and, when shards landed, moves its window
onto them (so a shard is trainable seconds after it lands, not a segment
later); a :class:`pipeline.training.window.WindowIndex` kept across builds
reads only the new shards, and the stream keeps its loaded shuffle group and
adds to it only the rows of the shards that landed (a move costs what
landed, not a shuffle buffer); a thread makes the next batches while a
step trains (:class:`pipeline.training.prefetch.Prefetched`).  The window in use is also written to
``OUT/trainer/window.json`` (what the trainer reads now).  Its state (weights,
optimizer, schedule, step, window, candidates) is checkpointed atomically
every ``train.checkpoint_every`` steps and at every candidate; a new trainer
(after a SIGKILL or a lost node) resumes from it.  It trains on
``train.device`` with ``train.precision``'s autocast (bf16/16-mixed on CUDA),
on one device (no DDP: ``train.devices`` above 1 is the synchronous loop's,
rejected with ``run.mode: async`` when the config loads).
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from models.net import pick_device
from pipeline.atomic import atomic_write
from pipeline.checkpoint import load_weights, save_net
from pipeline.config import Config
from pipeline.training.checkpointing import read_checkpoint
from pipeline.training.data import StreamSpec
from pipeline.training.module import AlphaZeroModule
from pipeline.training.moving import MovingStream
from pipeline.training.optim import build_optimizer, build_scheduler
from pipeline.training.prefetch import Prefetched
from pipeline.training.window import Window, WindowIndex, build_window

log = logging.getLogger(__name__)

TRAINER_STATE = "state.pt"
WINDOW_FILE = "window.json"
WINDOW_REFRESH_S = 3.0
"""Seconds between two looks at the shard folder for shards that landed (within a segment)."""
PREFETCH_DEPTH = 2
"""Batches the stream's thread makes ahead of the training step."""


@dataclass(frozen=True)
class Candidate:
    """A net the trainer exported for the gatekeeper: its number, file and step."""

    index: int
    net: str
    step: int


@dataclass
class TrainerReport:
    """What one :meth:`ContinuousTrainer.run` did: the step reached, the steps
    done and their mean losses, the window's size, the time spent, the
    candidate exported (if any) and every candidate so far."""

    step: int
    steps: int
    losses: dict[str, float]
    window_positions: int
    window_shards: int
    busy_s: float
    exported: Candidate | None
    candidates: list[Candidate] = field(default_factory=list)
    resumed_from: int | None = None
    node: str = ""
    window_paths: list[str] = field(default_factory=list)  # the window's shards (retention keeps them)

    def as_dict(self) -> dict[str, Any]:
        """The report as plain data (what crosses Ray)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainerReport:
        exported = data["exported"]
        return cls(**{**data, "exported": Candidate(**exported) if exported else None,
                      "candidates": [Candidate(**c) for c in data["candidates"]]})  # fmt: skip


class ContinuousTrainer:
    """The continuous trainer; see the module docstring.

    Args:
        config: the run's config.
        shards: the shard folder the window is built from.
        out: the trainer's folder (``OUT/trainer``): ``state.pt`` and the
            exported ``candidateNNNN.pt``.
        init_net: the net training starts from when there is no state yet.
    """

    def __init__(self, config: Config, shards: str, out: str | Path, init_net: str) -> None:
        self.config = config
        train = self.config.train
        if train.threads:
            torch.set_num_threads(train.threads)
        torch.manual_seed(train.seed)
        self.shards = shards
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.device = pick_device(train.device)
        self.module = AlphaZeroModule(self.config.net, train)
        self.module.to(self.device)  # before the optimizer: its state lives beside the weights (and the average)
        self.optimizer = build_optimizer(self.module.net, train)
        fp16 = train.precision == "16-mixed" and self.device.type == "cuda"
        self.scaler = torch.amp.GradScaler("cuda", enabled=fp16)  # fp16 gradients need scaling; bf16 not
        self.scheduler = build_scheduler(self.optimizer, train)
        self.step = 0
        self.window: dict[str, Any] | None = None  # the window of the current segment
        self.window_start = 0  # the step at which that window's stream started
        self.candidates: list[Candidate] = []
        self.resumed_from: int | None = None
        self.stream: Prefetched | None = None  # the moving stream, its batches made ahead in a thread
        self.stream_state: dict[str, Any] | None = None  # a saved stream to continue (after a resume)
        self.index = WindowIndex(shards)
        self.window_at = 0.0  # when the folder was last looked at (monotonic; 0: never)
        state_path = self.out / TRAINER_STATE
        if state_path.exists():
            self._load(state_path)
            self.resumed_from = self.step
            self.window_at = time.monotonic()  # the saved window first, as the killed trainer read it
            with contextlib.suppress(FileNotFoundError):
                self.index.refresh()  # what is there now; only shards landing from now on move the window
            log.info("trainer resumes from %s at step %d", state_path, self.step)
        else:
            load_weights(self.module.net, init_net)
        self.module.net.train()

    # -- state ----------------------------------------------------------------

    def _load(self, path: Path) -> None:
        state = read_checkpoint(path)
        self.module.net.load_state_dict(state["state_dict"])
        if self.module.average is not None and "average" in state:
            self.module.average.load_state_dict(state["average"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.step = int(state["step"])
        self.window = state["window"]
        self.window_start = int(state["window_start"])
        self.candidates = [Candidate(**candidate) for candidate in state["candidates"]]
        self.stream_state = state.get("stream")  # continued exactly at the first batch (if its shards are there)

    def _save(self) -> None:
        state = {
            "state_dict": self.module.net.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "step": self.step,
            "window": self.window,
            "window_start": self.window_start,
            "candidates": [asdict(candidate) for candidate in self.candidates],  # plain data in the state file
            "stream": self.stream.state() if self.stream is not None else self.stream_state,
            "net_config": self.module.net.config.to_dict(),
        }
        if self.module.average is not None:
            state["average"] = self.module.average.state_dict()
        with atomic_write(self.out / TRAINER_STATE) as handle:
            torch.save(state, handle)

    # -- data -----------------------------------------------------------------

    def _new_window(self, listed: bool = False) -> None:
        """Build the window (from the index; ``listed``: refreshed just now) and
        move the stream onto it (it reads only the shards the window gained)."""
        if not listed:
            self.index.refresh()
        self.window_at = time.monotonic()
        window = build_window(self.shards, self.config.train, self.config.net.policy_encoding, self.index)
        if self.stream is not None:
            self.stream.move(window)
        window.save(self.out / WINDOW_FILE)  # what the trainer reads now (its time: when it became trainable)
        self.window = window.to_dict()
        self.window_start = self.step

    def _batches(self) -> Prefetched:
        """The batch stream (a new one on the current window after a start or a rebuild)."""
        if self.stream is None:
            window = Window.from_dict(self.window, "trainer window")
            train = self.config.train
            net = self.config.net
            spec = StreamSpec(window.pieces, train.batch_size, train.shuffle_buffer,
                              train.seed + self.step, 0, net.policy_encoding,
                              train.value_target, train.q_ratio, net.value_head, net.moves_left,
                              known_endings=train.known_endings,
                              tablebases=train.tablebase_folder())  # fmt: skip
            stream = self._continued(spec) if self.stream_state else MovingStream(spec)
            self.stream = Prefetched(stream, PREFETCH_DEPTH)
            self.stream_state = None
        return self.stream

    def _continued(self, spec: StreamSpec) -> MovingStream:
        """The saved stream, continued (a new one when its shards are gone or changed)."""
        try:
            return MovingStream.restore(spec, self.stream_state or {})
        except (ValueError, OSError, KeyError, TypeError) as error:
            log.warning("trainer: the saved batch stream cannot be continued (%s): a new one starts", error)
            return MovingStream(spec)

    # -- training -------------------------------------------------------------

    def run(self, until_step: int, every: int) -> TrainerReport:
        """Train up to ``until_step`` (the ratio control's allowance), stopping
        at the next candidate boundary; export a candidate there.

        Returns the step reached, the mean losses of the steps done, the
        window size, the time spent and every candidate exported so far."""
        started = time.perf_counter()
        boundary = (self.step // every + 1) * every
        target = min(until_step, boundary)
        sums: dict[str, float] = {}
        done = 0
        segment = self.window is None or (self.step % every == 0 and self.window_start != self.step)
        while self.step < target:
            batch = self._next_batch(segment)  # a new segment reads the shards that landed since the last
            segment = False
            terms = self._train_step(batch)
            for key, value in terms.items():
                sums[key] = sums.get(key, 0.0) + value
            done += 1
            self.step += 1
            if self.step % self.config.train.checkpoint_every == 0 and self.step % every:
                self._save()
        exported = None
        if self.step == boundary and not any(c.step == self.step for c in self.candidates):
            exported = self._export(len(self.candidates) + 1)
        window = Window.from_dict(self.window, "trainer window")
        return TrainerReport(
            step=self.step,
            steps=done,
            losses={key: value / done for key, value in sums.items()} if done else {},
            window_positions=window.positions,
            window_shards=len(window.pieces),
            busy_s=time.perf_counter() - started,
            exported=exported,
            candidates=list(self.candidates),
            resumed_from=self.resumed_from,
            window_paths=[piece.path for piece in window.pieces] + self._loading_paths(window),
        )

    def _loading_paths(self, window: Window) -> list[str]:
        """Shards outside ``window`` that the stream's next group (chosen from an earlier
        window) is still reading: retention keeps them too."""
        loading = self.stream.stream.loading if self.stream is not None else None
        if loading is None or not loading.thread.is_alive():
            return []
        inside = {piece.path for piece in window.pieces}
        return [piece.path for piece in loading.pieces if piece.path not in inside]

    def _next_batch(self, new_window: bool) -> Any:
        """The next batch, after following the folder (``new_window``: now)."""
        try:
            if new_window:
                self._new_window()
            else:
                self._follow_folder()
            return next(self._batches())
        except (ValueError, OSError) as error:  # a shard of the window went bad or away
            log.warning("trainer: the window's data failed (%s): rebuilding the window", error)
            self.index.reset()  # validate every shard taken again
            if self.stream is not None:
                self.stream.close()
            self.stream = self.stream_state = None  # a new stream on the rebuilt window (nothing kept of the bad one)
            self._new_window()
            return next(self._batches())

    def _follow_folder(self) -> None:
        """Every WINDOW_REFRESH_S: move the window onto shards that landed (if any)."""
        now = time.monotonic()
        if now - self.window_at < WINDOW_REFRESH_S:
            return
        self.window_at = now
        if self.index.refresh():
            self._new_window(listed=True)

    def _train_step(self, batch: Any) -> dict[str, float]:
        batch = tuple(tensor.to(self.device, non_blocking=True) for tensor in batch)
        self.module.update_average(self.step)  # the weights after the previous step
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
        if self.config.train.soft_policy_weight > 0:
            values["loss/soft_policy"] = terms.soft_policy
        if self.module.net.config.moves_left:
            values["loss/moves_left"] = terms.moves_left
        out = {key: float(value.detach()) for key, value in values.items()}
        return {key: value for key, value in out.items() if math.isfinite(value)}

    def _export(self, index: int) -> Candidate:
        """Save candidate ``index`` (a net file), then the state that lists it."""
        path = self.out / f"candidate{index:04d}.pt"
        save_net(self.module.exported_net(self.step).cpu(), path)
        candidate = Candidate(index, str(path), self.step)
        self.candidates.append(candidate)
        self._save()
        return candidate
