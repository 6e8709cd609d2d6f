"""experiments/soak.py: its sampling (of this test process and of children it
starts), growth, end checks, faults and last line; and one short soak of the
``tiny`` preset with a pool-actor kill and a truncated shard (slow)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.helpers import ROOT
from tests.helpers.cli import child_env

LAST_LINE = re.compile(r"^soak: [\d.]+ minutes, \d+ faults, RSS growth -?[\d.]+%, handles growth -?[\d.]+, "
                       r"games lost \d+, duplicated \d+$")  # fmt: skip


@pytest.fixture(scope="module")
def soak(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    """``experiments/soak.py``, loaded as a module."""
    return bench_script("soak")


def titled(title: str) -> subprocess.Popen[bytes]:
    """A child process of this one whose program name is ``title`` (a sleeping bash)."""
    return subprocess.Popen(["bash", "-c", f"exec -a {title} sleep 60"])


def wait_for_title(pid: int, title: str) -> None:
    give_up = time.monotonic() + 10
    while time.monotonic() < give_up:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
        if cmdline == title.encode():
            return
        time.sleep(0.02)
    raise AssertionError(f"process {pid} never took the title {title}")


def test_role_of(soak: ModuleType) -> None:
    assert soak.role_of("ray::PoolActor") == "pool"
    assert soak.role_of("ray::PoolActor.play") == "pool"
    assert soak.role_of("ray::TrainerActor") == "trainer"
    assert soak.role_of("ray::GatekeeperActor") == "gatekeeper"
    assert soak.role_of("ray::MatchActor") == "match"
    assert soak.role_of("/usr/games/stockfish") == "stockfish"
    assert soak.role_of("/usr/bin/raylet") == "ray"
    assert soak.role_of("ray::IDLE") == "ray"


def test_sample_this_process_and_its_children(tmp_path: Path, soak: ModuleType) -> None:
    import psutil

    before = soak.sample_roles()
    assert before["driver"].procs == 1 and before["driver"].pids == [os.getpid()]
    assert before["driver"].fds == len(os.listdir("/proc/self/fd"))
    rss = psutil.Process().memory_info().rss
    assert abs(before["driver"].rss - rss) < 0.1 * rss
    handles = [open(tmp_path / f"f{i}", "w") for i in range(5)]  # noqa: SIM115 - held open on purpose
    children = [titled("ray::TrainerActor"), titled("stockfish")]
    try:
        for child, title in zip(children, ("ray::TrainerActor", "stockfish")):
            wait_for_title(child.pid, title)
        after = soak.sample_roles()
        assert after["driver"].fds == before["driver"].fds + 5
        assert after["trainer"].pids == [children[0].pid] and after["trainer"].rss > 0
        assert after["stockfish"].pids == [children[1].pid]
        assert after["pool"].procs == 0
    finally:
        for handle in handles:
            handle.close()
        for child in children:
            child.kill()
            child.wait()


def test_growth(soak: ModuleType) -> None:
    flat = soak.growth([100.0] * 10)
    assert flat is not None and flat.percent == 0 and flat.change == 0
    rising = soak.growth([100.0, 100, 101, 105, 110, 115, 120, 125, 130, 150])
    assert rising is not None and (rising.first, rising.last) == (100.0, 140.0) and rising.percent == 40.0
    # medians: one low sample (a killed actor's gap) at either end does not move the levels
    gap = soak.growth([100.0, 20, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 20,
                       100])  # fmt: skip
    assert gap is not None and gap.percent == 0
    assert soak.growth([1.0]) is None and soak.growth([]) is None


def _sample(soak: ModuleType, t: float, phase: str, rss: int, fds: int) -> Any:
    roles = {role: soak.RoleSample() for role in soak.ROLES}
    roles["driver"] = soak.RoleSample(1, rss, fds, [1])
    return soak.Sample(t, phase, 1000, roles)


def test_role_growth_uses_soak_phase_only_and_csv(tmp_path: Path, soak: ModuleType) -> None:
    samples = [_sample(soak, 0, "warmup", 10, 1), *(_sample(soak, t, "soak", 100 + t, 20) for t in range(1, 11)),
               _sample(soak, 11, "drain", 10_000, 99)]  # fmt: skip
    rss = soak.role_growth(samples, "driver", "rss")
    assert rss is not None and (rss.first, rss.last) == (101.5, 109.5)  # medians of the first and last 2 of 10
    assert soak.role_growth(samples, "pool", "rss") is None
    lines, worst_rss, worst_fds = soak.summary_table(samples)
    assert worst_fds == 0 and worst_rss == pytest.approx(100 * 8 / 101.5)
    assert any(line.startswith("driver") for line in lines)
    path = tmp_path / "soak.csv"
    soak.write_csv(path, samples)
    rows = path.read_text().splitlines()
    assert rows[0] == ",".join(soak.CSV_FIELDS) and len(rows) == 1 + len(samples)  # one live role per sample
    assert rows[1].split(",")[:3] == ["0", "warmup", "driver"]


def test_verdict_line(soak: ModuleType) -> None:
    line = soak.verdict_line(30, 7, 3.14159, 0, 0, 0)
    assert line == "soak: 30 minutes, 7 faults, RSS growth 3.1%, handles growth 0, games lost 0, duplicated 0"
    assert LAST_LINE.match(line) and LAST_LINE.match(soak.verdict_line(1.5, 1, -2.0, -3, 2, 1))


def test_disk_bytes(tmp_path: Path, soak: ModuleType) -> None:
    assert soak.disk_bytes(tmp_path / "missing") == 0
    (tmp_path / "a").write_bytes(b"x" * 100)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b").write_bytes(b"y" * 23)
    assert soak.disk_bytes(tmp_path) == 123


def test_fire(tmp_path: Path, soak: ModuleType) -> None:
    (tmp_path / "shards").mkdir()
    (tmp_path / "shards" / "gen0000-task00001.parquet").write_bytes(b"z" * 300)
    (tmp_path / "games.jsonl").write_text(json.dumps({"task": "gen0000-task00000", "games": []}) + "\n"
                                          + json.dumps({"task": "gen0000-task00001", "games": []}) + "\n")  # fmt: skip
    info = soak.fire("truncate", tmp_path, soak.sample_roles())  # the newest recorded task whose shard exists
    assert info == {"task": "gen0000-task00001", "size": 300, "kept": 100}
    assert (tmp_path / "shards" / "gen0000-task00001.parquet").stat().st_size == 100
    assert soak.fire("gatekeeper", tmp_path, soak.sample_roles()) is None  # no victim
    child = titled("ray::GatekeeperActor")
    try:
        wait_for_title(child.pid, "ray::GatekeeperActor")
        assert soak.fire("gatekeeper", tmp_path, soak.sample_roles()) == {"pid": child.pid}
        assert child.wait(timeout=10) == -signal.SIGKILL
    finally:
        child.kill()
        child.wait()


def test_unknown_fault_kind(tmp_path: Path, soak: ModuleType) -> None:
    args = soak.parse(["--out", str(tmp_path), "--faults", "actor,meteor"])
    with pytest.raises(ValueError, match="meteor"):
        soak.Soak(args, tmp_path)


@pytest.mark.slow
def test_short_soak(tmp_path: Path, soak: ModuleType) -> None:
    """About 45 s of the tiny preset's async loop, a pool actor killed and a
    recorded shard truncated: the files, the table and the last line; then
    the end check sees a copied shard (duplicated) and a deleted one (lost)."""
    out = tmp_path / "soak"
    command = [sys.executable, str(ROOT / "experiments" / "soak.py"), "--minutes", "0.75", "--preset", "tiny",
               "--fault-every", "0.3", "--faults", "actor,truncate", "--sample-s", "3", "--warmup-minutes", "0.1",
               "--max-rss-growth", "1000", "--max-handle-growth", "1000", "--min-faults", "1", "--out", str(out)]  # fmt: skip
    done = subprocess.run(command, check=False, cwd=ROOT, env=child_env("disabled"), capture_output=True, text=True,
                          timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    lines = done.stdout.strip().splitlines()
    assert LAST_LINE.match(lines[-1]), lines[-1]
    assert lines[-1].endswith("games lost 0, duplicated 0")
    assert "MLflow runs not FINISHED: none" in done.stdout
    faults = json.loads((out / "faults.json").read_text())
    fired = [f for f in faults if not f.get("skipped")]
    assert fired and fired[0]["fault"] == "actor", faults
    assert int(re.search(r", (\d+) faults,", lines[-1]).group(1)) == len(fired)  # type: ignore[union-attr]
    rows = (out / "soak.csv").read_text().splitlines()
    roles = {row.split(",")[2] for row in rows[1:]}
    assert {"driver", "pool", "ray"} <= roles, roles
    assert (out / "soak.png").stat().st_size > 10_000
    if any(f["fault"] == "truncate" for f in fired):
        task = next(f["task"] for f in fired if f["fault"] == "truncate")
        assert (out / "run" / "shards" / "quarantine" / f"{task}.parquet").exists()
    import pyarrow.parquet as pq

    # the end check itself: a shard copied under another task's name, then one deleted
    run = out / "run"
    recorded, lost, duplicated = soak.games_check(run)
    assert recorded > 0 and (lost, duplicated) == (0, 0)
    shards = sorted((run / "shards").glob("*.parquet"))
    shutil.copy(shards[0], run / "shards" / "gen0000-task99999.parquet")
    games = set(pq.read_table(shards[0], columns=["game_id"]).column("game_id").to_pylist())
    assert soak.games_check(run)[1:] == (0, len(games))
    (run / "shards" / "gen0000-task99999.parquet").unlink()
    shards[0].unlink()
    assert soak.games_check(run)[1] > 0


def test_longest_lived_process_of_a_role(soak: ModuleType) -> None:
    """A killed pool actor's replacement (pid 3) is a new process: the longest-lived one (pid 1) shows its own trend."""
    samples = []
    for t in range(10):
        roles = {role: soak.RoleSample() for role in soak.ROLES}
        other = {2: 50} if t < 5 else {3: 50}
        roles["pool"] = soak.RoleSample(2, 150 + t, 5, [1, *other], {1: 100 + t, **other})
        samples.append(soak.Sample(t, "soak", 0, roles))
    found = soak.longest_lived(samples, "pool")
    assert found is not None and found[0] == 1 and (found[1].first, found[1].last) == (100.5, 108.5)
    assert soak.longest_lived(samples, "trainer") is None


def test_fault_turns(tmp_path: Path, soak: ModuleType) -> None:
    """In turn; a kind without a victim keeps its turn while the next one goes."""
    run = soak.Soak(soak.parse(["--out", str(tmp_path)]), tmp_path)
    assert run.next_kinds(patient=True) == ["actor"]
    run.faults += [{"fault": "actor"}, {"fault": "trainer"}]
    assert run.next_kinds(patient=True) == ["gatekeeper"]
    assert run.next_kinds(patient=False) == ["gatekeeper", "truncate", "actor", "trainer"]
    run.faults += [{"fault": "gatekeeper", "skipped": True}, {"fault": "truncate"}]  # a skipped one does not count
    assert run.next_kinds(patient=True) == ["gatekeeper"]
