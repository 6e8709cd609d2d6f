"""``zerochess train`` end to end: SIGKILL mid-run, ``--resume``, MLflow, export.

One run goes straight through; another is SIGKILLed (test hook) after 8 of 10
steps, two steps after its last checkpoint, and resumed.  Both export the
moving average of the weights (``train.weight_average_decay``), so the
average must survive the resume too.  Both are real
subprocesses writing real local MLflow stores.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import mlflow
import pytest
import torch

from models.net import ArchitectureMismatchError
from models.net_evaluator import NetEvaluator
from pipeline.checkpoint import load_net
from pipeline.config import SelfPlayConfig, load_config
from pipeline.selfplay import SelfPlayWorker
from pipeline.training.module import net_from_checkpoint
from pipeline.training.trainer import RunPaths, train
from tests.helpers import ROOT
from tests.helpers.cli import run_zerochess, set_args
from tests.helpers.nets import TINY_NET
from tests.helpers.searches import TINY_SEARCH
from tests.helpers.shards import make_shards

pytestmark = pytest.mark.slow

STEPS, CHECKPOINT_EVERY, KILL_AT = 10, 3, 8
SETTINGS = [
    *TINY_NET,
    "train.batch_size=8",
    f"train.max_steps={STEPS}",
    f"train.checkpoint_every={CHECKPOINT_EVERY}",
    "train.log_every=1",
    "train.shuffle_buffer=24",
    "train.lr_milestones=[5]",
    "train.threads=1",
    "train.seed=3",
    "train.weight_average_decay=0.5",  # the export is the weight average, which the resume must continue
]


def zerochess_train(data: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_zerochess("train", "--params", "none", "--data", str(data), "--out", str(out), "--no-progress", *extra,
                         *set_args(SETTINGS))  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("train")
    data = base / "shards"
    make_shards(data, shards=2, games=4, max_plies=12)
    straight, interrupted = base / "straight", base / "interrupted"
    done = zerochess_train(data, straight)
    assert done.returncode == 0, done.stderr[-3000:]
    killed = zerochess_train(data, interrupted, "--test-kill-at-step", str(KILL_AT))
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert RunPaths(interrupted).checkpoint.exists() and not RunPaths(interrupted).net.exists()
    resumed = zerochess_train(data, interrupted, "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "data stream resumes after 6 batches" in resumed.stderr
    return {"data": data, "straight": straight, "interrupted": interrupted}


def test_resume_after_sigkill_ends_with_bit_identical_weights(runs: dict[str, Path]) -> None:
    straight = load_net(RunPaths(runs["straight"]).net)
    resumed = load_net(RunPaths(runs["interrupted"]).net)
    for (name, a), b in zip(
        straight.state_dict().items(), resumed.state_dict().values(), strict=True
    ):
        assert torch.equal(a, b), name
    result = json.loads(RunPaths(runs["interrupted"]).result.read_text())
    assert result["steps"] == STEPS
    raw = net_from_checkpoint(torch.load(RunPaths(runs["straight"]).checkpoint, weights_only=False))
    assert not torch.equal(raw.stem.conv.weight, straight.stem.conv.weight)  # exported: the average


def mlflow_runs(out: Path) -> Any:  # a pandas DataFrame
    mlflow.set_tracking_uri(f"sqlite:///{out / 'mlflow.db'}")
    return mlflow.search_runs(experiment_names=["zerochess"])


def test_one_mlflow_run_with_one_value_per_step(runs: dict[str, Path]) -> None:
    table = mlflow_runs(runs["interrupted"])
    assert len(table) == 1
    run = table.iloc[0]
    assert run["status"] == "FINISHED"
    assert run["params.train.max_steps"] == str(STEPS) and run["params.net.filters"] == "8"
    assert run["params.search.num_simulations"] == "200"  # the whole config, flattened
    client = mlflow.MlflowClient(f"sqlite:///{runs['interrupted'] / 'mlflow.db'}")
    straight_run = mlflow_runs(runs["straight"]).iloc[0]
    straight_client = mlflow.MlflowClient(f"sqlite:///{runs['straight'] / 'mlflow.db'}")
    for key in ("loss/total", "loss/policy", "loss/value", "loss/l2", "lr", "metrics/policy_top1"):
        history = sorted((m.step, m.value) for m in client.get_metric_history(run["run_id"], key))
        assert [step for step, _ in history] == list(range(STEPS)), key
        reference = sorted(
            (m.step, m.value)
            for m in straight_client.get_metric_history(straight_run["run_id"], key)
        )
        assert history == reference, key
    rates = {m.step: m.value for m in client.get_metric_history(run["run_id"], "lr")}
    assert rates[4] == pytest.approx(0.02) and rates[5] == pytest.approx(0.002)
    artifacts = [item.path for item in client.list_artifacts(run["run_id"])]
    assert "net.pt" in artifacts and "window.json" in artifacts
    if (ROOT / ".git").exists():
        assert len(run["tags.mlflow.source.git.commit"]) == 40


def test_the_exported_net_plays_self_play(runs: dict[str, Path]) -> None:
    net = load_net(RunPaths(runs["interrupted"]).net)
    selfplay = SelfPlayConfig(
        resign_threshold=-1.0, games_per_task=1, max_plies=4, full_search_prob=1.0
    )
    records = SelfPlayWorker(NetEvaluator(net), TINY_SEARCH, selfplay).play(1, seed=0)
    assert len(records[0].plies) == 4


def test_resuming_with_another_architecture_fails_clearly(runs: dict[str, Path]) -> None:
    config = load_config(None, [*TINY_NET, "net.filters=12"])
    with pytest.raises(
        ArchitectureMismatchError,
        match=r"last\.ckpt.*checkpoint \(8, 119, 3, 3\) vs model \(12, 119, 3, 3\)",
    ):
        train(config, runs["data"], runs["interrupted"], resume=True)
