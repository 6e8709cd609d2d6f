"""Pretraining: held-out metrics, the end-to-end pgn2shards -> pretrain run, Ray over files."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import chess
import numpy as np
import pyarrow as pa
import pytest
import torch
from torch import nn

from models.net import AlphaZeroNet, NetConfig
from pipeline.checkpoint import load_net
from tests.helpers import ROOT
from zerochess.cli import main
from pipeline.shards import decode_targets, load_shards
from pipeline.supervised.config import SupervisedConfig
from pipeline.supervised.convert import convert_files
from pipeline.supervised.pretrain import evaluate_table, legal_mask_batch, load_heldout
from pipeline.supervised.splits import prepare_output

SHIPPED = ROOT / "data" / "games" / "zerochess-mixed.pgn.gz"
TINY = ["net.blocks=2", "net.filters=16", "net.value_channels=8", "net.value_hidden=64"]
PRETRAIN = [*TINY, "train.max_steps=300", "train.batch_size=64", "train.optimizer=adam",
            "train.learning_rate=0.003", "train.shuffle_buffer=8192", "train.threads=1",
            "train.log_every=50", "train.checkpoint_every=300",
            "supervised.heldout_fraction=0.2"]


def _sets(values: list[str]) -> list[str]:
    return [arg for value in values for arg in ("--set", value)]


class _Oracle(nn.Module):
    """A stand-in net whose logits are log(pi + tiny) of the rows it is shown, in order."""

    def __init__(self, table: pa.Table, batch_size: int) -> None:
        super().__init__()
        self.config = NetConfig(blocks=1, filters=4, value_channels=2, value_hidden=4)
        self.weight = nn.Parameter(torch.zeros(1))
        pi, z = decode_targets(table)
        self.batches = iter([(pi[i:i + batch_size], z[i:i + batch_size])
                             for i in range(0, len(pi), batch_size)])

    def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pi, z = next(self.batches)
        return torch.log(torch.from_numpy(pi) + 1e-6), torch.from_numpy(z)


@pytest.fixture(scope="module")
def small_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 shipped games converted with a 30% held-out split."""
    text = gzip.decompress(SHIPPED.read_bytes()).decode()
    games = text.split("\n\n[Event")[:40]
    folder = tmp_path_factory.mktemp("small")
    path = folder / "small.pgn"
    path.write_text("\n\n[Event".join(games) + "\n")
    prepare_output(folder / "out")
    convert_files([path], folder / "out", SupervisedConfig(heldout_fraction=0.3), "az4672")
    return folder / "out"


def test_an_oracle_scores_one_and_the_uniform_baseline_is_exact(small_data: Path) -> None:
    table = load_heldout(small_data / "heldout")
    assert table is not None and table.num_rows > 100
    metrics = evaluate_table(_Oracle(table, 64), table, batch_size=64)  # type: ignore[arg-type]
    assert metrics.positions == table.num_rows
    assert metrics.top1 == 1.0 and metrics.top5 == 1.0
    assert metrics.value_mse == pytest.approx(0.0)
    legal = np.array([chess.Board(fen).legal_moves.count()
                      for fen in table.column("fen").to_pylist()], dtype=float)
    assert metrics.uniform_top1 == pytest.approx(np.mean(1 / legal))
    assert metrics.uniform_top5 == pytest.approx(np.mean(np.minimum(legal, 5) / legal))
    assert metrics.policy_cross_entropy == pytest.approx(0.0, abs=1e-4)


def test_a_random_net_is_near_the_uniform_baseline(small_data: Path) -> None:
    torch.manual_seed(0)
    net = AlphaZeroNet(NetConfig(blocks=1, filters=8, value_channels=2, value_hidden=16))
    table = load_heldout(small_data / "heldout", max_positions=200)
    assert table is not None and table.num_rows == 200
    metrics = evaluate_table(net, table, batch_size=64)
    assert metrics.policy_cross_entropy == pytest.approx(np.log(1 / metrics.uniform_top1), rel=0.3)
    assert 0.0 <= metrics.top1 <= metrics.top5 <= 1.0


def test_legal_masks_match_python_chess() -> None:
    fens = [chess.STARTING_FEN, "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"]
    masks = legal_mask_batch(fens, "lc0_1858")
    assert masks.shape == (2, 1858)
    assert list(masks.sum(axis=1)) == [20, chess.Board(fens[1]).legal_moves.count()]


@pytest.mark.slow
def test_pgn2shards_then_pretrain_beats_the_uniform_policy(tmp_path: Path) -> None:
    """The issue's done criterion, on the shipped PGN, through the CLI."""
    data, run = tmp_path / "pgn", tmp_path / "pretrain"
    assert main(["pgn2shards", "--params", "none", "--pgn", str(SHIPPED.parent),
                 "--out", str(data), *_sets(["supervised.heldout_fraction=0.2"])]) == 0
    manifest = json.loads((data / "pgn2shards.json").read_text())["totals"]
    assert manifest["accepted"] == manifest["games"] and manifest["games_per_s"] > 0
    code = main(["pretrain", "--params", "none", "--data", str(data), "--out", str(run),
                 "--no-progress", *_sets(PRETRAIN)])
    assert code == 0
    heldout = json.loads((run / "heldout.json").read_text())["heldout"]
    assert heldout["positions"] == manifest["heldout_positions"]
    # A clear margin over guessing uniformly among the legal moves (~6% top-1).
    assert heldout["top1"] > heldout["uniform_top1"] + 0.03, heldout
    assert heldout["top1"] > 1.5 * heldout["uniform_top1"], heldout
    assert heldout["top5"] > heldout["uniform_top5"] + 0.05, heldout
    net = load_net(run / "net.pt")
    assert net.config.blocks == 2 and net.config.filters == 16
    from mlflow.tracking import MlflowClient

    result = json.loads((run / "result.json").read_text())
    client = MlflowClient(result["tracking_uri"])
    logged = client.get_run(result["mlflow_run_id"])
    assert logged.data.metrics["heldout/top1"] == pytest.approx(heldout["top1"])
    assert set(logged.data.metrics) >= {"heldout/top5", "heldout/policy_cross_entropy",
                                        "heldout/value_mse", "loss/policy"}
    assert logged.data.tags["zerochess.stage"] == "pretrain"


def test_pretrain_without_data_names_the_folder(tmp_path: Path, capsys: pytest.CaptureFixture
                                                ) -> None:
    assert main(["pretrain", "--params", "none", "--data", str(tmp_path / "nothing"),
                 "--out", str(tmp_path / "run")]) == 2
    assert "nothing" in capsys.readouterr().err


@pytest.mark.slow
def test_ray_converts_files_in_parallel_like_a_single_process(local_ray: None,
                                                               tmp_path: Path) -> None:
    from actors.supervised import convert_files_on_ray

    text = gzip.decompress(SHIPPED.read_bytes()).decode()
    games = text.split("\n\n[Event")
    files = []
    for index, chunk in enumerate((games[:30], games[30:50], games[50:60])):
        body = "\n\n[Event".join(chunk)
        path = tmp_path / f"part{index}.pgn"
        path.write_text(body if body.startswith("[Event") else "[Event" + body)
        files.append(path)
    files.append(tmp_path / "empty.pgn")
    files[-1].write_text("")
    settings = SupervisedConfig(heldout_fraction=0.3, positions_per_shard=500, workers=2)
    prepare_output(tmp_path / "ray")
    events = []
    on_ray = convert_files_on_ray(files, str(tmp_path / "ray"), settings, "az4672", events.append)
    prepare_output(tmp_path / "local")
    local = convert_files(files, tmp_path / "local", settings, "az4672")
    assert on_ray.totals()["games"] == local.totals()["games"] == 60
    assert sum(e.delta for e in events) == 60 and sum(e.done for e in events) == 4
    for key in ("train_positions", "heldout_positions", "accepted"):
        assert on_ray.totals()[key] == local.totals()[key]
    for split in ("train", "heldout"):
        ray_tables, _ = load_shards(tmp_path / "ray" / split)
        local_tables, _ = load_shards(tmp_path / "local" / split)
        assert [t.num_rows for t in ray_tables] == [t.num_rows for t in local_tables]
        for a, b in zip(ray_tables, local_tables, strict=True):
            assert a.equals(b)
