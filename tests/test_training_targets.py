"""train.value_target: z, q or a mix of both as the value head's target."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from pipeline.config_errors import ConfigError
from pipeline.training.config import TrainConfig
from pipeline.training.targets import value_targets


def _table(root_q: list[float], visits: list[int], termination: list[str]) -> pa.Table:
    return pa.table(
        {
            "root_q": pa.array(root_q, pa.float32()),
            "root_visits": pa.array(visits, pa.int32()),
            "termination": pa.array(termination).dictionary_encode(),
        }
    )


def test_z_is_the_outcome_untouched() -> None:
    z = np.array([1.0, -1.0, 0.0], dtype=np.float32)
    table = _table([0.5, 0.5, 0.5], [100, 100, 100], ["checkmate"] * 3)
    assert value_targets(table, z, "z", 0.5) is z


def test_q_and_mix_use_the_searched_root_value() -> None:
    z = np.array([1.0, -1.0, 0.0], dtype=np.float32)
    table = _table([0.25, -0.5, 0.75], [200, 32, 800], ["checkmate", "checkmate", "max_plies"])
    np.testing.assert_allclose(value_targets(table, z, "q", 0.5), [0.25, -0.5, 0.75])
    np.testing.assert_allclose(value_targets(table, z, "mix", 0.25), [0.8125, -0.875, 0.1875])


def test_rows_without_a_q_keep_z_but_labelled_rows_use_stockfish() -> None:
    z = np.array([1.0, -1.0], dtype=np.float32)
    # A PGN game row (no search, no label) and a Stockfish-labelled row.
    table = _table([0.0, 0.3], [0, 0], ["pgn", "stockfish"])
    np.testing.assert_allclose(value_targets(table, z, "q", 0.5), [1.0, 0.3], rtol=1e-6)


def test_q_outside_the_value_range_is_clipped() -> None:
    z = np.zeros(1, dtype=np.float32)
    table = _table([1.5], [10], ["checkmate"])
    assert value_targets(table, z, "q", 0.5)[0] == 1.0


@pytest.mark.parametrize(("key", "value"), [("value_target", "outcome"), ("q_ratio", 1.5), ("q_ratio", -0.1)])
def test_bad_settings_name_the_key(key: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"train.{key}"):
        TrainConfig(**{key: value})


def test_the_window_stream_trains_on_the_chosen_target(tmp_path) -> None:  # noqa: ANN001
    """Real self-play shards through WindowDataset: q rows give the stored root q."""
    from tests.helpers.shards import make_shards

    from pipeline.shards import list_shards, read_shard, select_training_rows
    from pipeline.training.data import WindowDataset
    from pipeline.training.window import build_window

    make_shards(tmp_path, shards=1, games=2, max_plies=8, full_search_prob=1.0)
    rows = select_training_rows(read_shard(list_shards(tmp_path)[0]))
    config = TrainConfig(batch_size=rows.num_rows, shuffle_buffer=rows.num_rows, seed=1)
    window = build_window(tmp_path, config, "az4672")
    targets = {}
    for target in ("z", "q"):
        dataset = WindowDataset(window, TrainConfig(**{**vars(config), "value_target": target}), "az4672")
        _, _, values = next(iter(dataset))
        targets[target] = sorted(values.tolist())
    expected_q = sorted(np.clip(rows.column("root_q").to_numpy(), -1, 1).tolist())
    expected_z = sorted(rows.column("z").to_numpy().astype(float).tolist())
    np.testing.assert_allclose(targets["q"], expected_q, rtol=1e-6)
    np.testing.assert_allclose(targets["z"], expected_z)
