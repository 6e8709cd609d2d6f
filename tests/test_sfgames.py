"""Stockfish self-play games as a supervised source: ``zerochess sfgames``, the
``[%eval ...]`` comments, and their way into shards' ``root_q`` (pgn2shards)."""

from __future__ import annotations

import io
import random
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import pytest

from tests.helpers.stockfish import needs_stockfish
from zerochess.cli import main
from pipeline.supervised.evals import centipawns_to_value, comment_value
from pipeline.supervised.stockfish_games import GamePlan, StockfishGamesError, eval_comment, random_start


@pytest.mark.parametrize(("comment", "value"), [
    ("[%eval 0.00]", 0.0), ("[%eval 1.00]", centipawns_to_value(100)), ("[%eval -3.5]", centipawns_to_value(-350)),
    ("[%eval #3]", 1.0), ("[%eval #-1]", -1.0), ("a note [%eval 2] and [%clk 0:01:00]", centipawns_to_value(200)),
    ("no eval here", None), ("[%eval]", None), ("[%eval abc]", None),
])  # fmt: skip
def test_eval_comments_become_white_s_expected_score(comment: str, value: float | None) -> None:
    assert comment_value(comment) == (None if value is None else pytest.approx(value))


def test_search_scores_are_written_from_white_s_side() -> None:
    white = chess.WHITE
    assert eval_comment(chess.engine.PovScore(chess.engine.Cp(35), white)) == "[%eval 0.35]"
    assert eval_comment(chess.engine.PovScore(chess.engine.Cp(35), chess.BLACK)) == "[%eval -0.35]"
    assert eval_comment(chess.engine.PovScore(chess.engine.Mate(2), chess.BLACK)) == "[%eval #-2]"
    assert eval_comment(None) == ""
    for cp in (-512, -7, 0, 40, 999):
        text = eval_comment(chess.engine.PovScore(chess.engine.Cp(cp), white))
        assert comment_value(text) == pytest.approx(centipawns_to_value(cp))


def test_random_starts_are_seeded_and_playable() -> None:
    first = [random_start(random.Random(f"0:{n}"), 8) for n in range(20)]
    again = [random_start(random.Random(f"0:{n}"), 8) for n in range(20)]
    assert [b.fen() if b else None for b in first] == [b.fen() if b else None for b in again]
    boards = [b for b in first if b is not None]
    assert len({b.fen() for b in boards}) == len(boards) > 15
    assert all(b.is_valid() and not b.is_game_over() and b.ply() == 8 for b in boards)


@pytest.mark.parametrize(("field", "value"), [("nodes", 0), ("random_plies", -1), ("max_plies", 0), ("attempts", 0),
                                              ("nodes", 2.5)])  # fmt: skip
def test_a_bad_plan_names_the_value(field: str, value: object) -> None:
    with pytest.raises(StockfishGamesError, match=f"{field} must be a whole number"):
        GamePlan(**{field: value})


@pytest.mark.parametrize(("argv", "needle"), [
    (["--games", "0"], "--games must be >= 1, got 0"), (["--games", "2", "--nodes", "-5"], "--nodes must be >= 1"),
    (["--games", "2", "--random-plies", "-1"], "--random-plies must be >= 0"),
    (["--games", "2", "--workers", "0"], "--workers must be >= 1"),
    (["--games", "2", "--stockfish", "/nonexistent/stockfish"], "/nonexistent/stockfish"),
])  # fmt: skip
def test_bad_input_is_one_line_exit_2_and_writes_nothing(argv: list[str], needle: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    out = tmp_path / "sf" / "games.pgn"
    code = main(["sfgames", *argv, "--params", "none", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("zerochess sfgames: error: ") and needle in err[0], err
    assert not out.parent.exists()


@needs_stockfish
def test_games_are_real_reproducible_and_become_shards_with_their_evals(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    import pyarrow.parquet as pq

    first, second = tmp_path / "a.pgn", tmp_path / "b.pgn"
    argv = ["sfgames", "--params", "none", "--games", "4", "--nodes", "60", "--random-plies", "6", "--max-plies",
            "80", "--seed", "3", "--workers", "2"]  # fmt: skip
    assert main([*argv, "--out", str(first)]) == 0
    assert main([*argv, "--out", str(second), "--workers", "1"]) == 0
    capsys.readouterr()
    text = first.read_text()
    assert text == second.read_text()  # the same seed and node limit, any number of workers
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    stream = io.StringIO(text)
    games = [game for game in iter(lambda: chess.pgn.read_game(stream), None)]
    assert len(games) == 4
    for game in games:
        start = game.board()
        assert start.ply() == 6 and game.headers["SetUp"] == "1"
        moves = list(game.mainline())
        assert 0 < len(moves) <= 80 and all(comment_value(node.comment) is not None for node in moves)
        final = game.end().board()
        assert game.headers["Result"] == (final.outcome(claim_draw=True).result()
                                          if final.is_game_over(claim_draw=True) else "1/2-1/2")  # fmt: skip

    assert main(["pgn2shards", "--params", "none", "--pgn", str(first), "--out", str(tmp_path / "shards"),
                 "--no-ray"]) == 0  # fmt: skip
    rows = pq.read_table(sorted((tmp_path / "shards").glob("*/*.parquet"))).to_pandas()
    assert len(rows) == sum(len(list(game.mainline_moves())) for game in games)
    assert (rows["root_q"].abs() <= 1).all() and (rows["root_q"] != 0).mean() > 0.9
    by_fen = {}
    for game in games:
        board = game.board()
        for node in game.mainline():
            white_q = comment_value(node.comment)
            by_fen[board.fen()] = white_q if board.turn == chess.WHITE else -white_q
            board.push(node.move)
    for fen, q in zip(rows["fen"], rows["root_q"]):
        assert q == pytest.approx(by_fen[chess.Board(fen).fen()], abs=1e-6)  # the mover's eval, side to move
