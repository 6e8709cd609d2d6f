"""A deterministic evaluator that both search backends understand, for tests
and benchmarks (:class:`HashEvaluator`): no network, no torch.

The value and every move's logit are a hash of the leaf's input planes (and
the move's policy index), so the python reference and the native search see
the same numbers whenever they encode the same planes.

C++ twin: none; it serves the native core's evaluator protocol
(:class:`models.native_tree.BatchEvaluator`), and :func:`softmax` is the
core's softmax (models/native/search.h) written with numpy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from models.evaluation import Leaf, LeafEvaluation, encode_leaves
from models.policy import get_policy_map

_WORDS_PER_LEAF = 119 * 64 // 8


def _splitmix(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _unit(x: np.ndarray) -> np.ndarray:
    """uint64 -> float64 in [0, 1)."""
    return (x >> np.uint64(11)).astype(np.float64) * 2.0**-53


def softmax(logits: np.ndarray) -> np.ndarray:
    """Max-subtracted softmax in float64 (the core's, written with numpy)."""
    shifted = np.asarray(logits, dtype=np.float64)
    exps = np.exp(shifted - shifted.max())
    return exps / exps.sum()


class HashEvaluator:
    """Deterministic evaluator for both backends: the value and every move's
    logit are a hash of the leaf's input planes (and the move's policy index),
    so the Python and the native search see the same numbers whenever they
    encode the same planes.

    ``evaluate_batch`` serves the native search; ``evaluate`` (with
    ``needs_planes = True``) serves the python reference (:mod:`models.search_tree`) and returns
    ``softmax(logits)`` in float64.  With ``aux=True`` both also return the
    auxiliary outputs, hashed too: a draw probability D in [0, 1 - |value|]
    and a moves-left M in [0, ``max_moves_left``) (float32 ``[N, 2]``).
    """

    needs_planes = True

    def __init__(
        self, seed: int = 0, policy_encoding: str = "az4672", aux: bool = False, max_moves_left: float = 80.0
    ) -> None:
        rng = np.random.default_rng(seed)
        self._weights = rng.integers(0, 2**63, size=_WORDS_PER_LEAF, dtype=np.uint64) | np.uint64(1)
        self._salt = np.uint64(int(rng.integers(0, 2**63)))
        self.policy_map = get_policy_map(policy_encoding)
        self.aux = aux
        self.max_moves_left = max_moves_left
        self.calls = 0
        self.positions = 0

    def _leaf_hashes(self, planes: np.ndarray) -> np.ndarray:
        flat = np.ascontiguousarray(planes, dtype=np.uint8).reshape(len(planes), -1)
        words = flat.view(np.uint64)
        with np.errstate(over="ignore"):
            mixed = (words * self._weights).sum(axis=1, dtype=np.uint64)
        return _splitmix(mixed ^ self._salt)

    def _logits(self, hashes: np.ndarray, indices: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            salted = (indices.astype(np.uint64) + np.uint64(1)) * np.uint64(0xD6E8FEB86659FD93)
            keys = hashes ^ salted
        return (_unit(_splitmix(keys)) * 6.0 - 3.0).astype(np.float32)

    @staticmethod
    def _values(hashes: np.ndarray) -> np.ndarray:
        return (_unit(_splitmix(hashes)) * 1.8 - 0.9).astype(np.float32)

    def _aux(self, hashes: np.ndarray, values: np.ndarray) -> np.ndarray:
        """``[N, 2]`` float32: D in [0, 1 - |value|], M in [0, max_moves_left)."""
        with np.errstate(over="ignore"):
            draw = _unit(_splitmix(hashes ^ np.uint64(0x5851F42D4C957F2D))) * (1.0 - np.abs(values))
            moves_left = _unit(_splitmix(hashes ^ np.uint64(0x2545F4914F6CDD1D))) * self.max_moves_left
        return np.stack([draw, moves_left], axis=1).astype(np.float32)

    def evaluate_batch(
        self, planes: np.ndarray, rows: np.ndarray, indices: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, np.ndarray]:
        self.calls += 1
        self.positions += len(planes)
        hashes = self._leaf_hashes(planes)
        logits, values = self._logits(hashes[rows], np.asarray(indices)), self._values(hashes)
        if self.aux:
            return logits, values, self._aux(hashes, values)
        return logits, values

    def evaluate(self, leaves: Sequence[Leaf]) -> list[LeafEvaluation]:
        self.calls += 1
        self.positions += len(leaves)
        hashes = self._leaf_hashes(encode_leaves(leaves))
        values = self._values(hashes)
        aux = self._aux(hashes, values).astype(np.float64) if self.aux else None
        results: list[LeafEvaluation] = []
        for index, leaf in enumerate(leaves):
            policy = self.policy_map.indices(leaf.board, leaf.moves).astype(np.int64)
            logits = self._logits(np.full(len(policy), hashes[index]), policy)
            if aux is None:
                results.append((softmax(logits), float(values[index])))
            else:
                results.append((softmax(logits), float(values[index]), (aux[index, 0], aux[index, 1])))
        return results
