"""Shard retention (``run.retain_positions``, ``pipeline/loop/retention.py``,
``actors/async_retention.py``).

* the rule: never a shard of a live window, never an unrecorded (not yet
  validated) one, never one among the newest ``retain_positions`` training
  positions, and a window built later from the newest shards never needs a
  removed one (hypothesis);
* the config refuses a retention below the window, or with a growing
  window, naming both keys and both numbers;
* removals are noted in ``retention.jsonl`` before the delete, on a folder
  and on a non-local pyarrow filesystem; the async driver's sweeps do not
  play a retired task again;
* when the async driver may run it: only after a report of the trainer that
  runs now, while it is idle; a restarted trainer resumes a window it never
  reported, whose shards survive (real trainer, real shards);
* under a running trainer: a tiny async run removes shards and its trainer
  never misses one (slow).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from collections import deque
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.async_pool import PoolRole
from actors.async_retention import RetentionRole
from actors.async_trainer import TrainerRole
from pipeline.config import ConfigError, load_config
from pipeline.loop.ledger import Ledger
from pipeline.loop.retention import (
    RETENTION_FILE,
    ShardInfo,
    load_retired,
    remove_shard,
    retain_generation,
    retain_shards,
    select_removals,
)
from pipeline.loop.tasks import task_name
from tests.helpers import ROOT


def info(index: int, positions: int, recorded: bool = True) -> ShardInfo:
    return ShardInfo(task_name(0, index), positions, recorded)


# -- the rule ------------------------------------------------------------------------


def test_the_newest_positions_are_kept_and_the_boundary_shard_with_them() -> None:
    shards = [info(i, 100) for i in range(6)]  # task 5 is the newest
    removed = select_removals(shards, [], 250)
    # 5, 4 hold 200 < 250 newer positions... 3 crosses the boundary: kept too.
    assert [s.name for s in removed] == [task_name(0, 0), task_name(0, 1), task_name(0, 2)]
    assert select_removals(shards, [], 0) == []
    assert select_removals(shards, [], 10_000) == []


def test_task_numbers_past_their_zero_padding_are_newer() -> None:
    """A long run's task 100000 is newer than its task 99999, though its name sorts first as a string."""
    shards = [info(i, 100) for i in (99_998, 99_999, 100_000, 100_001)]
    removed = select_removals(shards, [], 250)  # 100001, 100000 hold 200; 99999 crosses 250
    assert [s.name for s in removed] == [task_name(0, 99_998)]


def test_never_a_live_window_piece_nor_an_unrecorded_shard() -> None:
    shards = [info(0, 100), info(1, 100, recorded=False), info(2, 100), info(3, 100), info(4, 100)]
    live = [f"/runs/x/shards/{task_name(0, 2)}.parquet"]  # a path, as the trainer reports it
    removed = {s.name for s in select_removals(shards, live, 150)}
    assert removed == {task_name(0, 0)}
    # An unrecorded shard counts 0 positions: it never shortens what is kept.
    assert select_removals([info(0, 100), info(1, 500, recorded=False)], [], 100) == []


def test_shards_are_ordered_by_name_like_the_window() -> None:
    """Version 1's tasks are newer than version 0's, whatever their index."""
    shards = [ShardInfo(task_name(0, 9), 100, True), ShardInfo(task_name(1, 2), 100, True)]
    assert [s.name for s in select_removals(shards, [], 100)] == [task_name(0, 9)]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 300), st.booleans(), st.integers(0, 300)), min_size=1, max_size=25
    ),
    st.integers(1, 2000),
    st.integers(0, 2000),
    st.sets(st.integers(0, 24)),
)
def test_a_later_window_never_needs_a_removed_shard(
    rows: list[tuple[int, bool, int]], window: int, extra: int, live_indexes: set[int]
) -> None:
    """With retain >= the window, a window taken from the newest shards (as
    build_window does: unrecorded shards count their real rows there) never
    reaches a removed shard; removed shards are recorded, outside the live
    window, and have at least retain newer recorded positions."""
    retain = window + extra
    shards = [ShardInfo(task_name(0, i), training if recorded else 0, recorded)
              for i, (training, recorded, _) in enumerate(rows)]  # fmt: skip
    real = {
        task_name(0, i): training if recorded else unrecorded
        for i, (training, recorded, unrecorded) in enumerate(rows)
    }
    live = [task_name(0, i) for i in live_indexes if i < len(rows)]
    removed = {s.name for s in select_removals(shards, live, retain)}
    assert not removed & set(live)
    newest_first = sorted(real, reverse=True)
    taken = 0
    for name in newest_first:  # build_window's walk
        if taken >= window:
            break
        assert name not in removed
        taken += real[name]
    for shard in shards:
        if shard.name in removed:
            assert shard.recorded
            newer = sum(s.training_positions for s in shards if s.name > shard.name and s.recorded)
            assert newer >= retain


# -- the config ----------------------------------------------------------------------


def test_retention_below_the_window_is_refused_with_both_numbers() -> None:
    with pytest.raises(
        ConfigError, match=r"run\.retain_positions \(100\).*train\.window_positions \(500000\)"
    ):
        load_config(ROOT / "params.yaml", ["run.retain_positions=100"])
    with pytest.raises(ConfigError, match=r"run\.retain_positions \(6000\) must be 0 with train\.window_growth > 0 "
                                          r"\(got 0\.4\)"):  # fmt: skip
        load_config(
            ROOT / "params.yaml",
            preset="tiny",
            overrides=["run.retain_positions=6000", "train.window_growth=0.4"],
        )
    with pytest.raises(ConfigError, match=r"run\.retain_positions must be >= 0, got -1"):
        load_config(ROOT / "params.yaml", ["run.retain_positions=-1"])
    assert load_config(ROOT / "params.yaml").run.retain_positions == 0  # off by default
    assert (
        load_config(
            ROOT / "params.yaml", preset="tiny", overrides=["run.retain_positions=5000"]
        ).run.retain_positions
        == 5000
    )
    growing = load_config(
        ROOT / "params.yaml", preset="tiny", overrides=["train.window_growth=0.4"]
    )
    assert growing.run.retain_positions == 0


# -- removing: the ledger, the filesystems, the sweeps -------------------------------


def write_shard_file(folder: Path, name: str, training: int, other: int = 0) -> Path:
    """A stand-in shard: only the ``full_search`` column retention counts."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.parquet"
    pq.write_table(pa.table({"full_search": [True] * training + [False] * other}), path)
    return path


def async_entries(count: int, training: int = 100) -> dict[str, dict[str, Any]]:
    return {task_name(0, i): {"task": task_name(0, i), "games": [f"g{i}"], "positions": training * 2,
                              "training_positions": training, "game_count": 1} for i in range(count)}  # fmt: skip


def test_removals_are_noted_before_the_delete_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    shards = tmp_path / "shards"
    for i in range(5):
        write_shard_file(shards, task_name(0, i), 100)
    write_shard_file(shards, task_name(0, 5), 100)  # landed, not recorded yet
    live = [str(shards / f"{task_name(0, 1)}.parquet")]
    with caplog.at_level("INFO", logger="pipeline.loop.retention"):
        removed = retain_shards(str(shards), tmp_path, async_entries(5), live, 200)
    names = [s.name for s in removed]
    assert names == [task_name(0, 0), task_name(0, 2)]
    assert sorted(p.stem for p in shards.glob("*.parquet")) == [
        task_name(0, i) for i in (1, 3, 4, 5)
    ]
    assert load_retired(tmp_path) == set(names)
    lines = [json.loads(line) for line in (tmp_path / RETENTION_FILE).read_text().splitlines()]
    assert [(line["task"], line["training_positions"], line["positions"]) for line in lines] == \
        [(name, 100, 200) for name in names]  # fmt: skip
    assert all(f"removed shard {name} (100 training positions" in caplog.text for name in names)
    assert (
        retain_shards(str(shards), tmp_path, async_entries(5), live, 200) == []
    )  # nothing more to do


def test_a_noted_shard_left_by_a_crash_is_removed_once_noted(tmp_path: Path) -> None:
    shards = tmp_path / "shards"
    for i in range(3):
        write_shard_file(shards, task_name(0, i), 100)
    Ledger(tmp_path / RETENTION_FILE).append(
        {"stage": "retired", "task": task_name(0, 0)}
    )  # killed before the delete
    assert [s.name for s in retain_shards(str(shards), tmp_path, async_entries(3), [], 150)] == [
        task_name(0, 0)
    ]
    assert len((tmp_path / RETENTION_FILE).read_text().splitlines()) == 1


def test_shards_on_a_pyarrow_filesystem_and_a_uri(tmp_path: Path) -> None:
    """A non-local filesystem (an object store stand-in) deletes with its
    ``delete_file``; a ``file://`` URI works like the folder."""
    bucket = tmp_path / "bucket"
    for i in range(3):
        write_shard_file(bucket / "run", task_name(0, i), 100)
    store = pafs.SubTreeFileSystem(str(bucket), pafs.LocalFileSystem())
    removed = retain_shards("run", tmp_path, async_entries(3), [], 150, filesystem=store)
    assert [s.name for s in removed] == [task_name(0, 0)]
    assert not (bucket / "run" / f"{task_name(0, 0)}.parquet").exists()
    assert remove_shard("run", task_name(0, 0), filesystem=store) is False  # gone already
    uri = (tmp_path / "bucket" / "run").as_uri()
    assert [s.name for s in retain_shards(uri, tmp_path, async_entries(3), [], 100)] == [
        task_name(0, 1)
    ]


def test_the_sync_loop_keeps_its_generation_window(tmp_path: Path) -> None:
    """After generation 2 trained, its window's shards stay; sync's games.jsonl
    has no position counts: they are read from the shards."""
    from pipeline.training.window import Piece, Window

    shards = tmp_path / "shards"
    names = [task_name(g, i) for g in (1, 2) for i in range(2)]
    for name in names:
        write_shard_file(shards, name, 50, 30)
    games = Ledger(tmp_path / "games.jsonl")
    for name in names:
        games.append(
            {"generation": int(name[3:7]), "stage": "games", "task": name, "games": [name]}
        )
    pieces = (Piece(str(shards / f"{names[0]}.parquet"), 80, 50, 0, 50),)
    (tmp_path / "gen0002" / "train").mkdir(parents=True)
    Window(str(shards), 200, 50, pieces).save(tmp_path / "gen0002" / "train" / "window.json")
    config = load_config(ROOT / "params.yaml", preset="tiny",
                         overrides=["train.window_positions=60", "run.retain_positions=60"])  # fmt: skip
    said: list[str] = []
    removed = retain_generation(config, tmp_path, str(shards), games, 2, said.append)
    assert [s.name for s in removed] == [
        names[1]
    ]  # names[0] is in the window, 2 and 3 the newest 60+
    assert "retention removed 1 shard(s) (50 training positions" in said[0]
    assert (
        retain_generation(config, tmp_path, str(shards), games, 3, said.append) == []
    )  # no window.json: nothing


class FakeDriver(PoolRole, TrainerRole, RetentionRole):
    """The parts of the async driver retention and the sweeps touch."""

    def __init__(self, out: Path, recorded: dict[str, dict[str, Any]], retain: int) -> None:
        self.config = load_config(ROOT / "params.yaml", preset="tiny",
                                  overrides=[f"train.window_positions={retain}", f"run.retain_positions={retain}"])  # fmt: skip
        self.out, self.shards = out, str(out / "shards")
        self.recorded = recorded
        self.trainer: Any = object()
        self.trainer_running = False
        self.retain_every_s = 0.0
        self.queue: Any = deque()
        self.known: dict[str, Any] = {}
        self.next_index = 0
        self.said: list[str] = []
        self.in_flight: dict[Any, Any] = {}
        self.flushes = 0
        self.games = SimpleNamespace(flush=self._flush)  # GamesBook's pending lines, written before a pass

    def _flush(self) -> None:
        self.flushes += 1

    def _recorded(self) -> dict[str, dict[str, Any]]:
        return self.recorded

    def say(self, text: str) -> None:
        self.said.append(text)


def test_the_sweeps_do_not_play_a_retired_task_again(tmp_path: Path) -> None:
    shards = tmp_path / "shards"
    for i in range(4):
        write_shard_file(shards, task_name(0, i), 100)
    Ledger(tmp_path / RETENTION_FILE).append({"stage": "retired", "task": task_name(0, 0)})
    (shards / f"{task_name(0, 0)}.parquet").unlink()
    (shards / f"{task_name(0, 1)}.parquet").unlink()  # gone, not on purpose
    for i in (0, 1):  # as if the trainer's window had quarantined both (the tasks _sweep_missing looks at)
        write_shard_file(shards / "quarantine", task_name(0, i), 100)
    driver = FakeDriver(tmp_path, async_entries(4), 100)
    driver._sweep_missing()
    assert [task.name for task in driver.queue] == [task_name(0, 1)]
    shutil.rmtree(shards / "quarantine")
    driver.queue = deque()
    driver._sweep(resume=True)
    assert [task.name for task in driver.queue] == [task_name(0, 1)]
    assert driver.next_index == 4


def test_the_driver_runs_it_only_after_a_report_of_the_running_trainer_while_idle(
    tmp_path: Path,
) -> None:
    shards = tmp_path / "shards"
    for i in range(6):
        write_shard_file(shards, task_name(0, i), 100)
    driver = FakeDriver(tmp_path, async_entries(6), 150)
    left = lambda: sorted(p.stem for p in shards.glob("*.parquet"))
    driver._retain()
    assert len(left()) == 6  # no report yet (a trainer after a (re)start may read its saved window)
    window = [str(shards / f"{task_name(0, 1)}.parquet")]
    driver.trainer_window = (driver.trainer, window)
    driver.trainer_running = True
    driver._retain()
    assert len(left()) == 6  # a run call in flight: it may be building a window
    driver.trainer = object()  # the trainer died and was started again: its report is stale
    driver.trainer_running = False
    driver._retain()
    assert len(left()) == 6
    driver.trainer_window = (driver.trainer, window)  # the new trainer's first report
    driver._retain()
    assert left() == [task_name(0, i) for i in (1, 4, 5)]
    assert driver._retired() == {task_name(0, i) for i in (0, 2, 3)} == load_retired(tmp_path)
    assert "retention: removed 3 shard(s) (300 training positions)" in driver.said[0]
    assert driver.flushes == 1  # the records were on disk before the pass
    write_shard_file(shards, task_name(0, 6), 100)
    driver.recorded = async_entries(7)
    driver._retain()
    assert len(left()) == 4  # once per report
    driver.trainer_window = (driver.trainer, [])
    driver._retain()
    assert left() == [task_name(0, i) for i in (5, 6)]


# -- a real trainer killed and resumed ------------------------------------------------


@pytest.mark.slow
def test_a_resumed_trainer_finds_the_window_it_never_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trainer builds a window, checkpoints it and dies before its report;
    more shards land.  The driver's last report names an older window: a pass
    then would delete the resumed window's shards, so none runs until the new
    trainer reports; it trains on without missing a shard."""
    import torch

    from pipeline.training import continuous

    # Windows move only at segment starts here: on a loaded machine the resumed trainer's
    # first step can come after WINDOW_REFRESH_S, and it would follow the folder first.
    monkeypatch.setattr(continuous, "WINDOW_REFRESH_S", 3600.0)

    from actors.roles import TrainerActor
    from actors.selfplay import SelfPlayActor
    from models.net import AlphaZeroNet
    from pipeline.checkpoint import save_net
    from pipeline.config import to_dict
    from pipeline.loop.retention import folder_shards, shard_stem

    config = load_config(ROOT / "params.yaml", preset="tiny", overrides=[
        "train.checkpoint_every=2", "train.window_positions=48", "run.retain_positions=48",
        "selfplay.games_per_task=2", "train.shuffle_buffer=64"])  # fmt: skip
    plain = to_dict(config)
    shards, trainer_dir = tmp_path / "shards", tmp_path / "trainer"
    player = SelfPlayActor(plain, None, str(shards), 0)
    recorded: dict[str, dict[str, Any]] = {}

    def land(count: int) -> None:
        for _ in range(count):
            index = len(recorded)
            summary = player.play_task(task_name(0, index), index + 1, 2)
            recorded[summary["task"]] = {"task": summary["task"], "games": summary["game_ids"],
                                         "training_positions": summary["full_searches"]}  # fmt: skip

    land(3)
    torch.manual_seed(0)
    init = save_net(AlphaZeroNet(config.net), tmp_path / "init.pt")
    driver = FakeDriver(tmp_path, recorded, 48)
    driver.config = config
    first = TrainerActor(plain, str(shards), str(trainer_dir), str(init))
    report = first.run(4, every=4)  # window W1 at step 0, candidate at step 4
    driver.trainer_window = (driver.trainer, report["window_paths"])
    land(2)
    unreported = first.run(6, every=4)[
        "window_paths"
    ]  # W2 built at step 4, saved at step 6; the report is lost
    del first  # SIGKILL
    land(3)  # W2's shards are no longer among the newest 48 positions
    stale = select_removals(folder_shards(str(shards), recorded), report["window_paths"], 48)
    assert {s.name for s in stale} & {
        shard_stem(p) for p in unreported
    }  # what a pass now would delete
    driver.trainer = object()  # the driver starts a new trainer
    driver._retain()
    assert all(Path(path).exists() for path in unreported)
    with caplog.at_level("WARNING"):
        second = TrainerActor(plain, str(shards), str(trainer_dir), str(init))
        assert second.trainer.resumed_from == 6
        resumed = second.run(7, every=4)
        assert resumed["window_paths"] == unreported  # it reads the window it saved
        driver.trainer_window = (driver.trainer, resumed["window_paths"])
        driver._retain()
        assert driver._retired() and not driver._retired() & {shard_stem(p) for p in unreported}
        assert all(Path(path).exists() for path in unreported)
        assert second.run(12, every=4)["step"] == 8  # the end of W2's segment
        newest = second.run(12, every=4)  # a new window, of the newest shards
        assert newest["step"] == 12 and newest["window_paths"] != unreported
    assert "rebuilding the window" not in caplog.text and "quarantined" not in caplog.text


# -- under a running trainer -------------------------------------------------------------


RUN = {"run.mode": "async", "selfplay.cpus_per_worker": 0.5, "run.trainer_cpus": 0.5, "gating.cpus_per_worker": 0.25,
       "gating.max_games": 2, "gating.ladder": "[]", "gating.always_promote": "true", "run.generations": 1,
       "run.candidate_every_steps": 6, "train.log_every": 2, "train.checkpoint_every": 2,
       "train.window_positions": 64, "run.retain_positions": 96, "train.shuffle_buffer": 64,
       "run.train_samples_per_position": 1.0, "run.games_per_generation": 4}  # fmt: skip


@pytest.mark.slow
def test_retention_under_a_running_async_trainer(tmp_path: Path) -> None:
    """A tiny async run whose window (64 positions) is a shard or two: the
    driver removes older shards while the trainer trains on a window built
    before newer shards landed; the trainer never misses a shard (no window
    rebuilt after a failed read, nothing quarantined), no task is played
    again, and what is left is the newest shards plus the trainer's window."""
    from tests.helpers.runs import entries, run_command, run_env

    from pipeline.training.checkpointing import read_checkpoint

    out = tmp_path / "run"
    env = run_env(RAY_TMPDIR=tempfile.mkdtemp(prefix="zc-retain-", dir="/tmp"))
    done = subprocess.run(
        run_command(out, RUN),
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    text = done.stdout + done.stderr
    assert done.returncode == 0, text[-4000:]
    retired = [entry["task"] for entry in entries(out / RETENTION_FILE)]
    assert retired and "retention: removed" in text
    recorded = [entry["task"] for entry in entries(out / "games.jsonl")]
    assert len(recorded) == len(set(recorded)) and set(retired) <= set(recorded)
    left = {path.stem for path in (out / "shards").glob("*.parquet")}
    assert not left & set(retired) and set(recorded) - set(retired) <= left
    for warning in ("rebuilding the window", "quarantined", "played again", "is gone"):
        assert warning not in text, re.findall(f".*{warning}.*", text)[:3]
    assert not (out / "shards" / "quarantine").exists() or not any(
        (out / "shards" / "quarantine").iterdir()
    )
    state = read_checkpoint(out / "trainer" / "state.pt")
    assert all(Path(piece["path"]).exists() for piece in state["window"]["pieces"])
    shutil.rmtree(env["RAY_TMPDIR"], ignore_errors=True)
