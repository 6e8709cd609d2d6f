"""Positions labelled from the distance-to-mate tables (``zerochess label --tablebases``).

The tables are the three-piece ones, built into a temporary folder (a
fraction of a second each); python-chess checks the mates the labels point to.
"""

from __future__ import annotations

import random
from pathlib import Path

import chess
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.policy import get_policy_map
from pipeline.shards import load_shards
from pipeline.supervised.config import SupervisedConfig
from pipeline.supervised.labelling import positions_from_file
from pipeline.supervised.tablebase_labels import (
    NotInTables,
    TablebaseLabeller,
    move_verdicts,
    probe,
    table_line,
    table_policy,
)
from pipeline.training.tablebases import TablebaseStore
from tests.helpers.cli import run_zerochess

MATE_IN_ONE = "7k/8/6K1/8/8/8/8/1Q6 w - - 0 1"  # Qb8#
KRK_BLACK = "8/8/8/3k4/8/8/8/R3K3 b - - 0 1"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tables")


@pytest.fixture(scope="module")
def store(folder: Path) -> TablebaseStore:
    return TablebaseStore(folder)


@st.composite
def three_pieces(draw: st.DrawFn) -> chess.Board:
    squares = draw(st.lists(st.integers(0, 63), min_size=3, max_size=3, unique=True))
    board = chess.Board(None)
    board.set_piece_at(squares[0], chess.Piece(chess.KING, chess.WHITE))
    board.set_piece_at(squares[1], chess.Piece(chess.KING, chess.BLACK))
    board.set_piece_at(squares[2], chess.Piece(draw(st.sampled_from([chess.QUEEN, chess.ROOK])), chess.WHITE))
    board.turn = draw(st.booleans())
    return board


def won_or_lost() -> st.SearchStrategy[chess.Board]:
    """A legal KQK or KRK position, either side to move, the game not over."""
    return three_pieces().filter(lambda board: board.is_valid() and not board.is_game_over())


def test_the_mass_goes_to_the_fastest_mates(store: TablebaseStore) -> None:
    board = chess.Board(MATE_IN_ONE)
    moves, probs = table_policy(board, store, temperature_plies=1.0)
    assert probs.sum() == pytest.approx(1.0)
    mates = {move for move in board.legal_moves if board.gives_check(move) and _mates(board, move)}
    assert board.is_valid() and chess.Move.from_uci("b1b8") in mates
    top = {move for move, p in zip(moves, probs, strict=True) if p == probs.max()}
    assert top == mates
    by_move = dict(zip(moves, probs, strict=True))
    slower = [p for move, p in by_move.items() if move not in mates]
    assert slower and max(slower) == pytest.approx(by_move[next(iter(mates))] * np.exp(-2), rel=1e-4)


def test_the_losing_side_resists_longest_and_a_draw_is_shared_evenly(store: TablebaseStore) -> None:
    board = chess.Board(KRK_BLACK)
    moves, probs = table_policy(board, store, temperature_plies=0.5)
    verdicts = dict(move_verdicts(board, store))
    longest = max(verdict.plies or 0 for verdict in verdicts.values())
    best = {move for move, p in zip(moves, probs, strict=True) if p == probs.max()}
    assert best == {move for move, verdict in verdicts.items() if verdict.plies == longest}
    assert all(verdicts[move].result == -1 for move in moves)
    drawn = chess.Board("8/8/8/4k3/8/8/8/KN6 w - - 0 1")  # a lone knight cannot mate
    moves, probs = table_policy(drawn, store, temperature_plies=1.0)
    assert len(moves) == drawn.legal_moves.count() and np.allclose(probs, 1 / len(moves))


@settings(max_examples=60, deadline=None)
@given(board=won_or_lost())
def test_the_policy_keeps_the_result_and_the_label_the_distance(store: TablebaseStore, board: chess.Board) -> None:
    verdict = probe(board, store)
    moves, probs = table_policy(board, store, temperature_plies=1.0)
    verdicts = dict(move_verdicts(board, store))
    assert probs.sum() == pytest.approx(1.0) and (probs > 0).all()
    assert {verdicts[move].result for move in moves} == {verdict.result}
    if verdict.result == 1:
        assert min(verdicts[move].plies or 0 for move in moves) == verdict.plies
    labeller = TablebaseLabeller(str(store.folder), 1.0)
    position = next(iter(_positions_of([board.fen()], store.folder)))
    rows = labeller.label(position, get_policy_map("az4672"), SupervisedConfig())
    assert int(rows.z[0]) == verdict.result and float(rows.root_q[0]) == verdict.result
    assert rows.game_plies is not None and rows.root_d is not None
    assert int(rows.game_plies[0]) == (-1 if verdict.plies is None else verdict.plies)
    assert float(rows.root_d[0]) == (1.0 if verdict.result == 0 else 0.0)


@settings(max_examples=20, deadline=None)
@given(board=won_or_lost(), seed=st.integers(0, 1000))
def test_a_table_line_mates_in_the_distance_of_its_start(store: TablebaseStore, board: chess.Board, seed: int) -> None:
    verdict = probe(board, store)
    line = table_line(board, store, random.Random(seed))
    assert line[0].fen() == board.fen()
    if verdict.result == 0:
        assert len(line) == 1
        return
    assert len(line) == verdict.plies
    last = line[-1]
    assert any(_mates(last, move) for move in last.legal_moves)
    assert [probe(position, store).plies for position in line] == list(range(len(line), 0, -1))


def test_a_position_no_table_holds_is_named(store: TablebaseStore) -> None:
    with pytest.raises(NotInTables, match="rnbqkbnr"):
        probe(chess.Board(), store)
    with pytest.raises(ValueError, match="label_temperature_plies"):
        TablebaseLabeller(str(store.folder), 0.0)


def test_label_tablebases_writes_shards_of_exact_labels(folder: Path, tmp_path: Path) -> None:
    epd = tmp_path / "positions.epd"
    fens = [MATE_IN_ONE, KRK_BLACK, "8/8/8/4k3/8/8/8/KN6 w - - 0 1", chess.STARTING_FEN]
    epd.write_text("\n".join(fens) + "\n")
    out = tmp_path / "labels"
    result = run_zerochess("label", "--positions", str(epd), "--tablebases", "--out", str(out),
                           "--set", "supervised.heldout_fraction=0.0", "--set", f"train.tablebase_dir={folder}")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert '"no-table": 1' in result.stdout
    tables, bad = load_shards(out / "train")  # the shards pass validation
    assert not bad and len(tables) == 1
    table = tables[0].to_pandas().set_index("fen")
    assert table.loc[MATE_IN_ONE, "z"] == 1 and table.loc[MATE_IN_ONE, "game_plies"] == 1
    assert table.loc[KRK_BLACK, "z"] == -1 and table.loc[KRK_BLACK, "result"] == "1-0"
    drawn = table.loc["8/8/8/4k3/8/8/8/KN6 w - - 0 1"]
    assert drawn["z"] == 0 and drawn["root_d"] == 1.0 and drawn["game_plies"] == -1
    assert set(table["termination"]) == {"tablebase"}


def test_label_tablebases_refuses_stockfish_options(tmp_path: Path) -> None:
    epd = tmp_path / "positions.epd"
    epd.write_text(MATE_IN_ONE + "\n")
    result = run_zerochess("label", "--positions", str(epd), "--tablebases", "--depth", "4",
                           "--out", str(tmp_path / "o"))  # fmt: skip
    assert result.returncode == 2
    assert "--tablebases takes no --depth" in result.stderr


def _mates(board: chess.Board, move: chess.Move) -> bool:
    board.push(move)
    try:
        return board.is_checkmate()
    finally:
        board.pop()


def _positions_of(fens: list[str], folder: Path):
    path = folder / "one.epd"
    path.write_text("\n".join(fens) + "\n")
    return list(positions_from_file(path))
