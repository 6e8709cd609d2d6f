"""``zerochess play``: a scripted human against the net (uniform evaluator)."""

from __future__ import annotations

import io

import chess
import chess.pgn
import pytest

from models.evaluation import UniformEvaluator
from models.search_config import SearchConfig
from pipeline.cli import main
from pipeline.play import PlaySession, parse_move, render_board
from pipeline.uci.player import NetPlayer, SearchControl


def play(
    script: str, human: chess.Color = chess.WHITE, fen: str | None = None, nodes: int = 40
) -> tuple[PlaySession, str]:
    out = io.StringIO()
    session = PlaySession(
        NetPlayer(UniformEvaluator(), SearchConfig()),
        human=human,
        limits=lambda: SearchControl(nodes=nodes),
        reader=io.StringIO(script),
        writer=out,
        board=chess.Board(fen) if fen else None,
    )
    session.run()
    return session, out.getvalue()


def test_board_is_drawn_from_each_side() -> None:
    white = render_board(chess.Board()).splitlines()
    assert white[0] == "8  r n b q k b n r" and white[-1] == "   a b c d e f g h"
    black = render_board(chess.Board(), chess.BLACK).splitlines()
    assert black[0] == "1  R N B K Q B N R" and black[-1] == "   h g f e d c b a"
    assert "♜" in render_board(chess.Board(), unicode=True)


@pytest.mark.parametrize("text", ["Nf3", "g1f3", "  nf3 ".replace("n", "N"), "G1F3"])
def test_moves_are_read_in_san_or_uci(text: str) -> None:
    assert parse_move(chess.Board(), text) == chess.Move.from_uci("g1f3")


def test_an_illegal_move_names_the_text() -> None:
    with pytest.raises(ValueError, match="'e5' is not a legal move"):
        parse_move(chess.Board(), "e5")


def test_a_game_with_an_illegal_move_undo_eval_and_resignation() -> None:
    session, text = play("e4\nKe3\nundo\nmoves\neval\nd2d4\nresign\n")
    assert "You play e4." in text and text.count("zerochess plays") == 2
    assert "'Ke3' is not a legal move" in text
    assert "Took back your last move" in text
    assert "Legal moves: " in text and "zerochess's view (" in text
    assert "eval " in text and "White's view" in text
    assert session.result == "0-1" and "Game over: 0-1 (resignation)" in text
    game = chess.pgn.read_game(io.StringIO(text[text.index("[Event") :]))
    assert game is not None and not game.errors
    assert game.headers["Result"] == "0-1" and game.headers["White"] == "you"
    assert next(iter(game.mainline_moves())) == chess.Move.from_uci("d2d4")


def test_the_net_opens_when_the_human_plays_black() -> None:
    session, text = play("quit\n", human=chess.BLACK)
    assert len(session.board.move_stack) == 1 and session.result == "*"
    assert text.index("zerochess plays") < text.index("your move")
    assert "Nothing to undo" in play("undo\nquit\n", human=chess.BLACK)[1]


def test_checkmate_ends_the_game() -> None:
    session, text = play("Ra8#\n", fen="6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
    assert session.result == "1-0" and "Game over: 1-0 (checkmate)" in text


def test_the_net_announces_and_plays_its_mate() -> None:
    # Uniform priors tie every move: which are tried first depends on the move
    # generator's order (python-chess's or the native core's); 100 nodes try them all.
    session, text = play("", human=chess.BLACK, fen="6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", nodes=100)
    assert "zerochess plays Ra8#   eval mate in 1 for white" in text
    assert session.result == "1-0"


def test_draw_claims_are_checked_and_input_end_stops() -> None:
    session, text = play("draw\n")
    assert "No draw can be claimed" in text and session.result == "*" and "input ended" in text


def test_cli_play_runs_a_short_session(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("e4\nresign\n"))
    assert main(["play", "--params", "none", "--uniform", "--simulations", "20"]) == 0
    out = capsys.readouterr().out
    assert "zerochess plays" in out and "Game over: 0-1 (resignation)" in out
