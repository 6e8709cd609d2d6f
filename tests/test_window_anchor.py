"""Labelled shards mixed into every replay window (train.anchor_dir, train.anchor_fraction)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pipeline.config import ConfigError, load_config
from pipeline.shards import list_shards
from pipeline.training.config import TrainConfig
from pipeline.training.data import StreamSpec, batch_stream, load_group
from pipeline.training.window import TrainDataError, anchor_pieces, build_window, count_training_rows
from tests.helpers.shards import make_shards


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-play folder of two shards and an anchor folder of six, from other games."""
    selfplay = tmp_path_factory.mktemp("selfplay")
    make_shards(selfplay, shards=2, games=3, max_plies=10)
    anchor = tmp_path_factory.mktemp("anchor")
    make_shards(anchor, shards=6, games=2, max_plies=8, seed=5)
    return selfplay, anchor


def anchored(anchor: Path, fraction: float, **more: object) -> TrainConfig:
    settings: dict[str, object] = {"batch_size": 4, "shuffle_buffer": 16, "seed": 7, **more}
    return TrainConfig(anchor_dir=str(anchor), anchor_fraction=fraction, **settings)  # type: ignore[arg-type]


def rows_from(window_pieces: tuple, folder: Path) -> int:
    return sum(piece.rows for piece in window_pieces if Path(piece.path).parent == folder)


def test_the_window_holds_the_asked_share_of_anchor_positions(folders: tuple[Path, Path]) -> None:
    selfplay, anchor = folders
    own = sum(count_training_rows(path) or 0 for path in list_shards(selfplay))
    window = build_window(selfplay, anchored(anchor, 0.25), "az4672")
    assert rows_from(window.pieces, selfplay) == own
    assert rows_from(window.pieces, anchor) == round(own * 0.25 / 0.75)
    assert window.total_positions == own  # the anchor is not self-play data: the growing window ignores it
    # the rows the window names are the ones the stream reads
    table = load_group(window.pieces)
    assert table.num_rows == window.positions


def test_without_a_fraction_the_window_is_self_play_only(folders: tuple[Path, Path]) -> None:
    selfplay, anchor = folders
    plain = build_window(selfplay, TrainConfig(batch_size=4, shuffle_buffer=16, seed=7), "az4672")
    assert all(Path(piece.path).parent == selfplay for piece in plain.pieces)
    assert plain.pieces == build_window(selfplay, anchored(anchor, 0.25), "az4672").pieces[: len(plain.pieces)]


def test_the_anchor_mix_changes_with_the_data_and_repeats_for_the_same_data(folders: tuple[Path, Path]) -> None:
    _, anchor = folders
    config = anchored(anchor, 0.5)
    draws = [tuple(piece.path for piece in anchor_pieces(config, 20, total, "az4672")) for total in range(12)]
    assert draws[3] == tuple(piece.path for piece in anchor_pieces(config, 20, 3, "az4672"))
    assert len(set(draws)) > 1  # another window, another mix of shards
    assert len({path for draw in draws for path in draw}) == len(list_shards(anchor))


def test_a_small_anchor_gives_all_it_has(folders: tuple[Path, Path], caplog: pytest.LogCaptureFixture) -> None:
    _, anchor = folders
    everything = sum(count_training_rows(path) or 0 for path in list_shards(anchor))
    pieces = anchor_pieces(anchored(anchor, 0.9), 10_000, 0, "az4672")
    assert sum(piece.rows for piece in pieces) == everything
    assert "fewer than the" in caplog.text


def test_a_batch_mixes_both_sources(folders: tuple[Path, Path]) -> None:
    selfplay, anchor = folders
    window = build_window(selfplay, anchored(anchor, 0.5, shuffle_buffer=10_000), "az4672")
    spec = StreamSpec(window.pieces, 4, 10_000, 7, 0, "az4672")
    (group,) = spec.groups(0)  # one shuffle buffer: anchor and self-play rows are permuted together
    assert {Path(piece.path).parent for piece in group} == {selfplay, anchor}
    batch = next(batch_stream(spec))
    assert batch[0].shape[0] == 4


def test_bad_anchor_settings_name_the_key(folders: tuple[Path, Path], tmp_path: Path) -> None:
    selfplay, _ = folders
    with pytest.raises(ConfigError, match="train.anchor_fraction"):
        load_config(None, ["train.anchor_fraction=1.0", "train.anchor_dir=x"])
    with pytest.raises(ConfigError, match="train.anchor_dir"):
        load_config(None, ["train.anchor_fraction=0.5"])
    with pytest.raises(TrainDataError, match="train.anchor_dir .*no such folder"):
        build_window(selfplay, anchored(tmp_path / "missing", 0.5), "az4672")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TrainDataError, match="train.anchor_dir .*no training positions"):
        build_window(selfplay, anchored(tmp_path / "empty", 0.5), "az4672")
    assert replace(anchored(tmp_path, 0.0), anchor_dir="").anchor_fraction == 0.0
