"""Does the trainer slow self-play down?  The asynchronous loop against
self-play alone and against the synchronous loop, on a local multi-node Ray
cluster (``ray.cluster_utils.Cluster``): a head (the driver and the gating
match actors, ``--gate-cpus``), a self-play node (1 CPU, resource
``selfplay``) and a trainer node (1 CPU, resource ``trainer``).

1. **alone**: one self-play actor on the self-play node plays tasks back to
   back for ``--alone-s`` seconds: positions/s;
2. **async**: ``run.mode: async`` with that one self-play actor and the trainer
   on its node: the pool's positions/s (between its first and last task)
   while the trainer trains, its ratio to (1), and each role's busy fraction
   (time working / wall time);
3. **sync**: ``run.mode: sync`` with the same config (its generations play
   ``run.games_per_generation`` games, then train ``train.max_steps`` steps
   in the driver, then gate): positions/s over the wall time and each stage's
   share of the wall time.

The nodes are logical: on a machine with fewer cores than roles the roles
still share the physical cores (and with other processes of the machine):
read the ratio with the machine's load beside it (printed).  ``--pin`` makes
the self-play node physical on a 2-core machine: every thread of the
self-play actor runs on core 0 and every other thread of the cluster (the
driver, Ray's daemons, the trainer, the gating actors) on core 1, as if the
self-play node were a machine of its own; the other processes of the machine
are not moved.

    .venv/bin/python bench/loop.py [--preset tiny] [--alone-s 30] [--candidates 2] [--every 40] [--pin]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--alone-s", type=float, default=30.0, help="seconds of self-play alone")
    parser.add_argument("--candidates", type=int, default=2, help="async: candidates exported and gated")
    parser.add_argument("--every", type=int, default=40, help="async: run.candidate_every_steps")
    parser.add_argument("--ratio", type=float, default=4.0, help="async: run.train_samples_per_position")
    parser.add_argument("--gate-cpus", type=float, default=1.0, help="CPUs of the head (gating)")
    parser.add_argument("--set", action="append", default=[], help="more key=value overrides")
    parser.add_argument("--pin", action="store_true",
                        help="self-play actor threads on core 0, the rest of the cluster on core 1")  # fmt: skip
    return parser.parse_args()


SELFPLAY_TITLES = ("ray::PoolActor", "ray::SelfPlayActor")
"""Process titles of the self-play actors (the async pool's and the sync loop's)."""


class Pinner:
    """Every half second: the threads of the self-play actors to ``selfplay``
    cores, every other thread of this process tree to ``rest`` (new
    processes and threads are caught on the next pass)."""

    def __init__(self, selfplay: set[int], rest: set[int]) -> None:
        import threading

        self.selfplay, self.rest = selfplay, rest
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> "Pinner":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()

    def _loop(self) -> None:
        while not self.stop.is_set():
            self.pass_once()
            self.stop.wait(0.5)

    def pass_once(self) -> None:
        import psutil

        me = psutil.Process()
        for proc in [me, *me.children(recursive=True)]:
            try:
                title = " ".join(proc.cmdline())
                cores = self.selfplay if title.startswith(SELFPLAY_TITLES) else self.rest
                for thread in proc.threads():
                    os.sched_setaffinity(thread.id, cores)
            except (psutil.Error, OSError):
                continue  # gone meanwhile


def config_for(args: argparse.Namespace, mode: str):  # noqa: ANN201
    from pipeline.config import load_config

    overrides = [
        f"run.mode={mode}", "selfplay.workers=1", "selfplay.cpus_per_worker=1", "selfplay.threads_per_worker=1",
        "run.selfplay_resource=selfplay", "run.trainer_resource=trainer", "run.trainer_cpus=1", "train.threads=1",
        f"gating.cpus_per_worker={args.gate_cpus / 2}", f"run.generations={args.candidates}",
        f"run.candidate_every_steps={args.every}", f"run.train_samples_per_position={args.ratio}",
        f"train.max_steps={args.every}", *args.set,
    ]  # fmt: skip
    return load_config(ROOT / "params.yaml", overrides=overrides, preset=args.preset)


def alone(config, seconds: float) -> dict[str, float]:  # noqa: ANN001
    """One pool actor on the self-play node, tasks back to back."""
    import ray
    import torch

    from actors.roles import PoolActor
    from models.net import AlphaZeroNet, net_state
    from pipeline.config import to_dict

    torch.manual_seed(config.selfplay.seed)
    weights = ray.put(net_state(AlphaZeroNet(config.net)))
    folder = tempfile.mkdtemp(prefix="zc-bench-alone-")
    actor = ray.remote(num_cpus=1, resources={"selfplay": 1})(PoolActor).remote(to_dict(config), folder)
    ray.get(actor.ready.remote())
    ray.get(actor.play.remote("gen0000-task99999", 1, config.selfplay.games_per_task, 0, [weights]))  # warm-up
    positions, busy, index = 0, 0.0, 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        summary = ray.get(actor.play.remote(f"gen0000-task{index:05d}", index, config.selfplay.games_per_task, 0,
                                            [weights]))  # fmt: skip
        positions += summary["positions"]
        busy += summary["busy_s"]
        index += 1
    wall = time.perf_counter() - started
    ray.kill(actor)
    shutil.rmtree(folder, ignore_errors=True)
    return {"positions_per_s": positions / wall, "tasks": index, "busy": busy / wall}


def run_async_bench(config, out: Path) -> dict[str, float]:  # noqa: ANN001
    from actors.async_loop import run_async

    started = time.perf_counter()
    result = run_async(config, out)
    wall = time.perf_counter() - started
    entries = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    entries.sort(key=lambda entry: entry["time"])
    span = entries[-1]["time"] - entries[0]["time"]
    rate = sum(entry["positions"] for entry in entries[1:]) / span if span > 0 else 0.0
    return {"positions_per_s": rate, "wall_s": wall, "tasks": len(entries), "step": result["step"],
            **{f"busy_{k}": v for k, v in result["busy"].items() if k != "wall_s"}}  # fmt: skip


def run_sync_bench(config, out: Path) -> dict[str, float]:  # noqa: ANN001
    from actors.loop import run_pipeline

    marks: list[tuple[float, str]] = []

    def on_event(text: str) -> None:
        stage = ("selfplay" if ": self-play" in text else "train" if ": training" in text
                 else "gate" if text.endswith(": gate") else "other")  # fmt: skip
        marks.append((time.perf_counter(), stage))

    started = time.perf_counter()
    result = run_pipeline(config, out, on_event=on_event)
    ended = time.perf_counter()
    marks.append((ended, "end"))
    spent = {"selfplay": 0.0, "train": 0.0, "gate": 0.0, "other": 0.0}
    for (when, stage), (after, _) in zip(marks, marks[1:]):
        spent[stage] += after - when
    wall = ended - started
    positions = sum(entry["selfplay"]["positions"] for entry in result["generations"])
    selfplay_s = spent["selfplay"]
    return {"positions_per_s": positions / wall, "positions_per_s_while_playing": positions / selfplay_s if selfplay_s else 0.0,
            "wall_s": wall, "busy_selfplay": selfplay_s / wall, "busy_trainer": spent["train"] / wall,
            "busy_gatekeeper": spent["gate"] / wall}  # fmt: skip


def main() -> None:
    args = parse()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.pop("MLFLOW_TRACKING_URI", None)
    import logging

    logging.basicConfig(level=logging.WARNING)
    from pipeline.quiet import quiet_libraries

    quiet_libraries()  # Lightning's own handler prints its notices whatever the root level
    from actors.runtime import use_auth_mode

    use_auth_mode()
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, connect=False,
                      head_node_args={"num_cpus": args.gate_cpus, "include_dashboard": False})  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="zc-bench-loop-"))
    try:
        cluster.add_node(num_cpus=1, resources={"selfplay": 1})
        cluster.add_node(num_cpus=1, resources={"trainer": 1})
        ray.init(address=cluster.address, log_to_driver=False)
        load = os.getloadavg()[0]
        with Pinner({0}, {1}) if args.pin else contextlib.nullcontext():
            solo = alone(config_for(args, "async"), args.alone_s)
            print(f"alone: {solo['positions_per_s']:.0f} positions/s ({solo['tasks']} tasks)", flush=True)
            both = run_async_bench(config_for(args, "async"), work / "async")
            print(f"async: {json.dumps({k: round(v, 3) for k, v in both.items()})}", flush=True)
            sync_config = config_for(args, "sync")
            sync = run_sync_bench(sync_config, work / "sync")
            print(f"sync: {json.dumps({k: round(v, 3) for k, v in sync.items()})}", flush=True)
    finally:
        ray.shutdown()
        cluster.shutdown()
        shutil.rmtree(work, ignore_errors=True)
    pinned = "; self-play pinned to core 0, the rest of the cluster to core 1" if args.pin else ""
    print(f"\nload average at the start: {load:.1f} on {os.cpu_count()} cores{pinned}")
    print(f"{'':28}{'async':>10}{'sync':>10}")
    print(f"{'self-play positions/s':28}{both['positions_per_s']:>10.0f}{sync['positions_per_s']:>10.0f}"
          f"   (alone: {solo['positions_per_s']:.0f})")  # fmt: skip
    print(f"{'ratio to self-play alone':28}{both['positions_per_s'] / solo['positions_per_s']:>10.2f}"
          f"{sync['positions_per_s'] / solo['positions_per_s']:>10.2f}")  # fmt: skip
    for role in ("selfplay", "trainer", "gatekeeper"):
        print(f"{'busy ' + role:28}{both['busy_' + role]:>10.2f}{sync['busy_' + role]:>10.2f}")
    print(f"{'wall s':28}{both['wall_s']:>10.0f}{sync['wall_s']:>10.0f}")


if __name__ == "__main__":
    main()
