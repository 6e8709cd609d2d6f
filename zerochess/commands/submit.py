"""``zerochess run`` on a Ray cluster's training node, for ``ray submit``'s
entry script (``infra/submit_run.py``): reads the run's mode and hands the
CLI's entry point to :mod:`actors.submit`, which runs it as a Ray task.
(Not a subcommand of its own.)"""

from __future__ import annotations

import argparse
import os

from actors.submit import repo_root

__all__ = ["loop_mode", "repo_root", "run_on_trainer"]


def loop_mode(run_args: list[str]) -> str:
    """``run.mode`` of the config ``zerochess run RUN_ARGS`` would load (read
    from the checkout's root, as the loop reads it)."""
    from zerochess.commands.common import config_from_args
    from zerochess.commands.run import add_arguments

    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    args, _ = parser.parse_known_args(run_args)
    here = os.getcwd()
    os.chdir(repo_root())
    try:
        return config_from_args(args).run.mode
    finally:
        os.chdir(here)


def run_on_trainer(run_args: list[str], trainer_gpus: float, address: str) -> int:
    """Join the cluster at ``address`` and run ``zerochess run RUN_ARGS`` as a
    task on a node with the ``trainer`` resource (any node for ``run.mode:
    async``, whose trainer actor takes ``trainer`` itself); returns its exit code."""
    from actors.submit import submit_loop
    from zerochess.cli import main

    coordinator = loop_mode(run_args) == "async"
    return submit_loop(main, ["run", *run_args], trainer_gpus, address, coordinator=coordinator)
