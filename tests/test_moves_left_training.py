"""Shard version 2 (``root_d``, ``game_plies``) and the training of the WDL and
moves-left heads on them: self-play writes the columns on both backends,
version 1 shards are still read (``root_d`` 0, ``game_plies`` unknown), the
validation names the column of a bad value, the WDL target uses the root's
D, and a tiny net with the moves-left head learns the plies left through the
real loss and data path."""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from pathlib import Path

import lightning.pytorch as pl
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from models.hash_evaluator import HashEvaluator
from models.net import AlphaZeroNet, NetConfig
from models.policy import get_policy_map
from models.search_config import SearchConfig
from pipeline.config import SelfPlayConfig
from pipeline.selfplay import SelfPlayWorker, game_positions
from pipeline.shards import (
    SHARD_SCHEMA,
    SHARD_SCHEMA_V1,
    SHARD_VERSION_KEY,
    UNKNOWN_PLIES,
    ShardError,
    ShardTableError,
    load_shards,
    read_shard,
    records_to_table,
    table_to_records,
    validate_table,
    write_shard,
)
from pipeline.training.config import TrainConfig
from pipeline.training.data import ShardDataModule, decode_batch
from pipeline.training.losses import loss_terms, moves_left_loss
from pipeline.training.module import AlphaZeroModule
from pipeline.training.targets import moves_left_targets, wdl_targets
from tests.helpers.shards import make_shards
from tests.helpers.training import fit_logged

pytestmark = pytest.mark.usefixtures("torch_threads")  # one torch thread (tests/conftest.py)

SEARCH = SearchConfig(num_simulations=16, leaves_per_batch=4, dirichlet_epsilon=0.0, temperature_plies=0,
                      cache_size=0)  # fmt: skip
SELFPLAY = SelfPlayConfig(resign_threshold=-1.0, full_search_prob=1.0, games_per_task=3, max_plies=6,
                          fast_simulations=4)  # fmt: skip
HEAD = NetConfig.preset("tiny", moves_left=True, blocks=1, filters=8)


def selfplay_rows(backend: str) -> list:
    records = SelfPlayWorker(HashEvaluator(seed=1, aux=True), replace(SEARCH, backend=backend), SELFPLAY).play(3, 0)
    return [row for record in records for row in game_positions(record, get_policy_map("az4672"), 0)]


def as_version_1(table: pa.Table) -> pa.Table:
    """``table`` as a version 1 shard wrote it: without the two columns."""
    return table.drop_columns(["root_d", "game_plies"]).replace_schema_metadata(SHARD_SCHEMA_V1.metadata)


# ---------------------------------------------------------------- writing and reading


def test_both_backends_write_root_d_and_game_plies() -> None:
    rows = {backend: selfplay_rows(backend) for backend in ("native", "python")}
    for backend, table_rows in rows.items():
        assert len(table_rows) == 18, backend
        assert all(row.game_plies == 6 for row in table_rows)
        assert all(0.0 < row.root_d < 1.0 for row in table_rows)
    assert [row.root_d for row in rows["native"]] == [row.root_d for row in rows["python"]]
    table = records_to_table(rows["native"])
    np.testing.assert_array_equal(moves_left_targets(table), [6, 5, 4, 3, 2, 1] * 3)


def test_version_2_round_trip(tmp_path: Path) -> None:
    rows = selfplay_rows("native")
    path = write_shard(records_to_table(rows), tmp_path, "v2")
    table = read_shard(path)
    assert pq.read_schema(path).metadata[SHARD_VERSION_KEY.encode()] == b"2"
    assert table.schema.names == SHARD_SCHEMA.names
    again = table_to_records(table)
    assert [row.game_plies for row in again] == [row.game_plies for row in rows]
    np.testing.assert_array_equal([row.root_d for row in again], np.float32([row.root_d for row in rows]))


def test_a_version_1_shard_is_still_read(tmp_path: Path) -> None:
    table = records_to_table(selfplay_rows("native"))
    pq.write_table(as_version_1(table), tmp_path / "old.parquet")
    read = read_shard(tmp_path / "old.parquet")
    assert read.schema.names == SHARD_SCHEMA.names
    assert set(read.column("root_d").to_pylist()) == {0.0}
    assert set(read.column("game_plies").to_pylist()) == {UNKNOWN_PLIES}
    assert set(moves_left_targets(read).tolist()) == {-1.0}
    tables, bad = load_shards(tmp_path)
    assert len(tables) == 1 and not bad
    # The training reader (columns straight from the file) fills them too.
    config = TrainConfig(batch_size=6, max_steps=1, shuffle_buffer=6, log_every=1, value_target="q")
    data = ShardDataModule(tmp_path, tmp_path / "window.json", config, "az4672", value_head="wdl", moves_left=True)
    data.prepare_data()
    data.setup("fit")
    _, _, target, plies_left = next(iter(data.train_dataloader()))
    assert target.shape == (6, 3) and float(target[:, 1].abs().sum()) == 0.0  # no D stored: no draw mass
    assert set(plies_left.tolist()) == {-1.0}


def test_a_version_1_layout_claiming_version_2_is_refused(tmp_path: Path) -> None:
    table = as_version_1(records_to_table(selfplay_rows("native")))
    pq.write_table(table.replace_schema_metadata(SHARD_SCHEMA.metadata), tmp_path / "bad.parquet")
    with pytest.raises(ShardError, match="root_d.*missing column"):
        read_shard(tmp_path / "bad.parquet")
    pq.write_table(table.replace_schema_metadata({SHARD_VERSION_KEY: "7"}), tmp_path / "future.parquet")
    with pytest.raises(ShardError, match="unsupported shard version"):
        read_shard(tmp_path / "future.parquet")


@pytest.mark.parametrize(
    ("column", "value", "reason"),
    [
        ("root_d", 1.5, r"must be in \[0, 1\]"),
        ("root_d", float("nan"), r"must be in \[0, 1\]"),
        ("root_d", -0.1, r"must be in \[0, 1\]"),
        ("game_plies", 2, "must exceed the row's ply"),
        ("game_plies", -3, "must exceed the row's ply"),
    ],
)
def test_validation_names_the_column_of_a_bad_value(column: str, value: float, reason: str) -> None:
    rows = selfplay_rows("native")
    rows[3] = dataclasses.replace(rows[3], **{column: value})  # ply 3 of the first game
    with pytest.raises(ShardTableError, match=f"column '{column}' row 3.*{reason}") as caught:
        validate_table(records_to_table(rows), check_legality=False)
    assert caught.value.column == column and caught.value.row == 3


# ---------------------------------------------------------------- targets and loss


def _target_table(root_q: list[float], root_d: list[float]) -> pa.Table:
    return pa.table(
        {
            "root_q": pa.array(root_q, pa.float32()),
            "root_d": pa.array(root_d, pa.float32()),
            "root_visits": pa.array([16] * len(root_q), pa.int32()),
            "termination": pa.array(["checkmate"] * len(root_q)).dictionary_encode(),
        }
    )


def test_the_wdl_target_of_q_uses_the_roots_draw_probability() -> None:
    table = _target_table([0.2, 0.8, -0.5, 0.0], [0.5, 0.5, 0.0, 1.0])
    z = np.array([1.0, 1.0, -1.0, 0.0], dtype=np.float32)
    q = wdl_targets(table, z, "q", 0.5)
    # W = (1 + q - D) / 2, L = (1 - q - D) / 2; the second row's L < 0 is clipped, then normalised.
    np.testing.assert_allclose(
        q, [[0.35, 0.5, 0.15], [0.65 / 1.15, 0.5 / 1.15, 0.0], [0.25, 0.0, 0.75], [0.0, 1.0, 0.0]], rtol=1e-6
    )
    np.testing.assert_allclose(q.sum(axis=1), 1.0, rtol=1e-6)
    mix = wdl_targets(table, z, "mix", 0.25)
    np.testing.assert_allclose(mix[0], 0.75 * np.array([1.0, 0.0, 0.0]) + 0.25 * q[0], rtol=1e-6)


def test_the_moves_left_loss_leaves_out_unknown_rows_and_is_weighted() -> None:
    predicted = torch.tensor([20.0, 40.0, 0.0])
    target = torch.tensor([20.0, 60.0, -1.0])
    assert float(moves_left_loss(predicted, target)) == pytest.approx(0.5 * (0.0 + 0.5 * 1.0**2))
    assert float(moves_left_loss(predicted, torch.full((3,), -1.0))) == 0.0
    logits, pi = torch.zeros(3, 4), torch.full((3, 4), 0.25)
    z = torch.zeros(3)
    plain = loss_terms(logits, torch.zeros(3), pi, z, [], l2=0.0)
    weighted = loss_terms(logits, torch.zeros(3), pi, z, [], l2=0.0, moves_left=predicted, plies_left=target,
                          moves_left_weight=2.0)  # fmt: skip
    assert plain.moves_left is None and float(weighted.value) == float(plain.value)
    assert float(weighted.total) == pytest.approx(float(plain.total) + 2.0 * 0.25)
    with pytest.raises(ValueError, match="plies-left targets"):
        loss_terms(logits, torch.zeros(3), pi, z, [], l2=0.0, moves_left=predicted)


def test_bad_moves_left_weight_names_the_key() -> None:
    with pytest.raises(ValueError, match="train.moves_left_weight"):
        TrainConfig(moves_left_weight=-1.0)


# ---------------------------------------------------------------- learning


def test_a_tiny_net_learns_the_plies_left_through_the_real_loss() -> None:
    """Positions of real self-play games with their plies left as the shards
    give them (decode_batch): 150 Adam steps on loss_terms bring the
    moves-left head within 1.5 plies on average."""
    table = records_to_table(selfplay_rows("native"))
    planes, pi, target, plies_left = decode_batch(table, "az4672", moves_left=True)
    torch.manual_seed(0)
    net = AlphaZeroNet(HEAD)
    optimizer = torch.optim.Adam(net.parameters(), lr=3e-3)
    net.train()
    for _ in range(150):
        output = net.forward_heads(planes)
        terms = loss_terms(output.policy_logits, output.value, pi, target, [], l2=0.0,
                           moves_left=output.moves_left, plies_left=plies_left)  # fmt: skip
        optimizer.zero_grad()
        terms.objective.backward()
        optimizer.step()
    net.eval()
    with torch.no_grad():
        predicted = net.forward_heads(planes).moves_left
    assert predicted is not None
    assert float((predicted - plies_left).abs().mean()) < 1.5, (predicted, plies_left)


def test_a_training_step_logs_the_moves_left_loss(tmp_path: Path) -> None:
    make_shards(tmp_path / "shards", shards=1, games=2, max_plies=8)
    config = TrainConfig(batch_size=8, max_steps=2, shuffle_buffer=8, log_every=1, l2=0.0)
    pl.seed_everything(0, verbose=False)
    module = AlphaZeroModule(HEAD, config)
    data = ShardDataModule(tmp_path / "shards", tmp_path / "window.json", config, "az4672", moves_left=True)
    data.prepare_data()
    data.setup("fit")
    before = module.net.moves_left_head.fc2.weight.detach().clone()  # type: ignore[union-attr]
    logged = fit_logged(module, data, 2)[0]
    assert np.isfinite(logged["loss/moves_left"]) and logged["loss/moves_left"] > 0
    assert not torch.equal(module.net.moves_left_head.fc2.weight, before)  # type: ignore[union-attr]
