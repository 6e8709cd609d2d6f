"""A game against the network in the terminal (``zerochess play``).

The board is drawn as text from the human's side after every move; moves are
typed in SAN (``Nf3``, ``exd5``, ``O-O``) or UCI (``g1f3``, ``e7e8q``).
After each of its moves the net shows its evaluation (centipawns from
White's point of view, mapped from its value as in
:mod:`pipeline.uci.analysis`, or a proven mate) and its expected line.

Commands at the prompt: ``help``, ``undo`` (take back your last move and the
net's answer), ``eval`` (the net's view of your position, without moving),
``moves`` (your legal moves), ``board``, ``draw`` (claim a draw by repetition
or the 50-move rule), ``resign``, ``quit``.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import TextIO

import chess
import chess.pgn

from pipeline.uci.analysis import MoveLine, value_to_centipawns
from pipeline.uci.player import NetPlayer, SearchControl, SearchReport

NET_NAME = "zerochess"
HELP = (
    "Type a move in SAN (Nf3, exd5, O-O, e8=Q) or UCI (g1f3, e7e8q), or a command:\n"
    "  undo    take back your last move (and the net's answer)\n"
    "  eval    show the net's view of the position without moving\n"
    "  moves   list your legal moves\n"
    "  board   draw the board again\n"
    "  draw    claim a draw (threefold repetition or 50-move rule)\n"
    "  resign  give up the game\n"
    "  quit    leave without a result\n"
    "  help    this text"
)


def render_board(
    board: chess.Board, orientation: chess.Color = chess.WHITE, unicode: bool = False
) -> str:
    """The board as text, ``orientation``'s side at the bottom, with file
    letters and rank numbers (upper case: White; ``.``: empty)."""
    ranks = range(7, -1, -1) if orientation == chess.WHITE else range(8)
    files = range(8) if orientation == chess.WHITE else range(7, -1, -1)
    rows = []
    for rank in ranks:
        cells = []
        for file in files:
            piece = board.piece_at(chess.square(file, rank))
            if piece is None:
                cells.append(".")
            else:
                cells.append(piece.unicode_symbol() if unicode else piece.symbol())
        rows.append(f"{rank + 1}  {' '.join(cells)}")
    rows.append("   " + " ".join(chess.FILE_NAMES[file] for file in files))
    return "\n".join(rows)


def parse_move(board: chess.Board, text: str) -> chess.Move:
    """The legal move written ``text`` in SAN or UCI.

    Raises:
        ValueError: not a legal move here; the message names the text and the FEN.
    """
    text = text.strip()
    try:
        return board.parse_san(text)
    except ValueError:
        pass
    try:
        move = chess.Move.from_uci(text.lower())
    except ValueError:
        move = None
    if move is not None and board.is_legal(move):
        return move
    raise ValueError(f"{text!r} is not a legal move in {board.fen()}")


def describe_score(line: MoveLine | None, report: SearchReport, mover: chess.Color) -> str:
    """The evaluation of ``line`` (played by ``mover``) from White's point of view."""
    if line is not None and line.mate is not None:
        winner = mover if line.mate > 0 else not mover
        return f"mate in {abs(line.mate)} for {chess.COLOR_NAMES[winner]}"
    q = line.q if line is not None and line.q is not None else report.root_value
    white_q = q if mover == chess.WHITE else -q
    return f"{value_to_centipawns(white_q) / 100:+.2f} (White's view; value {white_q:+.3f})"


def pv_san(board: chess.Board, moves: list[chess.Move]) -> str:
    """A line of moves in SAN with move numbers."""
    return board.variation_san(moves)


class PlaySession:
    """One game between a human at the terminal and the net.

    Args:
        player: the net's searcher.
        human: the human's colour.
        limits: a fresh :class:`SearchControl` for each of the net's searches.
        reader, writer: the terminal (any text streams, for tests).
        board: the start position (default: the standard one).
        unicode: draw pieces as Unicode symbols.
        lines: lines shown by ``eval``.
    """

    def __init__(
        self,
        player: NetPlayer,
        *,
        human: chess.Color,
        limits: Callable[[], SearchControl],
        reader: TextIO,
        writer: TextIO,
        board: chess.Board | None = None,
        unicode: bool = False,
        lines: int = 3,
    ) -> None:
        self.player = player
        self.human = human
        self.limits = limits
        self.reader = reader
        self.writer = writer
        self.board = board.copy() if board is not None else chess.Board()
        self.unicode = unicode
        self.lines = lines
        self.result: str | None = None
        self.termination = ""
        self._commands: dict[str, Callable[[], bool]] = {
            "help": self._help,
            "?": self._help,
            "undo": self._undo,
            "eval": self._eval,
            "moves": self._moves,
            "board": self._show,
            "draw": self._draw,
            "resign": self._resign,
            "quit": self._quit,
            "exit": self._quit,
        }

    # -- the game loop ---------------------------------------------------

    def run(self) -> str:
        """Play until the game ends, the human resigns or quits (or input ends);
        return the result (``1-0``, ``0-1``, ``1/2-1/2`` or ``*``)."""
        self.player.set_position(self.board)
        self._say(f"You play {chess.COLOR_NAMES[self.human]}. Type 'help' for commands.")
        self._show()
        while self.result is None:
            outcome = self.board.outcome()
            if outcome is not None:
                self._finish(outcome.result(), outcome.termination.name.lower().replace("_", " "))
                break
            if self.board.turn != self.human:
                self._net_moves()
                continue
            text = self._ask(f"{self._move_number()} your move: ")
            if text is None:
                self._finish("*", "input ended")
                break
            self._obey(text)
        self._say(self._pgn())
        return self.result or "*"

    def _obey(self, text: str) -> None:
        command = text.strip().lower()
        if not command:
            return
        handler = self._commands.get(command)
        if handler is not None:
            handler()
            return
        try:
            move = parse_move(self.board, text)
        except ValueError as error:
            self._say(f"{error}. Type 'moves' for the legal moves, 'help' for commands.")
            return
        self._say(f"You play {self.board.san(move)}.")
        self._push(move)
        self._show()

    def _net_moves(self) -> None:
        self._say("zerochess is thinking...")
        report = self.player.search(self.limits())
        move = report.best_move
        if move is None:  # no legal move: outcome() ends the game on the next turn
            return
        line = next((line for line in report.lines if line.move == move), None)
        score = describe_score(line, report, self.board.turn)
        expected = pv_san(self.board, line.pv) if line is not None else self.board.san(move)
        self._say(
            f"zerochess plays {self.board.san(move)}   eval {score}\n"
            f"  {report.nodes} nodes, {report.nps} nodes/s, {report.elapsed_s:.1f} s; expects {expected}"
        )
        self._push(move)
        self._show()

    def _push(self, move: chess.Move) -> None:
        self.board.push(move)
        self.player.set_position(self.board)

    # -- commands (True: handled) ----------------------------------------

    def _help(self) -> bool:
        self._say(HELP)
        return True

    def _undo(self) -> bool:
        # At the prompt the human is to move: the last two plies are the
        # net's answer and the human's move before it.
        if len(self.board.move_stack) < 2:
            self._say("Nothing to undo.")
            return True
        self.board.pop()
        self.board.pop()
        self.player.set_position(self.board)
        self._say("Took back your last move and the net's answer.")
        self._show()
        return True

    def _eval(self) -> bool:
        report = self.player.search(self.limits())
        self._say(f"zerochess's view ({report.nodes} nodes):")
        shown = [line for line in report.lines[: self.lines] if line.visits > 0] or report.lines[:1]
        for line in shown:
            score = describe_score(line, report, self.board.turn)
            self._say(f"  {pv_san(self.board, line.pv):<40} {score}")
        return True

    def _moves(self) -> bool:
        self._say(
            "Legal moves: " + ", ".join(sorted(self.board.san(m) for m in self.board.legal_moves))
        )
        return True

    def _show(self) -> bool:
        self._say(render_board(self.board, self.human, self.unicode))
        if self.board.move_stack:
            last = self.board.move_stack[-1]
            self.board.pop()
            san = self.board.san(last)
            self.board.push(last)
            self._say(f"last move: {san}{'  (check)' if self.board.is_check() else ''}")
        return True

    def _draw(self) -> bool:
        if self.board.can_claim_draw():
            self._finish("1/2-1/2", "draw claimed")
        else:
            self._say(
                "No draw can be claimed here (needs a threefold repetition or the 50-move rule)."
            )
        return True

    def _resign(self) -> bool:
        self._finish("0-1" if self.human == chess.WHITE else "1-0", "resignation")
        return True

    def _quit(self) -> bool:
        self._finish("*", "abandoned")
        return True

    # -- output ----------------------------------------------------------

    def _finish(self, result: str, termination: str) -> None:
        self.result = result
        self.termination = termination
        self._say(f"Game over: {result} ({termination}).")

    def _move_number(self) -> str:
        dots = "." if self.board.turn == chess.WHITE else "..."
        return f"{self.board.fullmove_number}{dots}"

    def _ask(self, prompt: str) -> str | None:
        self.writer.write(prompt)
        self.writer.flush()
        line = self.reader.readline()
        return None if not line else line

    def _say(self, text: str) -> None:
        self.writer.write(text + "\n")
        self.writer.flush()

    def _pgn(self) -> str:
        game = chess.pgn.Game.from_board(self.board)
        white, black = ("you", NET_NAME) if self.human == chess.WHITE else (NET_NAME, "you")
        game.headers.update(
            Event="zerochess play",
            Date=datetime.date.today().strftime("%Y.%m.%d"),
            White=white,
            Black=black,
            Result=self.result or "*",
            Termination=self.termination,
        )
        return str(game)
