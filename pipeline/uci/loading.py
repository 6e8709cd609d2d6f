"""Which network plays: a checkpoint file, the registry's champion, random
weights, or no network at all (uniform priors).

``--checkpoint champion`` loads the model version that carries the alias
``champion`` in the MLflow model registry of a tracking store (the CLI's
``--tracking-uri``, else ``MLFLOW_TRACKING_URI``, else the ``mlflow.db`` of
the run folder ``--run``, ``runs/pipeline`` by default, where ``zerochess
run`` registers it; ``tracking_uri=None`` here means MLflow's own default).
A SQLite store that does not exist is an error rather than a new empty store.  The version's artifacts
must hold a zerochess checkpoint (``*.pt``, written by
:func:`pipeline.checkpoint.save_net`; ``net.pt`` when there are several).
MLflow is imported only then, so it is not needed for anything else.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from models.evaluation import Evaluator, UniformEvaluator
from pipeline.champion import CHAMPION, DEFAULT_MODEL_NAME
from pipeline.config import Config

log = logging.getLogger(__name__)

SQLITE_PREFIX = "sqlite:///"
"""Scheme of MLflow's default (file-based SQLite) tracking store."""

CHECKPOINT_SUFFIX = ".pt"
"""Ending of checkpoint files inside downloaded artifacts."""

PREFERRED_CHECKPOINT = "net.pt"
"""The checkpoint taken when the artifacts hold several (training's output name)."""


class NetworkSelectionError(ValueError):
    """The requested network cannot be found or loaded; the message says where we looked."""


@dataclass(frozen=True)
class LoadedPlayer:
    """An evaluator and what it is, for logs and the GUI.

    Attributes:
        evaluator: the network behind the search protocol.
        description: e.g. ``"net.pt (6x64, cpu)"``.
        set_threads: applies a torch thread count (``None`` without a network).
        threads: the torch thread count now (1 without a network).
    """

    evaluator: Evaluator
    description: str
    set_threads: Callable[[int], None] | None = None
    threads: int = 1


def load_player(
    config: Config,
    *,
    checkpoint: str | None,
    uniform: bool = False,
    device: str | None = None,
    model_name: str = DEFAULT_MODEL_NAME,
    tracking_uri: str | None = None,
    seed: int | None = None,
    precision: str | None = None,
    threads: int | None = None,
) -> LoadedPlayer:
    """Build the evaluator asked for on the command line.

    Args:
        config: parameters; ``net`` shapes a random network when there is
            no checkpoint, ``selfplay.device`` is the default device.
        checkpoint: a checkpoint path, ``"champion"``, or ``None`` for random weights.
        uniform: no network: uniform priors and zero values (``checkpoint`` must be ``None``).
        device: ``auto``, ``cpu`` or ``cuda[:N]`` (default: ``selfplay.device``).
        model_name: registered model holding the champion alias.
        tracking_uri: MLflow tracking store for the champion.
        seed: torch seed of the random weights.
        precision: ``auto``, ``fp32`` or ``bf16`` (default:
            ``selfplay.precision``); the graph follows ``selfplay.compile``.
        threads: torch intra-op threads for the network (default: torch's own).

    Raises:
        NetworkSelectionError: ``uniform`` with a checkpoint, or the champion
            cannot be resolved.
        CheckpointError (a ``ValueError``): the checkpoint file is unreadable.
    """
    if uniform:
        if checkpoint is not None:
            raise NetworkSelectionError("--uniform plays without a network: drop --checkpoint")
        return LoadedPlayer(UniformEvaluator(), "no network (uniform priors, zero values)")
    import torch

    from models.net import AlphaZeroNet, pick_device
    from models.net_evaluator import NetEvaluator
    from pipeline.checkpoint import load_net

    if threads is not None:
        if threads < 1:
            raise NetworkSelectionError(f"threads must be >= 1, got {threads}")
        torch.set_num_threads(threads)
    target = pick_device(device or config.selfplay.device)
    if checkpoint is None:
        if seed is not None:
            torch.manual_seed(seed)
        net = AlphaZeroNet(config.net).to(target)
        source = "random weights"
    elif checkpoint == CHAMPION:
        with tempfile.TemporaryDirectory(prefix="zerochess-champion-") as folder:
            path, source = champion_checkpoint(model_name, tracking_uri, Path(folder))
            net = load_net(path, device=target)
    else:
        net = load_net(checkpoint, device=target)
        source = checkpoint
    shape = f"{net.config.blocks}x{net.config.filters}"
    evaluator = NetEvaluator(net, precision=precision or config.selfplay.precision, compile=config.selfplay.compile)
    return LoadedPlayer(
        evaluator,
        f"{source} ({shape}, {target}, {evaluator.precision.name}, compile {evaluator.compiled.mode})",
        set_threads=torch.set_num_threads,
        threads=torch.get_num_threads(),
    )


def champion_checkpoint(
    model_name: str, tracking_uri: str | None, folder: Path
) -> tuple[Path, str]:
    """Download the ``champion`` version of ``model_name`` into ``folder``;
    return the checkpoint file and a description (``zerochess v3 (champion)``).

    Raises:
        NetworkSelectionError: MLflow is not installed, the alias or model is
            missing, or the artifacts hold no checkpoint file.
    """
    try:
        import mlflow
        import mlflow.artifacts
        from mlflow.exceptions import MlflowException
    except ImportError as error:
        raise NetworkSelectionError(
            "--checkpoint champion needs MLflow to read the model registry (pip install mlflow)"
        ) from error
    store = tracking_uri or mlflow.get_tracking_uri()
    _require_existing_sqlite(store)
    client = mlflow.MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)
    try:
        version = client.get_model_version_by_alias(model_name, CHAMPION)
    except MlflowException as error:
        raise NetworkSelectionError(
            f"no model version with alias {CHAMPION!r} for registered model {model_name!r} "
            f"in tracking store {store}: {error}"
        ) from error
    name = f"{model_name} v{version.version}"
    try:
        uri = client.get_model_version_download_uri(model_name, version.version)
        log.debug("downloading %s (alias %s) from %s", uri, CHAMPION, store)
        local = mlflow.artifacts.download_artifacts(
            artifact_uri=uri, dst_path=str(folder), tracking_uri=tracking_uri
        )
    except MlflowException as error:
        raise NetworkSelectionError(
            f"cannot download {name} from tracking store {store}: {error}"
        ) from error
    return find_checkpoint_file(Path(local), f"{name} ({uri})"), f"{name} ({CHAMPION})"


def _require_existing_sqlite(store: str) -> None:
    """Refuse a SQLite store that does not exist (MLflow would create an empty one)."""
    if store.startswith(SQLITE_PREFIX) and not Path(store[len(SQLITE_PREFIX) :]).is_file():
        raise NetworkSelectionError(
            f"tracking store {store} does not exist: pass the training run's store with --tracking-uri "
            "(e.g. sqlite:///runs/<run>/mlflow.db) or set MLFLOW_TRACKING_URI"
        )


def find_checkpoint_file(path: Path, source: str) -> Path:
    """``path`` itself if it is a file, else the checkpoint under it: the one
    ``*.pt`` file, or among several the one named ``net.pt`` (what training
    writes).

    Raises:
        NetworkSelectionError: no ``*.pt`` file, or several and no single
            ``net.pt`` (the files are listed).
    """
    if path.is_file():
        return path
    found = sorted(p for p in path.rglob(f"*{CHECKPOINT_SUFFIX}") if p.is_file())
    preferred = [p for p in found if p.name == PREFERRED_CHECKPOINT]
    if len(found) == 1 or len(preferred) == 1:
        return found[0] if len(found) == 1 else preferred[0]
    names = [str(p.relative_to(path)) for p in sorted(path.rglob("*")) if p.is_file()]
    if not found:
        raise NetworkSelectionError(
            f"{source} holds no checkpoint file (*{CHECKPOINT_SUFFIX}); files: {names or 'none'}"
        )
    raise NetworkSelectionError(
        f"{source} holds several checkpoint files and not one {PREFERRED_CHECKPOINT}: {names}"
    )
