"""The conversion figure (pipeline.evaluation.conversion) on hand-built games."""

from __future__ import annotations

import chess
import chess.pgn
import pytest

from pipeline.evaluation.conversion import ConversionError, ahead_at, conversion
from pipeline.evaluation.match import GameOutcome

KRK = "4k3/8/4K3/8/8/8/8/R7 w - - 0 1"  # white a rook up; Ra8# is mate in one


def _game(fen: str, moves: list[str], white: str = "net", black: str = "random") -> GameOutcome:
    board = chess.Board(fen)
    for uci in moves:
        board.push_uci(uci)
    outcome = board.outcome(claim_draw=True)
    result = outcome.result() if outcome else "1/2-1/2"
    termination = outcome.termination.name.lower() if outcome else "max_plies"
    pgn = str(chess.pgn.Game.from_board(board))
    return GameOutcome(white, black, "test", result, termination, len(moves), pgn)


def test_a_won_lead_is_converted_and_a_shuffled_one_is_not() -> None:
    mated = _game(KRK, ["e6d6", "e8d8", "a1a8"])  # ahead after 2 plies, then mate
    shuffle = ["a1a2", "e8d8", "a2a1", "d8e8"] * 2 + ["a1a2"]  # threefold repetition
    drawn = _game(KRK, shuffle)
    assert drawn.termination == "threefold_repetition"
    result = conversion([mated, drawn], "net")
    assert (result.ahead, result.won, dict(result.unconverted)) == (2, 1, {"threefold_repetition": 1})
    assert result.rate == 0.5
    assert "conversion 1/2 (0.50), not won: 1 threefold_repetition" == str(result)


def test_the_side_behind_and_the_other_player() -> None:
    as_black = _game(KRK, ["e6d6", "e8d8", "a1a8"], white="random", black="net")
    result = conversion([as_black], "net")  # net was black, a rook down: never ahead
    assert (result.ahead, result.won) == (0, 0) and str(result).startswith("conversion -")
    assert conversion([as_black], "random").won == 1
    assert conversion([as_black], "someone else").ahead == 0


def test_the_middle_of_an_exchange_does_not_count() -> None:
    """A queen won for one ply and given back is no lead."""
    fen = "3qk3/8/8/8/8/8/8/3QK3 w - - 0 1"
    board = chess.Board(fen)
    assert ahead_at(board, [chess.Move.from_uci(m) for m in ("d1d8", "e8d8")], chess.WHITE, 5, 2) is None
    board = chess.Board(fen)
    assert ahead_at(board, [chess.Move.from_uci("d1d8")], chess.WHITE, 5, 1) == 1


def test_aborted_games_are_left_out() -> None:
    game = _game(KRK, ["e6d6", "e8d8", "a1a8"])
    aborted = GameOutcome("net", "random", "test", "*", "aborted: x", 0, game.pgn)
    assert conversion([aborted], "net").ahead == 0


def test_bad_input_names_the_game() -> None:
    broken = GameOutcome("net", "random", "opening 7", "1-0", "checkmate", 1, '[FEN "not a fen"]\n\n1. e4 *')
    with pytest.raises(ConversionError, match="opening 7"):
        conversion([broken], "net")
    with pytest.raises(ConversionError, match="margin"):
        conversion([], "net", margin=0)


def test_the_figures_as_json_have_no_nan() -> None:
    never = conversion([_game(KRK, ["e6d6", "e8d8", "a1a8"], white="random", black="net")], "net")
    assert never.as_dict() == {"ahead": 0, "won": 0, "rate": None, "unconverted": {}}
    assert conversion([_game(KRK, ["e6d6", "e8d8", "a1a8"])], "net").as_dict()["rate"] == 1.0
