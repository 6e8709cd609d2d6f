"""Move <-> policy-index maps for the two supported policy encodings.

Every encoding is defined from the point of view of the side to move: when
black is to move, squares are mirrored rank-wise (``square ^ 56``: a1<->a8,
files unchanged), as lc0 does.  Squares use python-chess numbering
(a1=0 ... h8=63, ``rank = sq // 8``, ``file = sq % 8``).

``az4672``
    The AlphaZero 8x8x73 move planes.  Plane *values* 1..73 (plane index =
    value - 1): 1..56 queen-like moves ``7*d + c`` (direction ``d`` clockwise
    from north N=0 .. NW=7, distance ``c`` 1..7), 57..64 knight jumps
    ``56 + k`` (``k`` clockwise from (+1 file, +2 ranks)), 65..73
    under-promotions ``64 + 3*p + m`` (rook/bishop/knight ``p`` = 0/1/2;
    ``m`` = 1 capture to the lower file, 2 straight, 3 capture to the higher
    file).  Queen promotions share the plain pawn-move plane, castling is the
    king's two-square move.  Flat index = ``plane*64 + from_square_view``
    (C order of a (73, 8, 8) tensor).

``lc0_1858``
    lc0's compact list, in lc0's own order: the 1792 queen-line/knight
    from/to pairs ordered by from-square then to-square, followed by 66
    promotions (from-file a..h; target file left, straight, right; pieces
    q, r, b).  Castling is written king-to-rook, knight promotions use the
    plain from/to pair.

Only standard chess is supported (boards with ``chess960`` set are rejected).
The module is pure: numpy and python-chess only, all tables are built once at
import time and are read-only afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

import chess
import numpy as np

__all__ = [
    "AZ4672",
    "LC0_1858",
    "POLICY_MAP_NAMES",
    "IllegalMoveError",
    "InvalidPolicyIndexError",
    "PolicyError",
    "PolicyMap",
    "UnknownEncodingError",
    "UnsupportedBoardError",
    "get_policy_map",
    "index_to_move",
    "indices",
    "legal_mask",
    "move_to_index",
]

# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


class PolicyError(ValueError):
    """Base class of every domain error raised by this module."""


class IllegalMoveError(PolicyError):
    """A move is not legal (or not encodable) in the given position."""

    def __init__(self, move: chess.Move, board: chess.Board, encoding: str) -> None:
        super().__init__(
            f"move {move.uci()!r} is not a legal, {encoding}-encodable move "
            f"in position {board.fen()!r}"
        )
        self.move = move
        self.fen = board.fen()


class InvalidPolicyIndexError(PolicyError):
    """A policy index is out of range or is not a legal move in the position."""

    def __init__(self, index: int, board: chess.Board, encoding: str, reason: str) -> None:
        super().__init__(
            f"policy index {index} ({encoding}) {reason} in position {board.fen()!r}"
        )
        self.index = index
        self.fen = board.fen()


class UnknownEncodingError(PolicyError):
    """The requested policy encoding name does not exist."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"unknown policy encoding {name!r}; valid names: {', '.join(POLICY_MAP_NAMES)}"
        )
        self.name = name


class UnsupportedBoardError(PolicyError):
    """The board uses a variant the policy maps do not support (Chess960)."""

    def __init__(self, board: chess.Board) -> None:
        super().__init__(
            f"policy maps support standard chess only; got a chess960 board {board.fen()!r}"
        )
        self.fen = board.fen()


# --------------------------------------------------------------------------
# Geometry shared by both encodings (everything in side-to-move view)
# --------------------------------------------------------------------------

_FLIP: Final = 56
"""XOR mask mirroring a square rank-wise (a1 <-> a8)."""

_NO_PROMO: Final = 0
"""Promotion code of a move without a promotion piece (python-chess ``None``)."""

_PROMO_SLOTS: Final = 8
"""Promotion codes are python-chess piece types 0..6, padded to 8 (3 bits)."""

_QUEEN_DIRECTIONS: Final[tuple[tuple[int, int], ...]] = (
    (1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1),
)
"""(d_rank, d_file) per direction, clockwise from north (N, NE, E, ..., NW)."""

_KNIGHT_JUMPS: Final[tuple[tuple[int, int], ...]] = (
    (2, 1), (1, 2), (-1, 2), (-2, 1), (-2, -1), (-1, -2), (1, -2), (2, -1),
)
"""(d_rank, d_file) per knight jump k = 1..8, clockwise from (+1 file, +2 ranks)."""

_AZ_UNDERPROMOTIONS: Final[tuple[chess.PieceType, ...]] = (chess.ROOK, chess.BISHOP, chess.KNIGHT)
_LC0_PROMOTIONS: Final[tuple[chess.PieceType, ...]] = (chess.QUEEN, chess.ROOK, chess.BISHOP)

_E1_VIEW: Final = chess.E1
_CASTLE_VIEW: Final[dict[int, int]] = {chess.G1: chess.H1, chess.C1: chess.A1}
"""King destination -> rook square for castling, in the side-to-move view."""
_KING_HOME: Final[tuple[int, int]] = (chess.BB_E8, chess.BB_E1)
"""Bitboard of the king's home square, indexed by ``board.turn``."""


def _offset_square(square: int, d_rank: int, d_file: int) -> int:
    """Return ``square`` shifted by (d_rank, d_file), or -1 when off the board."""
    rank, file = divmod(square, 8)
    rank, file = rank + d_rank, file + d_file
    if 0 <= rank < 8 and 0 <= file < 8:
        return rank * 8 + file
    return -1


def _is_pawn_promotion_geometry(from_view: int, to_view: int) -> bool:
    """True when a pawn could promote moving from ``from_view`` to ``to_view``."""
    return from_view // 8 == 6 and to_view // 8 == 7 and abs(to_view % 8 - from_view % 8) <= 1


def _is_plain_pair(from_view: int, to_view: int) -> bool:
    """True when the from/to pair is a queen-line move or a knight jump."""
    d_rank = to_view // 8 - from_view // 8
    d_file = to_view % 8 - from_view % 8
    if (d_rank, d_file) == (0, 0):
        return False
    queen_line = d_rank == 0 or d_file == 0 or abs(d_rank) == abs(d_file)
    knight = {abs(d_rank), abs(d_file)} == {1, 2}
    return queen_line or knight


def _move_key(from_square: int, to_square: int, promotion: int) -> int:
    """Lookup-table key of a (from, to, promotion-code) triple."""
    return (from_square << 9) | (to_square << 3) | promotion


# --------------------------------------------------------------------------
# Decode tables: index -> (from_view, to_view, promotion code)
# --------------------------------------------------------------------------


def _az_plane_target(plane: int, from_view: int) -> tuple[int, int]:
    """Target square (or -1) and promotion code of an az4672 plane from a square."""
    if plane < 56:
        d_rank, d_file = _QUEEN_DIRECTIONS[plane // 7]
        distance = plane % 7 + 1
        return _offset_square(from_view, d_rank * distance, d_file * distance), _NO_PROMO
    if plane < 64:
        d_rank, d_file = _KNIGHT_JUMPS[plane - 56]
        return _offset_square(from_view, d_rank, d_file), _NO_PROMO
    piece_slot, side = divmod(plane - 64, 3)
    if from_view // 8 != 6:
        return -1, _NO_PROMO
    return _offset_square(from_view, 1, side - 1), _AZ_UNDERPROMOTIONS[piece_slot]


def _az4672_decode() -> np.ndarray:
    """Decode table of az4672: int64 (4672, 3) rows (from_view, to_view, promo); -1 = unused."""
    table = np.full((73 * 64, 3), -1, dtype=np.int64)
    for plane in range(73):
        for from_view in range(64):
            to_view, promo = _az_plane_target(plane, from_view)
            if to_view >= 0:
                table[plane * 64 + from_view] = (from_view, to_view, promo)
    return table


def _lc0_promotion_rows() -> list[tuple[int, int, int]]:
    """The 66 lc0 promotion entries in lc0 order."""
    rows: list[tuple[int, int, int]] = []
    for from_file in range(8):
        for d_file in (-1, 0, 1):
            if 0 <= from_file + d_file < 8:
                from_view, to_view = 48 + from_file, 56 + from_file + d_file
                rows.extend((from_view, to_view, piece) for piece in _LC0_PROMOTIONS)
    return rows


def _lc0_1858_decode() -> np.ndarray:
    """Decode table of lc0_1858: int64 (1858, 3) rows (from_view, to_view, promo)."""
    rows = [
        (from_view, to_view, _NO_PROMO)
        for from_view in range(64)
        for to_view in range(64)
        if _is_plain_pair(from_view, to_view)
    ]
    rows.extend(_lc0_promotion_rows())
    return np.asarray(rows, dtype=np.int64)


# --------------------------------------------------------------------------
# Encode tables: (from, to, promo) -> index
# --------------------------------------------------------------------------


def _view_lut(decode: np.ndarray, pawn_promotion: chess.PieceType) -> np.ndarray:
    """Inverse of ``decode`` as a (64, 64, 8) array over view squares; -1 = not encodable.

    A plain pawn step to the last rank also accepts ``pawn_promotion`` as the
    promotion piece (queen for az4672, knight for lc0_1858).
    """
    lut = np.full((64, 64, _PROMO_SLOTS), -1, dtype=np.int64)
    valid = np.flatnonzero(decode[:, 1] >= 0)
    from_view, to_view, promo = decode[valid].T
    lut[from_view, to_view, promo] = valid
    for index in valid[promo == _NO_PROMO]:
        f, t = int(decode[index, 0]), int(decode[index, 1])
        if _is_pawn_promotion_geometry(f, t):
            lut[f, t, pawn_promotion] = index
    return lut


def _castling_lut(view_lut: np.ndarray, king_to_rook: bool) -> np.ndarray:
    """The view LUT to use when the side to move has its king on e1 (view).

    With the king on e1 a move e1g1/e1c1 can only be castling; lc0 encodes it
    as the king-to-rook pair, AlphaZero as the king's own two-square move.
    """
    if not king_to_rook:
        return view_lut
    lut = view_lut.copy()
    for king_to, rook_square in _CASTLE_VIEW.items():
        lut[_E1_VIEW, king_to, _NO_PROMO] = view_lut[_E1_VIEW, rook_square, _NO_PROMO]
    return lut


def _real_square_lut(view_lut: np.ndarray, turn: chess.Color) -> list[int]:
    """Flatten a view LUT into a list keyed by ``_move_key`` over real squares."""
    if turn == chess.BLACK:
        mirror = np.arange(64) ^ _FLIP
        view_lut = view_lut[mirror][:, mirror]
    return [int(value) for value in view_lut.reshape(-1)]


def _view_uci(decode: np.ndarray) -> tuple[str, ...]:
    """UCI string of every index in the side-to-move view ('' for unused az slots)."""
    names: list[str] = []
    for from_view, to_view, promo in decode.tolist():
        if to_view < 0:
            names.append("")
            continue
        move = chess.Move(from_view, to_view, promo or None)
        names.append(move.uci())
    return tuple(names)


def _read_only(array: np.ndarray) -> np.ndarray:
    """Mark ``array`` read-only and return it."""
    array.setflags(write=False)
    return array


# --------------------------------------------------------------------------
# PolicyMap
# --------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, slots=True)
class PolicyMap:
    """One move <-> index encoding.  Immutable; build via the module constants.

    Public attributes:
        name: encoding name (``"az4672"`` or ``"lc0_1858"``).
        size: number of policy entries.
        from_view, to_view, promotion: int64 (size,) decode tables in the
            side-to-move view (-1 in ``to_view`` marks an unused az slot;
            ``promotion`` is a python-chess piece type or 0).
        view_uci: UCI string per index in the side-to-move view ('' if unused).
        gather_index: int64 (size,) distinct slots of the flattened 73x8x8
            (4672) head output holding each entry's logit.
        pawn_promotion: promotion piece implied by a plain pawn step to the
            last rank (queen for az4672, knight for lc0_1858).
    """

    name: str
    size: int
    from_view: np.ndarray = field(repr=False)
    to_view: np.ndarray = field(repr=False)
    promotion: np.ndarray = field(repr=False)
    view_uci: tuple[str, ...] = field(repr=False)
    gather_index: np.ndarray = field(repr=False)
    pawn_promotion: chess.PieceType = field(repr=False)
    _luts: tuple[tuple[list[int], list[int]], tuple[list[int], list[int]]] = field(repr=False)
    """``_luts[turn][king_on_home]``: real-square list keyed by ``_move_key``."""

    # ---- fast path -----------------------------------------------------

    def _lut(self, board: chess.Board) -> list[int]:
        """Select the real-square lookup list for the side to move."""
        if board.chess960:
            raise UnsupportedBoardError(board)
        turn = board.turn
        home = board.kings & board.occupied_co[turn] & _KING_HOME[turn]
        return self._luts[turn][1 if home else 0]

    def indices(self, board: chess.Board, moves: Sequence[chess.Move]) -> np.ndarray:
        """Policy indices (int64 array) of ``moves`` in ``board``; one table lookup per move.

        Legality is not checked (moves normally come from ``board.legal_moves``),
        but a move with no index in this encoding raises ``IllegalMoveError``.
        """
        lut = self._lut(board)
        out = [
            lut[(m.from_square << 9) | (m.to_square << 3) | (m.promotion or 0)] for m in moves
        ]
        if -1 in out:
            raise IllegalMoveError(moves[out.index(-1)], board, self.name)
        return np.array(out, dtype=np.int64)

    # ---- checked single-move API ---------------------------------------

    def move_to_index(self, board: chess.Board, move: chess.Move) -> int:
        """Index of the legal ``move`` in ``board``; raises ``IllegalMoveError`` otherwise.

        Castling may be given either as the king's two-square move (e1g1) or
        king-to-rook (e1h1); both map to the same index.
        """
        lut = self._lut(board)
        if not board.is_legal(move):
            raise IllegalMoveError(move, board, self.name)
        move = _standard_castling(board, move)
        index = lut[_move_key(move.from_square, move.to_square, move.promotion or 0)]
        if index < 0:
            raise IllegalMoveError(move, board, self.name)
        return index

    def index_to_move(self, board: chess.Board, index: int) -> chess.Move:
        """The legal python-chess move encoded by ``index`` in ``board``.

        Castling is returned as the king's move (e1g1) and pawn moves to the
        last rank carry their promotion piece.  Raises
        ``InvalidPolicyIndexError`` if the index is out of range or does not
        denote a legal move in this position.
        """
        lut = self._lut(board)
        if not 0 <= index < self.size:
            raise InvalidPolicyIndexError(index, board, self.name, f"is outside [0, {self.size})")
        move = self._decode(board, int(index))
        if move is None or not board.is_legal(move):
            raise InvalidPolicyIndexError(index, board, self.name, "is not a legal move")
        if lut[_move_key(move.from_square, move.to_square, move.promotion or 0)] != index:
            raise InvalidPolicyIndexError(index, board, self.name, "is not a legal move")
        return move

    def legal_mask(self, board: chess.Board) -> np.ndarray:
        """Boolean (size,) mask of the indices of the legal moves in ``board``."""
        mask = np.zeros(self.size, dtype=bool)
        mask[self.indices(board, list(board.legal_moves))] = True
        return mask

    # ---- helpers ---------------------------------------------------------

    def _decode(self, board: chess.Board, index: int) -> chess.Move | None:
        """Candidate move of ``index`` on real squares (not yet legality-checked)."""
        to_view = int(self.to_view[index])
        if to_view < 0:
            return None
        from_view = int(self.from_view[index])
        promotion = int(self.promotion[index]) or None
        flip = 0 if board.turn == chess.WHITE else _FLIP
        from_square = from_view ^ flip
        if from_view == _E1_VIEW and board.king(board.turn) == from_square:
            to_view = _king_castling_target(to_view)
        to_square = to_view ^ flip
        if promotion is None and _is_pawn_promotion_geometry(from_view, to_view):
            if board.piece_type_at(from_square) == chess.PAWN:
                promotion = self.pawn_promotion
        return chess.Move(from_square, to_square, promotion)

    def __repr__(self) -> str:
        return f"PolicyMap(name={self.name!r}, size={self.size})"


def _king_castling_target(to_view: int) -> int:
    """Map a king-to-rook castling target (view h1/a1) to the king's destination."""
    for king_to, rook_square in _CASTLE_VIEW.items():
        if to_view == rook_square:
            return king_to
    return to_view


def _standard_castling(board: chess.Board, move: chess.Move) -> chess.Move:
    """Rewrite a king-to-rook castling move as the king's two-square move."""
    if not board.is_castling(move):
        return move
    rank_base = move.from_square & ~7
    king_file = 6 if board.is_kingside_castling(move) else 2
    return chess.Move(move.from_square, rank_base + king_file)


# --------------------------------------------------------------------------
# Construction
# --------------------------------------------------------------------------


def _build(
    name: str,
    decode: np.ndarray,
    pawn_promotion: chess.PieceType,
    king_to_rook: bool,
    gather_index: np.ndarray,
) -> PolicyMap:
    """Assemble an immutable ``PolicyMap`` from its decode table."""
    view = _view_lut(decode, pawn_promotion)
    castle_view = _castling_lut(view, king_to_rook)
    black = (_real_square_lut(view, chess.BLACK), _real_square_lut(castle_view, chess.BLACK))
    white = (_real_square_lut(view, chess.WHITE), _real_square_lut(castle_view, chess.WHITE))
    return PolicyMap(
        name=name,
        size=len(decode),
        from_view=_read_only(decode[:, 0].copy()),
        to_view=_read_only(decode[:, 1].copy()),
        promotion=_read_only(decode[:, 2].copy()),
        view_uci=_view_uci(decode),
        gather_index=_read_only(gather_index.astype(np.int64)),
        pawn_promotion=pawn_promotion,
        _luts=(black, white),
    )


def _lc0_gather_index(lc0_decode: np.ndarray, az_view_lut: np.ndarray) -> np.ndarray:
    """Slot of the 4672 az output read for each lc0 entry.

    Plain pairs use their az queen/knight slot, except pawn-promotion-shaped
    pairs (rank 7 -> 8, |file diff| <= 1), which in lc0 denote knight
    promotions and read the az knight-underpromotion slot.  q/r/b promotions
    read the az queen-move / rook / bishop underpromotion slots.
    """
    gather = np.empty(len(lc0_decode), dtype=np.int64)
    for i, (from_view, to_view, promo) in enumerate(lc0_decode.tolist()):
        if promo == _NO_PROMO and _is_pawn_promotion_geometry(from_view, to_view):
            promo = chess.KNIGHT
        gather[i] = az_view_lut[from_view, to_view, promo]
    return gather


def _build_maps() -> tuple[PolicyMap, PolicyMap]:
    """Build the az4672 and lc0_1858 maps and check their invariants."""
    az_decode = _az4672_decode()
    lc0_decode = _lc0_1858_decode()
    az_view = _view_lut(az_decode, chess.QUEEN)
    lc0_gather = _lc0_gather_index(lc0_decode, az_view)
    if len(lc0_decode) != 1858 or len(np.unique(lc0_gather)) != 1858 or lc0_gather.min() < 0:
        raise AssertionError("lc0_1858 table construction is inconsistent")
    az = _build("az4672", az_decode, chess.QUEEN, False, np.arange(len(az_decode)))
    lc0 = _build("lc0_1858", lc0_decode, chess.KNIGHT, True, lc0_gather)
    return az, lc0


AZ4672, LC0_1858 = _build_maps()
_POLICY_MAPS: Final[dict[str, PolicyMap]] = {m.name: m for m in (AZ4672, LC0_1858)}
POLICY_MAP_NAMES: Final[tuple[str, ...]] = tuple(_POLICY_MAPS)


def get_policy_map(name: str) -> PolicyMap:
    """Return the policy map called ``name`` (``"az4672"`` or ``"lc0_1858"``)."""
    try:
        return _POLICY_MAPS[name]
    except (KeyError, TypeError):
        raise UnknownEncodingError(str(name)) from None


# --------------------------------------------------------------------------
# az4672 convenience functions
# --------------------------------------------------------------------------


def move_to_index(board: chess.Board, move: chess.Move) -> int:
    """az4672 index of the legal ``move`` in ``board``."""
    return AZ4672.move_to_index(board, move)


def index_to_move(board: chess.Board, index: int) -> chess.Move:
    """Legal move encoded by the az4672 ``index`` in ``board``."""
    return AZ4672.index_to_move(board, index)


def legal_mask(board: chess.Board) -> np.ndarray:
    """az4672 boolean mask (4672,) of the legal moves in ``board``."""
    return AZ4672.legal_mask(board)


def indices(board: chess.Board, moves: Sequence[chess.Move]) -> np.ndarray:
    """az4672 indices (int64 array) of ``moves`` in ``board`` (fast path)."""
    return AZ4672.indices(board, moves)
