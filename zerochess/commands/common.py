"""Arguments and output helpers shared by several subcommands."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pipeline.config imports torch (through models.net): only when a command runs
    from rich.console import Console

    from pipeline.config import Config


def add_params_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--params",
        help="parameter file (default: params.yaml of the working folder, else the project's own, the recipe; "
             "'none' for the embedded defaults)",
    )  # fmt: skip
    parser.add_argument("--preset", help="merge presets/NAME.yaml over the params (tiny, cpu, demo, gpu, cluster, endgame)")
    add_set_argument(parser)


def add_set_argument(parser: argparse.ArgumentParser, example: str = "search.num_simulations=100") -> None:
    """``--set KEY=VALUE`` (repeatable): parameter overrides, into ``args.overrides``."""
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help=f"override one parameter, e.g. --set {example} (repeatable)")  # fmt: skip


RAY_ADDRESS_HELP = "Ray cluster to join, e.g. auto (default: RAY_ADDRESS, else start a local one)"


def add_ray_argument(parser: argparse.ArgumentParser, text: str = RAY_ADDRESS_HELP) -> None:
    """``--ray-address``: the Ray cluster a command joins (``init_ray``'s ``address``)."""
    parser.add_argument("--ray-address", help=text)


def params_file(value: str | None) -> str | None:
    """``--params``: None for ``none`` (the embedded defaults); when not given,
    ``params.yaml`` of the working folder, else the project's own."""
    if value == "none":
        return None
    if value is None:
        from pipeline.resources import recipe_params

        return str(recipe_params())
    return value


def config_from_args(args: argparse.Namespace) -> Config:
    from pipeline.config import load_config

    return load_config(params_file(args.params), args.overrides, getattr(args, "preset", None))


def print_event(console: Console, text: str) -> None:
    """One status line, never wrapped: off a terminal rich would cut it at 80
    columns, which breaks grepping the log."""
    console.print(text, style="bold", markup=False, highlight=False, soft_wrap=True)
