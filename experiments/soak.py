"""A soak run of the asynchronous loop: does anything grow while it runs?

``run.mode: async`` on the ``cpu`` preset (its CPU shares fitted to two
logical CPUs, ``run.generations`` large enough never to end by itself, a
candidate every 20 steps, gates of at most 4 games: ``SOAK_SETTINGS``) runs in
this process, on a fresh local Ray instance, for ``--minutes``; every
``--fault-every`` minutes one fault, in turn: SIGKILL a self-play pool actor,
the trainer actor, the gatekeeper actor (it lives between gates; killed idle,
the next gate finds it dead), truncate the newest recorded shard to a third
(``--faults`` picks the cycle).  Each time, the kind fired least so far (in
the cycle's order) goes; when its victim does not exist (the gatekeeper before
the first gate, a trainer being restarted), it is tried every second for half
of ``--fault-every``, then the other kinds are tried too and it keeps its turn.  The clock starts with the loop (Ray and the MLflow store
up), so ``--minutes`` is the loop's time.
Every ``--sample-s`` seconds each role's resident memory (RSS) and open file
descriptors (``/proc/PID/fd``) and the run folder's disk use are sampled:

* ``driver``: this process (the async loop's driver runs in it);
* ``pool``, ``trainer``, ``gatekeeper``, ``match``, ``stockfish``: the Ray
  workers titled ``ray::PoolActor`` ... and their Stockfish engines, summed
  over the role's live processes (a killed actor's replacement has a new pid:
  the role goes on);
* ``ray``: every other process this one started (Ray's daemons, idle workers,
  the reaper), summed.

At ``--minutes`` the loop is asked to stop: it then ends as a finished run
does (the pool finishes its tasks, an open gate ends, every shard is checked
again, every MLflow run ends FINISHED).  No stop exists in ``run_async``'s
API, so the bench builds the loop itself (``run_async``'s few lines) with a
subclass whose ``_finished`` lowers ``run.generations`` to the candidates
already gated once asked to stop; a stop that takes longer than
``--drain-minutes`` is interrupted (its MLflow runs end KILLED: reported).

Growth, per role, after ``--warmup-minutes``: the median of the last 20 % of
the samples taken before the stop against the median of the first 20 %
(medians: a killed actor's gap or a restarted one's warm-up is one sample or
two); RSS in percent, handles as a count.  Judged on the persistent roles
(driver, pool, trainer, gatekeeper); ``match``/``stockfish`` live only
during gates and ``ray`` holds idle workers that come and go: shown, not judged.
At the end: every game id of ``games.jsonl`` in exactly one valid shard
(lost: in none; duplicated: recorded twice or in two shards), every MLflow run
of the store FINISHED.  Writes ``soak.csv`` (one row per sample and role) and
``soak.png`` into ``--out`` (the run folder is ``--out``/run); the last line:

    soak: M minutes, K faults, RSS growth G%, handles growth H, games lost 0, duplicated 0

(G and H: the largest over the judged roles).  Exit status 1 when a
criterion fails (growth over ``--max-rss-growth`` % or ``--max-handle-growth``
handles, fewer than ``--min-faults`` faults, a game lost or duplicated, a
run not FINISHED).

    nice -n 5 .venv/bin/python experiments/soak.py --minutes 30 --out /work/runs/soak1 [--fault-every 4] [--sample-s 30]
"""

from __future__ import annotations

import _thread
import argparse
import copy
import dataclasses
import json
import logging
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from soak_measure import (  # noqa: E402, F401 - experiments/ (the tests read all through this script)
    CSV_FIELDS, JUDGED, ROLES, Growth, RoleSample, Sample, csv_rows, disk_bytes, games_check, growth, longest_lived,
    mlflow_check, role_growth, role_of, sample_roles, verdict_line, write_csv,
)

log = logging.getLogger("soak")

FAULTS = ("actor", "trainer", "gatekeeper", "truncate")
FAULT_VICTIMS = {"actor": "pool", "trainer": "trainer", "gatekeeper": "gatekeeper"}
FIT_TWO_CPUS = ["selfplay.cpus_per_worker=0.5", "run.trainer_cpus=0.5", "gating.cpus_per_worker=0.25"]
"""The cpu preset's roles on two logical CPUs (as tests/helpers/runs.py's FIT_TWO_CPUS)."""
SOAK_SETTINGS = ["run.generations=100000", "selfplay.max_restarts=1000", "run.role_max_restarts=1000",
                 "run.candidate_every_steps=20", "gating.max_games=4"]  # fmt: skip
"""Never ending by itself, never giving up on a role; a candidate every 20
steps and gates of 4 games: the gatekeeper is there by the third fault and
works often, and a stop waits for one short gate at most."""


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="soak length before the stop")
    parser.add_argument("--out", required=True, help="folder for soak.csv, soak.png and the run (OUT/run)")
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--fault-every", type=float, default=4.0, help="minutes between two faults (0: none)")
    parser.add_argument("--sample-s", type=float, default=30.0, help="seconds between two samples")
    parser.add_argument("--warmup-minutes", type=float, default=5.0, help="samples before this are not judged")
    parser.add_argument("--drain-minutes", type=float, default=20.0, help="longest wait for the stop")
    parser.add_argument("--max-rss-growth", type=float, default=10.0, help="percent, per judged role")
    parser.add_argument("--max-handle-growth", type=int, default=5, help="handles, per judged role")
    parser.add_argument("--faults", default=",".join(FAULTS), help="the cycle of fault kinds, in order")
    parser.add_argument("--min-faults", type=int, default=None, help="default: minutes // fault-every")
    parser.add_argument("--cpus", type=int, default=2, help="logical CPUs of the Ray instance")
    parser.add_argument("--set", action="append", default=[], help="more key=value overrides")
    return parser.parse_args(argv)


# -- sampling -----------------------------------------------------------------------


def fire(fault: str, run: Path, roles: dict[str, RoleSample]) -> dict[str, Any] | None:
    """Inject ``fault`` now (SIGKILL the role's lowest pid, or truncate the
    newest recorded shard to a third); None when its victim is not there yet."""
    if fault in FAULT_VICTIMS:
        pids = sorted(roles[FAULT_VICTIMS[fault]].pids)
        if not pids:
            return None
        try:
            os.kill(pids[0], signal.SIGKILL)
        except ProcessLookupError:
            return None
        return {"pid": pids[0]}
    tasks = []
    if (run / "games.jsonl").exists():
        for line in (run / "games.jsonl").read_text(encoding="utf-8").splitlines():
            try:
                tasks.append(json.loads(line)["task"])
            except (json.JSONDecodeError, KeyError):
                continue
    for task in reversed(tasks):
        path = run / "shards" / f"{task}.parquet"
        try:
            size = path.stat().st_size
            with open(path, "r+b") as handle:
                handle.truncate(size // 3)
        except FileNotFoundError:
            continue  # quarantined meanwhile
        return {"task": task, "size": size, "kept": size // 3}
    return None


# -- the soak -----------------------------------------------------------------------


class Soak:
    """The sampler and fault thread; ``stop`` is set at ``minutes``."""

    def __init__(self, args: argparse.Namespace, run: Path) -> None:
        self.args, self.run = args, run
        self.cycle = list(dict.fromkeys(kind.strip() for kind in args.faults.split(",") if kind.strip()))
        unknown = sorted(set(self.cycle) - set(FAULTS))
        if unknown or not self.cycle:
            raise ValueError(f"--faults {args.faults!r}: unknown kinds {unknown} (known: {', '.join(FAULTS)})")
        self.samples: list[Sample] = []
        self.faults: list[dict[str, Any]] = []  # fired ones, and skipped ones (marked) to keep the cycle
        self.stop = threading.Event()  # asks the loop to stop
        self.done = threading.Event()  # the loop has ended
        self.started = time.monotonic()
        self.stopped_at: float | None = None
        self.interrupted = False
        self.next_sample: float = 0.0
        self.next_fault: float | None = None  # set on the first tick
        self.thread = threading.Thread(target=self._loop, name="soak-sampler", daemon=True)

    def next_kinds(self, *, patient: bool) -> list[str]:
        """The fault kinds to try now: the least fired so far first, in the
        cycle's order (so a full cycle fires them in turn); only that one
        while ``patient``, then the others (a gatekeeper before the first
        gate: the next kind goes first, the gatekeeper keeps its turn)."""
        fired = [fault["fault"] for fault in self.fired()]
        kinds = sorted(self.cycle, key=lambda kind: (fired.count(kind), self.cycle.index(kind)))
        return kinds[:1] if patient else kinds

    def begin(self) -> None:
        self.started = time.monotonic()
        self.thread.start()

    def fired(self) -> list[dict[str, Any]]:
        return [fault for fault in self.faults if not fault.get("skipped")]

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def phase(self) -> str:
        if self.stop.is_set():
            return "drain"
        return "warmup" if self.elapsed() < 60 * self.args.warmup_minutes else "soak"

    def _loop(self) -> None:
        while not self.done.is_set():
            try:
                self._tick()
            except Exception:  # the soak goes on; the next tick tries again
                log.exception("soak sampler")
            self.done.wait(1.0)

    def _tick(self) -> None:
        """One pass, every second: the stop, a fault when due, a sample when due."""
        every = 60 * self.args.fault_every
        if self.next_fault is None:
            self.next_fault = every if every > 0 else float("inf")
        now = self.elapsed()
        if now >= 60 * self.args.minutes and not self.stop.is_set():
            self.stopped_at = now
            self.stop.set()
            log.warning("%.1f min: asking the loop to stop", now / 60)
        if self.stopped_at is not None and now - self.stopped_at > 60 * self.args.drain_minutes \
                and not self.interrupted:  # fmt: skip
            self.interrupted = True
            log.error("the loop did not stop within %g min: interrupting it", self.args.drain_minutes)
            _thread.interrupt_main()  # KeyboardInterrupt: its MLflow runs end KILLED
        if now >= self.next_fault and not self.stop.is_set():
            late = now - self.next_fault
            roles = sample_roles()
            for fault in self.next_kinds(patient=late < 0.5 * every):
                info = fire(fault, self.run, roles)
                if info is not None:  # else: tried again in a second
                    self.faults.append({"t_s": round(now, 1), "fault": fault, **info})
                    log.warning("%.1f min: fault %s %s", now / 60, fault, info)
                    self.next_fault += every
                    break
            else:
                if late > 0.9 * every:  # no victim at all (nothing started yet): this slot is lost
                    self.faults.append({"t_s": round(now, 1), "fault": "none", "skipped": True})
                    log.warning("%.1f min: no fault (no victim for %.0f s)", now / 60, late)
                    self.next_fault += every
        if now >= self.next_sample:
            sample = Sample(now, self.phase(), disk_bytes(self.run), sample_roles())
            self.samples.append(sample)
            write_csv(Path(self.args.out) / "soak.csv", self.samples)
            self.next_sample += self.args.sample_s


def stoppable_loop(soak: Soak) -> type:
    """:class:`actors.async_loop.AsyncLoop` that ends like a finished run once ``soak.stop`` is set."""
    from actors.async_loop import AsyncLoop

    class StoppableLoop(AsyncLoop):
        def _finished(self) -> bool:
            if soak.stop.is_set() and not self.stopping:
                gated = len(self._gated())
                run = copy.copy(self.config.run)  # replace() would reject 0 (run.generations >= 1)
                object.__setattr__(run, "generations", gated)
                self.config = dataclasses.replace(self.config, run=run)
                self.say(f"soak: stop asked; the run ends at the {gated} candidates gated")
            return super()._finished()

    return StoppableLoop


def run_loop(config: Any, out: Path, soak: Soak, on_event: Callable[[str], None]) -> dict[str, Any]:
    """``run_async`` (actors/async_loop.py) with :func:`stoppable_loop`'s loop."""
    from actors.runtime import cluster_resources
    from pipeline.async_status import AsyncStatus, AsyncStatusBoard
    from pipeline.loop.resources import check_resources
    from pipeline.loop.start import open_run, runs_ended_on_error

    check_resources(config, cluster_resources())
    out, ledger, tracker = open_run(config, out, None)
    board = AsyncStatusBoard(AsyncStatus(str(out), config.run.generations), live=False)
    loop = stoppable_loop(soak)(config, out, ledger, tracker, board, on_event)
    try:
        with runs_ended_on_error(tracker):
            return loop.run(None)
    finally:
        loop.shutdown()


def soak_config(args: argparse.Namespace) -> Any:
    from pipeline.config import load_config

    overrides = ["run.mode=async", *FIT_TWO_CPUS, *SOAK_SETTINGS, *args.set]
    return load_config(ROOT / "params.yaml", overrides=overrides, preset=args.preset)


def summary_table(samples: list[Sample]) -> tuple[list[str], float, float]:
    """The per-role table's lines and the largest RSS growth (%) and handle
    growth over the judged roles."""
    header = (f"{'role':12}{'procs':>6}{'RSS first MB':>14}{'RSS last MB':>13}{'RSS %':>8}"
              f"{'fds first':>11}{'fds last':>10}{'fds +':>7}  judged  longest-lived process")  # fmt: skip
    lines = [header]
    worst_rss, worst_fds = 0.0, 0.0
    for role in ROLES:
        rss, fds = role_growth(samples, role, "rss"), role_growth(samples, role, "fds")
        if rss is None or fds is None:
            lines.append(f"{role:12}  (fewer than 2 samples after warm-up)")
            continue
        procs = max(s.roles[role].procs for s in samples)
        judged = role in JUDGED
        if judged:
            worst_rss, worst_fds = max(worst_rss, rss.percent), max(worst_fds, fds.change)
        lines.append(f"{role:12}{procs:>6}{rss.first / 2**20:>14.1f}{rss.last / 2**20:>13.1f}{rss.percent:>+8.1f}"
                     f"{fds.first:>11.0f}{fds.last:>10.0f}{fds.change:>+7.0f}  {'yes' if judged else 'no ':6}"
                     f"{longest_text(samples, role)}")  # fmt: skip
    disk = growth([float(s.disk) for s in samples if s.phase == "soak"])
    if disk is not None:
        lines.append(f"run folder disk: {disk.first / 2**20:.1f} MB -> {disk.last / 2**20:.1f} MB "
                     f"(shards and candidates accumulate by design; not judged)")  # fmt: skip
    return lines, worst_rss, worst_fds


def longest_text(samples: list[Sample], role: str) -> str:
    found = longest_lived(samples, role)
    if found is None:
        return ""
    pid, trend = found
    return (f"  pid {pid}: {trend.samples} samples, {trend.first / 2**20:.0f} -> {trend.last / 2**20:.0f} MB "
            f"({trend.percent:+.1f}%)")  # fmt: skip


def plot(path: Path, samples: list[Sample], faults: list[dict[str, Any]], warmup_s: float,
         stopped_s: float | None) -> None:  # fmt: skip
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(11, 10), sharex=True)
    minutes = [s.t_s / 60 for s in samples]
    for role in ROLES:
        if not any(s.roles[role].procs for s in samples):
            continue
        rss = [s.roles[role].rss / 2**20 if s.roles[role].procs else float("nan") for s in samples]
        fds = [s.roles[role].fds if s.roles[role].procs else float("nan") for s in samples]
        style = "-" if role in JUDGED else ":"
        axes[0].plot(minutes, rss, style, marker=".", label=role)
        axes[1].plot(minutes, fds, style, marker=".", label=role)
    axes[2].plot(minutes, [s.disk / 2**20 for s in samples], marker=".", color="k")
    axes[0].set_ylabel("RSS (MB, role's processes summed)")
    axes[1].set_ylabel("open file descriptors")
    axes[2].set_ylabel("run folder (MB)")
    axes[2].set_xlabel("minutes")
    axes[0].legend(loc="lower right", fontsize=8, ncol=4)
    for ax in axes:
        ax.axvspan(0, warmup_s / 60, color="0.9")
        if stopped_s is not None:
            ax.axvline(stopped_s / 60, color="k", linestyle="--", linewidth=0.8)
        for fault in faults:
            ax.axvline(fault["t_s"] / 60, color="r", linewidth=0.6, alpha=0.6)
    for fault in faults:
        axes[0].annotate(fault["fault"], (fault["t_s"] / 60, 1), xycoords=("data", "axes fraction"),
                         rotation=90, va="top", fontsize=7, color="r")  # fmt: skip
    axes[0].set_title("async loop soak: grey = warm-up, red = faults, dashed = stop asked")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # started with & it is ignored: the drain limit needs it
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    from pipeline.quiet import quiet_libraries

    quiet_libraries()  # Lightning's own handler prints its notices whatever the root level
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a throwaway local instance
    os.environ.pop("MLFLOW_TRACKING_URI", None)
    os.environ.pop("RAY_ADDRESS", None)
    os.environ["RAY_TMPDIR"] = tempfile.mkdtemp(prefix="zc-soak-", dir="/tmp")  # short: socket paths
    import psutil  # noqa: F401 - fail early when missing

    from actors.runtime import init_ray, shutdown_ray

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    run = out / "run"
    config = soak_config(args)
    events: list[str] = []

    soak = Soak(args, run)

    def on_event(text: str) -> None:
        if not soak.thread.is_alive() and not soak.done.is_set():
            soak.begin()  # the clock starts with the loop (its MLflow store and run ready)
        events.append(text)
        log.warning("%s", text)

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            events.append(record.getMessage())

    logging.getLogger("actors").addHandler(Collect(logging.INFO))

    for attempt in range(3):  # on a loaded machine Ray's 30 s start-up limit can pass
        try:
            init_ray(num_cpus=args.cpus)
            break
        except Exception as error:  # Ray raises a bare Exception here
            log.error("Ray did not start (%s): attempt %d of 3", error, attempt + 1)
            shutdown_ray()
            if attempt == 2:
                raise

    error: BaseException | None = None
    try:
        result = run_loop(config, run, soak, on_event)
    except BaseException as caught:  # noqa: BLE001 - reported below, then raised
        error, result = caught, {}
    finally:
        soak.done.set()
        if soak.thread.is_alive():
            soak.thread.join()
        shutdown_ray()
    write_csv(out / "soak.csv", soak.samples)
    plot(out / "soak.png", soak.samples, soak.fired(), 60 * args.warmup_minutes, soak.stopped_at)
    (out / "faults.json").write_text(json.dumps(soak.faults, indent=1))
    if error is not None:
        print("\n".join(summary_table(soak.samples)[0]))
        print(f"faults: {soak.faults}\nfiles: {out / 'soak.csv'}, {out / 'soak.png'}")
        raise error
    recorded, lost, duplicated = games_check(run)
    unfinished = mlflow_check(result["mlflow"])
    lines, worst_rss, worst_fds = summary_table(soak.samples)
    noticed = {fault: sum(marker in text for text in events) for fault, marker in
               (("actor", "self-play actor lost"), ("trainer", "trainer lost"), ("gatekeeper", "gatekeeper lost"),
                ("truncate", "played again"))}  # fmt: skip
    drain = soak.elapsed() - (soak.stopped_at or soak.elapsed())
    print(f"\nmachine: {os.cpu_count()} cores, shared with other jobs; load average now "
          f"{os.getloadavg()[0]:.1f}; preset {args.preset}, async, {args.cpus} logical CPUs")  # fmt: skip
    print(f"loop: {result['games']} games, {result['positions']:,} positions, step {result['step']}, "
          f"{len(result['candidates'])} candidates gated, best v{result['version']}; stop took {drain:.0f} s")  # fmt: skip
    print(f"faults: {[(f['t_s'], f['fault'] + (' (skipped)' if f.get('skipped') else '')) for f in soak.faults]}; noticed in the driver's events: {noticed}")
    print(f"samples: {len(soak.samples)} every {args.sample_s:g} s; growth = median of the last 20% vs the first "
          f"20% of the samples between warm-up ({args.warmup_minutes:g} min) and the stop")  # fmt: skip
    print("\n".join(lines))
    print(f"games: {recorded} recorded; MLflow runs not FINISHED: {unfinished or 'none'}")
    print(f"files: {out / 'soak.csv'}, {out / 'soak.png'}")
    minimum = args.min_faults if args.min_faults is not None else (
        int(args.minutes // args.fault_every) if args.fault_every > 0 else 0)  # fmt: skip
    ok = (worst_rss <= args.max_rss_growth and worst_fds <= args.max_handle_growth and lost == 0
          and duplicated == 0 and not unfinished and len(soak.fired()) >= minimum)  # fmt: skip
    print(verdict_line(args.minutes, len(soak.fired()), worst_rss, worst_fds, lost, duplicated))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
