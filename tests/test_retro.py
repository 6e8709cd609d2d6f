"""Walking back from checkmates (pipeline/selfplay/retro.py) and the endgame
starts drawn that way (``endgame_fens(..., walk_back=True)``)."""

from __future__ import annotations

import random

import chess
import chess.engine
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.config import ConfigError
from pipeline.players.stockfish import DEBIAN_PATH
from pipeline.selfplay.endgames import (
    endgame_fens,
    mate_labels,
    parse_kind,
    random_endgame,
    random_replies,
    walked_back_starts,
)
from pipeline.selfplay.retro import random_mate, un_moves, walk_back
from tests.helpers.stockfish import needs_debian_stockfish

KINDS = ["KQK", "KRK", "KBBK", "KBNK", "KQKR"]


def material(board: chess.Board) -> list[str]:
    return sorted(piece.symbol() for piece in board.piece_map().values())


@pytest.mark.parametrize("name", KINDS)
def test_random_mates_are_checkmates_of_their_kind(name: str) -> None:
    kind = parse_kind(name)
    rng = random.Random(7)
    for _ in range(5):
        board = random_mate(rng, kind)
        assert board.turn == chess.BLACK and board.is_valid() and board.is_checkmate(), board.fen()
        strong = "".join(sorted("K" + "".join(chess.piece_symbol(p).upper() for p in kind.strong)))
        assert "".join(sorted(p for p in material(board) if p.isupper())) == strong


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), name=st.sampled_from(KINDS))
def test_un_moves_are_exactly_the_quiet_non_pawn_moves_into_a_position(seed: int, name: str) -> None:
    """Sound: each position returned moves into the given one by a legal move.
    Complete: every legal non-capturing move of a random position is found
    again as an un-move of the position it leads to."""
    rng = random.Random(seed)
    board = None
    while board is None:
        board = random_endgame(rng, parse_kind(name), rng.choice([chess.WHITE, chess.BLACK]))
    for move in board.legal_moves:
        if board.is_capture(move):
            continue
        after = board.copy(stack=False)
        after.push(move)
        after.clear_stack()
        earlier = un_moves(after)
        assert any(e.board_fen() == board.board_fen() and e.turn == board.turn for e in earlier), move.uci()
        for e in earlier:
            assert e.turn != after.turn and e.is_valid()
            assert any(_pushed(e, m).board_fen() == after.board_fen() for m in e.legal_moves)


def _pushed(board: chess.Board, move: chess.Move) -> chess.Board:
    after = board.copy(stack=False)
    after.push(move)
    return after


@pytest.mark.parametrize("name", KINDS)
def test_one_ply_back_from_a_mate_is_a_mate_in_one(name: str) -> None:
    rng = random.Random(3)
    for _ in range(5):
        board = walk_back(rng, parse_kind(name), 1)
        if board is None:
            continue
        assert board.turn == chess.WHITE and not board.is_game_over()
        assert any(_pushed(board, move).is_checkmate() for move in board.legal_moves), board.fen()


def test_walks_keep_the_material_and_the_strong_side_to_move() -> None:
    rng = random.Random(11)
    for plies in (3, 9, 21):
        board = walk_back(rng, parse_kind("KBNK"), plies)
        if board is not None:
            assert board.turn == chess.WHITE and board.is_valid()
            assert material(board) == ["B", "K", "N", "k"]


def test_bad_walks_are_config_errors_naming_the_value() -> None:
    rng = random.Random(0)
    with pytest.raises(ConfigError, match="odd"):
        walk_back(rng, parse_kind("KQK"), 2)
    with pytest.raises(ConfigError, match="got 0"):
        walk_back(rng, parse_kind("KQK"), 0)
    with pytest.raises(ConfigError, match="KPK.*pawns"):
        walk_back(rng, parse_kind("KPK"), 1)
    with pytest.raises(ConfigError, match="walk_back needs max_mate"):
        endgame_fens("KBNK", 2, seed=0, walk_back=True)
    with pytest.raises(ConfigError, match="mate_nodes must be >= 0, got -5"):
        endgame_fens("KBNK", 2, seed=0, max_mate=3, mate_nodes=-5)


def test_unlabelled_walked_back_starts_fill_every_kind_and_distance() -> None:
    starts = walked_back_starts("KBNK,KQKR", 12, seed=5, max_distance=3)
    assert len({fen for fen, _ in starts}) == 12
    cells: dict[tuple[str, int], int] = {}
    for fen, distance in starts:
        board = chess.Board(fen)
        assert board.turn == chess.WHITE and board.is_valid() and not board.is_game_over()
        kind = "KBNK" if board.pieces(chess.KNIGHT, chess.WHITE) else "KQKR"
        assert material(board) == (["B", "K", "N", "k"] if kind == "KBNK" else ["K", "Q", "k", "r"])
        cells[(kind, distance)] = cells.get((kind, distance), 0) + 1
        if distance == 1:  # one un-move from a mate: the mate is there
            assert any(_pushed(board, move).is_checkmate() for move in board.legal_moves), fen
    assert cells == {(kind, d): 2 for kind in ("KBNK", "KQKR") for d in (1, 2, 3)}
    assert walked_back_starts("KBNK,KQKR", 12, seed=5, max_distance=3) == starts  # seeded
    others = walked_back_starts("KBNK,KQKR", 12, seed=5, max_distance=3, exclude=[fen for fen, _ in starts[:4]])
    assert not {fen for fen, _ in others} & {fen for fen, _ in starts[:4]}


def test_unlabelled_walks_name_their_bad_arguments() -> None:
    with pytest.raises(ConfigError, match="count must be >= 1, got 0"):
        walked_back_starts("KBNK", 0, seed=0, max_distance=3)
    with pytest.raises(ConfigError, match="max_distance must be >= 1, got 0"):
        walked_back_starts("KBNK", 2, seed=0, max_distance=0)
    with pytest.raises(ConfigError, match="KPK.*pawns"):
        walked_back_starts("KPK", 2, seed=0, max_distance=2)
    with pytest.raises(ConfigError, match="found only"):
        walked_back_starts("KQK", 50, seed=0, max_distance=1, max_attempts=3)


@needs_debian_stockfish
def test_walked_back_starts_are_stockfish_checked_mates_at_every_distance() -> None:
    """KBNK starts within 3 moves of mate, drawn by walking back and labelled by a
    node-bounded search, are forced mates for the side to move at 1, 2 and 3 moves."""
    fens = endgame_fens("KBNK", 6, seed=4, max_mate=3, mate_nodes=50_000, walk_back=True, strong="random")
    assert len(set(fens)) == 6
    distances = []
    with chess.engine.SimpleEngine.popen_uci(DEBIAN_PATH) as engine:
        for fen in fens:
            board = chess.Board(fen)
            assert len(board.pieces(chess.KNIGHT, board.turn)) == 1 and len(board.pieces(chess.BISHOP, board.turn)) == 1
            # a fresh hash, a search that stops at the first mate in at most 3 (a depth-bounded one
            # may report a longer mate it saw first)
            info = engine.analyse(board, chess.engine.Limit(mate=3, nodes=2_000_000), game=object())
            distances.append(info["score"].pov(board.turn).mate())
    assert all(mate is not None and 1 <= mate <= 3 for mate in distances), str(distances)
    assert set(distances) == {1, 2, 3}, str(distances)


@needs_debian_stockfish
def test_the_endgames_command_walks_back(tmp_path, capsys: pytest.CaptureFixture) -> None:
    from zerochess.cli import main
    from pipeline.selfplay import load_start_positions

    out = tmp_path / "kbnk.epd"
    assert main(["endgames", "--out", str(out), "--kinds", "KBNK", "--count", "2", "--max-mate", "2",
                 "--walk-back", "--mate-nodes", "20000", "--seed", "1"]) == 0  # fmt: skip
    assert len(load_start_positions(out)) == 2
    assert "--walk-back --mate-nodes 20000" in out.read_text().splitlines()[0]
    assert main(["endgames", "--out", str(out), "--kinds", "KBNK", "--walk-back"]) == 2
    assert "--walk-back needs --max-mate" in capsys.readouterr().err
    assert main(["endgames", "--out", str(out), "--kinds", "KBNK", "--max-mate", "2", "--mate-nodes", "-1"]) == 2
    assert "--mate-nodes" in capsys.readouterr().err


@needs_debian_stockfish
def test_mate_labels_see_the_short_mates_of_walked_back_starts() -> None:
    starts = walked_back_starts("KQKR", 6, seed=2, max_distance=1)  # one un-move from a mate
    assert mate_labels([fen for fen, _ in starts], max_mate=5, nodes=20_000) == [1] * 6
    assert mate_labels(["8/8/8/8/8/2k5/8/2K5 w - - 0 1"], max_mate=5, nodes=1000) == [0]  # bare kings: none
    with pytest.raises(ConfigError, match="got 0 and 1000"):
        mate_labels(["8/8/8/8/8/2k5/8/2K5 w - - 0 1"], max_mate=0, nodes=1000)


def test_random_replies_hand_the_move_to_the_other_side_and_skip_finished_games() -> None:
    starts = [fen for fen, _ in walked_back_starts(["KBNK", "KQKR"], 20, seed=4, max_distance=3)]
    mated = "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1"
    replies = random_replies([*starts, mated], seed=9, exclude=starts[:1])
    assert 10 <= len(replies) <= 20 and len(set(replies)) == len(replies)
    assert replies == random_replies([*starts, mated], seed=9, exclude=starts[:1])  # seeded
    for fen in replies:
        board = chess.Board(fen)
        assert board.turn == chess.BLACK and board.is_valid() and not board.is_game_over()
    with pytest.raises(ConfigError, match="not-a-fen"):
        random_replies(["not-a-fen"], seed=0)
