"""Positions labelled from the distance-to-mate tables (``zerochess label --tablebases``).

Stockfish's labels of an ending are a search's guesses; the native core's
tables (:mod:`models.tablebase`, kept by :mod:`pipeline.training.tablebases`)
know each pawnless position with up to four pieces exactly.  A position the
tables hold is labelled with:

Policy target pi
    Each legal move's verdict is its child's entry seen from the mover.  The
    mass goes to the moves with the best result: a win shared by the
    winning moves with weight ``exp(-(plies - shortest) / T)`` (``T`` =
    ``supervised.label_temperature_plies``: each ply longer to mate divides
    the weight by e), a loss shared likewise by the moves that resist
    longest, a draw shared evenly by the drawing moves.

Value target
    ``z`` (and ``root_q``) is the table's result for the side to move, +1, 0
    or -1, exact (no draw as Stockfish's labels need); ``root_d`` is 1 for a
    draw and 0 otherwise.

Moves-left target
    ``game_plies`` is the row's ply plus the distance to mate of a won or
    lost position (unknown, -1, for a draw), so the moves-left head learns
    the distance.

``termination`` is ``tablebase``.  A position no table holds (a pawn, more
than four pieces, castling rights) raises :class:`NotInTables`, which the
labelling run counts as skipped (``no-table``).
:func:`table_line` gives the positions of a start's table-perfect game, for
labelling each stage of a mate and not only its starts.
"""

from __future__ import annotations

import random
from types import TracebackType
from typing import Self

import chess
import numpy as np

from models.policy import PolicyMap
from models.tablebase import Probe, decode_entry, table_entry
from pipeline.shards import UNKNOWN_PLIES
from pipeline.supervised.config import SupervisedConfig
from pipeline.supervised.rows import GameRows
from pipeline.training.tablebases import TablebaseStore, tablebase_store

__all__ = ["TERMINATION", "NotInTables", "TablebaseLabeller", "move_verdicts", "table_line", "table_policy"]

TERMINATION = "tablebase"


class NotInTables(ValueError):
    """A position (its FEN) that no distance-to-mate table holds."""


def probe(board: chess.Board, store: TablebaseStore) -> Probe:
    """The table's verdict for ``board``'s side to move (NotInTables naming the FEN)."""
    fen = board.fen()
    entry = table_entry(fen)
    verdict = None if entry is None else decode_entry(store.entry(entry))
    if verdict is None:
        raise NotInTables(f"no distance-to-mate table holds {fen}")
    return verdict


def move_verdicts(board: chess.Board, store: TablebaseStore) -> list[tuple[chess.Move, Probe]]:
    """Each legal move of ``board`` with its verdict for the mover (plies counted from ``board``)."""
    verdicts = []
    for move in board.legal_moves:
        board.push(move)
        try:
            child = probe(board, store)
        finally:
            board.pop()
        plies = None if child.plies is None else child.plies + 1
        verdicts.append((move, Probe(-child.result, plies)))
    return verdicts


def _best(verdicts: list[tuple[chess.Move, Probe]]) -> tuple[int, list[tuple[chess.Move, int]]]:
    """The best result (+1, 0, -1) and the moves that keep it, each with its
    plies beyond the best: a win's beyond the fastest mate, a loss's short of
    the longest defence, 0 for every drawing move."""
    result = max(verdict.result for _, verdict in verdicts)
    chosen = [(move, result * (verdict.plies or 0)) for move, verdict in verdicts if verdict.result == result]
    low = min(key for _, key in chosen)
    return result, [(move, key - low) for move, key in chosen]


def table_policy(board: chess.Board, store: TablebaseStore, temperature_plies: float
                 ) -> tuple[list[chess.Move], np.ndarray]:  # fmt: skip
    """The policy target of ``board`` (see the module's text): moves and probabilities summing to 1."""
    if temperature_plies <= 0:
        raise ValueError(f"temperature_plies must be > 0, got {temperature_plies!r}")
    verdicts = move_verdicts(board, store)
    if not verdicts:
        raise ValueError(f"no legal move to label in {board.fen()}")
    _, ranked = _best(verdicts)
    probs = np.exp(-np.asarray([extra for _, extra in ranked], dtype=np.float64) / temperature_plies)
    return [move for move, _ in ranked], (probs / probs.sum()).astype(np.float32)


def table_line(board: chess.Board, store: TablebaseStore, rng: random.Random, max_plies: int = 200
               ) -> list[chess.Board]:  # fmt: skip
    """The positions of ``board``'s table-perfect game (``board`` first, the
    final position left out): each side plays one of its best moves (the
    shortest win, the longest loss, any draw; ties broken by ``rng``) until
    the game ends, a drawn position is reached, or ``max_plies``."""
    line: list[chess.Board] = []
    current = board.copy(stack=False)
    while len(line) < max_plies and not current.is_game_over(claim_draw=False):
        line.append(current.copy(stack=False))
        result, ranked = _best(move_verdicts(current, store))
        if result == 0:
            break
        current.push(rng.choice([move for move, extra in ranked if extra == 0]))
    return line


class TablebaseLabeller:
    """Labels positions from the tables of ``folder`` (built there on first use)."""

    def __init__(self, folder: str, temperature_plies: float) -> None:
        if temperature_plies <= 0:
            raise ValueError(f"supervised.label_temperature_plies must be > 0, got {temperature_plies!r}")
        self.store = tablebase_store(folder)
        self.temperature_plies = temperature_plies

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:  # fmt: skip
        return None

    def label(self, position, policy_map: PolicyMap, settings: SupervisedConfig) -> GameRows:
        """The shard row of ``position`` (a :class:`~pipeline.supervised.labelling.LabelPosition`)."""
        board = position.board
        verdict = probe(board, self.store)
        moves, probs = table_policy(board, self.store, self.temperature_plies)
        z = verdict.result
        white_z = z if board.turn == chess.WHITE else -z
        plies = UNKNOWN_PLIES if verdict.plies is None else position.ply + verdict.plies
        return GameRows(
            game_id=[position.game_id], ply=np.array([position.ply], dtype=np.int64), fen=[board.fen()],
            history=position.history[None], meta=position.meta[None],
            policy_index=[policy_map.indices(board, moves)], policy_prob=[probs],
            z=np.array([z], dtype=np.int8), root_q=np.array([z], dtype=np.float32),
            result=[{1: "1-0", -1: "0-1", 0: "1/2-1/2"}[white_z]], termination=[TERMINATION],
            root_d=np.array([1.0 if z == 0 else 0.0], dtype=np.float32),
            game_plies=np.array([plies], dtype=np.int64))
