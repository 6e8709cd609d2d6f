"""``zerochess uci``: the network as a UCI engine on stdin/stdout.

Add it to a GUI or to cutechess-cli as the command ``zerochess uci
--checkpoint PATH`` (see README, "Playing the network").  Without
``--checkpoint`` the net has random weights shaped by ``params.yaml``'s
``net`` section; ``--uniform`` plays without a network.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.champion import CHAMPION, DEFAULT_MODEL_NAME, DEFAULT_RUN, champion_store
from zerochess.commands.common import add_set_argument

if TYPE_CHECKING:  # torch and the search load when the command runs, not for --help
    from pipeline.config import Config
    from pipeline.uci.loading import LoadedPlayer

log = logging.getLogger(__name__)

DEFAULT_PARAMS = "params.yaml"
DEFAULT_THREADS = 1
"""Torch threads of ``play``'s and ``uci``'s network (UCI ``Threads``) unless
asked otherwise.  ``bench/play_threads.py`` on 2 cores: 2 threads took 0.84x
the time of 1 for the first move on a quiet machine, and 4.75x with one other
busy process, so 1 risks little and loses little."""


def add_network_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments that choose the network and its parameters (``uci`` and ``play``)."""
    # GUIs start an engine from any folder, so params.yaml is optional here.
    parser.add_argument(
        "--params",
        help=f"parameter file (default: {DEFAULT_PARAMS} when the working folder has one, "
        "else the embedded defaults; 'none' for the embedded defaults)",
    )
    add_set_argument(parser, "search.c_puct_init=2.0")
    parser.add_argument(
        "--checkpoint",
        help=f"network checkpoint file, or '{CHAMPION}' for the MLflow registry's champion "
        "(default: random weights shaped by params' net section)",
    )
    parser.add_argument(
        "--uniform", action="store_true", help="no network: uniform priors and zero values"
    )
    parser.add_argument("--device", help="auto, cpu or cuda[:N] (default: selfplay.device)")
    parser.add_argument(
        "--precision",
        choices=("auto", "fp32", "bf16"),
        help="number format of the network: auto (bf16 where the CPU computes it natively and it "
        "measures faster, bf16 autocast on CUDA, else fp32), fp32 or bf16 (default: selfplay.precision)",
    )
    parser.add_argument(
        "--model-name",
        default=DEFAULT_MODEL_NAME,
        help=f"registered MLflow model whose '{CHAMPION}' alias is loaded (default {DEFAULT_MODEL_NAME})",
    )
    parser.add_argument(
        "--run",
        default=DEFAULT_RUN,
        help=f"with --checkpoint {CHAMPION}: the zerochess run folder whose mlflow.db holds it "
        f"(default: {DEFAULT_RUN}, zerochess run's --out)",
    )
    parser.add_argument(
        "--tracking-uri",
        help="MLflow tracking store for the champion (default: MLFLOW_TRACKING_URI, else --run's mlflow.db)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_network_arguments(parser)


def engine_config(args: argparse.Namespace) -> Config:
    """The parameters: ``--params`` if given, else ``params.yaml`` when it
    exists in the working directory, else the embedded defaults."""
    from pipeline.config import load_config

    path = args.params
    if path is None:
        path = DEFAULT_PARAMS if Path(DEFAULT_PARAMS).is_file() else "none"
    return load_config(None if path == "none" else path, args.overrides)


def load_from_args(args: argparse.Namespace, config: Config) -> LoadedPlayer:
    """The evaluator chosen by ``--checkpoint``/``--uniform``/``--device``."""
    from pipeline.uci.loading import load_player

    return load_player(
        config,
        checkpoint=args.checkpoint,
        uniform=args.uniform,
        device=args.device,
        model_name=args.model_name,
        tracking_uri=champion_store(args.tracking_uri, args.run) if args.checkpoint == CHAMPION else None,
        seed=config.selfplay.seed,
        precision=args.precision,
        threads=getattr(args, "threads", None) or DEFAULT_THREADS,
    )


def run(args: argparse.Namespace) -> int:
    from pipeline.uci.engine import UciEngine, UciWriter
    from pipeline.uci.player import NetPlayer

    config = engine_config(args)
    loaded = load_from_args(args, config)
    log.debug("zerochess uci: network %s", loaded.description)  # --verbose; stderr stays quiet for GUIs
    player = NetPlayer(loaded.evaluator, config.search, seed=config.selfplay.seed)
    engine = UciEngine(
        player, UciWriter(sys.stdout), set_threads=loaded.set_threads, threads=loaded.threads
    )
    return engine.run(sys.stdin)
