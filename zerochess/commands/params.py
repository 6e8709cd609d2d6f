"""``zerochess params``: validate the parameter file and show the values in force."""

from __future__ import annotations

import argparse

from zerochess.commands.common import add_params_arguments, config_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_params_arguments(parser)
    parser.add_argument("--yaml", action="store_true", help="print nested YAML instead of dotted keys")


def run(args: argparse.Namespace) -> int:
    from pipeline.config import dump_yaml, flatten

    config = config_from_args(args)
    if args.yaml:
        print(dump_yaml(config), end="")
    else:
        for key, value in flatten(config).items():
            print(f"{key}={value}")
    return 0
