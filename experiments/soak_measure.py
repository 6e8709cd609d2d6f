"""What experiments/soak.py samples and judges: each role's processes, memory, open files and
disk over time, growth fits, and the checks that no finished game or MLflow run was lost."""

from __future__ import annotations

import csv
import json
import os
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROLE_TITLES = {
    "ray::PoolActor": "pool",
    "ray::TrainerActor": "trainer",
    "ray::GatekeeperActor": "gatekeeper",
    "ray::MatchActor": "match",
    "stockfish": "stockfish",
}
"""Program name prefix of a process -> its role (anything else this process started: ``ray``)."""
JUDGED = ("driver", "pool", "trainer", "gatekeeper")
ROLES = (*JUDGED, "match", "stockfish", "ray")


def role_of(name: str) -> str:
    """The role of a process from its program name (``argv[0]``)."""
    base = os.path.basename(name)
    for prefix, role in ROLE_TITLES.items():
        if base.startswith(prefix):
            return role
    return "ray"


def count_fds(pid: int) -> int:
    """Open file descriptors of ``pid`` (entries of ``/proc/PID/fd``)."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def disk_bytes(folder: Path) -> int:
    """Bytes of the files under ``folder`` (0 if it is missing)."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue  # replaced meanwhile
    return total


@dataclass
class RoleSample:
    """One role at one time: its live processes, summed."""

    procs: int = 0
    rss: int = 0
    fds: int = 0
    pids: list[int] = field(default_factory=list)
    rss_by_pid: dict[int, int] = field(default_factory=dict)


def sample_roles(root_pid: int | None = None) -> dict[str, RoleSample]:
    """RSS and handles of ``root_pid`` (default: this process; the ``driver``)
    and of every process it started, by role."""
    import psutil

    root = psutil.Process(root_pid)
    roles = {role: RoleSample() for role in ROLES}
    try:
        children = root.children(recursive=True)
    except psutil.Error:
        children = []
    for proc in [root, *children]:
        try:
            role = "driver" if proc.pid == root.pid else role_of((proc.cmdline() or [proc.name()])[0])
            rss, fds = proc.memory_info().rss, count_fds(proc.pid)
        except (psutil.Error, OSError):
            continue  # gone meanwhile
        entry = roles[role]
        entry.procs, entry.rss, entry.fds = entry.procs + 1, entry.rss + rss, entry.fds + fds
        entry.pids.append(proc.pid)
        entry.rss_by_pid[proc.pid] = rss
    return roles


@dataclass
class Sample:
    t_s: float
    phase: str  # warmup | soak | drain
    disk: int
    roles: dict[str, RoleSample]


def csv_rows(samples: Iterable[Sample]) -> list[dict[str, Any]]:
    """One row per sample and role (roles without a process left out)."""
    rows = []
    for sample in samples:
        for role, entry in sample.roles.items():
            if entry.procs:
                rows.append({"t_s": round(sample.t_s, 1), "phase": sample.phase, "role": role, "procs": entry.procs,
                             "rss_mb": round(entry.rss / 2**20, 2), "fds": entry.fds,
                             "disk_mb": round(sample.disk / 2**20, 3)})  # fmt: skip
    return rows


CSV_FIELDS = ("t_s", "phase", "role", "procs", "rss_mb", "fds", "disk_mb")


def write_csv(path: Path, samples: Iterable[Sample]) -> None:
    tmp = path.with_suffix(".csv.tmp")
    with open(tmp, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS)
        writer.writeheader()
        writer.writerows(csv_rows(samples))
    os.replace(tmp, path)


# -- growth -------------------------------------------------------------------------


@dataclass(frozen=True)
class Growth:
    """A series' start and end level (medians of its first and last fifth)."""

    first: float
    last: float
    samples: int

    @property
    def change(self) -> float:
        return self.last - self.first

    @property
    def percent(self) -> float:
        return 100.0 * self.change / self.first if self.first else 0.0


def growth(values: list[float], share: float = 0.2) -> Growth | None:
    """Median of the last ``share`` of ``values`` against the median of the
    first ``share`` (at least one value each); None for fewer than 2 values."""
    if len(values) < 2:
        return None
    k = max(1, int(len(values) * share))
    return Growth(statistics.median(values[:k]), statistics.median(values[-k:]), len(values))


def role_growth(samples: list[Sample], role: str, metric: str) -> Growth | None:
    """Growth of ``role``'s ``metric`` (rss, fds) over the ``soak`` phase's
    samples in which the role had a process."""
    values = [float(getattr(s.roles[role], metric)) for s in samples if s.phase == "soak" and s.roles[role].procs]
    return growth(values)


def longest_lived(samples: list[Sample], role: str) -> tuple[int, Growth] | None:
    """The RSS growth of ``role``'s process seen in the most ``soak``
    samples (a restart resets a process: this one's own trend): (pid, growth)."""
    series: dict[int, list[float]] = {}
    for sample in samples:
        if sample.phase == "soak":
            for pid, rss in sample.roles[role].rss_by_pid.items():
                series.setdefault(pid, []).append(float(rss))
    if not series:
        return None
    pid = max(series, key=lambda key: len(series[key]))
    found = growth(series[pid])
    return None if found is None else (pid, found)


def verdict_line(minutes: float, faults: int, rss_percent: float, handles: float, lost: int, duplicated: int) -> str:
    """The bench's last line (the issue's format)."""
    return (f"soak: {minutes:g} minutes, {faults} faults, RSS growth {rss_percent:.1f}%, "
            f"handles growth {handles:g}, games lost {lost}, duplicated {duplicated}")  # fmt: skip


# -- the end checks -----------------------------------------------------------------


def games_check(out: Path) -> tuple[int, int, int]:
    """(recorded, lost, duplicated) game ids of the run in ``out``: lost are
    recorded in ``games.jsonl`` and in no valid shard; duplicated are
    recorded twice, or in two shards, or a recorded game's position twice."""
    from pipeline.shards import ShardError, list_shards, read_shard

    recorded: list[str] = []
    for line in (out / "games.jsonl").read_text(encoding="utf-8").splitlines():
        try:
            recorded.extend(json.loads(line)["games"])
        except (json.JSONDecodeError, KeyError):
            continue  # a torn last line
    duplicated = len(recorded) - len(set(recorded))
    owner: dict[str, str] = {}
    for path in list_shards(out / "shards"):
        try:
            table = read_shard(path, check_legality=False)
        except ShardError:
            continue  # its games count as lost unless another shard holds them
        games, plies = table.column("game_id").to_pylist(), table.column("ply").to_pylist()
        duplicated += table.num_rows - len(set(zip(games, plies)))
        for game in set(games):
            if game in owner:
                duplicated += 1
            owner[game] = path
    lost = len(set(recorded) - set(owner))
    return len(recorded), lost, duplicated


def mlflow_check(uri: str) -> dict[str, str]:
    """Runs of the store at ``uri`` that did not end FINISHED: name -> status."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    return {f"{run.info.run_name} {run.info.run_id[:8]}": run.info.status
            for run in runs if run.info.status != "FINISHED"}  # fmt: skip


# -- faults -------------------------------------------------------------------------
