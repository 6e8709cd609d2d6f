"""The loop as one Ray task on the cluster's training node (``ray submit``'s
entry, ``infra/submit_run.py``, calls :func:`run_on_trainer`).

The loop trains inside the process that runs it, so it must not run on the
head (a CPU node with ``CPU: 0``): it runs as a task that needs the custom
resource ``trainer`` and ``trainer_gpus`` GPUs.  The self-play and gating
actors it starts go wherever their resources are.
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


def run_on_trainer(run_args: list[str], trainer_gpus: float, address: str) -> int:
    """Join the cluster at ``address`` and run ``zerochess run RUN_ARGS`` as a
    task on a node with the ``trainer`` resource; returns its exit code.

    ``RAY_AUTH_MODE`` (and the token) come from the environment, as for the
    rest of the cluster (``infra/setup.sh`` writes them into ``~/.bashrc``)."""
    ray.init(address=address)
    task = ray.remote(run_loop).options(
        num_cpus=0,  # a coordinator: the CPUs stay with the actors it starts
        num_gpus=trainer_gpus,
        resources={"trainer": 1},
        max_retries=0,  # a rerun of the same command resumes from the ledger
        name="zerochess-run",
    )
    return int(ray.get(task.remote(run_args)))
