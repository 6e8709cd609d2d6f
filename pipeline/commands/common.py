"""Arguments shared by several subcommands."""

from __future__ import annotations

import argparse

from pipeline.config import Config, load_config


def add_params_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--params",
        default="params.yaml",
        help="parameter file (default: params.yaml; 'none' for the embedded defaults)",
    )
    parser.add_argument("--preset", help="merge presets/NAME.yaml over the params (tiny, cpu, gpu, cluster)")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one parameter, e.g. --set search.num_simulations=100 (repeatable)",
    )


def config_from_args(args: argparse.Namespace) -> Config:
    path = None if args.params == "none" else args.params
    return load_config(path, args.overrides, getattr(args, "preset", None))
