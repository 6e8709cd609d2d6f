"""Entry script for ``ray submit``: run ``zerochess run`` on a Ray cluster.

    ray submit infra/cluster-aws.yaml infra/submit_run.py -- \\
        --preset cluster --out /mnt/zerochess/runs/main

``ray submit`` copies this file to the head node and runs it there with the
head's ``python`` (the venv that infra/setup.sh put on PATH). Every argument
after ``--`` goes to ``zerochess run`` except the two below.

The loop trains inside the process that runs it, so this script does not run
it on the head (a CPU node with ``CPU: 0``): through ``actors/submit.py`` (the
Ray part) it starts one Ray task that needs the custom resource ``trainer`` (the training node type of the cluster
configs) and ``--trainer-gpus`` GPUs, and that task runs the loop. The
self-play and gating actors the loop starts go wherever their resources are
(the GPU self-play nodes). This script waits for the task: if it dies (the
SSH session of ``ray submit`` closes), Ray stops the loop too; run it again
and the loop resumes from its ledger.

Relative ``--params`` and ``--out`` are taken from the root of the installed
checkout (``~/zerochess`` on the cluster), on whichever node runs the loop.
``OUT`` must be on a filesystem that every node mounts at the same path (the
shared NFS folder of the cluster configs): the self-play actors write their
shards there and the loop reads them.

Options of this script:
  --trainer-gpus N   GPUs of the loop's task (default 1; 0 on a CPU cluster)
  --ray-address A    the cluster to join (default: auto, the head's own)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--trainer-gpus", type=float, default=1.0)
    parser.add_argument("--ray-address", default="auto")
    own, run_args = parser.parse_known_args(argv)
    run_args = [*run_args, "--ray-address", own.ray_address]
    out = _option(run_args, "--out", "runs/pipeline")
    started = time.time()
    from zerochess.commands.submit import loop_mode, repo_root, run_on_trainer

    mode = loop_mode(run_args)
    if mode == "async":
        print("submit_run: run.mode async: the loop coordinates from any node; its trainer actor "
              "takes the 'trainer' resource", flush=True)  # fmt: skip
    else:
        print(f"submit_run: the loop waits for a node with the 'trainer' resource "
              f"and {own.trainer_gpus:g} GPU(s)", flush=True)  # fmt: skip
    code = run_on_trainer(run_args, own.trainer_gpus, own.ray_address)
    summary = {"exit": code, "ran_on": "any node" if mode == "async" else "trainer node",
               "seconds": round(time.time() - started, 1), "out": out}  # fmt: skip
    metrics = Path(out) if Path(out).is_absolute() else repo_root() / out
    if (metrics / "metrics.json").exists():  # the run's figures (see actors/loop.py)
        figures = json.loads((metrics / "metrics.json").read_text())
        summary["generations"] = len(figures.get("generations", []))
        if "candidates" in figures:  # run.mode async (see actors/async_loop.py)
            summary["candidates"] = len(figures["candidates"])
        summary["last"] = figures.get("last", {})
    print("submit_run: " + json.dumps(summary, default=str), flush=True)
    return int(code)


def _option(args: list[str], name: str, default: str) -> str:
    """The value of ``name`` in an argument list (``--out X`` or ``--out=X``)."""
    value = default
    for index, arg in enumerate(args):
        if arg == name and index + 1 < len(args):
            value = args[index + 1]
        elif arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
    return value


if __name__ == "__main__":
    sys.exit(main())
