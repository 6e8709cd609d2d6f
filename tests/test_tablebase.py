"""The native distance-to-mate tables (models/tablebase.py, models/native/tablebase.cpp)
and the training targets rescored from them (pipeline/training/tablebases.py).

Every entry is checked against python-chess the way a table is defined: a
position is won in v plies when some legal move leads to a position the
other side loses in v - 1 and none to a shorter loss, lost in v plies when
every move leads to the other side's win and the longest takes v - 1, and
drawn otherwise.  The longest mates are the published ones (Thompson's and
Nalimov's tables): KQK 10 moves, KRK 16, KBBK 19, KBNK 33, KQKR 35.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import chess
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.evaluation import UniformEvaluator
from models.policy import get_policy_map
from models.tablebase import INVALID, Probe, build_tables, decode_entry, table_entry
from pipeline.config import SelfPlayConfig, load_config
from pipeline.selfplay import SelfPlayWorker, game_positions
from pipeline.shards import records_to_table
from pipeline.training.batches import GroupArrays, stream_columns
from pipeline.training.config import TrainConfig
from pipeline.training.data import StreamSpec, decode_batch
from pipeline.training.tablebases import TablebaseError, TablebaseStore, rescore_tablebases
from pipeline.training.targets import moves_left_targets
from tests.helpers import ROOT
from tests.helpers.searches import TINY_SEARCH

SMALL = ("KvK", "KQvK", "KRvK", "KBvK", "KNvK")


@pytest.fixture(scope="module")
def small() -> dict[str, np.ndarray]:
    return build_tables(SMALL)


def probe(tables: dict[str, np.ndarray], board: chess.Board) -> Probe | None:
    entry = table_entry(board.fen())
    assert entry is not None, board.fen()
    return decode_entry(int(tables[entry.name][entry.index]))


def expected_probe(tables: dict[str, np.ndarray], board: chess.Board) -> tuple[int, int | None]:
    """What the definition of a table gives for ``board`` from its successors' entries."""
    successors = []
    for move in board.legal_moves:
        board.push(move)
        successors.append(probe(tables, board))
        board.pop()
    if not successors:
        return (-1, 0) if board.is_check() else (0, None)
    wins = [s.plies + 1 for s in successors if s is not None and s.result == -1 and s.plies is not None]
    if wins:
        return 1, min(wins)
    if all(s is not None and s.result == 1 for s in successors):
        return -1, max(s.plies for s in successors if s is not None and s.plies is not None) + 1
    return 0, None


def scattered_pieces(draw: st.DrawFn, white: str, black: str) -> chess.Board:
    """Kings and the ``white`` and ``black`` pieces (letters) on distinct random squares, either side to move."""
    squares = draw(st.lists(st.integers(0, 63), min_size=2 + len(white) + len(black),
                            max_size=2 + len(white) + len(black), unique=True))  # fmt: skip
    board = chess.Board(None)
    board.set_piece_at(squares[0], chess.Piece(chess.KING, chess.WHITE))
    board.set_piece_at(squares[1], chess.Piece(chess.KING, chess.BLACK))
    for square, symbol in zip(squares[2:], white + black.lower(), strict=True):
        board.set_piece_at(square, chess.Piece.from_symbol(symbol))
    board.turn = draw(st.booleans())
    return board


@st.composite
def small_positions(draw: st.DrawFn) -> chess.Board:
    white, black = draw(st.sampled_from([("Q", ""), ("R", ""), ("", "Q"), ("", "R"), ("B", ""), ("", "N")]))
    return scattered_pieces(draw, white, black)


@settings(max_examples=400, deadline=None)
@given(small_positions())
def test_every_entry_follows_from_its_successors(small: dict[str, np.ndarray], board: chess.Board) -> None:
    entry = table_entry(board.fen())
    assert entry is not None
    value = int(small[entry.name][entry.index])
    if not board.is_valid():
        assert value == INVALID
        return
    found = decode_entry(value)
    assert found is not None
    assert (found.result, found.plies) == expected_probe(small, board), board.fen()


def test_the_longest_three_piece_mates_are_the_published_ones(small: dict[str, np.ndarray]) -> None:
    assert int(small["KQvK"].max()) == 19  # mate in 10 moves
    assert int(small["KRvK"].max()) == 31  # mate in 16
    for name in ("KvK", "KBvK", "KNvK"):  # no mate: every position is drawn
        assert set(np.unique(small[name]).tolist()) <= {0, INVALID}


@pytest.mark.parametrize(
    ("fen", "expected"),
    [
        ("6k1/8/6K1/8/8/8/8/Q7 w - - 0 1", Probe(1, 1)),  # Qa8#
        ("Q5k1/8/6K1/8/8/8/8/8 b - - 0 1", Probe(-1, 0)),  # checkmated
        ("7k/8/6QK/8/8/8/8/8 b - - 0 1", Probe(0, None)),  # stalemate
        ("8/8/8/8/8/2k5/3Q4/6K1 b - - 0 1", Probe(0, None)),  # the lone king takes the queen
        ("q5K1/8/6k1/8/8/8/8/8 w - - 0 1", Probe(-1, 0)),  # Black is the strong side
    ],
)
def test_golden_positions(small: dict[str, np.ndarray], fen: str, expected: Probe) -> None:
    assert probe(small, chess.Board(fen)) == expected


def test_a_position_with_the_colours_swapped_has_the_same_entry() -> None:
    board = chess.Board("8/8/8/3k4/8/8/2R5/6K1 w - - 0 1")
    mirrored = board.mirror()  # colours swapped, ranks flipped, the other side to move
    assert table_entry(board.fen()) == table_entry(mirrored.fen())
    assert table_entry(mirrored.fen()).name == "KRvK"


@pytest.mark.parametrize(
    "fen",
    [
        "8/8/8/3k4/8/8/P7/6K1 w - - 0 1",  # a pawn
        "8/8/8/3k4/8/8/QRB5/6K1 w - - 0 1",  # five pieces
        "4k3/8/8/8/8/8/8/R3K3 w Q - 0 1",  # castling rights
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        "not a fen",
    ],
)
def test_positions_no_table_holds(fen: str) -> None:
    assert table_entry(fen) is None


@pytest.mark.parametrize("name", ["KQK", "KPvK", "KQRBvK", "QvK", "KQvKvK"])
def test_a_malformed_name_is_an_error_naming_it(name: str) -> None:
    with pytest.raises(ValueError, match=f"'{name}'"):
        build_tables([name])


@pytest.mark.slow
def test_four_piece_tables() -> None:
    tables = build_tables(["KBBvK", "KBNvK", "KQvKR", "KQvK", "KRvK", "KBvK", "KNvK", "KvK"])
    assert int(tables["KBBvK"].max()) == 37  # mate in 19 moves (bishops on opposite colours)
    assert int(tables["KBNvK"].max()) == 65  # mate in 33
    assert int(tables["KQvKR"].max()) == 69  # mate in 35
    rng = np.random.default_rng(0)
    for name in ("KBNvK", "KQvKR"):  # KQKR's captures lead into KQK and (colours swapped) KRK
        white, black = name[1:].split("vK")
        checked = 0
        while checked < 150:
            squares = rng.choice(64, size=2 + len(white) + len(black), replace=False)
            board = chess.Board(None)
            board.set_piece_at(int(squares[0]), chess.Piece(chess.KING, chess.WHITE))
            board.set_piece_at(int(squares[1]), chess.Piece(chess.KING, chess.BLACK))
            for square, symbol in zip(squares[2:], white + black.lower(), strict=True):
                board.set_piece_at(int(square), chess.Piece.from_symbol(symbol))
            board.turn = bool(rng.integers(2))
            if not board.is_valid():
                continue
            found = probe(tables, board)
            assert found is not None
            assert (found.result, found.plies) == expected_probe(tables, board), board.fen()
            checked += 1


def test_the_store_builds_once_and_reads_back(tmp_path: Path) -> None:
    store = TablebaseStore(tmp_path)
    table = store.table("KRvK")
    assert (tmp_path / "KRvK.npy").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["KRvK.npy"]  # no temp file left
    again = TablebaseStore(tmp_path).table("KRvK")
    assert np.array_equal(table, again)


def test_a_corrupt_or_wrong_table_file_is_an_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "KQvK.npy").write_bytes(b"not a table")
    with pytest.raises(TablebaseError, match="KQvK.npy"):
        TablebaseStore(tmp_path).table("KQvK")
    np.save(tmp_path / "KRvK.npy", np.zeros(10, dtype=np.int8))
    with pytest.raises(TablebaseError, match=r"KRvK.npy.*expected int8"):
        TablebaseStore(tmp_path).table("KRvK")


def test_rescoring_rows(tmp_path: Path) -> None:
    store = TablebaseStore(tmp_path)
    fens = [
        "6k1/8/6K1/8/8/8/8/Q7 w - - 0 1",  # mate in 1 ply
        "Q5k1/8/6K1/8/8/8/8/8 b - - 0 1",  # mated
        "6k1/8/6K1/8/8/8/8/Q7 w - - 99 80",  # mate in 1 at the fifty-move counter's 99th ply: kept
        "6k1/8/6K1/8/8/8/8/Q7 w - - 100 80",  # ... at its 100th: the game is drawn, kept
        "8/8/8/8/8/2k5/3Q4/6K1 b - - 0 1",  # a draw: z rescored, the plies left kept
        "8/8/8/3k4/8/8/P7/6K1 w - - 0 1",  # a pawn: kept
    ]
    z = np.array([0, 0, 0, 0, 1, 0.5], dtype=np.float32)
    plies = np.full(6, 40.0, dtype=np.float32)
    new_z, new_plies = rescore_tablebases(fens, z, plies, store)
    assert new_z.tolist() == [1, -1, 1, 0, 0, 0.5]
    assert new_plies is not None and new_plies.tolist() == [1, 0, 1, 40, 40, 40]
    assert z.tolist() == [0, 0, 0, 0, 1, 0.5] and plies.tolist() == [40.0] * 6  # inputs unchanged
    assert rescore_tablebases(fens, z, None, store)[1] is None


def drawn_rook_and_queen_games() -> list:
    """Self-play rows of KRK/KQK games a uniform search does not win in 16 plies."""
    starts = ["8/8/8/3k4/8/8/8/R5K1 w - - 0 1", "8/8/8/3k4/8/8/8/Q5K1 w - - 0 1"]
    selfplay = SelfPlayConfig(resign_threshold=-1.0, full_search_prob=1.0, games_per_task=4, max_plies=16)
    records = SelfPlayWorker(UniformEvaluator(), TINY_SEARCH, selfplay, start_fens=starts).play(4, 3, id_prefix="tb")
    return [row for record in records for row in game_positions(record, get_policy_map("az4672"), 0)]


def test_both_decoders_train_on_the_tables(tmp_path: Path) -> None:
    table = records_to_table(drawn_rook_and_queen_games())
    fens = table.column("fen").to_pylist()
    z = table.column("z").to_numpy().astype(np.float32)
    expected_z, expected_plies = rescore_tablebases(fens, z, moves_left_targets(table), TablebaseStore(tmp_path))
    assert expected_plies is not None
    assert (expected_z != z).any() and (expected_z == 1).any() and (expected_z == -1).any()
    _, _, slow_z, slow_plies = decode_batch(table, "az4672", moves_left=True, tablebases=str(tmp_path))
    assert slow_z.numpy().tolist() == expected_z.tolist()
    assert slow_plies.numpy().tolist() == expected_plies.tolist()
    spec = StreamSpec((), 8, 8, 0, 0, "az4672", value_head="wdl", moves_left=True, tablebases=str(tmp_path))
    assert "fen" in stream_columns(spec)
    fast = GroupArrays.of(table.select(list(stream_columns(spec))), spec)
    wdl = np.stack([expected_z > 0, expected_z == 0, expected_z < 0], axis=1).astype(np.float32)
    assert fast.target.tolist() == wdl.tolist()
    assert fast.plies_left is not None and fast.plies_left.tolist() == expected_plies.tolist()


def test_the_settings_are_read_like_every_train_key(tmp_path: Path) -> None:
    config = load_config(ROOT / "params.yaml", ["train.tablebases=true", f"train.tablebase_dir={tmp_path}"])
    assert config.train.tablebases is True
    assert config.train.tablebase_folder() == str(tmp_path)
    assert TrainConfig().tablebase_folder() == ""
    assert TrainConfig(tablebases=True).tablebase_folder().endswith("zerochess/tablebases")


def test_the_bench_prints_the_longest_mates_beside_the_published_ones(
        capsys: pytest.CaptureFixture[str], bench_script: Callable[[str], ModuleType]) -> None:  # fmt: skip
    assert bench_script("tablebase").main(["--tables", "KQvK,KRvK,KBvK"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    assert [(row[0], row[2], row[3]) for row in rows] == [("KQvK", "10", "10"), ("KRvK", "16", "16"), ("KBvK", "0", "-")]
