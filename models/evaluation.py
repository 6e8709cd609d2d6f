"""What passes between the search and a network: leaves, the Evaluator
protocol, a uniform evaluator for tests and benchmarks, and an evaluation cache."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol

import chess
import numpy as np

from models import encoding


class EvaluationError(ValueError):
    """An evaluator returned something unusable; the message names the position."""


@dataclass(frozen=True)
class Leaf:
    """A position waiting for the network.

    Attributes:
        board: the position (stackless board; do not mutate).
        moves: its legal moves; priors are returned in this order.
        history: ``(8, 14)`` uint64 rows for the input planes (see
            :func:`models.encoding.encode_snapshots`), or ``None`` when the
            evaluator does not need planes.
    """

    board: chess.Board
    moves: list[chess.Move]
    history: np.ndarray | None


LeafEvaluation = tuple[np.ndarray, float] | tuple[np.ndarray, float, Sequence[float]]
"""One leaf's evaluation: ``(priors, value)``, or ``(priors, value, aux)`` with
``aux = (draw, moves_left)`` (see :class:`Evaluator`)."""


class Evaluator(Protocol):
    """What the search needs from a network.

    ``evaluate`` gets a batch of leaves and returns, per leaf, the prior
    probabilities of its ``moves`` (same order, summing to 1) and the value in
    [-1, 1] from the leaf's side to move: ``(priors, value)``.  It may add the
    auxiliary outputs ``aux = (draw, moves_left)``: the draw probability D in
    [0, 1] and the plies M >= 0 left to the game's end, as
    ``(priors, value, aux)``; without them the search takes D = 0 and M = 0
    (:func:`split_evaluation`).
    """

    needs_planes: bool

    def evaluate(self, leaves: Sequence[Leaf]) -> Sequence[LeafEvaluation]: ...


class UniformEvaluator:
    """Uniform priors and a zero value, for tests and benchmarks.

    With ``encode=True`` it also builds the input planes of every leaf, so a
    benchmark measures the search's cost including leaf encoding.  Through
    ``evaluate_batch`` (the native core) the planes are always built by the core.
    """

    def __init__(self, encode: bool = False) -> None:
        self.needs_planes = encode
        self.calls = 0
        self.positions = 0

    def evaluate(self, leaves: Sequence[Leaf]) -> list[tuple[np.ndarray, float]]:
        self.calls += 1
        self.positions += len(leaves)
        if self.needs_planes:
            encode_leaves(leaves)
        return [(np.full(len(leaf.moves), 1.0 / len(leaf.moves)), 0.0) for leaf in leaves]

    def evaluate_batch(
        self, planes: np.ndarray, rows: np.ndarray, indices: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The native core's protocol: zero logits (uniform priors after its
        softmax) and zero values.  The core has already encoded the planes."""
        self.calls += 1
        self.positions += len(planes)
        return np.zeros(len(indices), dtype=np.float32), np.zeros(len(planes), dtype=np.float32)


def encode_leaves(leaves: Sequence[Leaf]) -> np.ndarray:
    """Input planes ``(B, 119, 8, 8)`` uint8 for leaves collected with history."""
    snapshots = np.stack([leaf.history for leaf in leaves])  # type: ignore[misc]
    metas = np.stack([encoding.board_meta(leaf.board) for leaf in leaves])
    return encoding.encode_snapshots(snapshots, metas)


@dataclass(frozen=True)
class CacheEntry:
    """One cached evaluation: the legal moves, their priors, the value and the
    auxiliary outputs D and M (0 when the evaluator gave none)."""

    moves: list[chess.Move]
    priors: np.ndarray
    value: float
    draw: float = 0.0
    moves_left: float = 0.0


class EvalCache:
    """LRU cache of evaluations keyed by position (pieces, side, castling, ep,
    repetition count).  Earlier history is not part of the key, as in most
    engines; disable it (size 0) for strictly history-exact evaluation."""

    def __init__(self, max_size: int) -> None:
        self.max_size = max_size
        self._data: OrderedDict[Hashable, CacheEntry] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> CacheEntry | None:
        entry = self._data.get(key)
        if entry is None:
            self.misses += 1
            return None
        self._data.move_to_end(key)
        self.hits += 1
        return entry

    def put(
        self,
        key: Hashable,
        moves: list[chess.Move],
        priors: np.ndarray,
        value: float,
        draw: float = 0.0,
        moves_left: float = 0.0,
    ) -> None:
        if self.max_size <= 0:
            return
        self._data[key] = CacheEntry(moves, priors, value, draw, moves_left)
        self._data.move_to_end(key)
        while len(self._data) > self.max_size:
            self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


def check_evaluation(
    board: chess.Board, moves: Sequence[chess.Move], priors: np.ndarray, value: float
) -> np.ndarray:
    """Validate one evaluation and return the priors renormalised to sum to 1.

    Raises :class:`EvaluationError` naming the FEN for a wrong shape, a NaN or
    infinite prior or value, a negative prior or a value outside [-1, 1].
    """
    priors = np.asarray(priors, dtype=np.float64)
    if priors.shape != (len(moves),):
        raise EvaluationError(
            f"evaluator returned priors of shape {priors.shape} for {len(moves)} legal moves in {board.fen()}"
        )
    total = float(priors.sum())  # NaN or inf anywhere shows up in the sum
    if not (math.isfinite(total) and math.isfinite(value)):
        raise EvaluationError(f"evaluator returned a non-finite policy or value {value!r} for {board.fen()}")
    if priors.min() < 0 or not -1.0 - 1e-6 <= value <= 1.0 + 1e-6:
        raise EvaluationError(
            f"evaluator returned a negative prior or a value {value!r} outside [-1, 1] for {board.fen()}"
        )
    if total <= 0:
        return np.full(len(priors), 1.0 / len(priors))
    return priors / total


def split_evaluation(board: chess.Board, result: LeafEvaluation) -> tuple[np.ndarray, float, float, float]:
    """``(priors, value, draw, moves_left)`` of one leaf's evaluation (see
    :class:`Evaluator`): D = 0 and M = 0 when the evaluator gave no ``aux``.

    Raises :class:`EvaluationError` naming the FEN for a result that is not a
    pair or a triple, an ``aux`` that is not two numbers, a draw
    probability outside [0, 1] or a negative or non-finite moves-left.
    """
    if len(result) == 2:
        priors, value = result  # type: ignore[misc]
        return priors, value, 0.0, 0.0
    if len(result) != 3:
        raise EvaluationError(
            f"evaluator returned {len(result)} items for {board.fen()}, expected (priors, value[, aux])"
        )
    priors, value, aux = result  # type: ignore[misc]
    values = np.asarray(aux, dtype=np.float64)
    if values.shape != (2,):
        raise EvaluationError(f"evaluator returned aux of shape {values.shape} for {board.fen()}, expected (2,)")
    draw, moves_left = float(values[0]), float(values[1])
    if not 0.0 - 1e-6 <= draw <= 1.0 + 1e-6:
        raise EvaluationError(f"evaluator returned a draw probability {draw!r} outside [0, 1] for {board.fen()}")
    if not (math.isfinite(moves_left) and moves_left >= 0.0):
        raise EvaluationError(f"evaluator returned moves_left {moves_left!r} (not finite and >= 0) for {board.fen()}")
    return priors, value, draw, moves_left
