"""Training checkpoints: atomic writes in the run folder, periodic saves, reading them back.

Lightning's own ``TorchCheckpointIO`` writes through the system temp folder,
which is not atomic across filesystems; :class:`AtomicCheckpointIO` writes a
temporary file beside the target, fsyncs it and ``os.replace``-s it
(:func:`pipeline.atomic.atomic_write`), and reads with
``torch.load(weights_only=True)``.  A checkpoint holds the weights, the
``NetConfig``, the optimizer and scheduler, Lightning's loop counters and the
data stream's position (:class:`~pipeline.training.data.ShardDataModule`).
"""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.plugins.io import TorchCheckpointIO

from models.net import AlphaZeroNet, ArchitectureMismatchError, NetConfig, NetStateError
from models.net_heads import head_mismatches
from pipeline.atomic import atomic_write
from pipeline.checkpoint import CheckpointError
from pipeline.training.module import net_from_checkpoint

__all__ = [
    "AtomicCheckpointIO",
    "KillAtStep",
    "PeriodicCheckpoint",
    "check_checkpoint_net",
    "read_checkpoint",
]

log = logging.getLogger(__name__)


class AtomicCheckpointIO(TorchCheckpointIO):
    """``TorchCheckpointIO`` with atomic same-folder writes and weights-only reads."""

    def save_checkpoint(
        self, checkpoint: dict[str, Any], path: Any, storage_options: Any | None = None
    ) -> None:
        if storage_options is not None:
            raise TypeError(
                f"{type(self).__name__} does not take storage_options, got {storage_options!r}"
            )
        with atomic_write(path) as handle:
            torch.save(checkpoint, handle)

    def load_checkpoint(
        self, path: Any, map_location: Any | None = None, weights_only: bool | None = None
    ) -> Any:
        return read_checkpoint(path, map_location)


def read_checkpoint(
    path: str | os.PathLike[str], map_location: Any | None = None
) -> dict[str, Any]:
    """A training checkpoint's content (weights-only unpickling, tensors on the CPU by default).

    Raises:
        FileNotFoundError: no such file.
        CheckpointError: not a readable checkpoint (names the file).
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"checkpoint not found: {os.fspath(path)}")
    try:
        state = torch.load(path, map_location=map_location or "cpu", weights_only=True)
    except Exception as error:  # torch.load fails in many ways on bad bytes
        raise CheckpointError(
            f"{os.fspath(path)}: not a readable training checkpoint ({error})"
        ) from error
    if not isinstance(state, dict) or "state_dict" not in state:
        raise CheckpointError(f"{os.fspath(path)}: not a training checkpoint (no state_dict)")
    return state


def check_checkpoint_net(path: str | os.PathLike[str], net_config: NetConfig) -> None:
    """Refuse to resume from a checkpoint of another architecture.

    Raises:
        CheckpointError: unreadable, or without a ``net_config``.
        ArchitectureMismatchError: its architecture differs from ``net_config``;
            the message names both configs, each parameter and both shapes.
    """
    state = read_checkpoint(path)
    try:
        saved = net_from_checkpoint(state)
    except (NetStateError, ArchitectureMismatchError, TypeError, ValueError) as error:
        if isinstance(error, ArchitectureMismatchError):
            raise ArchitectureMismatchError(error.mismatches, os.fspath(path)) from error
        raise CheckpointError(f"{os.fspath(path)}: {error}") from error
    if saved.config == net_config:
        return
    model = AlphaZeroNet(net_config).state_dict()
    problems = [
        f"{name}: checkpoint {tuple(tensor.shape)} vs model {tuple(model[name].shape)}"
        for name, tensor in saved.state_dict().items()
        if name in model and tensor.shape != model[name].shape
    ]
    # A different value head or moves-left head is one line naming the key.
    problems = head_mismatches(problems, saved.state_dict(), net_config.value_head, net_config.moves_left)
    source = f"{os.fspath(path)} (checkpoint net {saved.config.to_dict()}, params net {net_config.to_dict()})"
    raise ArchitectureMismatchError(problems or ["configs differ with equal shapes"], source)


class PeriodicCheckpoint(pl.Callback):
    """Save ``path`` every ``every`` optimizer steps and when training ends.

    Saved in ``on_train_batch_end``, after the optimizer and scheduler stepped,
    so the checkpoint is a consistent state "``global_step`` steps done".
    """

    def __init__(self, path: str | os.PathLike[str], every: int) -> None:
        self.path = Path(path)
        self.every = every
        self._saved_step = -1

    def on_train_batch_end(self, trainer: pl.Trainer, *args: Any) -> None:
        if trainer.global_step % self.every == 0 and trainer.global_step != self._saved_step:
            self._save(trainer)

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.global_step != self._saved_step:
            self._save(trainer)

    def _save(self, trainer: pl.Trainer) -> None:
        trainer.save_checkpoint(self.path, weights_only=False)
        self._saved_step = trainer.global_step
        log.debug("checkpoint at step %d: %s", trainer.global_step, self.path)


class KillAtStep(pl.Callback):
    """Test hook: SIGKILL this process when ``step`` steps are done (their metrics logged).

    It fires at the start of the next batch, so checkpoints and metrics of
    step ``step`` are out; the kill is as abrupt as a crash or OOM kill.
    """

    def __init__(self, step: int) -> None:
        self.step = step

    def on_train_batch_start(self, trainer: pl.Trainer, *args: Any) -> None:
        if trainer.global_step >= self.step:
            log.warning("test hook: killing the trainer at step %d", trainer.global_step)
            os.kill(os.getpid(), signal.SIGKILL)
