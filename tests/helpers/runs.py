"""A real ``zerochess run`` in a child process, for the tests that drive one
(``tests/test_chaos.py``, ``test_async_loop.py``, ``test_cluster_local.py``,
``test_budget.py``, ``test_retention.py``, ``test_scale.py``):
the run's ledgers, its processes (found by a tag in their environment or by
Ray's temp dir), a driver watched by a fault injector, and the checks of a
finished async run (every game once, every MLflow run FINISHED).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path
from typing import Any, Protocol

import pytest

from . import ROOT
from .cli import child_env, set_args, zerochess_command

TAG_ENV = "ZEROCHESS_CHAOS_TAG"
# The three roles of a tiny async run fit the two logical CPUs of this machine.
FIT_TWO_CPUS: dict[str, Any] = {
    "run.mode": "async",
    "selfplay.cpus_per_worker": 0.5,
    "run.trainer_cpus": 0.5,
    "gating.cpus_per_worker": 0.25,
    "gating.max_games": 2,  # one pair against the best, one against the ladder: gates stay short
}


# -- the run's files -----------------------------------------------------------------


def entries(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of an append-only ledger (a torn last line is skipped)."""
    if not path.exists():
        return []
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            found.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return found


# -- the run's processes -------------------------------------------------------------


def tagged(tag: str, ray_tmp: str) -> list[Any]:
    """Processes of a run: the tag in their environment, or Ray's temp dir in
    their command line, and their descendants (never this process or its ancestors)."""
    import psutil

    spare = {os.getpid()} | {p.pid for p in psutil.Process().parents()}
    found: dict[int, Any] = {}
    for proc in psutil.process_iter(["cmdline", "environ"]):
        if proc.pid in spare:
            continue
        environ = proc.info["environ"] or {}
        cmdline = " ".join(proc.info["cmdline"] or [])
        if environ.get(TAG_ENV) == tag or environ.get("RAY_TMPDIR") == ray_tmp or ray_tmp in cmdline:
            found[proc.pid] = proc
            try:
                found.update({c.pid: c for c in proc.children(recursive=True) if c.pid not in spare})
            except psutil.Error:
                pass
    return list(found.values())


def named(tag: str, ray_tmp: str, prefix: str) -> list[Any]:
    """The run's processes whose program name starts with ``prefix``
    (``ray::PoolActor``, ``stockfish``), by process id."""
    import psutil

    found = []
    for proc in tagged(tag, ray_tmp):
        try:
            name = (proc.cmdline() or [""])[0]
        except psutil.Error:
            continue
        if os.path.basename(name).startswith(prefix):
            found.append(proc)
    return sorted(found, key=lambda proc: proc.pid)


def describe(procs: list[Any]) -> list[str]:
    """``pid command line`` of each process still there."""
    import psutil

    lines = []
    for proc in procs:
        try:
            lines.append(f"{proc.pid} {' '.join(proc.cmdline())[:150]}")
        except psutil.Error:
            pass
    return lines


def assert_none_left(tag: str, ray_tmp: str, when: str, grace_s: float = 30.0) -> None:
    """No process of the run is alive ``grace_s`` seconds from now."""
    leftovers = tagged(tag, ray_tmp)
    give_up = time.monotonic() + grace_s
    while leftovers and time.monotonic() < give_up:
        time.sleep(0.5)
        leftovers = tagged(tag, ray_tmp)
    assert not leftovers, f"processes of the run alive {grace_s:.0f} s {when}: {describe(leftovers)}"


def kill_all(procs: list[Any], timeout: float = 10.0) -> None:
    """SIGKILL ``procs`` (by process id) and reap them (waiting up to ``timeout`` seconds)."""
    import psutil

    for proc in procs:
        with suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(procs, timeout=timeout)


def stop_all(procs: list[Any], grace_s: float = 10.0) -> None:
    """SIGTERM ``procs`` (by process id), then SIGKILL and reap those still alive
    ``grace_s`` seconds later."""
    import psutil

    for proc in procs:
        with suppress(psutil.Error):
            proc.send_signal(signal.SIGTERM)
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    kill_all(alive, timeout=5.0)


# -- a driver under a fault injector --------------------------------------------------


def run_command(out: Path, overrides: dict[str, Any]) -> list[str]:
    """``zerochess -v run --preset tiny --out OUT --no-live --set K=V ...``: ``-v``
    for the stage lines and log records the tests read on stderr (a resumed
    training, Lightning's checkpoint restore); the venv's ``zerochess`` script
    where there is one (the process names a user sees)."""
    script = Path(sys.executable).with_name("zerochess")
    args = ["-v", "run", "--preset", "tiny", "--out", str(out), "--no-live", *set_args(overrides)]
    return [str(script), *args] if script.exists() else zerochess_command(*args)


def run_env(**extra: str) -> dict[str, str]:
    """This environment for a child run: Ray auth off (a throwaway cluster),
    no inherited MLflow store or Ray address, plus ``extra``."""
    return child_env("disabled", **extra)


class Injector(Protocol):
    """Fires faults as a run reaches them."""

    events: dict[str, dict[str, Any]]

    def step(self, driver: subprocess.Popen[bytes]) -> None: ...

    def finish(self) -> None:
        """Called once the runs are over, before Ray's temp dir is removed."""


def run_watched(command: list[str], env: dict[str, str], injector: Injector, logs: Path,
                deadline: float) -> tuple[int, str]:  # fmt: skip
    """One driver run while ``injector.step`` is called every 50 ms; its
    return code and stderr (stdout and stderr go to ``logs``.out/.err)."""
    with open(logs.with_suffix(".out"), "wb") as stdout, open(logs.with_suffix(".err"), "wb") as stderr:
        driver = subprocess.Popen(command, cwd=ROOT, env=env, stdout=stdout, stderr=stderr)
        try:
            while driver.poll() is None:
                if time.monotonic() > deadline:
                    pytest.fail(f"the run did not finish in time; events so far: {injector.events}")
                injector.step(driver)
                time.sleep(0.05)
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.wait(timeout=60)
    return driver.returncode, logs.with_suffix(".err").read_text(errors="replace")


def run_killed_then_resumed(
    overrides: dict[str, Any], out: Path, env: dict[str, str], injector: Injector, logs: Path, deadline: float,
    tag: str, ray_tmp: str, *, exit_by_sigkill: bool,
) -> tuple[str, str]:  # fmt: skip
    """The chaos pattern: a run that the injector's driver kill must end
    (``exit_by_sigkill``: its exit status is SIGKILL's), nothing of it left
    behind, then the same command again, which must finish (exit 0) with
    nothing left behind either; the two stderr texts.  Whatever is still
    tagged at the end is killed, and ``ray_tmp`` removed."""
    try:
        code, first_err = run_watched(run_command(out, overrides), env, injector, logs / "first", deadline)
        assert "driver" in injector.events, f"the driver kill never fired (exit {code}): {first_err[-3000:]}"
        if exit_by_sigkill:
            assert code == -signal.SIGKILL, first_err[-3000:]
        # Nothing the killed driver started outlives it for long (Ray's agents alone
        # would linger a minute or two: init_ray's reaper ends them).
        assert_none_left(tag, ray_tmp, "after the driver was killed")
        code, second_err = run_watched(run_command(out, overrides), env, injector, logs / "second", deadline)
        assert code == 0, second_err[-5000:]
        assert_none_left(tag, ray_tmp, "after the run finished")
    finally:
        kill_all(tagged(tag, ray_tmp))
        try:
            injector.finish()  # may read Ray's session logs
        finally:
            shutil.rmtree(ray_tmp, ignore_errors=True)
    return first_err, second_err


# -- checks of a finished async run ---------------------------------------------------


def assert_games_once(out: Path) -> dict[str, str]:
    """Every recorded game id of ``OUT/games.jsonl`` is in exactly one valid
    shard, once, and every shard's positions carry the generation (sync) or
    net version (async) of its task name; returns game -> shard."""
    from pipeline.loop.tasks import parse_task
    from pipeline.shards import list_shards, read_shard

    recorded = [game for entry in entries(out / "games.jsonl") for game in entry["games"]]
    assert len(recorded) == len(set(recorded)) > 0
    owner: dict[str, str] = {}
    for path in list_shards(out / "shards"):
        table = read_shard(path, check_legality=False)
        version, _ = parse_task(Path(path).stem)  # type: ignore[misc]
        assert set(table.column("generation").to_pylist()) == {version}, path
        games, plies = table.column("game_id").to_pylist(), table.column("ply").to_pylist()
        assert len(set(zip(games, plies))) == table.num_rows, f"{path}: a position twice"
        for game in set(games):
            assert game not in owner, f"game {game} in {owner.get(game)} and {path}"
            owner[game] = path
    assert sorted(owner) == sorted(recorded)
    return owner


def assert_mlflow(out: Path, candidates: int) -> list[Any]:
    """One parent run; the initial net's run, the trainer's run and one run per
    candidate nested under it; all FINISHED."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{out}/mlflow.db")
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    names = sorted(run.info.run_name for run in runs)
    expected = [f"pipeline {out.name}", "gen0000", "trainer", *(f"candidate{i:04d}" for i in range(1, candidates + 1))]
    assert names == sorted(expected), names
    assert {run.info.run_name: run.info.status for run in runs if run.info.status != "FINISHED"} == {}
    parent = next(run for run in runs if run.info.run_name.startswith("pipeline")).info.run_id
    assert all(run.data.tags.get("mlflow.parentRunId") == parent for run in runs if run.info.run_id != parent)
    trainer = next(run for run in runs if run.info.run_name == "trainer")
    assert "loss/total" in trainer.data.metrics and "by_positions/loss/total" in trainer.data.metrics
    by_positions = client.get_metric_history(trainer.info.run_id, "by_positions/loss/total")
    by_step = client.get_metric_history(trainer.info.run_id, "loss/total")
    assert max(m.step for m in by_positions) > max(m.step for m in by_step)  # positions, not steps
    return runs

