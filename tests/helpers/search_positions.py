"""Positions with one known right answer, and a scripted evaluator, shared
by the search tests (``tests/test_gumbel.py``, ``test_search.py``,
``test_uct.py``, ``test_native_search.py``, ``test_solver*.py``,
``test_uci_engine.py``) and ``bench/gumbel.py``.

The positions of :data:`FREE_QUEEN` and :data:`MATE_IN_ONE` come from random
games (20+ moves each); their answers, and the mates of :data:`MATE_IN_2` and
:data:`MATE_IN_3`, were checked by brute force with python-chess.
"""

from __future__ import annotations

import chess
import numpy as np

FREE_QUEEN = [
    ("r1bqkrn1/p1Q3p1/1pP1pp1n/8/3pK2p/N4P2/P1P1P1PP/2R2BNR b - - 1 20", "d8c7"),
    ("rnk5/2pr1p2/pp4p1/N6p/2P1P3/PP4P1/2K1P1BP/q3R1NR w - - 1 22", "e1a1"),
    ("r1b2kr1/n1p2pb1/p7/PpPqpP1p/RP2P3/2KP2PP/3B1p2/1N4N1 w - - 1 31", "e4d5"),
    ("rnb1kbnr/1p2p1p1/p1pp3p/5p2/1PP2q2/2N4N/PQ1PP1PP/R1BK1B1R w kq - 0 10", "h3f4"),
    ("rnb1kb2/ppQ4r/4p1pp/R7/2pP1Pn1/7P/1P2P3/N1BK1BNR b q - 2 26", "h7c7"),
    ("rnbqkb1r/pQ1ppp1p/6pn/2p5/2p5/4P2P/PP1P1PPR/RNB1KBN1 b Qkq - 1 6", "c8b7"),
    ("4kbnr/1ppbp2p/5p1r/p2p3p/1Q1P3P/8/PP1NKPPR/R1B2B2 b - - 0 20", "a5b4"),
    ("rnbq1bnr/1pppkppp/pQ2p3/8/8/2P4P/PP1PPPP1/RNB1KBNR b KQ - 1 4", "c7b6"),
    ("rnbqkbnr/Qp2pp1p/3p2p1/2p5/8/2PP4/PP2PPPP/RNB1KBNR b KQkq - 0 4", "a8a7"),
    ("r1b1kbn1/Q2pp2r/n7/2p4p/2P1Pp1P/BP1P1P2/1P3P1R/RN2KB2 b Q - 0 19", "a8a7"),
    ("r1b1qb2/Q1pkn1pr/3p4/n3pp1p/7N/N3P1P1/PPPP1PBP/1RBK3R b - - 6 15", "a8a7"),
    ("2N1k1nr/3p3p/1qn4b/3r2p1/1Pp3P1/B7/P2PPP1P/RN2KB1R w - - 0 21", "c8b6"),
    ("1n1qkbnr/rpQb1pp1/3pp2p/p7/4P3/6P1/PPPPNP1P/R1B1KBNR b KQk - 0 7", "d8c7"),
    ("rnb1kbnr/pp1p1ppp/8/2p1p3/8/NPP4N/P2PPPqP/R1BQKB1R w KQkq - 0 5", "f1g2"),
    ("r2qk1nr/1bp2p1p/4p2b/pp1pN1pP/Q7/N1P2PP1/PP1PPK2/R1B2BR1 b kq - 1 13", "b5a4"),
    ("rn1qkb1r/p1p2p1p/3ppnp1/8/bpPP3P/7R/PPQ1PPP1/1RB1KBN1 b kq - 1 9", "a4c2"),
]
"""Exactly one move takes the queen, on a square the opponent does not attack; no other capture."""

MATE_IN_ONE = [
    ("b5rb/4rk2/1pp5/1P1pqP2/1P1p1nPp/7P/1NPK1P2/2R2R2 b - - 3 40", "e5e2"),
    ("1nb1kb1r/rp1ppppp/p1p4n/8/P1q4Q/6N1/1P1PPPPP/RNB1KBR1 b Qk - 5 12", "c4c1"),
    ("r3k2r/p1B2p1n/5bp1/5P1p/n1P1q3/PP2P1PN/4K2P/RN4qB b - - 2 38", "e4e3"),
    ("5B2/k2b4/p2r2PB/P1p4p/8/4p1q1/2PpK3/8 b - - 4 53", "d2d1q"),
    ("1nqr4/2k5/1n3b2/4N2p/N1P1p1PP/BP1PQ1PK/5R2/7R w - - 7 50", "e3b6"),
    ("2N1k3/6B1/4P1P1/p2r3R/P2pp3/1nP3P1/8/6K1 w - - 9 59", "h5h8"),
    ("r3q1nr/3b4/2p5/pNk1BpP1/1pP1P2p/PKP3P1/8/RN3B1R w - - 2 33", "e5d4"),
    ("r7/8/n7/b3K1k1/p1q2N1p/3B1R1p/b6P/2R5 b - - 7 59", "a5c7"),
    ("3br1bB/k5n1/p2p4/P6R/1Q5P/N4B2/3P1P2/2K3N1 w - - 1 47", "b4b7"),
    ("1k1r3R/4R3/7b/1p1p4/R2P1P2/P1Kb1PN1/1P6/8 w - - 1 46", "h8d8"),
    ("1nbk4/7p/2pP1N2/1p1Q1Pp1/1P6/2P3Pn/1rB1N2P/4KR1q w - - 3 43", "d5g8"),
    ("1rbqkb2/1p1p3p/4p3/pPp1Kp2/1QP3r1/N3P2P/P2R4/2B2BNR b - - 4 23", "g4e4"),
    ("1n1qkbn1/r1pbp2Q/p5r1/5pB1/pPpPP1pp/6PB/2R2P1P/3KN1NR w - - 0 24", "h7g6"),
    ("rn1qk1nr/1bppb1pp/pp2p3/5p2/5PP1/PP5P/RBPPP3/1N1QKBNR b Kkq - 2 7", "e7h4"),
]
"""Exactly one legal move mates (20+ legal moves each)."""

SIMPLE_MATES_IN_ONE = [
    ("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", "a1a8"),  # back rank
    ("r5k1/8/8/8/8/8/5PPP/6K1 b - - 0 1", "a8a1"),  # the same for Black
    ("k7/8/1K6/8/8/8/8/2Q5 w - - 0 1", "c1c8"),
]
"""Hand-made mates in one with few pieces (FEN, the mating move)."""

MATED_IN_ONE = "7k/8/6K1/8/8/8/8/R7 b - - 0 1"
"""Black's h8g8 is forced, then a1a8 mates: every move of the root is proven lost."""

NEAR_MATE = [
    "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",  # back-rank mate in one
    "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4",  # Qxf7#
    "7k/5Q2/6K1/8/8/8/8/8 w - - 0 1",  # mates and stalemates around
    "k7/8/1K6/8/8/8/8/7R w - - 0 1",  # rook mate in one
]
"""Positions with a mate in one (and stalemates) among their moves."""

MATE_IN_2 = [
    "8/8/8/8/1R6/7k/8/5K2 w - - 0 1",
    "7k/8/8/R5K1/8/8/8/8 w - - 0 1",
    "8/8/8/8/8/8/k1K5/3R4 w - - 0 1",
    "8/8/8/7R/8/K7/8/1k6 w - - 0 1",
    "8/8/8/8/Q1K5/8/8/1k6 w - - 0 1",
    "8/8/8/8/8/3QK3/7k/8 w - - 0 1",
    "8/8/5K2/8/7k/2Q5/8/8 w - - 0 1",
    "8/8/8/8/K7/8/6Q1/1k6 w - - 0 1",
]
"""White mates in 2 and no faster (brute force)."""

MATE_IN_3 = [
    "k1K1R3/8/8/8/8/8/8/8 w - - 0 1",
    "8/8/8/8/8/8/8/1R3K1k w - - 0 1",
]
"""White mates in 3 and no faster (brute force)."""

PIECE_VALUES = np.array([1, 3, 3, 5, 9, 0, -1, -3, -3, -5, -9, 0], dtype=np.float32)
MATERIAL = {
    chess.PAWN: 1,
    chess.KNIGHT: 3,
    chess.BISHOP: 3,
    chess.ROOK: 5,
    chess.QUEEN: 9,
    chess.KING: 0,
}


class MaterialEvaluator:
    """Scripted evaluator: value tanh(material / 5) from the side to move
    (planes 0-11 of step 0); logits 0 (uniform) or hashed from the leaf's
    planes and the move's policy index (``priors="hash"``)."""

    def __init__(self, priors: str = "uniform") -> None:
        self.priors = priors

    def evaluate_batch(
        self, planes: np.ndarray, rows: np.ndarray, indices: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        counts = planes[:, :12].reshape(len(planes), 12, 64).sum(axis=2).astype(np.float32)
        values = np.tanh(counts @ PIECE_VALUES / 5.0).astype(np.float32)
        if self.priors == "uniform":
            return np.zeros(len(rows), np.float32), values
        flat = planes.reshape(len(planes), -1).view(np.uint64)
        with np.errstate(over="ignore"):
            leaf = (flat * np.uint64(0x9E3779B97F4A7C15)).sum(axis=1, dtype=np.uint64)
            key = leaf[rows] ^ (indices.astype(np.uint64) * np.uint64(0xD6E8FEB86659FD93))
            key = (key ^ (key >> np.uint64(29))) * np.uint64(0xBF58476D1CE4E5B9)
            key ^= key >> np.uint64(32)
        return ((key >> np.uint64(11)).astype(np.float64) * 2.0**-53 * 6.0 - 3.0).astype(
            np.float32
        ), values
