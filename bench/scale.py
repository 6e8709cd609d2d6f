"""How far does the async loop's driver scale?  The real driver, trainer and
gatekeeper (``run.mode: async``, :func:`actors.async_loop.run_async`) on a
local multi-node Ray cluster (``ray.cluster_utils.Cluster``: a head for the
driver and the gatekeeper, ``--nodes`` self-play nodes, a trainer node), with
the self-play actors replaced by *producers* (``bench/producer.py``) that
skip the search and write valid shards (the real schema, rows of real
self-play games tiled to ``--games`` games a task, fresh game ids) at
``--rate`` positions/s each.

For each number of producers (``--producers``) and rate it runs the loop for
``--seconds`` after a warm-up and reports:

* positions/s recorded (the driver checks a shard before it records it, so
  recorded = checked) and positions/s that reached the trainer's replay
  window (trainable), against the offered rate (producers x rate);
* the driver's busy fraction (its process's CPU seconds / wall seconds: the
  bench process is the driver, Ray's threads in it included), its CPU time
  per shard and its memory (RSS);
* the driver's capacity at half a core: recorded positions/s x 0.5 / busy
  (its CPU time per shard at the rate reached, as if it were alone);
* the time from a shard landing (its file's mtime) to its being trainable
  (the trainer's ``window.json`` naming it): median and max;
* the gatekeeper's latency (a candidate exported to its verdict), median;
* the producers' CPU (their processes' CPU seconds / wall seconds) and what
  saturated first.

The nodes are logical: every process shares this machine's cores (and other
jobs'); on 2 cores the producers, not the driver, saturate first, which is
why the capacity is derived from the driver's CPU time per shard.  Its last
line names the largest producer count that sustained its offered rate
(recorded >= 90% of offered).

    nice -n 19 .venv/bin/python bench/scale.py [--producers 8,32,64,128,256] [--rate 400] [--seconds 20]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import producer  # noqa: E402  (bench/, this script's folder)
from common import number_list  # noqa: E402

SUSTAINED = 0.9
"""Share of the offered rate a point must record to count as sustained."""


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--producers", type=number_list(int, 1), default="8,32,64,128,256",
                        help="producer counts, comma-separated")
    parser.add_argument("--rate", type=number_list(float, 0.0), default="400",
                        help="positions/s per producer, comma-separated (0: flat out)")
    parser.add_argument("--seconds", type=float, default=20.0, help="measured seconds per point")
    parser.add_argument("--warmup", type=float, default=8.0, help="seconds after the first shard before measuring")
    parser.add_argument("--start-s", type=float, default=120.0,
                        help="seconds at most to wait for the first shard and the trainer's first window")
    parser.add_argument("--nodes", type=int, default=8, help="self-play nodes of the cluster")
    parser.add_argument("--node-cpus", type=float, default=16.0, help="logical CPUs per self-play node")
    parser.add_argument("--node-producers", type=int, default=32, help="producers a self-play node holds")
    parser.add_argument("--producer-cpus", type=float, default=0.25, help="selfplay.cpus_per_worker")
    parser.add_argument("--games", type=int, default=64, help="selfplay.games_per_task (games per shard)")
    parser.add_argument("--template-games", type=int, default=8, help="real self-play games the shards are made of")
    parser.add_argument("--window", type=int, default=500_000, help="train.window_positions")
    parser.add_argument("--every", type=int, default=200, help="run.candidate_every_steps")
    parser.add_argument("--events", action="store_true", help="print the driver's events")
    parser.add_argument("--set", action="append", default=[], help="more key=value config overrides")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (its path is printed)")
    return parser.parse_args(argv)


@dataclass
class Point:
    """One configuration's figures."""

    producers: int
    rate: float
    offered: float = 0.0
    recorded: float = 0.0
    trainable: float = 0.0
    busy: float = 0.0
    cpu_ms_per_shard: float = 0.0
    rss_mb: float = 0.0
    capacity: float = 0.0
    lag_median: float = float("nan")
    lag_max: float = float("nan")
    untrained: int = 0
    gate_s: float = float("nan")
    producer_busy: float = 0.0
    shards: int = 0
    positions_per_shard: float = 0.0
    limit: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def sustained(self) -> bool:
        return self.recorded >= SUSTAINED * self.offered


def config_for(args: argparse.Namespace, producers: int) -> Any:
    from pipeline.config import load_config

    overrides = [
        "run.mode=async", f"selfplay.workers={producers}", f"selfplay.cpus_per_worker={args.producer_cpus}",
        f"selfplay.games_per_task={args.games}", "run.selfplay_resource=selfplay", "run.trainer_resource=trainer",
        "run.trainer_cpus=1", "train.threads=1", "gating.cpus_per_worker=0.25", "gating.max_games=2",
        "run.generations=100000", f"run.candidate_every_steps={args.every}", f"run.games_per_generation={args.games}",
        f"train.window_positions={args.window}", "train.checkpoint_every=100000", *args.set,
    ]  # fmt: skip
    return load_config(ROOT / "params.yaml", overrides=overrides, preset="tiny")


def check_rate(rate: float, producers: int, cpu_per_position: float, args: argparse.Namespace) -> None:
    """A producer rate the cluster cannot host fails before anything starts, naming the keys."""
    from pipeline.config import ConfigError

    if rate < 0:
        raise ConfigError(f"--rate must be >= 0 positions/s per producer, got {rate:g}")
    need = rate * cpu_per_position
    if need > args.producer_cpus + 1e-9:
        raise ConfigError(f"--rate {rate:g} positions/s per producer needs {need:.2f} CPU per producer "
                          f"({cpu_per_position * 1e6:.1f} us of CPU a position), more than --producer-cpus "
                          f"(selfplay.cpus_per_worker) {args.producer_cpus:g}")  # fmt: skip
    if producers > args.nodes * args.node_producers:
        raise ConfigError(f"--producers {producers} exceeds --nodes {args.nodes} x --node-producers "
                          f"{args.node_producers} (the cluster's 'selfplay' resource)")  # fmt: skip


class Sampler:
    """The driver process's CPU and memory, the recorded positions, and the
    trainer's window files, every ``every_s``, on a thread of the driver."""

    def __init__(self, board: Any, out: Path, every_s: float = 0.5) -> None:
        self.board, self.out, self.every_s = board, out, every_s
        self.samples: list[tuple[float, float, int, int, float]] = []  # wall, cpu, positions, games, rss MB
        self.first_seen: dict[str, float] = {}  # shard name -> when a trainer window first named it
        self.window_mtime = 0.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(self.every_s)

    def sample(self) -> None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        status = self.board.status
        self.samples.append((time.time(), usage.ru_utime + usage.ru_stime, status.positions, status.games,
                             _rss_mb()))  # fmt: skip
        path = self.out / "trainer" / "window.json"
        try:
            mtime = path.stat().st_mtime
            if mtime != self.window_mtime:
                pieces = json.loads(path.read_text())["pieces"]
                self.window_mtime = mtime
                for piece in pieces:
                    self.first_seen.setdefault(Path(piece["path"]).name.removesuffix(".parquet"), mtime)
        except (OSError, ValueError, KeyError):
            pass


def _rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def run_point(args: argparse.Namespace, producers: int, rate: float, template: str, cpu_per_position: float,
              work: Path) -> Point:  # fmt: skip
    import ray

    from actors.async_loop import run_async
    from actors.runtime import send_by_value
    from pipeline.async_status import AsyncStatus, AsyncStatusBoard
    from pipeline.config import to_dict
    from pipeline.loop.resources import check_resources

    config = config_for(args, producers)
    check_resources(config, ray.cluster_resources())  # a count the cluster cannot hold: named keys
    check_rate(rate, producers, cpu_per_position, args)
    out = work / f"p{producers}-r{rate:g}"
    shards = out / "shards"
    shards.mkdir(parents=True)
    plain = to_dict(config)
    hubs_n = min(producers, args.nodes)
    per_hub = [len(range(i, producers, hubs_n)) for i in range(hubs_n)]
    send_by_value(producer)  # the workers cannot import bench/producer.py
    hubs = [ray.remote(num_cpus=n * args.producer_cpus, resources={"selfplay": n}, max_concurrency=2 * n + 4,
                       max_restarts=0)(producer.ProducerHub).remote(plain, str(shards), template, rate)
            for n in per_hub]  # fmt: skip
    ray.get([hub.cpu_s.remote() for hub in hubs])
    hub_cpu0, hub_t0 = sum(ray.get([hub.cpu_s.remote() for hub in hubs])), time.time()
    board = AsyncStatusBoard(AsyncStatus(str(out), config.run.generations), live=False)
    events: list[tuple[float, str]] = []
    stop = threading.Event()
    sampler = Sampler(board, out)
    window: dict[str, float] = {}

    def timer() -> None:
        started = time.time()  # wait for the first shard and the trainer's first window (at most --start-s)
        while not (board.status.positions and (out / "trainer" / "window.json").exists()) \
                and time.time() - started < args.start_s and not stop.is_set():  # fmt: skip
            time.sleep(0.2)
        time.sleep(args.warmup)
        window["t0"] = time.time()
        window["hub0"], window["hub_t0"] = hub_cpu0, hub_t0
        time.sleep(args.seconds)
        window["t1"] = time.time()
        stop.set()

    sampler.thread.start()
    clock = threading.Thread(target=timer, daemon=True)
    clock.start()
    try:
        run_async(config, out, pool_actor=producer.HubProducers(hubs), stop=stop, board=board,
                  on_event=lambda text: note(events, text, args.events))  # fmt: skip
        hub_cpu1 = sum(ray.get([hub.cpu_s.remote() for hub in hubs]))
        window["hub_t1"] = time.time()
    finally:
        stop.set()
        sampler.stop.set()
        sampler.thread.join()
        for hub in hubs:
            ray.kill(hub)
    return figures(args, producers, rate, out, sampler, events, window, hub_cpu1)


def note(events: list[tuple[float, str]], text: str, show: bool) -> None:
    events.append((time.time(), text))
    if show:
        print(f"  {time.strftime('%H:%M:%S')} {text}", flush=True)


def figures(args: argparse.Namespace, producers: int, rate: float, out: Path, sampler: Sampler,
            events: list[tuple[float, str]], window: dict[str, float], hub_cpu1: float) -> Point:  # fmt: skip
    point = Point(producers, rate, offered=producers * rate)
    t0, t1 = window["t0"], window["t1"]
    inside = [s for s in sampler.samples if t0 <= s[0] <= t1]
    first, last = inside[0], inside[-1]
    span = last[0] - first[0]
    point.recorded = (last[2] - first[2]) / span
    point.busy = (last[1] - first[1]) / span
    point.rss_mb = max(s[4] for s in sampler.samples)
    tasks = (last[3] - first[3]) / args.games
    point.shards = round(tasks)
    point.cpu_ms_per_shard = 1000 * (last[1] - first[1]) / tasks if tasks else float("nan")
    point.capacity = 0.5 * point.recorded / point.busy if point.busy else 0.0
    hub_wall = window.get("hub_t1", t1) - window.get("hub_t0", t0)
    point.producer_busy = (hub_cpu1 - window["hub0"]) / hub_wall if hub_cpu1 else 0.0  # over the hubs' whole run
    records = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines() if line.strip()]
    rows = {entry["task"]: entry["positions"] for entry in records}
    point.positions_per_shard = statistics.mean(rows.values()) if rows else 0.0
    lags, untrained, trainable = [], 0, 0
    for name, positions in rows.items():
        path = out / "shards" / f"{name}.parquet"
        try:
            landed = path.stat().st_mtime
        except OSError:
            continue
        seen = sampler.first_seen.get(name)
        if t0 <= landed <= t1 - 10.0:  # shards with 10 s left to be picked up
            if seen is None:
                untrained += 1
                if args.events:
                    print(f"  late: {name} landed {time.strftime('%H:%M:%S', time.localtime(landed))}, "
                          "in no window of the trainer's", flush=True)  # fmt: skip
            else:
                lags.append(max(0.0, seen - landed))
        if seen is not None and t0 <= seen <= t1:
            trainable += positions
    point.trainable = trainable / (t1 - t0)
    point.untrained = untrained
    if lags:
        point.lag_median, point.lag_max = statistics.median(lags), max(lags)
    point.gate_s = gate_latency(events)
    point.limit = limit(point)
    return point


def gate_latency(events: list[tuple[float, str]]) -> float:
    """Median seconds from a candidate's export to its gate's verdict."""
    import re

    exported: dict[int, float] = {}
    spans = []
    for when, text in events:
        if (found := re.match(r"candidate (\d+) exported", text)) is not None:
            exported.setdefault(int(found.group(1)), when)
        elif (found := re.match(r"candidate (\d+) \(step \d+\): (PROMOTED|rejected)", text)) is not None:
            index = int(found.group(1))
            if index in exported:
                spans.append(when - exported[index])
    return statistics.median(spans) if spans else float("nan")


def limit(point: Point) -> str:
    """What saturated first at this point (a reading of the figures)."""
    if point.busy >= 0.8:
        return "driver CPU"
    if point.untrained or (point.lag_max == point.lag_max and point.lag_max > 10.0):
        return "trainer window (> 10 s)" if point.sustained else "producers + trainer window"
    if not point.sustained:
        return "producers (machine's cores)" if point.busy < 0.5 else "driver"
    return "-"


def producer_cost(template: str, games: int, folder: str) -> float:
    """CPU seconds per position of one producer shard (median of 3), measured here."""
    stand_in = producer.Producer({}, folder, template, 0.0)
    costs = []
    for index in range(3):
        started = time.process_time()
        summary = stand_in.play(f"gen0000-task{index:05d}", 0, games, 0, [])
        costs.append((time.process_time() - started) / summary["positions"])
    return statistics.median(costs)


HEADER = (f"{'producers':>9} {'rate':>6} {'offered':>8} {'recorded':>9} {'trainable':>9} {'busy':>5} "
          f"{'ms/shard':>8} {'RSS MB':>7} {'capacity':>9} {'lag p50':>7} {'lag max':>7} {'late':>4} "
          f"{'gate s':>6} {'prod CPU':>8}  limit")  # fmt: skip


def row(point: Point) -> str:
    return (f"{point.producers:>9} {point.rate:>6.0f} {point.offered:>8.0f} {point.recorded:>9.0f} "
            f"{point.trainable:>9.0f} {point.busy:>5.2f} {point.cpu_ms_per_shard:>8.1f} {point.rss_mb:>7.0f} "
            f"{point.capacity:>9.0f} {point.lag_median:>7.1f} {point.lag_max:>7.1f} {point.untrained:>4} "
            f"{point.gate_s:>6.1f} {point.producer_busy:>8.2f}  {point.limit}")  # fmt: skip


def main(argv: list[str] | None = None) -> list[Point]:
    args = parse(argv)
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

    from pipeline.config import to_dict

    counts, rates = args.producers, args.rate
    work = Path(tempfile.mkdtemp(prefix="zc-bench-scale-"))
    template_config = to_dict(config_for(args, 1))
    template_config["selfplay"]["max_plies"] = 160
    template = producer.make_template(template_config, str(work / "template"), args.template_games)
    cost = producer_cost(template, args.games, str(work / "cost"))
    for producers in counts:  # bad input fails before the cluster starts
        for rate in rates:
            check_rate(rate, producers, cost, args)
    cluster = Cluster(initialize_head=True, connect=False,
                      head_node_args={"num_cpus": 2, "include_dashboard": False})  # fmt: skip
    points: list[Point] = []
    load = os.getloadavg()[0]
    try:
        for _ in range(args.nodes):
            cluster.add_node(num_cpus=args.node_cpus, resources={"selfplay": args.node_producers})
        cluster.add_node(num_cpus=1, resources={"trainer": 1})
        ray.init(address=cluster.address, log_to_driver=False)
        print(f"producer: {cost * 1e6:.1f} us CPU a position (validate + write + digest); "
              f"load average {load:.1f} on {os.cpu_count()} cores", flush=True)  # fmt: skip
        print(HEADER, flush=True)
        for producers in counts:
            for rate in rates:
                point = run_point(args, producers, rate, template, cost, work)
                points.append(point)
                print(row(point), flush=True)
    finally:
        ray.shutdown()
        cluster.shutdown()
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("\nrate: positions/s per producer; offered/recorded/trainable/capacity: positions/s; busy: driver CPU s "
          "per s; capacity: recorded x 0.5 / busy; lag: s from a shard landing to the trainer's window naming it; "
          "late: shards not in a window 10 s after landing; gate s: export to verdict; prod CPU: producers' CPU s "
          f"per s over their whole run. Shards: {statistics.mean(p.positions_per_shard for p in points):.0f} positions. Machine: "
          f"{os.cpu_count()} cores shared with other jobs.")  # fmt: skip
    good = [p for p in points if p.sustained]
    best = max(good, key=lambda p: (p.producers, p.recorded)) if good else max(points, key=lambda p: p.recorded)
    print(f"scale: {best.producers} producers, {best.recorded:.0f} positions/s ingested, driver busy "
          f"{best.busy:.2f}, driver capacity {best.capacity:.0f} positions/s at half a core")  # fmt: skip
    return points


if __name__ == "__main__":
    main()
