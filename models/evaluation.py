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


class Evaluator(Protocol):
    """What the search needs from a network.

    ``evaluate`` gets a batch of leaves and returns, per leaf, the prior
    probabilities of its ``moves`` (same order, summing to 1) and the value in
    [-1, 1] from the leaf's side to move.
    """

    needs_planes: bool

    def evaluate(self, leaves: Sequence[Leaf]) -> Sequence[tuple[np.ndarray, float]]: ...


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


class EvalCache:
    """LRU cache of evaluations keyed by position (pieces, side, castling, ep,
    repetition count).  Earlier history is not part of the key, as in most
    engines; disable it (size 0) for strictly history-exact evaluation."""

    def __init__(self, max_size: int) -> None:
        self.max_size = max_size
        self._data: OrderedDict[Hashable, tuple[list[chess.Move], np.ndarray, float]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> tuple[list[chess.Move], np.ndarray, float] | None:
        entry = self._data.get(key)
        if entry is None:
            self.misses += 1
            return None
        self._data.move_to_end(key)
        self.hits += 1
        return entry

    def put(self, key: Hashable, moves: list[chess.Move], priors: np.ndarray, value: float) -> None:
        if self.max_size <= 0:
            return
        self._data[key] = (moves, priors, value)
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
