"""The whole loop on the tiny preset: two generations, resumable, MLflow hierarchy."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers.cli import child_env, run_zerochess


def run_loop(out: Path) -> subprocess.CompletedProcess[str]:
    return run_zerochess("run", "--preset", "tiny", "--out", str(out), env=child_env("token"), timeout=900)


@pytest.mark.slow
def test_tiny_run_two_generations_then_resume_does_nothing(tmp_path: Path) -> None:
    import mlflow
    from mlflow.tracking import MlflowClient

    out = tmp_path / "run"
    first = run_loop(out)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "generation 2:" in first.stdout and "mlflow ui" in first.stdout
    ledger = [json.loads(line) for line in (out / "ledger.jsonl").read_text().splitlines()]
    stages = [(entry["generation"], entry["stage"]) for entry in ledger]
    for generation in (1, 2):
        for stage in ("selfplay", "train", "gate", "generation"):
            assert stages.count((generation, stage)) == 1
    metrics = json.loads((out / "metrics.json").read_text())
    assert [entry["generation"] for entry in metrics["generations"]] == [1, 2]
    assert (out / "elo.png").stat().st_size > 0

    second = run_loop(out)  # everything is in the ledger: nothing is played or trained again
    assert second.returncode == 0, second.stderr[-3000:]
    assert len((out / "ledger.jsonl").read_text().splitlines()) == len(ledger)

    uri = f"sqlite:///{out}/mlflow.db"
    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(search_all_experiments=True)
    assert set(runs["status"]) == {"FINISHED"}
    names = dict(zip(runs["run_id"], runs["tags.mlflow.runName"]))
    parents = dict(zip(runs["run_id"], runs["tags.mlflow.parentRunId"]))
    pipeline = [run_id for run_id, name in names.items() if name.startswith("pipeline")]
    assert len(pipeline) == 1
    generations = [run_id for run_id, name in names.items() if name.startswith("gen")]
    assert len(generations) == 3 and all(parents[g] == pipeline[0] for g in generations)
    trains = [run_id for run_id, name in names.items() if name == "train"]
    assert len(trains) == 2 and all(parents[t] in generations for t in trains)
    champion = MlflowClient(uri).get_model_version_by_alias("zerochess", "champion")
    assert int(champion.version) >= 1
    # MLflow's chart view: a generation's run at step = its generation, and the
    # training runs continuing each other's steps, so together they draw curves.
    client = MlflowClient(uri)
    for run_id in generations:
        if names[run_id] != "gen0000":
            steps = [m.step for m in client.get_metric_history(run_id, "loss/total")]
            assert steps == [int(names[run_id].removeprefix("gen"))]
    first, second = sorted(([m.step for m in client.get_metric_history(t, "loss/total")] for t in trains), key=min)
    assert first and second and max(first) < min(second)


@pytest.mark.parametrize("same_architecture", [True, False])
def test_generation_zero_can_start_from_a_pretrained_net(tmp_path: Path, same_architecture: bool) -> None:
    import torch

    from pipeline.loop.ledger import Ledger
    from pipeline.loop.start import initial_best
    from pipeline.loop.tracker import Tracker
    from models.net import AlphaZeroNet, ArchitectureMismatchError, NetConfig
    from pipeline.checkpoint import load_net, save_net
    from pipeline.config import load_config

    os.environ.pop("MLFLOW_TRACKING_URI", None)
    config = load_config(None, preset="tiny")
    torch.manual_seed(7)
    net_config = config.net if same_architecture else NetConfig(blocks=1, filters=8)
    pretrained = AlphaZeroNet(net_config)
    save_net(pretrained, tmp_path / "pretrained.pt")
    out = tmp_path / "run"
    out.mkdir()
    tracker, ledger = Tracker(config, out), Ledger(out / "ledger.jsonl")
    if not same_architecture:
        with pytest.raises(ArchitectureMismatchError, match="checkpoint"):
            initial_best(config, out, ledger, tracker, str(tmp_path / "pretrained.pt"))
        return
    best = initial_best(config, out, ledger, tracker, str(tmp_path / "pretrained.pt"))
    loaded = load_net(best)
    for name, tensor in pretrained.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], tensor), name


def _selfplay_setup(tmp_path: Path):
    """A tiny config with two 2-game tasks per generation, a shard folder and the
    two ledgers of a run folder."""
    from pipeline.loop.ledger import GAMES_FILE, Ledger
    from pipeline.config import load_config

    config = load_config(None, ["run.games_per_generation=4", "selfplay.games_per_task=2",
                                "selfplay.max_plies=12"], preset="tiny")  # fmt: skip
    shards = tmp_path / "shards"
    shards.mkdir()
    return config, str(shards), Ledger(tmp_path / GAMES_FILE), Ledger(tmp_path / "ledger.jsonl")


def _play(config, shards: str, generation: int, tasks: list[str]) -> list[dict]:
    """Play ``tasks`` in this process as run_selfplay's actors would (same seeds)."""
    from actors.selfplay import SelfPlayActor
    from pipeline.loop.tasks import task_seed
    from pipeline.config import to_dict

    actor = SelfPlayActor(to_dict(config), None, shards, generation)
    return [actor.play_task(task, task_seed(config.selfplay.seed, generation, int(task[-5:])),
                            config.selfplay.games_per_task) for task in tasks]  # fmt: skip


@pytest.mark.parametrize("as_uri", [False, True], ids=["folder", "file-uri"])
def test_check_shards_quarantines_bad_shards_and_records_unrecorded_games(tmp_path: Path, as_uri: bool) -> None:
    from pipeline.loop.shards import check_shards, record_games
    from pipeline.loop.tasks import generation_tasks

    config, folder, games, _ = _selfplay_setup(tmp_path)
    shards = Path(folder).as_uri() if as_uri else folder  # run.shards may be a filesystem URI (s3://, gs://)
    tasks = generation_tasks(config, 1)
    assert tasks == ["gen0001-task00000", "gen0001-task00001"]
    first, second = _play(config, shards, 1, tasks)
    record = record_games(games, 1)
    record(first)
    record(first)  # a task reported twice (played again) is recorded once
    assert [entry["task"] for entry in games.entries] == [tasks[0]]
    assert first["game_ids"] == [f"{tasks[0]}-00000", f"{tasks[0]}-00001"]

    assert check_shards(config, shards, 1, games) == {}
    # the second task's shard was written but never recorded (driver killed): recorded now
    assert games.entries[1] == {"generation": 1, "stage": "games", "task": tasks[1],
                                "games": sorted(second["game_ids"])}  # fmt: skip

    path = Path(folder) / f"{tasks[0]}.parquet"
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size // 2)
    games.entries[1]["games"] = ["someone-else"]  # ids that differ from the shard's
    redo = check_shards(config, shards, 1, games)
    assert set(redo) == set(tasks) and "differ" in redo[tasks[1]]
    for task in tasks:
        assert not (Path(folder) / f"{task}.parquet").exists()
        assert (Path(folder) / "quarantine" / f"{task}.parquet.reason.txt").read_text().strip()
    assert check_shards(config, shards, 1, games) == dict.fromkeys(tasks, "missing")


def test_ensure_shards_plays_a_quarantined_task_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow.parquet as pq

    from actors import loop
    from models.net import AlphaZeroNet
    from pipeline.checkpoint import save_net
    from pipeline.loop.shards import record_games
    from pipeline.loop.tasks import generation_tasks
    from pipeline.shards import read_shard

    config, shards, games, ledger = _selfplay_setup(tmp_path)
    tasks = generation_tasks(config, 1)
    for summary in _play(config, shards, 1, tasks):
        record_games(games, 1)(summary)
    before = pq.read_table(Path(shards) / f"{tasks[1]}.parquet")
    (Path(shards) / f"{tasks[1]}.parquet").write_bytes(b"PAR1 torn")
    save_net(AlphaZeroNet(config.net), tmp_path / "net.pt")
    played: list[list[str]] = []

    def fake_run_selfplay(config, out, games_total, *, net, generation, on_task, mate_rates):
        assert mate_rates == {}  # no measure in this run
        todo = [task for task in generation_tasks(config, generation)
                if not (Path(out) / f"{task}.parquet").exists()]  # fmt: skip
        played.append(todo)
        for summary in _play(config, out, generation, todo):
            on_task(summary)

    monkeypatch.setattr(loop, "run_selfplay", fake_run_selfplay)
    notes: list[str] = []
    loop.ensure_shards(config, shards, 1, str(tmp_path / "net.pt"), games, ledger, notes.append)
    assert played == [[tasks[1]]]
    assert read_shard(Path(shards) / f"{tasks[1]}.parquet").equals(before)  # same seed, same games
    assert (Path(shards) / "quarantine" / f"{tasks[1]}.parquet").read_bytes() == b"PAR1 torn"
    assert [entry["task"] for entry in games.entries] == tasks  # no id recorded twice
    assert [(e["stage"], list(e["tasks"])) for e in ledger.entries] == [("regenerate", [tasks[1]])]
    assert tasks[1] in notes[0]
    loop.ensure_shards(config, shards, 1, str(tmp_path / "net.pt"), games, ledger, notes.append)
    assert played == [[tasks[1]]] and len(ledger.entries) == 1  # all valid: nothing to do
