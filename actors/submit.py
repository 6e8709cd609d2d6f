"""The loop as one Ray task on the cluster's training node (``ray submit``'s
entry, ``infra/submit_run.py``, calls it through
:mod:`zerochess.commands.submit`, which passes the CLI in).

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
from collections.abc import Callable
from pathlib import Path

import ray

from actors.runtime import join_cluster

Entry = Callable[[list[str]], int]
"""A command-line entry point: ``entry(argv)`` returns the exit code."""


def repo_root() -> Path:
    """The checkout the project is installed from (editable install)."""
    import pipeline

    return Path(pipeline.__file__).resolve().parents[1]


def run_entry(entry: Entry, argv: list[str]) -> int:
    """``entry(argv)`` in this process, from the checkout's root."""
    os.chdir(repo_root())
    try:
        return entry(argv)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def submit_loop(entry: Entry, argv: list[str], trainer_gpus: float, address: str, *, coordinator: bool) -> int:
    """Join the cluster at ``address`` and run ``entry(argv)`` (the loop) as a
    task; returns its exit code.  A ``coordinator`` (``run.mode: async``) task
    takes no CPU, GPU nor ``trainer``; otherwise it waits for a node with the
    ``trainer`` resource and ``trainer_gpus`` GPUs.

    ``RAY_AUTH_MODE`` (and the token) come from the environment, as for the
    rest of the cluster (``infra/setup.sh`` writes them into ``~/.bashrc``);
    unset, the mode is ``token``, as for every zerochess command."""
    join_cluster(address)
    task = ray.remote(run_entry).options(
        num_cpus=0,  # a coordinator: the CPUs stay with the actors it starts
        num_gpus=0 if coordinator else trainer_gpus,
        resources=None if coordinator else {"trainer": 1},
        max_retries=0,  # a rerun of the same command resumes from the ledger
        name="zerochess-run",
    )
    return int(ray.get(task.remote(entry, argv)))
