"""A game against the network in the terminal (``zerochess play``).

The board is drawn as text from the human's side after every move; moves are
typed in SAN (``Nf3``, ``exd5``, ``O-O``) or UCI (``g1f3``, ``e7e8q``).
After each of its moves the net shows its evaluation (centipawns from
White's point of view, mapped from its value as in
:mod:`pipeline.uci.analysis`, or a proven mate) and its expected line.
A move that cannot be played is answered with one line saying why, with the
legal moves of the piece it names (:func:`bad_move_message`).

The commands at the prompt are :data:`COMMANDS`, the one list that both the
in-game ``help`` and ``zerochess play --help`` print.

Before the first prompt the network runs at each batch size the search will
use (:func:`warm_up`), so its one-time costs at a new shape stay out of the
net's first move.

Only python-chess is imported with this module (the search and the network
come with the :class:`NetPlayer` the caller passes), so ``--help`` can read
:data:`COMMANDS` without loading torch.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

import chess
import chess.pgn

if TYPE_CHECKING:  # torch comes with them: loaded by the caller, not for --help
    from pipeline.uci.analysis import MoveLine
    from pipeline.uci.player import NetPlayer, SearchControl, SearchReport

NET_NAME = "zerochess"

COMMANDS: tuple[tuple[str, str], ...] = (
    ("undo", "take back your last move (and the net's answer)"),
    ("eval", "show the net's view of the position without moving"),
    ("moves", "list your legal moves"),
    ("board", "draw the board again"),
    ("draw", "claim a draw (threefold repetition or 50-move rule)"),
    ("resign", "give up the game"),
    ("quit", "leave without a result"),
    ("help", "list these commands"),
)
"""The commands at the prompt and what they do, in the order shown."""

MOVE_FORMATS = "a move in SAN (Nf3, exd5, O-O, e8=Q) or UCI (g1f3, e7e8q), or a command:"

EXAMPLES = "(e4, Nf3, g1f3)"
"""Moves shown to someone who typed no move."""

MAX_LISTED = 8
"""Most legal moves named in the answer to a move that cannot be played."""

WARM_UP_ROUNDS = 2
"""Network calls at each batch size before the first move: the first at a new
shape may only record it (TorchScript's profiling executor), the second builds
the graph specialised to it."""


def game_help(lead: str = "Type") -> str:
    """How to move and the commands at the prompt, one per line: the in-game
    ``help`` and ``zerochess play --help``'s epilog (with another ``lead``)."""
    commands = "\n".join(f"  {name:<7} {text}" for name, text in COMMANDS)
    return f"{lead} {MOVE_FORMATS}\n{commands}"


HELP = game_help()


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
        ValueError: not a legal move here; the message names the text and the FEN
            (the player is told :func:`bad_move_message` instead).
    """
    text = text.strip()
    try:
        move = board.parse_san(text)
        if move:  # parse_san reads "--", "0000" as the null move
            return move
    except ValueError:
        pass
    try:
        move = chess.Move.from_uci(text.lower())
    except ValueError:
        move = None
    if move and board.is_legal(move):
        return move
    raise ValueError(f"{text!r} is not a legal move in {board.fen()}")


@dataclass(frozen=True)
class NamedMove:
    """What an unplayable move names: the mover's pieces it may start from and
    the destination (and promotion) written.

    Attributes:
        origins: squares of the side to move's pieces the text can mean.
        reaches: whether a move goes where the text says.
        moves_label: the hint's noun (``knight moves``, ``moves from e2``).
        none_label: why there is nothing to move (``you have no queen``).
    """

    origins: chess.SquareSet
    reaches: Callable[[chess.Move], bool]
    moves_label: str
    none_label: str


UCI_MOVE = re.compile(r"^[a-h][1-8][a-h][1-8][qrbn]?\Z")
"""A move written in UCI (lower case)."""

CASTLING = {"O-O": True, "0-0": True, "O-O-O": False, "0-0-0": False}
"""Castling as typed -> kingside."""


def name_move(board: chess.Board, text: str) -> NamedMove | None:
    """What ``text`` (castling, UCI or SAN) names for the side to move, or
    ``None`` when it is not written as a move."""
    text = text.strip().rstrip("+#")
    if text in CASTLING:
        kingside = CASTLING[text]
        return NamedMove(
            board.pieces(chess.KING, board.turn),
            lambda m: board.is_castling(m) and board.is_kingside_castling(m) == kingside,
            "king moves",
            "you have no king",
        )
    if UCI_MOVE.match(text.lower()):
        return _name_uci(board, text.lower())
    return _name_san(board, text)


def _name_uci(board: chess.Board, text: str) -> NamedMove | None:
    """The piece on the origin square of a UCI move (``None`` for ``a1a1``)."""
    try:
        written = chess.Move.from_uci(text)
    except ValueError:
        return None
    origin = chess.square_name(written.from_square)
    return NamedMove(
        chess.SquareSet(board.occupied_co[board.turn] & chess.BB_SQUARES[written.from_square]),
        lambda m: m.to_square == written.to_square and m.promotion == written.promotion,
        f"moves from {origin}",
        f"you have no piece on {origin}",
    )


def _name_san(board: chess.Board, text: str) -> NamedMove | None:
    """The pieces a SAN move can mean (type, and the file or rank written;
    a pawn push means the pawn of its file)."""
    match = chess.SAN_REGEX.match(text)
    if match is None:
        return None
    piece_letter, from_file, from_rank, target, promotion = match.groups()
    piece_type = chess.PIECE_SYMBOLS.index(piece_letter.lower()) if piece_letter else chess.PAWN
    to_square = chess.parse_square(target)
    promoted = chess.PIECE_SYMBOLS.index(promotion[-1].lower()) if promotion else None
    if piece_type == chess.PAWN and from_file is None:
        from_file = target[0]
    mask = board.pieces_mask(piece_type, board.turn)
    if from_file:
        mask &= chess.BB_FILES[chess.FILE_NAMES.index(from_file)]
    if from_rank:
        mask &= chess.BB_RANKS[int(from_rank) - 1]
    name = f"{from_file}-pawn" if piece_type == chess.PAWN else chess.piece_name(piece_type)
    return NamedMove(
        chess.SquareSet(mask),
        lambda m: m.to_square == to_square and m.promotion == promoted,
        f"{name} moves",
        f"you have no {name}",
    )


def bad_move_message(board: chess.Board, text: str) -> str:
    """One line for ``text``, which is no legal move here: not understood,
    ambiguous or illegal and why, with the legal moves of the piece it names."""
    text = text.strip()
    named = name_move(board, text)
    if named is None:
        return f"{text!r} is not a move or a command: type a move {EXAMPLES}, 'moves' or 'help'."
    if not named.origins:
        return f"{text} is illegal here: {named.none_label}."
    mine = [move for move in board.legal_moves if move.from_square in named.origins]
    meant = [move for move in mine if named.reaches(move)]
    if len(meant) > 1:
        return f"{text} is ambiguous here: {' or '.join(sorted(board.san(m) for m in meant))}."
    why = _why_illegal(board, named)
    if not mine:
        return f"{text} is illegal here{why}. No legal {named.moves_label}; 'moves' lists yours."
    return f"{text} is illegal here{why}. Legal {named.moves_label}: {list_moves(board, mine)}."


def _why_illegal(board: chess.Board, named: NamedMove) -> str:
    """``": you are in check"`` or ``": it would leave your king in check"``
    when that is why, else nothing (the piece cannot go there)."""
    if board.is_check():
        return ": you are in check"
    pseudo = (m for m in board.pseudo_legal_moves if m.from_square in named.origins)
    return ": it would leave your king in check" if any(named.reaches(m) for m in pseudo) else ""


def list_moves(board: chess.Board, moves: list[chess.Move], limit: int = MAX_LISTED) -> str:
    """``moves`` in SAN, sorted, at most ``limit`` of them named."""
    names = sorted(board.san(move) for move in moves)
    if len(names) <= limit:
        return ", ".join(names)
    return f"{', '.join(names[:limit])} and {len(names) - limit} more ('moves' lists all)"


def describe_outcome(outcome: chess.Outcome) -> str:
    """The end of a game in words: ``checkmate, White wins 1-0``,
    ``stalemate, draw 1/2-1/2``."""
    how = outcome.termination.name.lower().replace("_", " ")
    winner = outcome.winner
    who = "draw" if winner is None else f"{chess.COLOR_NAMES[winner].capitalize()} wins"
    return f"{how}, {who} {outcome.result()}"


def last_move_note(board: chess.Board) -> str:
    """What the last move did: the game's end with its result, or a check."""
    outcome = board.outcome()
    if outcome is not None:
        return f"  ({describe_outcome(outcome)})"
    return "  (check)" if board.is_check() else ""


def warm_up(evaluator: object, largest_batch: int, rounds: int = WARM_UP_ROUNDS) -> int:
    """Run ``evaluator`` (by the native protocol, ``evaluate_batch``) on empty
    planes at every batch size from 1 to ``largest_batch`` (the search's
    ``leaves_per_batch``), ``rounds`` times each, and return the calls made
    (0 for an evaluator without ``evaluate_batch``: nothing to warm).

    A network's first forward at a new batch size pays one-time costs: the
    TorchScript profiling executor specialises the graph, oneDNN (and cuDNN,
    or CUDA's lazily loaded kernels) build their kernels for the shape.  Paid
    here, before the first prompt, they stay out of the net's first move.
    """
    evaluate_batch = getattr(evaluator, "evaluate_batch", None)
    if not callable(evaluate_batch):
        return 0
    import numpy as np  # with the network, not for --help

    from models.encoding import NUM_PLANES

    calls = 0
    for size in range(1, largest_batch + 1):
        planes = np.zeros((size, NUM_PLANES, 8, 8), dtype=np.uint8)
        rows, indices = np.arange(size, dtype=np.int64), np.zeros(size, dtype=np.int64)
        for _ in range(rounds):
            evaluate_batch(planes, rows, indices)
            calls += 1
    return calls


def describe_score(line: MoveLine | None, report: SearchReport, mover: chess.Color) -> str:
    """The evaluation of ``line`` (played by ``mover``) from White's point of view."""
    from pipeline.uci.analysis import value_to_centipawns  # with the search, not for --help

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
        warm_up(self.player.evaluator, self.player.config.leaves_per_batch)
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
        except ValueError:
            self._say(bad_move_message(self.board, text))
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
            self._say(f"last move: {san}{last_move_note(self.board)}")
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
