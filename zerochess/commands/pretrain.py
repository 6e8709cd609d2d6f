"""``zerochess pretrain``: train on supervised shards, report held-out move accuracy.

``--data`` is the output of ``zerochess pgn2shards`` or ``zerochess label``.
Training is ``zerochess train`` on ``DATA/train`` (every position, the same
Lightning module, MLflow run and ``OUT/net.pt``); then top-1/top-5 move
accuracy, policy cross-entropy and value MSE on ``DATA/heldout`` go to the
same MLflow run and ``OUT/heldout.json``
(:mod:`pipeline.supervised.pretrain`). Start a later run from the result with
``--init-checkpoint OUT/net.pt``.
"""

from __future__ import annotations

import argparse
import json

from zerochess.commands.checks import check_output_folder
from zerochess.commands.common import add_params_arguments, config_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_params_arguments(parser)
    parser.add_argument("--data", default="runs/pgn",
                        help="folder with train/ and heldout/ shards (default runs/pgn)")
    parser.add_argument("--out", default="runs/pretrain",
                        help="run folder: checkpoints, net.pt, heldout.json, mlflow.db "
                             "(default runs/pretrain)")
    parser.add_argument("--init-checkpoint", metavar="PATH", help="start from this net")
    parser.add_argument("--resume", action="store_true",
                        help="continue from OUT/checkpoints/last.ckpt")
    parser.add_argument("--tracking-uri",
                        help="MLflow store (default: $MLFLOW_TRACKING_URI, else OUT/mlflow.db)")
    bar = parser.add_mutually_exclusive_group()
    bar.add_argument("--progress", dest="progress", action="store_true", default=None,
                     help="always show the progress bar")
    bar.add_argument("--no-progress", dest="progress", action="store_false",
                     help="never show the progress bar")


def run(args: argparse.Namespace) -> int:
    from pipeline.supervised.pretrain import pretrain
    from pipeline.training.trainer import quiet_lightning_logging

    quiet_lightning_logging()
    config = config_from_args(args)
    if args.init_checkpoint:
        from pipeline.checkpoint import check_init_net

        check_init_net(config.net, args.init_checkpoint)
    check_output_folder("--out", args.out)
    result = pretrain(config, args.data, args.out, init_net=args.init_checkpoint,
                      resume=args.resume, tracking_uri=args.tracking_uri,
                      progress_bar=args.progress)
    print(json.dumps(result.summary(), indent=2))
    return 0
