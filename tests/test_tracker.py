"""The loop's MLflow bookkeeping after a kill: a run created before the
driver could record its id is found again, never created twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.config import load_config
from pipeline.loop.tracker import PARENT_RUN_FILE, Tracker


@pytest.fixture(autouse=True)
def own_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store of this test's own (``mlflow.set_tracking_uri`` exports the
    first Tracker's URI to the process, which later Trackers would follow)."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/own.db")


def names(tracker: Tracker) -> list[str]:
    """The names of the parent run and of the runs nested under it."""
    runs = tracker.client.search_runs([tracker.experiment_id])
    ours = [run for run in runs if tracker.parent_id in (run.info.run_id, run.data.tags.get("mlflow.parentRunId"))]
    return sorted(run.info.run_name for run in ours)


def test_a_child_run_created_before_a_kill_is_reused(tmp_path: Path) -> None:
    tracker = Tracker(load_config(None, preset="tiny"), tmp_path)
    first = tracker.child_run("candidate0002")
    tracker.finish(first, "KILLED")
    again = Tracker(load_config(None, preset="tiny"), tmp_path)  # the resumed driver, no ledger entry for it
    assert again.child_run("candidate0002") == first
    assert again.client.get_run(first).info.status == "RUNNING"
    assert again.child_run("trainer") != first
    assert names(again) == ["candidate0002", f"pipeline {tmp_path.name}", "trainer"]


def test_a_parent_created_before_its_file_was_written_is_reused(tmp_path: Path) -> None:
    tracker = Tracker(load_config(None, preset="tiny"), tmp_path)
    (tmp_path / PARENT_RUN_FILE).unlink()  # killed between create_run and the file's write
    again = Tracker(load_config(None, preset="tiny"), tmp_path)
    assert again.parent_id == tracker.parent_id
    assert (tmp_path / PARENT_RUN_FILE).exists()
    assert names(again) == [f"pipeline {tmp_path.name}"]


def test_two_run_folders_keep_their_own_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/shared.db")
    one = Tracker(load_config(None, preset="tiny"), tmp_path / "a" / "run")
    two = Tracker(load_config(None, preset="tiny"), tmp_path / "b" / "run")
    assert one.parent_id != two.parent_id
    assert one.child_run("gen0000") != two.child_run("gen0000")


def test_a_candidate_registered_before_a_kill_is_not_registered_twice(tmp_path: Path) -> None:
    tracker = Tracker(load_config(None, preset="tiny"), tmp_path)
    net = tmp_path / "net.pt"
    net.write_bytes(b"weights")
    first, second = tracker.child_run("candidate0001"), tracker.child_run("candidate0002")
    assert tracker.register(first, str(net)) == "1"
    assert tracker.register(second, str(net)) == "2"
    assert tracker.register(second, str(net)) == "2"  # the resumed driver gates candidate 2 again
    versions = tracker.client.search_model_versions(f"name = '{tracker.model_name}'")
    assert sorted(int(v.version) for v in versions) == [1, 2]
    assert str(tracker.client.get_model_version_by_alias(tracker.model_name, "champion").version) == "2"
