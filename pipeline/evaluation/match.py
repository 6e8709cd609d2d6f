"""One game between two players, from an opening, saved as PGN.

Games end by the rules (checkmate, stalemate, insufficient material,
threefold repetition and the 50-move rule as claimable draws) or as a draw at
``max_plies``.  A player that fails (an engine that keeps crashing or
freezing) aborts the game: it is recorded with result ``*`` and never counted
as a loss.
"""

from __future__ import annotations

import datetime
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.pgn

from pipeline.players.base import Limits, Player, PlayerError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Opening:
    """A start position from the book."""

    name: str
    fen: str

    def board(self) -> chess.Board:
        return chess.Board(self.fen)


def load_openings(path: str | Path) -> list[Opening]:
    """Openings from an EPD file (``id "name";`` op names them) or plain FENs."""
    from pipeline.selfplay.starts import load_start_positions, project_file

    openings = []
    path = project_file(path)  # a relative book missing here: the project's (data/...)
    lines = [line for line in Path(path).read_text(encoding="utf-8").splitlines() if line.split("#", 1)[0].strip()]
    for index, fen in enumerate(load_start_positions(path)):
        name = f"#{index + 1}"
        text = lines[index]
        if 'id "' in text:
            name = text.split('id "', 1)[1].split('"', 1)[0]
        openings.append(Opening(name, fen))
    return openings


class BookError(ValueError):
    """An opening book cannot be used; the message names the option and the file."""


def load_book(path: str | Path, option: str = "gating.openings") -> list[Opening]:
    """The openings of the EPD/FEN book ``path``; an unreadable or empty file is a
    :class:`BookError` naming ``option`` (the key or flag that chose it) and the file."""
    try:
        openings = load_openings(path)
    except OSError as error:
        raise BookError(f"{option} {path}: {error.strerror or error}") from error
    if not openings:
        raise BookError(f"{option} {path}: no positions in the book")
    return openings


@dataclass(frozen=True)
class GameOutcome:
    """A finished (or aborted) game.

    Attributes:
        white, black: the players' names.
        opening: the opening's name.
        result: ``1-0``, ``0-1``, ``1/2-1/2`` or ``*`` (aborted).
        termination: how it ended (checkmate, max_plies, aborted: ...).
        plies: moves played from the opening position.
        pgn: the game as PGN text.
    """

    white: str
    black: str
    opening: str
    result: str
    termination: str
    plies: int
    pgn: str

    @property
    def aborted(self) -> bool:
        return self.result == "*"

    def score_for(self, name: str) -> float | None:
        """Points of player ``name`` (1, 0.5, 0), or None if aborted or not playing."""
        if self.aborted or name not in (self.white, self.black):
            return None
        if self.result == "1/2-1/2":
            return 0.5
        white_won = self.result == "1-0"
        return 1.0 if white_won == (name == self.white) else 0.0


def play_game(
    white: Player,
    black: Player,
    opening: Opening,
    *,
    limits: Limits | None = None,
    max_plies: int = 400,
    event: str = "zerochess match",
    round_label: str = "",
) -> GameOutcome:
    """Play one game; a failing player aborts it (result ``*``)."""
    board = opening.board()
    white.new_game()
    black.new_game()
    result, termination = "*", ""
    while True:
        outcome = board.outcome(claim_draw=True)
        if outcome is not None:
            result, termination = outcome.result(), outcome.termination.name.lower()
            break
        if len(board.move_stack) >= max_plies:
            result, termination = "1/2-1/2", "max_plies"
            break
        player = white if board.turn == chess.WHITE else black
        try:
            move = player.play(board, limits)
        except PlayerError as error:
            log.warning("game aborted: %s failed on %s: %s", player.name, board.fen(), error)
            result, termination = "*", f"aborted: {player.name}: {error}"
            break
        if move not in board.legal_moves:
            result, termination = "*", f"aborted: {player.name} played illegal {move.uci()}"
            break
        board.push(move)
    pgn = _pgn(board, white.name, black.name, opening, result, termination, limits, event, round_label)
    return GameOutcome(white.name, black.name, opening.name, result, termination, len(board.move_stack), pgn)


def _pgn(
    board: chess.Board,
    white: str,
    black: str,
    opening: Opening,
    result: str,
    termination: str,
    limits: Limits | None,
    event: str,
    round_label: str,
) -> str:
    game = chess.pgn.Game.from_board(board)
    headers = game.headers
    headers["Event"] = event
    headers["Site"] = "zerochess"
    headers["Date"] = _game_date().strftime("%Y.%m.%d")
    headers["Round"] = round_label or "?"
    headers["White"], headers["Black"] = white, black
    headers["Result"] = result
    headers["Opening"] = opening.name
    headers["Termination"] = termination
    if limits is not None:
        headers["TimeControl"] = _limits_label(limits)
    return str(game)


def _game_date() -> datetime.date:
    """Today, or the day of ``SOURCE_DATE_EPOCH`` when set (reproducible
    outputs: the DVC pipeline's gate sets it)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch is None:
        return datetime.date.today()
    return datetime.datetime.fromtimestamp(int(epoch), tz=datetime.timezone.utc).date()


def _limits_label(limits: Limits) -> str:
    parts = [f"{key}={value}" for key, value in vars(limits).items() if value is not None]
    return ",".join(parts) or "player defaults"
