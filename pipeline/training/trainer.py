"""``train``: one training run on a shard folder, as a plain function.

The run folder ``OUT`` holds::

    OUT/checkpoints/last.ckpt   Lightning checkpoint (atomic): weights, NetConfig, optimizer,
                                scheduler, loop counters, data-stream position
    OUT/window.json             the replay window (shards and row ranges) the run reads
    OUT/run.json                the MLflow tracking URI and run id (a resume continues that run)
    OUT/net.pt                  the exported net (pipeline.checkpoint.save_net: NetConfig + weights)
    OUT/result.json             the final step, metrics and paths
    OUT/mlflow.db               the MLflow store (unless MLFLOW_TRACKING_URI points elsewhere)
    OUT/mlartifacts/            its artifacts (net.pt, window.json)

A run refuses an ``OUT`` that already has a checkpoint unless ``resume`` is
set; a resumed run continues at the checkpoint's step with the same data
stream, the same optimizer state and the same MLflow run, and with the same
seed ends with bit-identical weights to a run that was never interrupted.
Several GPUs train with Lightning's DDP (``train.devices: 0`` takes all).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import RichProgressBar

from models.net import AlphaZeroNet, ArchitectureMismatchError, NetConfig, pick_device
from models.precision import cpu_bf16_support
from pipeline.atomic import atomic_write
from pipeline.checkpoint import load_weights, save_net
from pipeline.config import Config, flatten
from pipeline.training.checkpointing import (
    AtomicCheckpointIO,
    PeriodicCheckpoint,
    check_checkpoint_net,
)
from pipeline.training.config import TrainConfig
from pipeline.training.data import ShardDataModule
from pipeline.training.module import AlphaZeroModule
from pipeline.training.tracking import (
    GIT_COMMIT_TAG,
    ResumableMLFlowLogger,
    git_commit,
    mark_training_experiment,
    resolve_tracking_uri,
)

__all__ = ["RunPaths", "TrainError", "TrainResult", "quiet_lightning_logging", "train"]

log = logging.getLogger(__name__)


class TrainError(ValueError):
    """A training run cannot start or continue; the message names the folder or file."""


@dataclass(frozen=True)
class RunPaths:
    """The files of a run folder (see the module docstring)."""

    out: Path

    @property
    def checkpoint(self) -> Path:
        return self.out / "checkpoints" / "last.ckpt"

    @property
    def window(self) -> Path:
        return self.out / "window.json"

    @property
    def run_info(self) -> Path:
        return self.out / "run.json"

    @property
    def net(self) -> Path:
        return self.out / "net.pt"

    @property
    def result(self) -> Path:
        return self.out / "result.json"


@dataclass(frozen=True)
class TrainResult:
    """What a training run produced.

    Attributes:
        net_path: the exported net (``pipeline.checkpoint.load_net`` loads it).
        checkpoint_path: the last training checkpoint.
        steps: optimizer steps done (including those before a resume).
        metrics: the last logged value of every metric.
        positions: positions in the replay window.
        mlflow_run_id: the MLflow run (None on DDP ranks other than 0).
        tracking_uri: the MLflow store.
        seconds: wall time of this call.
    """

    net_path: str
    checkpoint_path: str
    steps: int
    metrics: dict[str, float]
    positions: int
    mlflow_run_id: str | None
    tracking_uri: str
    seconds: float


def train(
    config: Config,
    data_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    init_net: str | os.PathLike[str] | AlphaZeroNet | None = None,
    resume: bool = False,
    tracking_uri: str | None = None,
    progress_bar: bool | None = None,
    callbacks: Sequence[pl.Callback] = (),
    tags: Mapping[str, str] | None = None,
    step_offset: int = 0,
) -> TrainResult:
    """Train ``config.net`` on the replay window of ``data_dir``; export it to ``out_dir/net.pt``.

    Args:
        config: the whole config (``config.train`` and ``config.net`` are used;
            all of it is logged to MLflow as params).
        data_dir: the shard folder (``zerochess selfplay --out``).
        out_dir: the run folder.
        init_net: start from these weights (a net file or a net) instead of a
            fresh initialisation; ignored when resuming from a checkpoint.
        resume: continue from ``out_dir``'s checkpoint when there is one.
        tracking_uri: MLflow store (default: ``MLFLOW_TRACKING_URI``, else
            ``out_dir/mlflow.db``).
        progress_bar: Lightning's progress bar (default: on when stderr is a
            terminal and not inside a Ray worker).
        callbacks: more Lightning callbacks.
        tags: more MLflow tags of the run (e.g. ``mlflow.parentRunId`` to nest
            it under a pipeline generation).
        step_offset: added to every MLflow step, so that the training runs of
            a loop's generations draw one curve over the loop's total steps.

    Raises:
        TrainError: ``out_dir`` has a checkpoint and ``resume`` is False.
        ArchitectureMismatchError: ``init_net`` or the checkpoint has another
            architecture than ``config.net`` (the message names both shapes).
        TrainDataError, ShardError, CheckpointError, ConfigError: bad data or files.
    """
    started = time.perf_counter()
    paths = RunPaths(Path(out_dir))
    checkpoint = _checkpoint_to_resume(paths, config.net, resume)
    settings = config.train
    if settings.threads:
        torch.set_num_threads(settings.threads)
    pl.seed_everything(settings.seed, workers=True, verbose=False)
    module = AlphaZeroModule(config.net, settings, _initial_net(config.net, init_net))
    accelerator, devices = _placement(settings)
    datamodule = ShardDataModule(
        data_dir,
        paths.window,
        settings,
        config.net.policy_encoding,
        reuse_window=resume,
        pin_memory=accelerator == "gpu",
        value_head=config.net.value_head,
        moves_left=config.net.moves_left,
    )
    logger, uri = _logger(config, paths, resume, tracking_uri, step_offset)
    show_progress = _show_progress() if progress_bar is None else progress_bar
    trainer = pl.Trainer(
        accelerator=accelerator,
        devices=devices,
        precision=resolve_training_precision(settings.precision, accelerator),  # type: ignore[arg-type]
        max_steps=settings.max_steps,
        max_epochs=-1,
        logger=logger,
        callbacks=[
            _TrackingSetup(config, data_dir, paths, init_net, uri, tags),
            PeriodicCheckpoint(paths.checkpoint, settings.checkpoint_every),
            *([_StepProgressBar()] if show_progress else []),
            *callbacks,
        ],
        plugins=[AtomicCheckpointIO()],
        enable_checkpointing=False,
        log_every_n_steps=settings.log_every,
        enable_progress_bar=show_progress,
        enable_model_summary=False,
        deterministic="warn" if settings.deterministic else False,
        num_sanity_val_steps=0,
        default_root_dir=paths.out,
    )
    with warnings.catch_warnings():
        _quiet_known_warnings()
        trainer.fit(module, datamodule=datamodule, ckpt_path=checkpoint)
    if trainer.interrupted:
        raise TrainError(
            f"training in {paths.out} was interrupted at step {trainer.global_step}; "
            "continue it with --resume"
        )
    return _finish(trainer, module, datamodule, logger, uri, paths, started)


def _checkpoint_to_resume(paths: RunPaths, net_config: NetConfig, resume: bool) -> Path | None:
    if not paths.checkpoint.exists():
        if resume:
            log.info("no checkpoint in %s: starting from step 0", paths.out)
        return None
    if not resume:
        raise TrainError(
            f"{paths.out} already holds a training checkpoint ({paths.checkpoint}): "
            "pass --resume to continue it, or use another --out folder"
        )
    check_checkpoint_net(paths.checkpoint, net_config)
    return paths.checkpoint


def _initial_net(
    net_config: NetConfig, init: str | os.PathLike[str] | AlphaZeroNet | None
) -> AlphaZeroNet:
    """A fresh net (from torch's current seed), with ``init``'s weights when given."""
    net = AlphaZeroNet(net_config)
    if init is None:
        return net
    if isinstance(init, AlphaZeroNet):
        if init.config != net_config:
            raise ArchitectureMismatchError(
                [f"net config {init.config.to_dict()} vs params net {net_config.to_dict()}"],
                "init_net",
            )
        net.load_state_dict(init.state_dict())
        return net
    load_weights(net, init)
    log.info("initial weights from %s", init)
    return net


def resolve_training_precision(requested: str, accelerator: str) -> str:
    """Lightning's precision for ``train.precision`` on ``accelerator``
    (``auto``: see :class:`~pipeline.training.config.TrainConfig`)."""
    if requested != "auto":
        return requested
    if accelerator == "gpu":
        return "bf16-mixed" if torch.cuda.is_bf16_supported() else "16-mixed"
    native = cpu_bf16_support()
    chosen = "bf16-mixed" if native else "32-true"
    log.info("train.precision auto on cpu: native bf16 %s -> %s", native or "none", chosen)
    return chosen


def _placement(settings: TrainConfig) -> tuple[str, int | str]:
    """Lightning (accelerator, devices) for ``train.device`` and ``train.devices``."""
    device = pick_device(settings.device)
    accelerator = "gpu" if device.type == "cuda" else "cpu"
    if accelerator == "cpu":
        return "cpu", 1
    return "gpu", settings.devices or "auto"


def _logger(
    config: Config, paths: RunPaths, resume: bool, explicit_uri: str | None, step_offset: int = 0
) -> tuple[ResumableMLFlowLogger, str]:
    uri, artifact_location = resolve_tracking_uri(paths.out, explicit_uri)
    run_id = None
    if resume and paths.run_info.exists():
        try:
            info = json.loads(paths.run_info.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise TrainError(f"cannot read {paths.run_info}: {error}") from error
        if info.get("tracking_uri") == uri:
            run_id = info.get("run_id")
        else:
            log.warning(
                "%s names the MLflow store %s, this run uses %s: starting a new MLflow run",
                paths.run_info,
                info.get("tracking_uri"),
                uri,
            )
    logger = ResumableMLFlowLogger(
        experiment_name=config.train.experiment,
        tracking_uri=uri,
        run_id=run_id,
        run_name=paths.out.resolve().name,
        artifact_location=artifact_location,
        step_offset=step_offset,
    )
    return logger, uri


class _StepProgressBar(RichProgressBar):
    """Lightning's rich bar, labelled with the step budget: training runs on
    an endless stream (``max_epochs=-1``), where the stock label reads
    "Epoch 0/-2"."""

    def _get_train_description(self, current_epoch: int) -> str:  # noqa: ARG002 - one endless epoch
        return f"training to step {self.trainer.max_steps}"


class _TrackingSetup(pl.Callback):
    """On rank 0 at the start of fit: create or reopen the MLflow run, save its id, log params and tags."""

    def __init__(
        self,
        config: Config,
        data_dir: Any,
        paths: RunPaths,
        init_net: Any,
        uri: str,
        extra_tags: Mapping[str, str] | None = None,
    ) -> None:
        self.extra_tags = dict(extra_tags or {})
        self.config = config
        self.data_dir = os.fspath(data_dir)
        self.paths = paths
        self.init_net = init_net
        self.uri = uri

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        logger = trainer.logger
        if not trainer.is_global_zero or not isinstance(logger, ResumableMLFlowLogger):
            return
        if logger.resuming:
            logger.mark_running()
        info = {
            "tracking_uri": self.uri,
            "run_id": logger.run_id,
            "experiment_id": logger.experiment_id,
        }
        with atomic_write(self.paths.run_info) as handle:
            handle.write(json.dumps(info, indent=1).encode())
        mark_training_experiment(logger.experiment, logger.experiment_id)
        logger.log_params(flatten(self.config))
        commit, dirty = git_commit()
        tags = {
            "zerochess.data_dir": os.path.abspath(self.data_dir),
            "zerochess.out_dir": str(self.paths.out.resolve()),
            "zerochess.init_net": _describe(self.init_net),
            "zerochess.git_dirty": str(dirty).lower(),
            "zerochess.train_precision": str(trainer.precision),
        }
        if commit:
            tags[GIT_COMMIT_TAG] = commit
        tags.update(self.extra_tags)
        logger.set_tags(tags)


def _describe(init_net: Any) -> str:
    if init_net is None:
        return ""
    return "<in-memory net>" if isinstance(init_net, AlphaZeroNet) else os.path.abspath(init_net)


def _finish(
    trainer: pl.Trainer,
    module: AlphaZeroModule,
    datamodule: ShardDataModule,
    logger: ResumableMLFlowLogger,
    uri: str,
    paths: RunPaths,
    started: float,
) -> TrainResult:
    """Export the net and the result (rank 0), log them as artifacts."""
    metrics = {
        key: float(value) for key, value in trainer.callback_metrics.items() if key != "loss"
    }
    result = TrainResult(
        net_path=str(paths.net),
        checkpoint_path=str(paths.checkpoint),
        steps=trainer.global_step,
        metrics=metrics,
        positions=datamodule.window.positions if datamodule.window is not None else 0,
        mlflow_run_id=logger.run_id if trainer.is_global_zero else None,
        tracking_uri=uri,
        seconds=time.perf_counter() - started,
    )
    if trainer.is_global_zero:
        save_net(module.exported_net(trainer.global_step).cpu(), paths.net)
        with atomic_write(paths.result) as handle:
            handle.write(json.dumps(asdict(result), indent=1).encode())
        logger.log_artifact(paths.net)
        logger.log_artifact(paths.window)
        log.info("trained %d steps; net exported to %s", result.steps, paths.net)
    return result


def _show_progress() -> bool:
    """Lightning's progress bar only on a terminal, never inside a Ray worker."""
    return sys.stderr.isatty() and not _in_ray_worker()


def _in_ray_worker() -> bool:
    ray = sys.modules.get("ray")
    if ray is None:
        return False
    try:
        return bool(
            ray.is_initialized() and ray.get_runtime_context().worker.mode == ray.WORKER_MODE
        )
    except Exception:  # noqa: BLE001 - an unexpected Ray version: assume the driver
        return False


def _quiet_known_warnings() -> None:
    """Lightning warnings that do not apply: the stream is endless and resumes exactly."""
    for pattern in (
        ".*does not have many workers.*",
        ".*isinstance\\(treespec, LeafSpec\\)` is deprecated.*",
        ".*resuming from a checkpoint that ended before the epoch ended.*",
        ".*IterableDataset.*__len__.*",
    ):
        warnings.filterwarnings("ignore", message=pattern)


def quiet_lightning_logging() -> None:
    """Route Lightning's messages through the root logger only, without its
    notices (:func:`pipeline.quiet.quiet_libraries`).

    The ``lightning`` package adds its own console handler on import, so with a
    configured root logger every message would be printed twice.
    """
    lightning_logger = logging.getLogger("lightning")
    if logging.getLogger().hasHandlers():
        for handler in list(lightning_logger.handlers):
            lightning_logger.removeHandler(handler)
    from pipeline.quiet import quiet_libraries

    quiet_libraries()
