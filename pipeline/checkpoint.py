"""Saving and loading :class:`~models.net.AlphaZeroNet` checkpoints.

A checkpoint is ``torch.save`` of :func:`models.net.net_state` (format
``"zerochess-net/1"``: config dict + state dict). Writes are atomic (temporary
file in the target directory, fsync, ``os.replace``, directory fsync), so a
reader never sees a half-written checkpoint. Reads use
``torch.load(weights_only=True)``: a file holding arbitrary pickled objects is
refused rather than executed. Every error names the file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from torch import nn

from models.net import (
    AlphaZeroNet,
    ArchitectureMismatchError,
    NetConfig,
    NetStateError,
    config_from_state,
    load_weights_into,
    net_from_state,
    net_state,
)
from pipeline.atomic import atomic_write

__all__ = [
    "CHECKPOINT_FILE_MODE",
    "CheckpointError",
    "CheckpointNotFoundError",
    "save_net",
    "load_net",
    "load_net_config",
    "load_weights",
]

CHECKPOINT_FILE_MODE = 0o644
"""Permissions given to written checkpoints (temp files are created 0600)."""

PathLike = str | os.PathLike[str]


class CheckpointError(ValueError):
    """A file is not a readable zerochess network checkpoint; the message names it."""


class CheckpointNotFoundError(CheckpointError, FileNotFoundError):
    """The checkpoint file does not exist (also a ``FileNotFoundError``)."""


def save_net(net: nn.Module, path: PathLike) -> Path:
    """Atomically write ``net`` (config + weights) to ``path``; return the path.

    Parent directories are created if needed. On any failure the temporary
    file is removed and an existing checkpoint at ``path`` is left intact.
    """
    target = Path(path)
    state = net_state(net)
    with atomic_write(target, CHECKPOINT_FILE_MODE) as handle:
        torch.save(state, handle)
    return target


BEST_POINTER = "best.txt"
"""The file in a run folder that names its best network (``pipeline.loop.ledger``)."""


def follow_best_pointer(path: PathLike) -> PathLike:
    """The network a run's ``best.txt`` names, when ``path`` is that file or
    the run folder holding it; otherwise ``path`` unchanged."""
    pointer = Path(path)
    if pointer.is_dir():
        pointer = pointer / BEST_POINTER
    if pointer.name != BEST_POINTER or not pointer.is_file():
        return path
    try:
        named = pointer.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{pointer}: cannot read the best-network pointer ({exc})") from exc
    if not named:
        raise CheckpointError(f"{pointer}: the best-network pointer is empty")
    return named


def _read_state(path: PathLike) -> Any:
    """Return the unpickled (weights-only, CPU) content of ``path`` (a run's
    ``best.txt``, or its folder, stands for the network it names).

    Raises:
        CheckpointNotFoundError: ``path`` does not exist.
        CheckpointError: the bytes are not a weights-only torch file.
    """
    path = follow_best_pointer(path)
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError as exc:
        raise CheckpointNotFoundError(f"checkpoint file not found: {os.fspath(path)}") from exc
    except IsADirectoryError as exc:
        raise CheckpointError(f"{os.fspath(path)}: is a folder, not a checkpoint file{_folder_hint(path)}") from exc
    except OSError as exc:
        raise CheckpointError(f"{os.fspath(path)}: cannot read the checkpoint ({exc.strerror or exc})") from exc
    with handle:
        try:
            return torch.load(handle, map_location="cpu", weights_only=True)
        except Exception as exc:  # torch.load fails in many ways on bad bytes
            raise CheckpointError(
                f"{os.fspath(path)}: not a zerochess checkpoint (unreadable torch file: "
                f"{type(exc).__name__}: {_describe_load_failure(exc)})"
            ) from exc


def _folder_hint(folder: PathLike) -> str:
    """A checkpoint inside ``folder`` worth suggesting (a run folder's
    ``best.txt`` is followed before this is reached)."""
    net = Path(folder) / "net.pt"
    return f" (did you mean {net}?)" if net.is_file() else ""


def _describe_load_failure(exc: BaseException) -> str:
    """Return a short description of a ``torch.load`` failure.

    torch's weights-only refusal suggests retrying with ``weights_only=False``;
    that advice is wrong here (the file is corrupt or foreign), so drop it.
    """
    text = str(exc).strip()
    if text.startswith("Weights only load failed"):
        return "weights-only unpickling refused the content (corrupt bytes or non-tensor objects)"
    return text.splitlines()[0] if text else ""


def _config(state: Any, path: PathLike) -> NetConfig:
    """Validate the checkpoint content's format and return its config."""
    try:
        return config_from_state(state)
    except NetStateError as exc:
        raise CheckpointError(f"{os.fspath(path)}: not a zerochess checkpoint ({exc})") from exc


def load_net_config(path: PathLike) -> NetConfig:
    """Return the :class:`NetConfig` stored in the checkpoint at ``path``.

    Raises:
        CheckpointNotFoundError / CheckpointError: see :func:`load_net`.
    """
    return _config(_read_state(path), path)


def load_net(path: PathLike, device: torch.device | str | None = None) -> AlphaZeroNet:
    """Rebuild the network stored at ``path`` (eval mode, on ``device`` or CPU).

    Raises:
        CheckpointNotFoundError: the file does not exist.
        CheckpointError: corrupt/truncated file, foreign pickle, wrong format.
        ArchitectureMismatchError: the weights do not fit the stored config
            (message names the file, the parameters and both shapes).
    """
    state = _read_state(path)
    _config(state, path)
    try:
        return net_from_state(state, device)
    except ArchitectureMismatchError as exc:
        raise ArchitectureMismatchError(exc.mismatches, os.fspath(path)) from exc
    except NetStateError as exc:
        raise CheckpointError(f"{os.fspath(path)}: not a zerochess checkpoint ({exc})") from exc


def load_weights(net: nn.Module, path: PathLike) -> NetConfig:
    """Load the weights stored at ``path`` into an existing, configured ``net``.

    Returns the checkpoint's config. Weights of the two policy encodings are
    interchangeable (identical parameters), so only shapes are compared.

    Raises:
        CheckpointNotFoundError / CheckpointError: see :func:`load_net`.
        ArchitectureMismatchError: the checkpoint's architecture differs; the
            message names the file, its config, each parameter and both shapes.
    """
    state = _read_state(path)
    config = _config(state, path)
    source = f"{os.fspath(path)} (checkpoint config {config.to_dict()})"
    try:
        load_weights_into(net, state.get("state_dict"), source=source)
    except NetStateError as exc:
        raise CheckpointError(f"{os.fspath(path)}: not a zerochess checkpoint ({exc})") from exc
    return config


def check_init_net(net_config: NetConfig, path: PathLike) -> None:
    """``path`` (an ``--init-checkpoint``) must load into ``net_config``'s architecture.

    The commands call it before Ray starts and before MLflow records a run, so a
    checkpoint of another architecture fails at once, naming the file.
    """
    load_net(path, device="cpu")  # the file itself: readable, its weights fit its own config
    torch.manual_seed(0)
    load_weights(AlphaZeroNet(net_config), path)
