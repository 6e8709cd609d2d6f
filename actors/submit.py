"""The loop as one Ray task on the cluster's training node (``ray submit``'s
entry, ``infra/submit_run.py``, calls :func:`run_on_trainer`).

The loop trains inside the process that runs it, so it must not run on the
head (a CPU node with ``CPU: 0``): it runs as a task that needs the custom
resource ``trainer`` and ``trainer_gpus`` GPUs.  The self-play and gating
actors it starts go wherever their resources are.

With ``run.mode: async`` the loop only coordinates (the trainer is an actor
of its own that needs ``trainer``): its task takes no CPU, GPU nor
``trainer`` and runs wherever Ray puts it (the head: ``CPU: 0`` fits).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import ray


def repo_root() -> Path:
    """The checkout the project is installed from (editable install)."""
    import pipeline

    return Path(pipeline.__file__).resolve().parents[1]


def run_loop(argv: list[str]) -> int:
    """``zerochess run`` in this process, from the checkout's root."""
    from pipeline.cli import main

    os.chdir(repo_root())
    try:
        return main(["run", *argv])
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def loop_mode(run_args: list[str]) -> str:
    """``run.mode`` of the config ``zerochess run RUN_ARGS`` would load (read
    from the checkout's root, as the loop reads it)."""
    import argparse

    from pipeline.commands.common import config_from_args
    from pipeline.commands.run import add_arguments

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
    task on a node with the ``trainer`` resource; returns its exit code.

    ``RAY_AUTH_MODE`` (and the token) come from the environment, as for the
    rest of the cluster (``infra/setup.sh`` writes them into ``~/.bashrc``);
    unset, the mode is ``token``, as for every zerochess command."""
    from actors.selfplay import use_auth_mode

    use_auth_mode()
    ray.init(address=address)
    coordinator = loop_mode(run_args) == "async"  # the trainer actor takes `trainer` itself
    task = ray.remote(run_loop).options(
        num_cpus=0,  # a coordinator: the CPUs stay with the actors it starts
        num_gpus=0 if coordinator else trainer_gpus,
        resources=None if coordinator else {"trainer": 1},
        max_retries=0,  # a rerun of the same command resumes from the ledger
        name="zerochess-run",
    )
    return int(ray.get(task.remote(run_args)))
