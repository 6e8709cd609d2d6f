"""Conversion: of the games where a player was clearly ahead, the share it won.

A net that gets ahead and then shuffles (lc0's "trolling") scores well
against a weak opponent by its draws' half points, while a net that
converts wins them.  The figure here separates the two: a game counts as
*ahead* for a player once its material lead (P 1, N 3, B 3, R 5, Q 9, the
project's one table, :data:`pipeline.selfplay.adjudication.PIECE_POINTS`)
has been at least ``margin`` points for ``hold`` consecutive plies (so
that the middle of an exchange does not count), and as *converted* when
the player then won.  The games it did not convert are counted by how
they ended (threefold repetition, fifty moves, max plies, stalemate...).
Only the games' moves are replayed (no engine), so the gate computes it over
its match against the best at no cost (``gate.json``'s ``conversion``) and
``experiments/learning.py`` beside each match score.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import chess
import chess.pgn

from pipeline.evaluation.match import GameOutcome
from pipeline.selfplay.adjudication import material_balance

__all__ = ["Conversion", "ConversionError", "ahead_at", "conversion"]

DEFAULT_MARGIN = 5
"""Points of material lead that count as clearly ahead (a rook)."""
DEFAULT_HOLD = 2
"""Consecutive plies the lead must last."""


class ConversionError(ValueError):
    """A game's PGN cannot be replayed; names the game."""


@dataclass
class Conversion:
    """Of ``ahead`` games where the player was clearly ahead, ``won`` it won;
    ``unconverted`` counts the others by termination."""

    player: str
    ahead: int = 0
    won: int = 0
    unconverted: Counter[str] = field(default_factory=Counter)

    @property
    def rate(self) -> float:
        """``won / ahead``; NaN when the player was never clearly ahead."""
        return self.won / self.ahead if self.ahead else float("nan")

    def as_dict(self) -> dict[str, object]:
        """The figures as JSON takes them (``rate`` None, not NaN, when never ahead)."""
        rate = round(self.rate, 4) if self.ahead else None
        return {"ahead": self.ahead, "won": self.won, "rate": rate, "unconverted": dict(self.unconverted)}

    def __str__(self) -> str:
        if not self.ahead:
            return "conversion -: never clearly ahead"
        misses = ", ".join(f"{count} {name}" for name, count in self.unconverted.most_common())
        return f"conversion {self.won}/{self.ahead} ({self.rate:.2f})" + (f", not won: {misses}" if misses else "")


def ahead_at(board: chess.Board, moves: Iterable[chess.Move], color: chess.Color, margin: int, hold: int) -> int | None:
    """The ply (counted from ``board``) after which ``color`` had led by at
    least ``margin`` points for ``hold`` consecutive plies; None if never.
    ``board`` is played on."""
    sign = 1 if color == chess.WHITE else -1
    streak = 0
    for ply, move in enumerate(moves, start=1):
        board.push(move)
        streak = streak + 1 if sign * material_balance(board) >= margin else 0
        if streak >= hold:
            return ply
    return None


def _replay(outcome: GameOutcome) -> tuple[chess.Board, list[chess.Move]]:
    game = chess.pgn.read_game(io.StringIO(outcome.pgn))
    if game is None or game.errors:
        reason = game.errors[0] if game is not None and game.errors else "no game"
        raise ConversionError(f"game {outcome.white} - {outcome.black} ({outcome.opening}): unreadable PGN: {reason}")
    return game.board(), list(game.mainline_moves())


def conversion(
    games: Iterable[GameOutcome], player: str, margin: int = DEFAULT_MARGIN, hold: int = DEFAULT_HOLD
) -> Conversion:
    """The conversion of ``player`` over its finished games (aborted ones and
    games it did not play are left out)."""
    if margin < 1 or hold < 1:
        raise ConversionError(f"margin and hold must be >= 1, got margin={margin!r}, hold={hold!r}")
    result = Conversion(player)
    for game in games:
        score = game.score_for(player)
        if score is None:
            continue
        board, moves = _replay(game)
        color = chess.WHITE if game.white == player else chess.BLACK
        if ahead_at(board, moves, color, margin, hold) is None:
            continue
        result.ahead += 1
        if score == 1.0:
            result.won += 1
        else:
            result.unconverted["lost" if score == 0.0 else game.termination or "draw"] += 1
    return result
