"""Tests for pipeline.shards: schema, atomic writes, validation, quarantine, decoding."""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import chess
import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from models.encoding import PlaneHistory, board_meta, encode_board
from models.policy import get_policy_map
from pipeline import shards
from pipeline.shards import (
    QUARANTINE_DIR,
    SHARD_SCHEMA,
    PositionRecord,
    ShardError,
    ShardNameError,
    ShardTableError,
    decode_planes,
    decode_policy,
    decode_targets,
    list_shards,
    load_shards,
    read_shard,
    records_to_table,
    select_training_rows,
    shard_name,
    shard_stats,
    table_to_records,
    training_row_groups,
    validate_table,
    write_shard,
)
from pipeline.shards import store as shard_store
from pipeline.shards.validation import check_positions, fast_rows

# Legal en passant (exd6), promotions for both sides, all castling rights.
TACTICAL_FEN = "r3k2r/1P4P1/8/3pP3/8/8/1p4p1/R3K2R w KQkq d6 0 30"
WHITE_SCORE = {"1-0": 1, "0-1": -1, "1/2-1/2": 0}

Dataset = tuple[list[PositionRecord], np.ndarray]


def _play_game(
    rng: random.Random, game_id: str, start_fen: str, plies: int, encoding: str, result: str
) -> tuple[list[PositionRecord], list[np.ndarray]]:
    """Random game: one record per ply (random sparse pi over legal moves) and its planes."""
    board = chess.Board(start_fen)
    history = PlaneHistory.from_board(board)
    policy_map = get_policy_map(encoding)
    records, planes = [], []
    for ply in range(plies):
        moves = list(board.legal_moves)
        if not moves:
            break
        support = rng.sample(moves, k=min(len(moves), rng.randint(1, 6)))
        raw = np.array([rng.random() + 0.05 for _ in support])
        side = 1 if board.turn == chess.WHITE else -1
        records.append(PositionRecord(
            game_id=game_id, ply=ply, fen=board.fen(), history=history.snapshot(),
            meta=board_meta(board), policy_encoding=encoding,
            policy_index=policy_map.indices(board, support),
            policy_prob=(raw / raw.sum()).astype(np.float32),
            z=WHITE_SCORE[result] * side, root_q=rng.uniform(-1, 1),
            root_visits=rng.randint(1, 800), full_search=rng.random() < 0.25,
            generation=3, result=result, termination="max_plies",
        ))  # fmt: skip
        planes.append(encode_board(board))
        board.push(rng.choice(moves))
        history.push(board)
    return records, planes


def _dataset(encoding: str, seed: int, games: list[tuple[str, int, str]]) -> Dataset:
    """Records and expected planes of several seeded games (start fen, plies, result)."""
    rng = random.Random(seed)
    records: list[PositionRecord] = []
    planes: list[np.ndarray] = []
    for number, (fen, plies, result) in enumerate(games):
        game_records, game_planes = _play_game(rng, f"g{seed}-{number}", fen, plies,
                                               encoding, result)
        records += game_records
        planes += game_planes
    return records, np.stack(planes)


@pytest.fixture(scope="module")
def dataset() -> Dataset:
    """~110 positions of az4672 games, including en passant, promotions and castling."""
    return _dataset("az4672", 7, [
        (chess.STARTING_FEN, 30, "1-0"),
        (chess.STARTING_FEN, 30, "0-1"),
        (chess.STARTING_FEN, 30, "1/2-1/2"),
        (TACTICAL_FEN, 20, "1-0"),
    ])  # fmt: skip


@pytest.fixture(scope="module")
def table(dataset: Dataset) -> pa.Table:
    """The dataset as a shard table."""
    return records_to_table(dataset[0])


@pytest.fixture(scope="module")
def small(table: pa.Table) -> pa.Table:
    """A 20-row shard table."""
    return table.slice(0, 20)


def _written_order(records: list[PositionRecord]) -> list[int]:
    """Indices of ``records`` in the order a shard stores them: the training
    (full_search) rows, then the others, each part in order."""
    return sorted(range(len(records)), key=lambda k: not records[k].full_search)


def _as_written(records: list[PositionRecord]) -> list[PositionRecord]:
    return [records[k] for k in _written_order(records)]


def _dense(records: list[PositionRecord], size: int) -> np.ndarray:
    """Dense pi built naively from records."""
    dense = np.zeros((len(records), size), dtype=np.float32)
    for row, record in enumerate(records):
        dense[row, record.policy_index] = record.policy_prob
    return dense


def _visible_files(directory: Path) -> list[str]:
    """Sorted names of everything in ``directory``."""
    return sorted(os.listdir(directory))


# ---------------------------------------------------------------------------
# Round trip and decoding
# ---------------------------------------------------------------------------


def test_round_trip_preserves_every_value(tmp_path: Path, dataset: Dataset,
                                          table: pa.Table) -> None:
    path = write_shard(table, tmp_path, "gen3-batch_0001")
    assert path == str(tmp_path / "gen3-batch_0001.parquet")
    back = read_shard(path)
    assert back.schema.equals(SHARD_SCHEMA, check_metadata=True)
    for original, decoded in zip(_as_written(dataset[0]), table_to_records(back), strict=True):
        for field in dataclasses.fields(PositionRecord):
            a, b = getattr(original, field.name), getattr(decoded, field.name)
            if isinstance(a, np.ndarray):
                np.testing.assert_array_equal(a, b, err_msg=field.name)
            elif isinstance(a, float):
                assert b == pytest.approx(a, rel=1e-6), field.name
            else:
                assert a == b, field.name


def test_decoded_planes_equal_encode_board(tmp_path: Path, dataset: Dataset,
                                           table: pa.Table) -> None:
    back = read_shard(write_shard(table, tmp_path, "b"))
    planes = decode_planes(back)
    assert planes.dtype == np.uint8 and planes.shape == (len(dataset[0]), 119, 8, 8)
    np.testing.assert_array_equal(planes, dataset[1][_written_order(dataset[0])])


def test_decoded_policy_equals_sparse_pi(tmp_path: Path, dataset: Dataset,
                                         table: pa.Table) -> None:
    back = read_shard(write_shard(table, tmp_path, "b"))
    pi, z = decode_targets(back)
    written = _as_written(dataset[0])
    assert pi.dtype == np.float32 and pi.shape == (len(dataset[0]), 4672)
    np.testing.assert_array_equal(pi, _dense(written, 4672))
    np.testing.assert_array_equal(decode_policy(back, 4672), pi)
    assert z.dtype == np.float32
    np.testing.assert_array_equal(z, [r.z for r in written])


def test_decoding_sliced_and_multi_chunk_tables(dataset: Dataset, table: pa.Table) -> None:
    chunked = pa.concat_tables([table.slice(0, 13), table.slice(13, 40), table.slice(53)])
    sliced = table.slice(5, 17)
    np.testing.assert_array_equal(decode_planes(chunked), dataset[1])
    np.testing.assert_array_equal(decode_planes(sliced), dataset[1][5:22])
    np.testing.assert_array_equal(decode_policy(sliced, 4672), _dense(dataset[0][5:22], 4672))
    np.testing.assert_array_equal(decode_policy(chunked, 4672), _dense(dataset[0], 4672))
    assert decode_planes(table.slice(0, 0)).shape == (0, 119, 8, 8)
    assert decode_policy(table.slice(0, 0), 4672).shape == (0, 4672)


def test_lc0_encoding_and_mixed_encodings(tmp_path: Path, table: pa.Table) -> None:
    records, _ = _dataset("lc0_1858", 11, [(TACTICAL_FEN, 16, "0-1")])
    lc0 = read_shard(write_shard(records_to_table(records), tmp_path, "lc0"))
    pi, _ = decode_targets(lc0)
    np.testing.assert_array_equal(pi, _dense(_as_written(records), 1858))
    mixed = pa.concat_tables([table, lc0])
    validate_table(mixed)  # each row is checked in its own encoding
    with pytest.raises(ShardTableError, match="exactly one encoding"):
        decode_targets(mixed)
    with pytest.raises(ShardTableError, match="policy_encoding"):
        decode_policy(mixed, 4672)


def test_stats_and_training_rows(dataset: Dataset, table: pa.Table) -> None:
    records = dataset[0]
    full = sum(r.full_search for r in records)
    stats = shard_stats(table)
    assert stats["positions"] == len(records) and stats["games"] == 4
    assert stats["full_search"] == full
    assert stats["full_search_fraction"] == pytest.approx(full / len(records))
    assert stats["mean_abs_z"] == pytest.approx(np.mean([abs(r.z) for r in records]))
    assert select_training_rows(table).num_rows == full
    assert shard_stats(table.slice(0, 0))["positions"] == 0


def test_training_rows_are_written_first_in_row_groups_of_their_own(tmp_path: Path,
                                                                     table: pa.Table) -> None:
    path = write_shard(table, tmp_path, "b")
    with pq.ParquetFile(path) as parquet:
        metadata = parquet.metadata
        assert training_row_groups(metadata) == [0]
        first = parquet.read_row_groups([0])
        rest = pa.concat_tables([parquet.read_row_group(g) for g in range(1, metadata.num_row_groups)])
    mask = np.array(table.column("full_search").to_pylist())
    assert first.column("full_search").to_pylist() == [True] * int(mask.sum())
    assert rest.column("full_search").to_pylist() == [False] * int((~mask).sum())
    # each part keeps the table's order
    keys = list(zip(table.column("game_id").to_pylist(), table.column("ply").to_pylist(), strict=True))
    assert list(zip(first.column("game_id").to_pylist(), first.column("ply").to_pylist(), strict=True)) == [
        key for key, full in zip(keys, mask, strict=True) if full]
    assert list(zip(rest.column("game_id").to_pylist(), rest.column("ply").to_pylist(), strict=True)) == [
        key for key, full in zip(keys, mask, strict=True) if not full]


@pytest.mark.parametrize("full", [True, False])
def test_a_shard_of_one_kind_of_row_is_one_row_group(tmp_path: Path, table: pa.Table, full: bool) -> None:
    part = table.filter(pa.array([value == full for value in table.column("full_search").to_pylist()]))
    path = write_shard(part, tmp_path, "b")
    with pq.ParquetFile(path) as parquet:
        assert parquet.metadata.num_row_groups == 1
        assert training_row_groups(parquet.metadata) == ([0] if full else [])
    assert read_shard(path).equals(part)


def test_a_shard_of_mixed_row_groups_is_read_whole(tmp_path: Path, table: pa.Table) -> None:
    """Shards written before the training-first layout: every row group may hold training rows."""
    path = tmp_path / "old.parquet"
    pq.write_table(table, path, row_group_size=40)
    with pq.ParquetFile(path) as parquet:
        groups = parquet.metadata.num_row_groups
        assert groups == 3 and training_row_groups(parquet.metadata) == list(range(groups))
    assert read_shard(path).equals(table)  # rows in the file's order, whatever it is


# ---------------------------------------------------------------------------
# Names and writing
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("batch_id", ["../x", "a/b", "a\\b", "", ".hidden", "..", "a b", "é"])
def test_shard_name_rejects_unsafe_ids(batch_id: str) -> None:
    with pytest.raises(ShardNameError, match="batch_id"):
        shard_name(batch_id)


def test_shard_name_accepts_safe_ids() -> None:
    assert shard_name("gen3-w01_17.a") == "gen3-w01_17.a.parquet"


def test_write_leaves_no_temp_files_and_rewrite_replaces(tmp_path: Path,
                                                         table: pa.Table) -> None:
    write_shard(table.slice(0, 10), tmp_path, "b1")
    write_shard(table.slice(10, 5), tmp_path, "b1")  # retried task: same id, new content
    assert _visible_files(tmp_path) == ["b1.parquet"]
    back = read_shard(tmp_path / "b1.parquet")
    assert back.num_rows == 5 and back.column("ply").to_pylist() == list(range(10, 15))
    assert oct(os.stat(tmp_path / "b1.parquet").st_mode & 0o777) == "0o644"


def test_failed_write_leaves_no_shard_and_no_temp(tmp_path: Path, table: pa.Table,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    write_shard(table.slice(0, 4), tmp_path, "old")

    def partial_write(_table: pa.Table, where: object) -> None:
        where.write(b"PAR1" + b"\0" * 1000)  # type: ignore[attr-defined]
        raise OSError("disk full")

    monkeypatch.setattr(shard_store, "_write_parquet", partial_write)
    for batch_id in ("new", "old"):
        with pytest.raises(OSError, match="disk full"):
            write_shard(table, tmp_path, batch_id)
    monkeypatch.undo()
    assert _visible_files(tmp_path) == ["old.parquet"]
    assert read_shard(tmp_path / "old.parquet").num_rows == 4  # previous version intact


def test_write_rejects_wrong_schema_and_invalid_rows(tmp_path: Path, table: pa.Table,
                                                     dataset: Dataset) -> None:
    with pytest.raises(ShardTableError, match=r"'termination'.*missing column"):
        write_shard(table.drop_columns(["termination"]), tmp_path, "b")
    bad = records_to_table([dataclasses.replace(dataset[0][0], z=2)])
    with pytest.raises(ShardTableError, match="'z' row 0"):
        write_shard(bad, tmp_path, "b")
    assert _visible_files(tmp_path) == []


def test_records_to_table_checks_shapes_and_ranges(dataset: Dataset) -> None:
    record = dataset[0][0]
    cases = [
        (dataclasses.replace(record, history=record.history[:7]), "'history' row 0"),
        (dataclasses.replace(record, meta=record.meta[:6]), "'meta' row 0"),
        (dataclasses.replace(record, policy_prob=record.policy_prob[:-1].copy()),
         "'policy_prob' row 0"),
        (dataclasses.replace(record, policy_index=record.policy_index + 70_000),
         "'policy_index' row 0"),
        (dataclasses.replace(record, ply=2**40), "'ply' row 0"),
    ]
    for bad, message in cases:
        with pytest.raises(ShardTableError, match=message):
            records_to_table([record, bad][1:])


def test_file_uri_directory(tmp_path: Path, small: pa.Table) -> None:
    uri = tmp_path.as_uri()
    path = write_shard(small, uri, "u1")
    assert path == f"{uri}/u1.parquet"
    assert list_shards(uri) == [path]
    assert read_shard(path).num_rows == 20
    tables, bad = load_shards(uri)
    assert [t.num_rows for t in tables] == [20] and bad == []
    assert _visible_files(tmp_path) == ["u1.parquet"]


def test_generic_pyarrow_filesystem(tmp_path: Path, small: pa.Table,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A non-local pyarrow filesystem takes the temp-key + fs.move path."""
    fs = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    path = write_shard(small, "data/shards", "r1", filesystem=fs)
    assert path == "data/shards/r1.parquet"
    assert _visible_files(tmp_path / "data" / "shards") == ["r1.parquet"]
    assert list_shards("data/shards", filesystem=fs) == [path]
    with fs.open_output_stream("data/shards/r0.parquet"):
        pass  # zero bytes
    tables, bad = load_shards("data/shards", filesystem=fs)
    assert len(tables) == 1 and [p for p, _ in bad] == ["data/shards/r0.parquet"]
    assert sorted(os.listdir(tmp_path / "data" / "shards" / QUARANTINE_DIR)) == [
        "r0.parquet", "r0.parquet.reason.txt"]

    def failing_write(_table: pa.Table, where: object) -> None:
        where.write(b"PAR1")  # type: ignore[attr-defined]
        raise OSError("connection reset")

    monkeypatch.setattr(shard_store, "_write_parquet", failing_write)
    with pytest.raises(OSError, match="connection reset"):
        write_shard(small, "data/shards", "r2", filesystem=fs)
    assert _visible_files(tmp_path / "data" / "shards") == [QUARANTINE_DIR, "r1.parquet"]


def test_shard_exists(tmp_path: Path, small: pa.Table) -> None:
    assert not shards.shard_exists(tmp_path, "b1")
    write_shard(small, tmp_path, "b1")
    assert shards.shard_exists(tmp_path, "b1")
    assert shards.shard_exists(tmp_path.as_uri(), "b1")
    fs = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    assert shards.shard_exists("", "b1", filesystem=fs)
    assert not shards.shard_exists("", "b2", filesystem=fs)
    with pytest.raises(ShardNameError):
        shards.shard_exists(tmp_path, "../b1")


def test_list_shards_orders_numbers_as_numbers(tmp_path: Path, small: pa.Table) -> None:
    """Oldest first, as the window and retention read it: numbers past their zero padding too."""
    names = ["gen0001-task100000", "gen0000-task100001", "gen0001-task99999", "gen0002-task00003",
             "gen0001-task00007"]  # fmt: skip
    for name in names:
        write_shard(small, tmp_path, name)
    expected = ["gen0000-task100001", "gen0001-task00007", "gen0001-task99999", "gen0001-task100000",
                "gen0002-task00003"]  # fmt: skip
    assert list_shards(tmp_path) == [str(tmp_path / f"{name}.parquet") for name in expected]
    assert sorted(names, key=shards.shard_order_key) == expected


def test_list_shards_ignores_temp_quarantine_and_other_files(tmp_path: Path,
                                                             small: pa.Table) -> None:
    write_shard(small, tmp_path, "b2")
    write_shard(small, tmp_path, "b1")
    (tmp_path / ".b3.parquet.tmp-abc").write_bytes(b"x")
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / QUARANTINE_DIR).mkdir()
    (tmp_path / QUARANTINE_DIR / "b0.parquet").write_bytes(b"x")
    assert list_shards(tmp_path) == [str(tmp_path / "b1.parquet"), str(tmp_path / "b2.parquet")]
    with pytest.raises(FileNotFoundError):
        list_shards(tmp_path / "missing")


# ---------------------------------------------------------------------------
# Validation and quarantine
# ---------------------------------------------------------------------------


def _write_records(directory: Path, batch_id: str, records: list[PositionRecord]) -> None:
    """Writes records without validation (to produce bad shards)."""
    write_shard(records_to_table(records), directory, batch_id, validate=False)


def _with(records: list[PositionRecord], row: int, **changes: Any) -> list[PositionRecord]:
    """Copy of ``records`` with fields of one row replaced."""
    out = list(records)
    out[row] = dataclasses.replace(out[row], **changes)
    return out


def _with_at_file_row(records: list[PositionRecord], row: int, **changes: Any) -> list[PositionRecord]:
    """Copy of ``records`` with fields of the record a shard holds at file row ``row`` replaced."""
    return _with(records, _written_order(records)[row], **changes)


def _at_row(records: list[PositionRecord], row: int) -> PositionRecord:
    """The record a shard of ``records`` holds at file row ``row``."""
    return records[_written_order(records)[row]]


def _illegal_index(record: PositionRecord) -> int:
    """An az4672 index that is not a legal move in the record's position."""
    mask = get_policy_map("az4672").legal_mask(chess.Board(record.fen))
    return int(np.flatnonzero(~mask)[0])


def _bad_truncated(d: Path, r: list[PositionRecord]) -> None:
    _write_records(d, "bad", r)
    data = (d / "bad.parquet").read_bytes()
    (d / "bad.parquet").write_bytes(data[: len(data) // 2])


def _bad_zero_bytes(d: Path, r: list[PositionRecord]) -> None:
    (d / "bad.parquet").write_bytes(b"")


def _bad_random_bytes(d: Path, r: list[PositionRecord]) -> None:
    (d / "bad.parquet").write_bytes(np.random.default_rng(0).bytes(5000))


def _bad_missing_column(d: Path, r: list[PositionRecord]) -> None:
    pq.write_table(records_to_table(r).drop_columns(["z"]), d / "bad.parquet")


def _bad_column_type(d: Path, r: list[PositionRecord]) -> None:
    table = records_to_table(r)
    index = table.schema.get_field_index("z")
    table = table.set_column(index, pa.field("z", pa.int16(), nullable=False),
                             table.column("z").cast(pa.int16()))
    pq.write_table(table, d / "bad.parquet")


def _bad_nan(d: Path, r: list[PositionRecord]) -> None:
    prob = _at_row(r, 3).policy_prob.copy()
    prob[0] = np.nan
    _write_records(d, "bad", _with_at_file_row(r, 3, policy_prob=prob))


def _bad_sum(d: Path, r: list[PositionRecord]) -> None:
    _write_records(d, "bad", _with_at_file_row(r, 3, policy_prob=_at_row(r, 3).policy_prob * np.float32(0.7)))


def _bad_illegal(d: Path, r: list[PositionRecord]) -> None:
    index = _at_row(r, 3).policy_index.copy()
    index[0] = _illegal_index(_at_row(r, 3))
    _write_records(d, "bad", _with_at_file_row(r, 3, policy_index=index))


def _bad_z(d: Path, r: list[PositionRecord]) -> None:
    _write_records(d, "bad", _with_at_file_row(r, 3, z=2))


QUARANTINE_CASES: list[tuple[Callable[[Path, list[PositionRecord]], None], list[str]]] = [
    (_bad_truncated, ["Parquet"]),
    (_bad_zero_bytes, ["Parquet"]),
    (_bad_random_bytes, ["Parquet"]),
    (_bad_missing_column, ["'z'", "missing column"]),
    (_bad_column_type, ["'z'", "wrong type", "int16"]),
    (_bad_nan, ["'policy_prob' row 3", "not finite", "nan"]),
    (_bad_sum, ["'policy_prob' row 3", "sum to 0.7"]),
    (_bad_illegal, ["'policy_index' row 3", "not a legal move"]),
    (_bad_z, ["'z' row 3", "value 2"]),
]


@pytest.mark.parametrize(("make_bad", "expected"), QUARANTINE_CASES,
                         ids=[case[0].__name__[5:] for case in QUARANTINE_CASES])
def test_bad_shard_is_quarantined_and_good_ones_load(
    tmp_path: Path, dataset: Dataset, small: pa.Table,
    make_bad: Callable[[Path, list[PositionRecord]], None], expected: list[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    write_shard(small, tmp_path, "a-good")
    write_shard(small, tmp_path, "c-good")
    make_bad(tmp_path, dataset[0][:20])
    tables, bad = load_shards(tmp_path)
    assert [t.num_rows for t in tables] == [20, 20]
    assert len(bad) == 1
    path, reason = bad[0]
    assert path == str(tmp_path / "bad.parquet")
    for text in expected:
        assert text in reason
    quarantine = tmp_path / QUARANTINE_DIR
    assert sorted(os.listdir(quarantine)) == ["bad.parquet", "bad.parquet.reason.txt"]
    assert (quarantine / "bad.parquet.reason.txt").read_text() == reason + "\n"
    assert _visible_files(tmp_path) == ["a-good.parquet", "c-good.parquet", QUARANTINE_DIR]
    assert any("quarantined" in rec.message for rec in caplog.records)


def test_load_without_quarantine_leaves_bad_shard(tmp_path: Path, dataset: Dataset) -> None:
    _bad_illegal(tmp_path, dataset[0][:20])
    tables, bad = load_shards(tmp_path, quarantine=False)
    assert tables == [] and len(bad) == 1
    assert _visible_files(tmp_path) == ["bad.parquet"]
    tables, bad = load_shards(tmp_path, check_legality=False)  # legality is the only problem
    assert len(tables) == 1 and bad == []


def test_read_shard_error_names_path_column_row_and_value(tmp_path: Path,
                                                          dataset: Dataset) -> None:
    _bad_z(tmp_path, dataset[0][:20])
    with pytest.raises(ShardError) as caught:
        read_shard(tmp_path / "bad.parquet")
    err = caught.value
    assert (err.column, err.row) == ("z", 3)
    assert str(tmp_path / "bad.parquet") in str(err)
    assert "value 2" in err.reason and "game_id=" in err.reason
    with pytest.raises(FileNotFoundError):
        read_shard(tmp_path / "missing.parquet")


def _fen_with_halfmove(fen: str, halfmove: int) -> str:
    """``fen`` with its halfmove clock replaced."""
    fields = fen.split(" ")
    fields[4] = str(halfmove)
    return " ".join(fields)


@pytest.mark.parametrize(("change", "column"), [
    (lambda r: {"z": -r.z if r.z else 1}, "'z' row 3"),
    (lambda r: {"fen": "not a fen"}, "'fen' row 3"),
    (lambda r: {"fen": "8/8/8/8/8/8/8/8 w - - 0 1"}, "'fen' row 3"),
    (lambda r: {"meta": r.meta ^ np.uint8(1)}, "'meta' row 3"),
    (lambda r: {"meta": r.meta | np.array([0, 0, 2, 0, 0, 0, 0], np.uint8)}, "'meta' row 3"),
    (lambda r: {"meta": r.meta ^ np.array([0, 0, 0, 0, 1, 0, 0], np.uint8)}, "'meta' row 3"),
    (lambda r: {"meta": r.meta ^ np.array([0, 1, 0, 0, 0, 0, 0], np.uint8)}, "'meta' row 3"),
    (lambda r: {"fen": _fen_with_halfmove(r.fen, 77)}, "'meta' row 3"),
    (lambda r: {"history": np.roll(r.history, 1, axis=1)}, "'history' row 3"),
    (lambda r: {"policy_index": np.repeat(r.policy_index[:1], 2),
                "policy_prob": np.full(2, 0.5, np.float32)}, "'policy_index' row 3"),
    (lambda r: {"policy_index": r.policy_index * 0 + 4672}, "'policy_index' row 3"),
    (lambda r: {"policy_prob": -r.policy_prob}, "'policy_prob' row 3"),
    (lambda r: {"policy_index": r.policy_index[:0], "policy_prob": r.policy_prob[:0]},
     "'policy_prob' row 3"),
    (lambda r: {"policy_encoding": "az9999"}, "'policy_encoding'"),
    (lambda r: {"result": "*"}, "'result' row 3"),
    (lambda r: {"root_visits": -1}, "'root_visits' row 3"),
    (lambda r: {"root_q": float("inf")}, "'root_q' row 3"),
], ids=["z-sign", "fen-garbage", "fen-no-kings", "meta-turn", "meta-flag-2", "meta-castling",
        "meta-ply", "fen-halfmove", "history", "duplicate-index",
        "index-range", "negative-prob", "empty-pi", "encoding", "result", "visits", "root-q"])
def test_validate_table_rejects(dataset: Dataset,
                                change: Callable[[PositionRecord], dict[str, object]],
                                column: str) -> None:
    records = dataset[0][:8]
    bad = records_to_table(_with(records, 3, **change(records[3])))
    with pytest.raises(ShardTableError, match=column):
        validate_table(bad, check_legality=False)


def test_validate_table_rejects_nulls(small: pa.Table) -> None:
    index = small.schema.get_field_index("termination")
    values = small.column("termination").to_pylist()
    values[2] = None
    bad = small.set_column(index, SHARD_SCHEMA.field("termination"), pa.array(values))
    with pytest.raises(ShardTableError, match=r"'termination' row 2.*null"):
        validate_table(bad)


def test_fast_position_path_agrees_with_python_chess(dataset: Dataset, table: pa.Table) -> None:
    """Every real row is settled by the vectorised path, with the same board as python-chess."""
    fens = table.column("fen").to_pylist()
    history = shards.decode_history(table)[:, 0, :12]
    accepted, _, _ = fast_rows(fens, history, shards.decode_meta(table))
    assert accepted.all()
    boards = check_positions(table, need_boards=True)
    assert any(board.ep_square is not None for board in boards if board is not None)
    for fen, board in zip(fens, boards, strict=True):
        assert board is not None
        reference = chess.Board(fen)
        assert board.fen() == fen and board.is_valid()
        assert {m.uci() for m in board.legal_moves} == {m.uci() for m in reference.legal_moves}


def test_fen_with_unusable_en_passant_square_falls_back_to_python_chess() -> None:
    """A FEN naming an ep square with no legal capture is valid (python-chess decides)."""
    board = chess.Board()
    board.push_uci("e2e4")
    history = PlaneHistory.from_board(board)
    policy = get_policy_map("az4672")
    move = next(iter(board.legal_moves))
    record = PositionRecord(
        game_id="g", ply=1, fen=board.fen(en_passant="fen"), history=history.snapshot(),
        meta=board_meta(board), policy_encoding="az4672",
        policy_index=policy.indices(board, [move]), policy_prob=np.ones(1, np.float32), z=0,
        root_q=0.0, root_visits=1, full_search=True, generation=0, result="1/2-1/2",
        termination="max_plies",
    )
    assert " e3 " in record.fen
    validate_table(records_to_table([record]))


# ---------------------------------------------------------------------------
# Page checksums
# ---------------------------------------------------------------------------


def _flip_middle_of_column(path: Path, column: str) -> None:
    """Flips one byte in the middle of ``column``'s first column chunk."""
    meta = pq.ParquetFile(path).metadata.row_group(0)
    chunk = meta.column(SHARD_SCHEMA.get_field_index(column))
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    position = start + chunk.total_compressed_size // 2
    data = bytearray(path.read_bytes())
    data[position] ^= 0xFF
    path.write_bytes(bytes(data))


def test_flipped_byte_in_zstd_shard_is_detected(tmp_path: Path, table: pa.Table) -> None:
    path = Path(write_shard(table, tmp_path, "b"))
    _flip_middle_of_column(path, "history")
    with pytest.raises(ShardError, match="corrupt Parquet data"):
        read_shard(path, check_legality=False)


def test_page_checksums_catch_what_plain_reads_miss(tmp_path: Path, table: pa.Table) -> None:
    """Uncompressed: a flipped byte reads silently unless checksums are verified."""
    path = tmp_path / "b.parquet"
    pq.write_table(table, path, compression="none", write_page_checksum=True)
    _flip_middle_of_column(path, "history")
    silently_wrong = pq.read_table(path)  # no verification: garbage, no error
    assert not silently_wrong.column("history").equals(table.column("history"))
    with pytest.raises(ShardError, match="corrupt Parquet data"):
        read_shard(path, check_legality=False)


def test_module_exports_are_defined() -> None:
    for name in shards.__all__:
        assert hasattr(shards, name), name


@pytest.mark.parametrize("remote", [False, True], ids=["local", "filesystem"])
def test_stale_temp_files_of_crashed_writers_are_removed(tmp_path: Path, remote: bool) -> None:
    """A writer killed between its temp file and the rename leaves a hidden
    temp file (a hidden key on object storage); the sweep removes it once it
    is old, and keeps young ones (a writer may still be running) and shards."""
    import os
    import time

    import pyarrow.fs as pafs

    from pipeline.shards import remove_stale_temps

    folder = tmp_path / "shards"
    folder.mkdir()
    stale = folder / ".gen0001-task00000.parquet.tmp-0123456789abcdef"
    young = folder / ".gen0001-task00001.parquet.tmp-fedcba9876543210"
    shard = folder / "gen0001-task00002.parquet"
    other = folder / ".hidden-note"
    for path in (stale, young, shard, other):
        path.write_bytes(b"x")
    two_hours_ago = time.time() - 7200
    for path in (stale, shard, other):
        os.utime(path, (two_hours_ago, two_hours_ago))
    if remote:
        fs = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
        removed = remove_stale_temps("shards", filesystem=fs)
        assert removed == ["shards/" + stale.name]
    else:
        assert remove_stale_temps(folder) == [str(stale)]
    assert sorted(p.name for p in folder.iterdir()) == sorted([young.name, shard.name, other.name])
    assert remove_stale_temps(folder, older_than_s=0) == [str(young)]
    assert remove_stale_temps(tmp_path / "missing") == []
