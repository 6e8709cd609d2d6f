"""Arguments shared by several subcommands."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pipeline.config imports torch (through models.net): only when a command runs
    from pipeline.config import Config


def add_params_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--params",
        default="params.yaml",
        help="parameter file (default: params.yaml; 'none' for the embedded defaults)",
    )
    parser.add_argument("--preset", help="merge presets/NAME.yaml over the params (tiny, cpu, demo, gpu, cluster, endgame)")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one parameter, e.g. --set search.num_simulations=100 (repeatable)",
    )


def config_from_args(args: argparse.Namespace) -> Config:
    from pipeline.config import load_config

    path = None if args.params == "none" else args.params
    return load_config(path, args.overrides, getattr(args, "preset", None))
