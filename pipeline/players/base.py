"""The player interface shared by every kind of player."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import chess


class PlayerError(ValueError):
    """A player could not be built or could not move; the message says which and why."""


@dataclass(frozen=True)
class Limits:
    """A budget for one move; ``None`` fields are left to the player's own default.

    Attributes:
        nodes: simulations (network search), nodes (Stockfish) or rollouts (UCT).
        movetime_s: wall-clock seconds for the move.
        depth: search depth (Stockfish only).
    """

    nodes: int | None = None
    movetime_s: float | None = None
    depth: int | None = None

    def __post_init__(self) -> None:
        if self.nodes is not None and self.nodes < 1:
            raise PlayerError(f"limits.nodes must be >= 1, got {self.nodes}")
        if self.movetime_s is not None and not self.movetime_s > 0:
            raise PlayerError(f"limits.movetime_s must be > 0, got {self.movetime_s}")
        if self.depth is not None and self.depth < 1:
            raise PlayerError(f"limits.depth must be >= 1, got {self.depth}")

    def merged(self, default: Limits) -> Limits:
        """These limits, with ``default``'s values where these are unset."""
        return Limits(
            nodes=self.nodes if self.nodes is not None else default.nodes,
            movetime_s=self.movetime_s if self.movetime_s is not None else default.movetime_s,
            depth=self.depth if self.depth is not None else default.depth,
        )


class Player(Protocol):
    """Something that plays chess moves.

    ``name`` identifies the player and its settings in PGN headers and tables
    (e.g. ``stockfish:skill=0:nodes=1000``).  ``play`` is called with the game
    position (its move stack is the game so far) and returns a legal move;
    it must not modify ``board``.  ``new_game`` resets per-game state (search
    trees); ``close`` releases processes.
    """

    name: str

    def play(self, board: chess.Board, limits: Limits | None = None) -> chess.Move: ...

    def new_game(self) -> None: ...

    def close(self) -> None: ...
