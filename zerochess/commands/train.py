"""``zerochess train``: train the network on a shard folder, log to MLflow, export ``OUT/net.pt``.

A thin wrapper of :func:`pipeline.training.trainer.train` (Lightning and
MLflow are imported only when the command runs).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from zerochess.commands.checks import UsageError, check_output_folder, is_uri
from zerochess.commands.common import add_params_arguments, config_from_args

if TYPE_CHECKING:
    from pipeline.config import Config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_params_arguments(parser)
    parser.add_argument("--data", required=True, help="shard folder (zerochess selfplay --out)")
    parser.add_argument("--out", required=True, help="run folder: checkpoints, net.pt, mlflow.db")
    parser.add_argument(
        "--resume", action="store_true", help="continue from OUT/checkpoints/last.ckpt"
    )
    parser.add_argument(
        "--init-checkpoint",
        metavar="PATH",
        help="start from this net (e.g. the previous generation's net.pt)",
    )
    parser.add_argument(
        "--tracking-uri", help="MLflow store (default: $MLFLOW_TRACKING_URI, else OUT/mlflow.db)"
    )
    bar = parser.add_mutually_exclusive_group()
    bar.add_argument(
        "--progress",
        dest="progress",
        action="store_true",
        default=None,
        help="always show the progress bar",
    )
    bar.add_argument(
        "--no-progress", dest="progress", action="store_false", help="never show the progress bar"
    )
    # Test hook: SIGKILL the trainer once this many steps are done (tests/test_training_resume.py).
    parser.add_argument("--test-kill-at-step", type=int, help=argparse.SUPPRESS)


def check_train_inputs(args: argparse.Namespace, config: Config) -> None:
    """``--data``, ``--init-checkpoint`` and ``--out``, checked before the run
    folder or an MLflow run is created."""
    from pipeline.checkpoint import check_init_net

    if not is_uri(args.data):
        data = Path(args.data)
        if not data.exists():
            raise UsageError(f"--data {args.data}: no such folder (give zerochess selfplay's --out)")
        if not data.is_dir():
            raise UsageError(f"--data {args.data}: is a file, not a shard folder")
        from pipeline.shards import list_shards

        if not list_shards(data):
            raise UsageError(f"--data {args.data}: no shards in the folder (give zerochess selfplay's --out)")
    if args.init_checkpoint:
        check_init_net(config.net, args.init_checkpoint)
    check_output_folder("--out", args.out)


def run(args: argparse.Namespace) -> int:
    from pipeline.training.checkpointing import KillAtStep
    from pipeline.training.trainer import quiet_lightning_logging, train

    quiet_lightning_logging()
    config = config_from_args(args)
    check_train_inputs(args, config)
    callbacks = [KillAtStep(args.test_kill_at_step)] if args.test_kill_at_step is not None else []
    result = train(config, args.data, args.out, init_net=args.init_checkpoint, resume=args.resume,
                   tracking_uri=args.tracking_uri, progress_bar=args.progress, callbacks=callbacks)  # fmt: skip
    print(json.dumps(asdict(result), indent=2))
    return 0
