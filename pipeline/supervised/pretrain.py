"""Pretraining on supervised shards, judged by held-out move-prediction accuracy.

:func:`pretrain` is the training stage of :func:`pipeline.training.trainer.train`
(the same Lightning module, loss, MLflow logging and exported ``net.pt``) on
``DATA/train``, with the replay window widened to every position there (a
supervised dataset is read whole, epoch after epoch). Then the exported net is
evaluated on ``DATA/heldout`` (:func:`evaluate_heldout`) and the figures are
logged to the same MLflow run, at the last step, and written to
``OUT/heldout.json``:

``heldout/top1``, ``heldout/top5``
    share of positions whose target move (argmax pi: the move played in a
    PGN game, Stockfish's best move for labelled positions) is the net's
    first, resp. among its first five, legal moves (logits of illegal moves
    are masked, as the search does);
``heldout/policy_cross_entropy``
    ``-sum(pi * log p)`` with ``p`` the softmax over the legal moves;
``heldout/value_mse``
    ``(z - v)^2``;
``heldout/uniform_top1``, ``heldout/uniform_top5``
    the same accuracies for the uniform policy over the legal moves
    (``1/n`` and ``min(5, n)/n`` averaged), the baseline to beat;
``heldout/positions``
    the positions evaluated (``supervised.heldout_max_positions`` at most,
    the first ones in shard order).

``OUT/net.pt`` is what ``zerochess train --init-checkpoint`` (and every
command that loads a net) starts from.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import chess
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import torch
import torch.nn.functional as F

from models.net import AlphaZeroNet, pick_device
from models.policy import get_policy_map
from pipeline.atomic import atomic_write
from pipeline.checkpoint import load_net
from pipeline.config import Config
from pipeline.shards import decode_planes, decode_targets, list_shards, load_shards
from pipeline.supervised.splits import HELDOUT, TRAIN, SupervisedDataError, split_dirs

if TYPE_CHECKING:
    from pipeline.training.trainer import TrainResult

__all__ = [
    "HELDOUT_REPORT",
    "HeldoutMetrics",
    "PretrainResult",
    "evaluate_heldout",
    "evaluate_table",
    "legal_mask_batch",
    "load_heldout",
    "pretrain",
]

log = logging.getLogger(__name__)

HELDOUT_REPORT: Final = "heldout.json"
TOP_K: Final = 5
STAGE_TAG: Final = "zerochess.stage"


@dataclass(frozen=True)
class HeldoutMetrics:
    """Move-prediction and value figures of a net on held-out positions (see the module docstring)."""

    positions: int
    top1: float
    top5: float
    policy_cross_entropy: float
    value_mse: float
    uniform_top1: float
    uniform_top5: float

    def as_metrics(self) -> dict[str, float]:
        """The figures under their MLflow names (``heldout/...``)."""
        return {f"heldout/{key}": float(value) for key, value in asdict(self).items()}


def load_heldout(directory: str | os.PathLike[str], max_positions: int = 0) -> pa.Table | None:
    """The validated rows of a held-out shard folder (the first ``max_positions``; 0 = all).

    Bad shards are quarantined and skipped; None when no row is left.
    """
    tables, bad = load_shards(directory, check_legality=False)
    for path, reason in bad:
        log.warning("held-out shard %s skipped: %s", path, reason)
    tables = [table for table in tables if table.num_rows]
    if not tables:
        return None
    table = pa.concat_tables(tables)
    if max_positions:
        table = table.slice(0, max_positions)
    return table.combine_chunks()


def legal_mask_batch(fens: list[str], encoding: str) -> npt.NDArray[np.bool_]:
    """(B, policy size) masks of the legal moves of each FEN."""
    policy_map = get_policy_map(encoding)
    mask = np.zeros((len(fens), policy_map.size), dtype=bool)
    for row, fen in enumerate(fens):
        board = chess.Board(fen)
        mask[row, policy_map.indices(board, list(board.legal_moves))] = True
    return mask


@dataclass
class _Sums:
    """Running sums of the per-position figures."""

    positions: int = 0
    top1: float = 0.0
    top5: float = 0.0
    cross_entropy: float = 0.0
    squared_error: float = 0.0
    uniform_top1: float = 0.0
    uniform_top5: float = 0.0

    def metrics(self) -> HeldoutMetrics:
        n = max(self.positions, 1)
        return HeldoutMetrics(self.positions, self.top1 / n, self.top5 / n,
                              self.cross_entropy / n, self.squared_error / n,
                              self.uniform_top1 / n, self.uniform_top5 / n)


@torch.inference_mode()
def _add_batch(sums: _Sums, net: AlphaZeroNet, table: pa.Table, encoding: str) -> None:
    """Adds one batch of rows to the running sums."""
    device = next(net.parameters()).device
    planes = torch.from_numpy(decode_planes(table)).to(device)
    pi_np, z_np = decode_targets(table, encoding)
    mask = torch.from_numpy(legal_mask_batch(table.column("fen").to_pylist(), encoding))
    pi, z = torch.from_numpy(pi_np), torch.from_numpy(z_np)
    logits, value = net(planes)
    logits = logits.float().cpu().masked_fill(~mask, float("-inf"))
    log_p = torch.where(mask, F.log_softmax(logits, dim=1), torch.zeros(()))
    target = pi.argmax(dim=1)
    ranked = logits.topk(min(TOP_K, logits.shape[1]), dim=1).indices
    legal = mask.sum(dim=1).double()
    sums.positions += len(target)
    sums.top1 += float((ranked[:, 0] == target).sum())
    sums.top5 += float((ranked == target[:, None]).any(dim=1).sum())
    sums.cross_entropy += float(-(pi * log_p).sum())
    sums.squared_error += float(((value.float().cpu() - z) ** 2).sum())
    sums.uniform_top1 += float((1.0 / legal).sum())
    sums.uniform_top5 += float((legal.clamp(max=TOP_K) / legal).sum())


def evaluate_table(net: AlphaZeroNet, table: pa.Table, batch_size: int = 256) -> HeldoutMetrics:
    """The held-out figures of ``net`` on the rows of a shard table (net put in eval mode)."""
    net.eval()
    encoding = net.config.policy_encoding
    sums = _Sums()
    for start in range(0, table.num_rows, batch_size):
        _add_batch(sums, net, table.slice(start, batch_size), encoding)
    return sums.metrics()


def evaluate_heldout(net: AlphaZeroNet, directory: str | os.PathLike[str],
                     max_positions: int = 0, batch_size: int = 256) -> HeldoutMetrics | None:
    """:func:`evaluate_table` on a held-out folder; None when it has no position."""
    table = load_heldout(directory, max_positions)
    if table is None:
        return None
    return evaluate_table(net, table, batch_size)


@dataclass(frozen=True)
class PretrainResult:
    """What :func:`pretrain` produced.

    Attributes:
        train: the training run's result (``net_path``, MLflow run, steps).
        heldout: the held-out figures (None when the held-out split is empty).
        report_path: ``OUT/heldout.json``.
    """

    train: TrainResult
    heldout: HeldoutMetrics | None
    report_path: str

    def summary(self) -> dict[str, Any]:
        """Plain data for printing: the training result and the held-out figures."""
        return {"train": asdict(self.train),
                "heldout": asdict(self.heldout) if self.heldout else None,
                "report": self.report_path}


def _whole_split_config(config: Config, train_dir: Path) -> Config:
    """``config`` with the replay window set to every training row of ``train_dir``."""
    from pipeline.training.window import count_training_rows

    shards = list_shards(train_dir)
    total = sum(count_training_rows(path) or 0 for path in shards)
    if total == 0:
        raise SupervisedDataError(f"{train_dir}: no training positions in {len(shards)} shard(s); "
                                  "run zerochess pgn2shards or zerochess label first")
    log.info("pretraining on all %d positions of %s", total, train_dir)
    return replace(config, train=replace(config.train, window_positions=total,
                                         window_growth=0.0))


def _log_to_mlflow(train_result: TrainResult, metrics: HeldoutMetrics | None, data_dir: Path) -> None:
    """Logs the held-out figures (at the last step) and the stage tags to the training run."""
    if train_result.mlflow_run_id is None:
        return
    from mlflow.entities import Metric, RunTag
    from mlflow.tracking import MlflowClient

    client = MlflowClient(train_result.tracking_uri)
    now = int(time.time() * 1000)
    entries = [Metric(key, value, now, train_result.steps)
               for key, value in (metrics.as_metrics() if metrics else {}).items()]
    tags = [RunTag(STAGE_TAG, "pretrain"),
            RunTag("zerochess.heldout_dir", str((data_dir / HELDOUT).resolve()))]
    client.log_batch(train_result.mlflow_run_id, metrics=entries, tags=tags)


def pretrain(
    config: Config,
    data_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    init_net: str | os.PathLike[str] | AlphaZeroNet | None = None,
    resume: bool = False,
    tracking_uri: str | None = None,
    progress_bar: bool | None = None,
) -> PretrainResult:
    """Trains on ``DATA/train``, evaluates on ``DATA/heldout``, logs both to one MLflow run.

    Args:
        config: the whole config (``train`` drives the optimisation, ``net``
            the architecture, ``supervised`` the evaluation).
        data_dir: the output of ``zerochess pgn2shards`` or ``zerochess label``.
        out_dir: the run folder (as for ``zerochess train``).
        init_net, resume, tracking_uri, progress_bar: as for
            :func:`pipeline.training.trainer.train`.

    Raises:
        SupervisedDataError: ``DATA/train`` is missing or empty.
        TrainError and the errors of ``train``.
    """
    from pipeline.training.trainer import train

    dirs = split_dirs(data_dir)
    if not dirs[TRAIN].is_dir():
        raise SupervisedDataError(f"{dirs[TRAIN]} does not exist: --data must be the --out of "
                                  "zerochess pgn2shards or zerochess label")
    result = train(_whole_split_config(config, dirs[TRAIN]), dirs[TRAIN], out_dir,
                   init_net=init_net, resume=resume, tracking_uri=tracking_uri,
                   progress_bar=progress_bar)
    metrics = None
    if dirs[HELDOUT].is_dir():
        net = load_net(result.net_path, pick_device(config.train.device))
        settings = config.supervised
        metrics = evaluate_heldout(net, dirs[HELDOUT], settings.heldout_max_positions,
                                   settings.eval_batch_size)
    if metrics is None:
        log.warning("no held-out positions in %s: no accuracy to report", dirs[HELDOUT])
    else:
        log.info("held-out: top-1 %.3f (uniform %.3f), top-5 %.3f (uniform %.3f), "
                 "policy CE %.3f, value MSE %.3f on %d positions", metrics.top1,
                 metrics.uniform_top1, metrics.top5, metrics.uniform_top5,
                 metrics.policy_cross_entropy, metrics.value_mse, metrics.positions)
    _log_to_mlflow(result, metrics, Path(data_dir))
    report_path = Path(out_dir) / HELDOUT_REPORT
    with atomic_write(report_path) as handle:
        handle.write(json.dumps({"heldout": asdict(metrics) if metrics else None,
                                 "data": os.fspath(data_dir), "net": result.net_path,
                                 "steps": result.steps}, indent=1).encode())
    return PretrainResult(result, metrics, str(report_path))
