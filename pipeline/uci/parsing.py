"""Parsing the GUI's UCI commands into typed values.

Malformed input raises :class:`UciCommandError` (a ``ValueError`` whose
message quotes the offending text); ``go`` is parsed leniently because a GUI
that sent it waits for a ``bestmove``: bad parameters are dropped and
reported as warnings, and the search runs with what remains.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import chess


class UciCommandError(ValueError):
    """A UCI command that cannot be obeyed; the message says why."""


GO_INT_PARAMS = (
    "wtime",
    "btime",
    "winc",
    "binc",
    "movestogo",
    "depth",
    "nodes",
    "mate",
    "movetime",
)
"""``go`` parameters that take one integer."""

GO_FLAGS = ("infinite", "ponder")
"""``go`` parameters without a value."""

_GO_KEYWORDS = frozenset(GO_INT_PARAMS + GO_FLAGS + ("searchmoves",))

# Limits that must be positive to mean anything (clocks and increments may be 0 or negative).
_POSITIVE_GO_PARAMS = ("movestogo", "depth", "nodes", "mate", "movetime")


@dataclass(frozen=True)
class GoCommand:
    """The parameters of one ``go`` command (``None`` when absent).

    Attributes:
        wtime, btime: the clocks in milliseconds.
        winc, binc: the increments in milliseconds.
        movestogo: moves until the next time control.
        depth: stop when the principal variation is this long.
        nodes: stop when the tree holds this many simulations.
        mate: search for a mate in this many moves (not supported; reported).
        movetime: think exactly this long, in milliseconds.
        infinite: search until ``stop``.
        ponder: search on the opponent's time until ``ponderhit`` or ``stop``.
        searchmoves: moves to restrict the search to (not supported; reported).
    """

    wtime: int | None = None
    btime: int | None = None
    winc: int | None = None
    binc: int | None = None
    movestogo: int | None = None
    depth: int | None = None
    nodes: int | None = None
    mate: int | None = None
    movetime: int | None = None
    infinite: bool = False
    ponder: bool = False
    searchmoves: tuple[str, ...] = field(default_factory=tuple)


def parse_go(tokens: Sequence[str]) -> tuple[GoCommand, list[str]]:
    """Parse the tokens after ``go``; return the command and warnings about
    the tokens that were dropped."""
    values: dict[str, object] = {}
    warnings: list[str] = []
    searchmoves: list[str] = []
    index = 0
    while index < len(tokens):
        token = tokens[index].lower()
        index += 1
        if token in GO_FLAGS:
            values[token] = True
        elif token == "searchmoves":
            while index < len(tokens) and tokens[index].lower() not in GO_INT_PARAMS + GO_FLAGS:
                searchmoves.append(tokens[index])
                index += 1
        elif token in GO_INT_PARAMS:
            if index >= len(tokens) or tokens[index].lower() in _GO_KEYWORDS:
                warnings.append(f"go {token}: missing value, ignored")
                continue
            raw = tokens[index]
            index += 1
            number = _parse_int(raw)
            if number is None:
                warnings.append(f"go {token} {raw!r}: not an integer, ignored")
            elif token in _POSITIVE_GO_PARAMS and number <= 0:
                warnings.append(f"go {token} {number}: must be positive, ignored")
            else:
                values[token] = number
        else:
            warnings.append(f"go: unknown parameter {token!r} ignored")
    return GoCommand(searchmoves=tuple(searchmoves), **values), warnings  # type: ignore[arg-type]


def _parse_int(text: str) -> int | None:
    """``int(text)``, accepting a float spelling such as ``"1000.0"``, or ``None``."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if math.isfinite(value) and abs(value) < 1e18 else None


def parse_position(tokens: Sequence[str]) -> chess.Board:
    """The board of ``position startpos|fen <FEN> [moves <m1> ...]`` with the
    moves pushed on its stack (for repetitions and the network's history).

    Raises:
        UciCommandError: no ``startpos``/``fen``, an unparseable FEN, an
            invalid position (e.g. no king) or an illegal move; the message
            names the FEN and the move.
    """
    if not tokens:
        raise UciCommandError("position: expected 'startpos' or 'fen <FEN>'")
    lowered = [token.lower() for token in tokens]
    moves_at = lowered.index("moves") if "moves" in lowered else len(tokens)
    kind = lowered[0]
    if kind == "startpos":
        if moves_at != 1:
            raise UciCommandError(f"position startpos: unexpected {' '.join(tokens[1:moves_at])!r}")
        board = chess.Board()
    elif kind == "fen":
        fen = " ".join(tokens[1:moves_at])
        if not fen:
            raise UciCommandError("position fen: the FEN is missing")
        try:
            board = chess.Board(fen)
        except ValueError as error:
            raise UciCommandError(f"position fen {fen!r}: {error}") from error
    else:
        raise UciCommandError(f"position: expected 'startpos' or 'fen', got {tokens[0]!r}")
    if not board.is_valid():
        raise UciCommandError(
            f"position {board.fen()}: not a legal chess position ({board.status().name})"
        )
    for text in tokens[moves_at + 1 :]:
        try:
            board.push_uci(text)
        except ValueError as error:
            raise UciCommandError(f"position: illegal move {text!r} in {board.fen()}") from error
    return board


def parse_setoption(tokens: Sequence[str]) -> tuple[str, str | None]:
    """``(name, value)`` of ``setoption name <id> [value <x>]``; names and
    values may contain spaces; ``value`` is ``None`` for buttons.

    Raises:
        UciCommandError: ``name`` is missing or empty.
    """
    lowered = [token.lower() for token in tokens]
    if not lowered or lowered[0] != "name":
        raise UciCommandError(
            f"setoption: expected 'name <id> [value <x>]', got {' '.join(tokens)!r}"
        )
    value_at = lowered.index("value") if "value" in lowered else len(tokens)
    name = " ".join(tokens[1:value_at])
    if not name:
        raise UciCommandError("setoption: the option name is missing")
    value = " ".join(tokens[value_at + 1 :]) if value_at < len(tokens) else None
    return name, value
