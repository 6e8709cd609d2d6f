"""The whole loop on the tiny preset: two generations, resumable, MLflow hierarchy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[1]


def run_loop(out: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    env.pop("MLFLOW_TRACKING_URI", None)
    command = [sys.executable, "-m", "pipeline", "run", "--preset", "tiny", "--out", str(out)]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)


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


@pytest.mark.parametrize("same_architecture", [True, False])
def test_generation_zero_can_start_from_a_pretrained_net(tmp_path: Path, same_architecture: bool) -> None:
    import torch

    from actors.loop import Ledger, Tracker, _initial_best
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
            _initial_best(config, out, ledger, tracker, str(tmp_path / "pretrained.pt"))
        return
    best = _initial_best(config, out, ledger, tracker, str(tmp_path / "pretrained.pt"))
    loaded = load_net(best)
    for name, tensor in pretrained.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], tensor), name
