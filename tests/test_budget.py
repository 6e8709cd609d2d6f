"""The loop's wall-clock budget: ``run.hours`` and ``zerochess run --hours``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.helpers.cli import child_env, run_zerochess
from zerochess.cli import main
from pipeline.config import ConfigError, load_config
from pipeline.loop.budget import RunClock, clock_text, parse_hours, spent_before, time_left_text
from pipeline.loop_config import RunConfig


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_clock_counts_earlier_sessions_and_ends_at_the_budget() -> None:
    time = FakeTime()
    clock = RunClock(hours=1.0, spent_s=3000.0, now=time)
    assert clock.left_s() == pytest.approx(600.0) and not clock.spent()
    time.now += 599.0
    assert clock.left_s() == pytest.approx(1.0) and not clock.spent()
    assert clock.stamp() == {"elapsed_s": 3599.0}
    time.now += 2.0
    assert clock.left_s() == 0.0 and clock.spent()
    assert clock.deadline() == pytest.approx(time.now)


def test_no_budget_never_ends_and_shows_nothing() -> None:
    time = FakeTime()
    clock = RunClock(hours=0.0, spent_s=10_000.0, now=time)
    time.now += 1e9
    assert clock.left_s() is None and not clock.spent() and clock.deadline() is None
    assert time_left_text(None, 0.0) == ""


def test_the_status_text_counts_down() -> None:
    assert clock_text(3725.9) == "1:02:05"
    assert time_left_text(1000.0 + 90.0, 4 * 3600.0, now=1000.0) == "0:01:30 left of 4 h"
    assert time_left_text(1000.0, 3600.0, now=2000.0) == "0:00:00 left of 1 h"


def test_a_resumed_run_starts_from_the_largest_elapsed_time_in_its_ledger() -> None:
    entries = [{"stage": "init"}, {"stage": "generation", "elapsed_s": 61.5}, {"stage": "generation", "elapsed_s": 130.0},
               {"stage": "clock", "elapsed_s": 99.0}]  # fmt: skip
    assert spent_before(entries) == 130.0
    assert spent_before([{"stage": "init"}]) == 0.0


@pytest.mark.parametrize("text", ["0", "-1", "abc", "nan", "inf", "", "1e400"])
def test_a_budget_that_is_not_a_positive_number_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match=f"--hours must be a number of hours > 0, got {text!r}"):
        parse_hours(text)


def test_parse_hours_takes_fractions() -> None:
    assert parse_hours("0.25") == 0.25 and parse_hours("4") == 4.0


def test_run_config_needs_a_count_or_a_budget() -> None:
    assert RunConfig(generations=0, hours=2.0).generation_limit > 10**9
    assert RunConfig(generations=3, hours=2.0).generation_limit == 3
    with pytest.raises(ConfigError, match="run would never end"):
        RunConfig(generations=0, hours=0.0)
    with pytest.raises(ConfigError, match="run.hours must be >= 0"):
        RunConfig(hours=-1.0)
    with pytest.raises(ConfigError, match="run.hours must be a finite number"):
        RunConfig(hours=float("inf"))


def test_the_cpu_preset_runs_for_a_time_not_a_count() -> None:
    run = load_config(ROOT / "params.yaml", preset="cpu").run
    assert run.generations == 0 and run.hours > 0
    hours = load_config(ROOT / "params.yaml", ["run.hours=4"], preset="cpu").run
    assert hours.hours == 4.0


@pytest.mark.parametrize("value", ["0", "-2", "four", "nan"])
def test_a_bad_hours_option_is_one_line_exit_2_and_starts_nothing(value: str, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    out = tmp_path / "run"
    code = main(["run", "--preset", "tiny", "--hours", value, "--out", str(out)])
    captured = capsys.readouterr()
    errors = [line for line in captured.err.splitlines() if line.strip()]
    assert code == 2 and captured.out == ""
    assert errors == [f"zerochess run: error: --hours must be a number of hours > 0, got {value!r}"]
    assert not out.exists()


def run_with_hours(out: Path, hours: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_zerochess("run", "--preset", "tiny", "--out", str(out), "--hours", hours, "--set", "run.generations=0",
                         "--set", "gating.ladder=[]", *extra, env=child_env("disabled"), timeout=900)  # fmt: skip


def generation_lines(out: Path) -> list[dict]:
    entries = [json.loads(line) for line in (out / "ledger.jsonl").read_text().splitlines()]
    return [entry for entry in entries if entry["stage"] == "generation"]


@pytest.mark.slow
def test_the_sync_loop_stops_at_its_budget_and_goes_on_with_a_larger_one(tmp_path: Path) -> None:
    """A count of 1 ends the first run (whichever comes first); run again
    with a budget smaller than the time its ledger says was spent, it ends at
    once, naming the budget; with a larger budget and a count of 2 it plays
    generation 2, its clock going on from the ledger's; MLflow's runs end
    FINISHED."""
    import mlflow

    out = tmp_path / "run"
    first = run_with_hours(out, "1", "--set", "run.generations=1")
    assert first.returncode == 0, first.stderr[-3000:]
    done = generation_lines(out)
    assert [entry["generation"] for entry in done] == [1] and done[0]["elapsed_s"] > 0
    assert "time budget" not in first.stdout

    spent_h = done[0]["elapsed_s"] / 3600
    second = run_with_hours(out, f"{spent_h / 2:.7f}")  # no count: the budget alone, spent already
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"time budget of {float(f'{spent_h / 2:.7f}'):g} h spent" in second.stdout
    assert "after generation 1" in second.stdout and len(generation_lines(out)) == 1

    third = run_with_hours(out, f"{spent_h + 600 / 3600:.6f}", "--set", "run.generations=2")
    assert third.returncode == 0, third.stderr[-3000:]
    later = generation_lines(out)
    assert [entry["generation"] for entry in later] == [1, 2]
    assert later[1]["elapsed_s"] > later[0]["elapsed_s"]

    mlflow.set_tracking_uri(f"sqlite:///{out}/mlflow.db")
    runs = mlflow.search_runs(search_all_experiments=True)
    assert set(runs["status"]) == {"FINISHED"}


@pytest.mark.slow
def test_the_async_loop_ends_at_its_budget_and_goes_on_with_a_larger_one(tmp_path: Path) -> None:
    """A count of 1 ends the first async run; its gate line carries the clock.
    Run again with a budget below the time spent and no count: it ends at
    once, naming the budget, with no new task, candidate or gate; every
    MLflow run ends FINISHED and every recorded game is in one shard."""
    import tempfile

    from mlflow.tracking import MlflowClient
    from tests.helpers.runs import FIT_TWO_CPUS, assert_games_once, entries, run_command, run_env

    out = tmp_path / "run"
    overrides = {**FIT_TWO_CPUS, "run.mode": "async", "run.generations": 1, "run.hours": 1,
                 "run.candidate_every_steps": 10, "gating.always_promote": "true", "gating.ladder": "[]",
                 "selfplay.games_per_task": 8}  # fmt: skip
    env = run_env(RAY_TMPDIR=tempfile.mkdtemp(prefix="zc-budget-", dir="/tmp"))
    first = subprocess.run(run_command(out, overrides), cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=600)  # fmt: skip
    assert first.returncode == 0, first.stderr[-4000:]
    ledger = entries(out / "ledger.jsonl")
    (gate,) = [entry for entry in ledger if entry["stage"] == "gate"]
    assert gate["elapsed_s"] > 0 and "time budget" not in first.stdout + first.stderr
    games_before = (out / "games.jsonl").read_text()

    budget = f"{gate['elapsed_s'] / 2 / 3600:.7f}"
    second = subprocess.run(run_command(out, {**overrides, "run.generations": 0, "run.hours": budget}), cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert second.returncode == 0, second.stderr[-4000:]
    assert f"time budget of {float(budget):g} h spent" in second.stdout + second.stderr
    assert (out / "games.jsonl").read_text() == games_before
    after = entries(out / "ledger.jsonl")
    assert [e for e in after if e["stage"] != "clock"] == ledger
    assert [e["stage"] for e in after if e not in ledger] == ["clock"]
    assert_games_once(out)
    client = MlflowClient(f"sqlite:///{out}/mlflow.db")
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert runs and {run.info.status for run in runs} == {"FINISHED"}
