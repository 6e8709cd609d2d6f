"""``zerochess play``: a scripted human against the net (uniform evaluator)."""

from __future__ import annotations

import io
from collections.abc import Sequence

import chess
import chess.pgn
import numpy as np
import pytest

from models.evaluation import Leaf, UniformEvaluator
from models.search_config import SearchConfig
from zerochess.cli import main
from pipeline.play import (
    COMMANDS,
    HELP,
    PlaySession,
    bad_move_message,
    parse_move,
    render_board,
    warm_up,
)
from pipeline.uci.player import NetPlayer, SearchControl


class RecordingEvaluator(UniformEvaluator):
    """Uniform priors, noting the batch size of every call (either protocol)."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def evaluate(self, leaves: Sequence[Leaf]) -> list[tuple[np.ndarray, float]]:
        self.sizes.append(len(leaves))
        return super().evaluate(leaves)

    def evaluate_batch(
        self, planes: np.ndarray, rows: np.ndarray, indices: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        self.sizes.append(len(planes))
        return super().evaluate_batch(planes, rows, indices)


class WatchedInput(io.StringIO):
    """Scripted input that notes the batch sizes the evaluator had seen when
    the first line was read."""

    def __init__(self, script: str, evaluator: RecordingEvaluator) -> None:
        super().__init__(script)
        self.evaluator = evaluator
        self.sizes_before_input: list[int] | None = None

    def readline(self, size: int | None = -1) -> str:
        if self.sizes_before_input is None:
            self.sizes_before_input = list(self.evaluator.sizes)
        return super().readline(size)


def play(
    script: str,
    human: chess.Color = chess.WHITE,
    fen: str | None = None,
    nodes: int = 40,
    evaluator: UniformEvaluator | None = None,
    reader: io.StringIO | None = None,
) -> tuple[PlaySession, str]:
    out = io.StringIO()
    session = PlaySession(
        NetPlayer(evaluator or UniformEvaluator(), SearchConfig()),
        human=human,
        limits=lambda: SearchControl(nodes=nodes),
        reader=reader or io.StringIO(script),
        writer=out,
        board=chess.Board(fen) if fen else None,
    )
    session.run()
    return session, out.getvalue()


def lines_with(text: str, word: str) -> list[str]:
    """The lines of ``text`` holding ``word``, less the prompt before them."""
    return [line.split("your move: ")[-1] for line in text.splitlines() if word in line]


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
    assert len(lines_with(text, "Ke3 is illegal here")) == 1
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
    assert "last move: Ra8#  (checkmate, White wins 1-0)" in text and "(check)" not in text


def test_stalemate_is_shown_as_a_draw() -> None:
    session, text = play("Qc7\n", fen="k7/8/1K6/8/8/8/8/2Q5 w - - 0 1")
    assert "last move: Qc7  (stalemate, draw 1/2-1/2)" in text
    assert session.result == "1/2-1/2" and "Game over: 1/2-1/2 (stalemate)" in text


def test_a_check_is_still_shown_as_check() -> None:
    _, text = play("Qe8+\nquit\n", fen="k7/8/8/8/8/8/8/4Q1K1 w - - 0 1")
    assert "last move: Qe8+  (check)" in text


def test_the_net_announces_and_plays_its_mate() -> None:
    # Uniform priors tie every move: which are tried first depends on the move
    # generator's order (python-chess's or the native core's); 100 nodes try them all.
    session, text = play("", human=chess.BLACK, fen="6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", nodes=100)
    assert "zerochess plays Ra8#   eval mate in 1 for white" in text
    assert "last move: Ra8#  (checkmate, White wins 1-0)" in text
    assert session.result == "1-0"


# ------------------------------------------------------- moves that cannot be played

START = chess.STARTING_FEN
PINNED = "4r1k1/8/8/8/8/8/4B3/4K3 w - - 0 1"  # the bishop on e2 shields the king
CHECKED = "4k3/8/8/8/8/8/4B3/4K2r w - - 0 1"  # the rook on h1 gives check
KNIGHTS = "4k3/8/8/8/8/8/8/1N2KN2 w - - 0 1"  # Nb1 and Nf1 both reach d2
NOT_A_MOVE = "is not a move or a command: type a move (e4, Nf3, g1f3), 'moves' or 'help'."


@pytest.mark.parametrize(
    ("fen", "text", "message"),
    [
        (START, "Ke3", "Ke3 is illegal here. No legal king moves; 'moves' lists yours."),
        (START, "Nf4", "Nf4 is illegal here. Legal knight moves: Na3, Nc3, Nf3, Nh3."),
        (START, "e5", "e5 is illegal here. Legal e-pawn moves: e3, e4."),
        (START, "e2e5", "e2e5 is illegal here. Legal moves from e2: e3, e4."),
        (START, "e7e5", "e7e5 is illegal here: you have no piece on e7."),
        (START, "--", f"'--' {NOT_A_MOVE}"),
        (START, "hello", f"'hello' {NOT_A_MOVE}"),
        (START, "a1a1", f"'a1a1' {NOT_A_MOVE}"),
        (PINNED, "Bb5", ("Bb5 is illegal here: it would leave your king in check. "
                         "No legal bishop moves; 'moves' lists yours.")),
        (CHECKED, "Bb5", "Bb5 is illegal here: you are in check. Legal bishop moves: Bf1."),
        (CHECKED, "O-O", "O-O is illegal here: you are in check. Legal king moves: Kd2, Kf2."),
        (KNIGHTS, "Nd2", "Nd2 is ambiguous here: Nbd2 or Nfd2."),
        ("4k3/8/8/8/8/8/8/4K3 w - - 0 1", "Qd4", "Qd4 is illegal here: you have no queen."),
    ],
)
def test_a_move_that_cannot_be_played_gets_one_short_line(
    fen: str, text: str, message: str
) -> None:
    board = chess.Board(fen)
    with pytest.raises(ValueError):
        parse_move(board, text)
    assert bad_move_message(board, text) == message


def test_a_long_list_of_legal_moves_is_cut() -> None:
    message = bad_move_message(chess.Board("4k3/8/8/8/8/8/8/Q3K3 w - - 0 1"), "Qb8")
    assert message.startswith("Qb8 is illegal here. Legal queen moves: ")
    assert message.endswith(" and 9 more ('moves' lists all).") and "\n" not in message


def test_the_game_answers_a_bad_move_without_the_fen() -> None:
    _, text = play("Ke3\nhello\ne2e5\nquit\n")
    assert lines_with(text, "Ke3") == [
        "Ke3 is illegal here. No legal king moves; 'moves' lists yours."
    ]
    assert len(lines_with(text, "'hello' is not a move")) == 1
    assert lines_with(text, "e2e5") == ["e2e5 is illegal here. Legal moves from e2: e3, e4."]
    assert chess.Board().fen().split()[0] not in text and "Traceback" not in text


# ---------------------------------------------------------------- warm-up


def test_the_network_is_warmed_up_at_every_batch_size_before_the_first_prompt() -> None:
    evaluator = RecordingEvaluator()
    reader = WatchedInput("quit\n", evaluator)
    play("", evaluator=evaluator, reader=reader)
    leaves = SearchConfig().leaves_per_batch
    assert reader.sizes_before_input is not None
    assert set(reader.sizes_before_input) == set(range(1, leaves + 1))


def test_the_warm_up_comes_before_the_nets_first_search() -> None:
    evaluator = RecordingEvaluator()
    play("quit\n", human=chess.BLACK, evaluator=evaluator)
    leaves = SearchConfig().leaves_per_batch
    warm = evaluator.sizes[: 2 * leaves]
    assert warm == sorted(2 * list(range(1, leaves + 1))) and len(evaluator.sizes) > len(warm)


def test_an_evaluator_without_the_native_protocol_is_not_warmed() -> None:
    class PythonOnly:
        needs_planes = False

    assert warm_up(PythonOnly(), 8) == 0
    assert warm_up(UniformEvaluator(), 3, rounds=2) == 6


# ---------------------------------------------------------------- help


def test_play_help_lists_the_in_game_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["play", "--help"])
    out = capsys.readouterr().out
    for line in HELP.splitlines()[1:]:
        assert line in out  # the same lines as in the game, kept apart
    assert "During the game, type a move in SAN" in out


def test_the_game_knows_every_listed_command_and_help_lists_them() -> None:
    session, text = play("help\nquit\n")
    assert HELP in text
    for name, _ in COMMANDS:
        assert name in session._commands


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
