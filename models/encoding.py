"""AlphaZero input planes for chess: 119 planes of 8x8, vectorised and incremental.

Output of every encoder is a ``numpy.ndarray`` of dtype ``uint8`` and shape
``(119, 8, 8)`` (or ``(B, 119, 8, 8)`` for batches). The network casts it to
float and scales the two count planes (113 and 118) itself.

Axes and orientation
--------------------
Axes are ``[plane, rank, file]``. Rank and file are 0-based **from the side to
move's view**: with white to move, ``[p, r, f]`` is the square ``8 * r + f``
(``a1`` = ``[p, 0, 0]``, ``h8`` = ``[p, 7, 7]``); with black to move the ranks
are mirrored (square ``s`` is drawn at square ``s ^ 56``, ``a1`` <-> ``a8``),
files are unchanged, as lc0 does. On bitboards this mirror is a byte swap of
the ``uint64``.

Plane layout
------------
* Planes ``0..111``: ``HISTORY_STEPS = 8`` steps of ``PLANES_PER_STEP = 14``
  planes. Step ``t`` occupies planes ``14 * t .. 14 * t + 13``; step 0 is the
  current position, step 1 the previous position, ... step 7. Steps before the
  first known position of the game line (the root of the move stack) are all
  zero. Within a step:

  * ``+0 .. +5``: pieces of the side to move **now** (at step 0), in the order
    pawn, knight, bishop, rook, queen, king;
  * ``+6 .. +11``: the opponent's pieces, same order;
  * ``+12``: all ones if that step's position occurred at least once before it
    in the game line;
  * ``+13``: all ones if it occurred at least twice before.

  Every step uses the orientation and colour assignment of step 0 (so in step
  1 "our" pieces are still the pieces of the player to move at step 0).
  Position identity for repetitions is python-chess
  ``Board._transposition_key()`` (pieces, turn, castling rights, legal en
  passant square), counted over the whole known line.
* Plane ``112`` (``COLOUR_PLANE``): all 0 when white is to move, all 1 when
  black is to move.
* Plane ``113`` (``MOVE_COUNT_PLANE``): ``min(board.ply(), 255)`` (half-moves
  as counted by python-chess from the FEN's fullmove number).
* Planes ``114..117`` (``CASTLING_PLANES``): castling rights, all ones if held:
  side to move's kingside, side to move's queenside, opponent's kingside,
  opponent's queenside.
* Plane ``118`` (``NO_PROGRESS_PLANE``): ``min(board.halfmove_clock, 255)``.

En passant
----------
When an en passant capture is legal in a step's position
(``board.has_legal_en_passant()`` for that position), the pawn that can be
captured is moved, in its pawn plane, from its real square to the last rank of
the board on the same file: in absolute terms a black pawn on rank 5 is drawn
on rank 8 when white may capture, a white pawn on rank 4 is drawn on rank 1
when black may capture. Pawns never stand on the first or last rank, so this
is unambiguous. An en passant square that allows no legal capture (no pawn
next to it, or the capture is illegal because of a pin) moves nothing. The
double push itself is still visible through the history steps.

Speed design
------------
Each known position of the line is reduced once, when pushed, to a *row* of
``ROW_WIDTH = 14`` ``uint64`` words that are exactly the 14 planes of one
history step seen from white's side: the 12 absolute bitboards (white P, N, B,
R, Q, K, then black P, N, B, R, Q, K, en passant adjustment applied) and the
two repetition planes as words (all ones = ``0xFFFF_FFFF_FFFF_FFFF`` if the
position occurred at least once, resp. twice, before it in the line).
:class:`PlaneHistory` keeps the rows of one game with O(1)
``push``/``pop``/``repetitions``. Encoding takes the last 8 rows (a
*snapshot*, shape ``(8, 14)`` uint64, step 0 first, zero rows for missing
history), orients them (black to move: swap the colour halves and byte swap;
repetition words are invariant), turns them into the 112 history planes with a
single ``np.unpackbits(..., bitorder="little")`` (byte ``r`` of a word is rank
``r``, bit ``f`` of that byte is file ``f``) and fills the 7 meta planes from a
*meta* vector (shape ``(7,)`` uint8, the constant values of planes 112..118):
colour and castling planes go through the same unpack as all-ones/zero words,
the two count planes are filled by broadcasting. Batches do the same over
``(B, 8, 14)`` with one ``np.unpackbits`` for the whole batch.

This module is pure: numpy and python-chess only, no I/O.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Final, TypeAlias

import chess
import numpy as np
import numpy.typing as npt

__all__ = [
    "CASTLING_PLANES",
    "COLOUR_PLANE",
    "HISTORY_PLANES",
    "HISTORY_STEPS",
    "MAX_COUNT",
    "META_SIZE",
    "MOVE_COUNT_PLANE",
    "NO_PROGRESS_PLANE",
    "NUM_PLANES",
    "PIECE_PLANES",
    "PLANES_PER_STEP",
    "REPETITION_COLUMNS",
    "ROW_WIDTH",
    "EncodingError",
    "EncodingShapeError",
    "HistoryMismatchError",
    "PlaneHistory",
    "board_meta",
    "board_row",
    "encode_batch",
    "encode_board",
    "encode_snapshots",
    "meta_values",
]

NUM_PLANES: Final = 119
HISTORY_STEPS: Final = 8
PLANES_PER_STEP: Final = 14
PIECE_PLANES: Final = 12
HISTORY_PLANES: Final = HISTORY_STEPS * PLANES_PER_STEP  # 112
COLOUR_PLANE: Final = 112
MOVE_COUNT_PLANE: Final = 113
CASTLING_PLANES: Final = slice(114, 118)
NO_PROGRESS_PLANE: Final = 118
META_SIZE: Final = NUM_PLANES - HISTORY_PLANES  # 7: planes 112..118
ROW_WIDTH: Final = PLANES_PER_STEP  # 12 bitboards + 2 repetition words
REPETITION_COLUMNS: Final = slice(PIECE_PLANES, PLANES_PER_STEP)
MAX_COUNT: Final = 255

Planes: TypeAlias = npt.NDArray[np.uint8]
Snapshot: TypeAlias = npt.NDArray[np.uint64]
Meta: TypeAlias = npt.NDArray[np.uint8]
Row: TypeAlias = tuple[int, ...]

# Column permutation that swaps the white and black halves of a row.
_SWAP_COLOURS: Final = np.array([*range(6, 12), *range(0, 6), 12, 13], dtype=np.intp)
_ALL_ONES: Final = 0xFFFF_FFFF_FFFF_FFFF
_ALL_ONES_U64: Final = np.uint64(_ALL_ONES)
_ZERO_U64: Final = np.uint64(0)
_REPETITION_WORDS: Final = ((0, 0), (_ALL_ONES, 0), (_ALL_ONES, _ALL_ONES))
# Before unpacking, meta plane 112 + i is the word "all ones if meta[i] else 0";
# this is exact for the binary planes, and the two count planes are overwritten
# with their value after unpacking.
_MOVE_COUNT_META: Final = MOVE_COUNT_PLANE - HISTORY_PLANES  # 1
_NO_PROGRESS_META: Final = NO_PROGRESS_PLANE - HISTORY_PLANES  # 6
_LE_U64: Final = np.dtype("<u8")
_INITIAL_CAPACITY: Final = 64
_PADDING: Final = HISTORY_STEPS - 1  # zero rows kept in front of the first row


class EncodingError(ValueError):
    """Base class of domain errors raised by the encoder."""


class EncodingShapeError(EncodingError):
    """An array handed to the encoder has the wrong shape or dtype."""


class HistoryMismatchError(EncodingError):
    """The board handed to a :class:`PlaneHistory` is not its current position."""


# ---------------------------------------------------------------------------
# Rows and meta values from python-chess boards
# ---------------------------------------------------------------------------


def _en_passant_adjusted_pawns(
    board: chess.Board, white_pawns: int, black_pawns: int
) -> tuple[int, int]:
    """Moves the pawn capturable en passant to the last rank of its file.

    Returns the (white, black) pawn bitboards; unchanged unless en passant
    capture is legal in ``board``.
    """
    ep = board.ep_square
    if ep is None or not board.has_legal_en_passant():
        return white_pawns, black_pawns
    file = chess.square_file(ep)
    if board.turn == chess.WHITE:  # black pawn on rank 5 -> rank 8
        victim = chess.BB_SQUARES[ep - 8]
        return white_pawns, (black_pawns & ~victim) | chess.BB_SQUARES[56 + file]
    victim = chess.BB_SQUARES[ep + 8]  # white pawn on rank 4 -> rank 1
    return (white_pawns & ~victim) | chess.BB_SQUARES[file], black_pawns


def _piece_words(board: chess.Board) -> Row:
    """Returns the 12 absolute bitboards (white P..K, black P..K), en passant adjusted."""
    white, black = board.occupied_co[chess.WHITE], board.occupied_co[chess.BLACK]
    wp, bp = _en_passant_adjusted_pawns(board, board.pawns & white, board.pawns & black)
    n, b, r, q, k = board.knights, board.bishops, board.rooks, board.queens, board.kings
    return (
        wp, n & white, b & white, r & white, q & white, k & white,
        bp, n & black, b & black, r & black, q & black, k & black,
    )  # fmt: skip


def _repetition_words(repetitions: int) -> Row:
    """Returns the two repetition words (planes +12, +13) for a repetition count."""
    return _REPETITION_WORDS[min(repetitions, 2)]


def board_row(board: chess.Board, repetitions: int = 0) -> Row:
    """Returns the 14-word row of ``board``'s position.

    12 absolute bitboards (white P..K, black P..K, en passant adjustment
    applied) followed by the two repetition words for ``repetitions``
    (occurrences of the position before it in the line).
    """
    return _piece_words(board) + _repetition_words(repetitions)


def _castling_flags(board: chess.Board, color: chess.Color, rights: int) -> tuple[int, int]:
    """Returns (kingside, queenside) castling flags of ``color`` as 0/1.

    Same answer as ``board.has_kingside_castling_rights(color)`` and
    ``board.has_queenside_castling_rights(color)``, but ``rights`` (the clean
    castling rights) is computed once by the caller.
    """
    backrank = chess.BB_RANK_1 if color == chess.WHITE else chess.BB_RANK_8
    rooks = rights & backrank
    if not rooks:
        return 0, 0
    king = board.kings & board.occupied_co[color] & backrank & ~board.promoted
    if not king:
        return 0, 0
    highest_rook = chess.BB_SQUARES[rooks.bit_length() - 1]
    lowest_rook = rooks & -rooks
    return int(highest_rook > king), int(lowest_rook < king)


def meta_values(board: chess.Board) -> tuple[int, int, int, int, int, int, int]:
    """Returns the constant values of planes 112..118 for ``board``.

    (black to move, min(ply, 255), our kingside, our queenside, their
    kingside, their queenside, min(halfmove clock, 255)).
    """
    us = board.turn
    rights = board.clean_castling_rights()
    our_k, our_q = _castling_flags(board, us, rights)
    their_k, their_q = _castling_flags(board, not us, rights)
    return (
        int(us == chess.BLACK),
        min(board.ply(), MAX_COUNT),
        our_k,
        our_q,
        their_k,
        their_q,
        min(board.halfmove_clock, MAX_COUNT),
    )


def board_meta(board: chess.Board) -> Meta:
    """Returns the meta vector, shape (7,) uint8: the values of planes 112..118."""
    return np.array(meta_values(board), dtype=np.uint8)


# ---------------------------------------------------------------------------
# Incremental history
# ---------------------------------------------------------------------------


def _guard(board: chess.Board) -> tuple[int, bool]:
    """Cheap fingerprint (occupancy, turn) used to catch a board/history mismatch."""
    return board.occupied, board.turn


def _line_entry(board: chess.Board) -> tuple[Hashable, Row, tuple[int, bool]]:
    """(transposition key, piece words, guard) of ``board``'s position."""
    return board._transposition_key(), _piece_words(board), _guard(board)


class PlaneHistory:
    """Incremental line of rows for one game, for fast encoding during search.

    Rows live in a growable ``uint64`` buffer preceded by 7 zero rows, so the
    last 8 rows (missing history included) are always one contiguous slice.
    A dict counts transposition keys, making ``repetitions()`` O(1).

    Usage: ``h = PlaneHistory.from_board(board)``; after ``board.push(move)``
    call ``h.push(board)``; after ``board.pop()`` call ``h.pop()``.
    """

    __slots__ = ("_buf", "_n", "_keys", "_guards", "_counts")

    def __init__(self, capacity: int = _INITIAL_CAPACITY) -> None:
        """Creates an empty history; the first ``push`` adds the root position."""
        self._buf: Snapshot = np.zeros((_PADDING + max(capacity, 1), ROW_WIDTH), dtype=np.uint64)
        self._n = 0
        self._keys: list[Hashable] = []
        self._guards: list[tuple[int, bool]] = []
        self._counts: dict[Hashable, int] = {}

    @classmethod
    def from_board(cls, board: chess.Board) -> PlaneHistory:
        """Builds the history of ``board``'s whole line: its move stack's root up to ``board``.

        Same result as pushing every position from ``board.root()`` on, but
        about twice as fast: it restores the earlier positions on a stackless
        copy from python-chess's saved states (``Board._stack``, which
        ``root()`` and ``pop()`` use too) instead of replaying the moves, and
        fills the row buffer in one assignment.
        """
        work = board.copy(stack=False)
        entries = [_line_entry(work)]
        for state in reversed(board._stack):
            state.restore(work)
            entries.append(_line_entry(work))
        entries.reverse()
        history = cls(capacity=len(entries) + _INITIAL_CAPACITY)
        history._fill(entries)
        return history

    def _fill(self, entries: list[tuple[Hashable, Row, tuple[int, bool]]]) -> None:
        """Fills an empty history with (key, piece words, guard) entries, root first."""
        rows = []
        for key, pieces, guard in entries:
            count = self._counts.get(key, 0)
            self._counts[key] = count + 1
            rows.append(pieces + _repetition_words(count))
            self._keys.append(key)
            self._guards.append(guard)
        self._n = len(rows)
        self._buf[_PADDING : _PADDING + self._n] = np.array(rows, dtype=np.uint64)

    def __len__(self) -> int:
        """Number of positions in the line (root included)."""
        return self._n

    def push(self, board: chess.Board) -> None:
        """Appends ``board``'s position, the new current position of the line."""
        key = board._transposition_key()
        count = self._counts.get(key, 0)
        self._counts[key] = count + 1
        if self._n + HISTORY_STEPS > len(self._buf):
            self._grow()
        self._buf[self._n + _PADDING] = board_row(board, count)
        self._keys.append(key)
        self._guards.append(_guard(board))
        self._n += 1

    def pop(self) -> None:
        """Undoes the last ``push``. Raises IndexError on an empty history."""
        if not self._n:
            raise IndexError("pop from an empty PlaneHistory")
        self._n -= 1
        self._guards.pop()
        key = self._keys.pop()
        count = self._counts[key] - 1
        if count:
            self._counts[key] = count
        else:
            del self._counts[key]

    def occurrences(self, key: Hashable) -> int:
        """How many positions of the line have transposition key ``key``
        (python-chess ``board._transposition_key()``); O(1)."""
        return self._counts.get(key, 0)

    def repetitions(self) -> int:
        """How many times the current position occurred before in the line (0, 1, 2, ...)."""
        if not self._n:
            return 0
        return self._counts[self._keys[-1]] - 1

    def copy(self) -> PlaneHistory:
        """Returns an independent copy (buffer, keys and counts are copied)."""
        clone = PlaneHistory.__new__(PlaneHistory)
        clone._buf = self._buf.copy()
        clone._n = self._n
        clone._keys = self._keys.copy()
        clone._guards = self._guards.copy()
        clone._counts = self._counts.copy()
        return clone

    def snapshot(self) -> Snapshot:
        """Returns a copy of the last 8 rows, shape (8, 14) uint64, step 0 first.

        Rows before the root are zero. Encode later with ``encode_batch`` or
        ``encode_snapshots`` together with the current board's meta values.
        """
        if not self._n:
            raise EncodingError("an empty PlaneHistory has no current position")
        return self._steps().copy()

    def encode(self, board: chess.Board) -> Planes:
        """Encodes the current position; ``board`` must be that position (used for meta planes)."""
        self.check_board(board)
        return _planes_one(self._steps(), meta_values(board))

    def encode_into(self, board: chess.Board, out: Planes) -> None:
        """Like ``encode`` but writes into ``out``, a preallocated (119, 8, 8) uint8 array."""
        _check_planes_buffer(out)
        out[...] = self.encode(board)

    def check_board(self, board: chess.Board) -> None:
        """Raises HistoryMismatchError unless ``board`` looks like the current position."""
        if not self._n or self._guards[-1] != _guard(board):
            raise HistoryMismatchError(
                f"board {board.fen()!r} is not the current position of this "
                f"PlaneHistory ({self._n} positions)"
            )

    def _steps(self) -> Snapshot:
        """View of the last 8 rows in step order (step 0 = current)."""
        n = self._n
        return self._buf[n - 1 : n + _PADDING][::-1]

    def _grow(self) -> None:
        """Doubles the row buffer."""
        grown = np.zeros((2 * len(self._buf), ROW_WIDTH), dtype=np.uint64)
        grown[: len(self._buf)] = self._buf
        self._buf = grown


# ---------------------------------------------------------------------------
# Vectorised plane construction
# ---------------------------------------------------------------------------


def _check_planes_buffer(out: object) -> None:
    """Raises EncodingShapeError unless ``out`` is a (119, 8, 8) uint8 ndarray."""
    if not isinstance(out, np.ndarray) or out.shape != (NUM_PLANES, 8, 8) or out.dtype != np.uint8:
        shape = getattr(out, "shape", None)
        dtype = getattr(out, "dtype", type(out).__name__)
        raise EncodingShapeError(
            f"output buffer must be a ({NUM_PLANES}, 8, 8) uint8 ndarray, "
            f"got shape {shape} dtype {dtype}"
        )


def _orient_one(steps: Snapshot, black_to_move: int) -> Snapshot:
    """Returns the (8, 14) step words in the side to move's view, C-contiguous."""
    if black_to_move:
        return steps.take(_SWAP_COLOURS, axis=1).byteswap()
    return np.ascontiguousarray(steps)


def _orient_batch(snapshots: Snapshot, black_to_move: npt.NDArray[np.bool_]) -> Snapshot:
    """Returns (B, 8, 14) step words in each sample's side-to-move view."""
    if not black_to_move.any():
        return snapshots
    flipped = snapshots.take(_SWAP_COLOURS, axis=2).byteswap()
    return np.where(black_to_move[:, None, None], flipped, snapshots)


def _unpack_planes(words: Snapshot) -> Planes:
    """Turns C-contiguous uint64 words (..., 119) into bit planes (..., 119, 8, 8).

    Byte ``r`` (little-endian) of a word is rank ``r``; bit ``f`` of it is file ``f``.
    """
    as_bytes = words.astype(_LE_U64, copy=False).view(np.uint8)
    return np.unpackbits(as_bytes, bitorder="little").reshape(*words.shape, 8, 8)


def _planes_one(steps: Snapshot, meta: Sequence[int]) -> Planes:
    """Returns the (119, 8, 8) planes of an (8, 14) step-ordered snapshot and 7 meta values."""
    words = np.empty(NUM_PLANES, dtype=np.uint64)
    words[:HISTORY_PLANES] = _orient_one(steps, meta[0]).reshape(HISTORY_PLANES)
    words[HISTORY_PLANES:] = [_ALL_ONES if value else 0 for value in meta]
    planes = _unpack_planes(words)
    planes[MOVE_COUNT_PLANE] = meta[_MOVE_COUNT_META]
    planes[NO_PROGRESS_PLANE] = meta[_NO_PROGRESS_META]
    return planes


def _check_batch_inputs(snapshots: Snapshot, meta: Meta) -> None:
    """Raises EncodingShapeError unless snapshots is (B, 8, 14) and meta is (B, 7)."""
    if snapshots.ndim != 3 or snapshots.shape[1:] != (HISTORY_STEPS, ROW_WIDTH):
        raise EncodingShapeError(
            f"snapshots must have shape (B, {HISTORY_STEPS}, {ROW_WIDTH}), got {snapshots.shape}"
        )
    if meta.shape != (snapshots.shape[0], META_SIZE):
        raise EncodingShapeError(
            f"meta must have shape ({snapshots.shape[0]}, {META_SIZE}), got {meta.shape}"
        )


def encode_snapshots(snapshots: npt.ArrayLike, meta: npt.ArrayLike) -> Planes:
    """Encodes snapshots (B, 8, 14) uint64 with meta (B, 7); returns (B, 119, 8, 8) uint8."""
    snaps = np.asarray(snapshots, dtype=np.uint64)
    metas = np.asarray(meta, dtype=np.uint8)
    _check_batch_inputs(snaps, metas)
    batch = snaps.shape[0]
    words = np.empty((batch, NUM_PLANES), dtype=np.uint64)
    oriented = _orient_batch(snaps, metas[:, 0] != 0)
    words[:, :HISTORY_PLANES] = oriented.reshape(batch, HISTORY_PLANES)
    words[:, HISTORY_PLANES:] = np.where(metas != 0, _ALL_ONES_U64, _ZERO_U64)
    planes = _unpack_planes(words)
    planes[:, MOVE_COUNT_PLANE] = metas[:, _MOVE_COUNT_META, None, None]
    planes[:, NO_PROGRESS_PLANE] = metas[:, _NO_PROGRESS_META, None, None]
    return planes


def encode_batch(items: Sequence[tuple[PlaneHistory | Snapshot, chess.Board]]) -> Planes:
    """Encodes (history or snapshot, current board) pairs; returns (B, 119, 8, 8) uint8.

    A ``PlaneHistory`` is checked against its board; a snapshot (from
    ``PlaneHistory.snapshot()``) cannot be checked.
    """
    if not items:
        return np.empty((0, NUM_PLANES, 8, 8), dtype=np.uint8)
    steps = [_item_steps(i, source, board) for i, (source, board) in enumerate(items)]
    metas = [meta_values(board) for _, board in items]
    return encode_snapshots(np.stack(steps), np.array(metas, dtype=np.uint8))


def _item_steps(index: int, source: PlaneHistory | Snapshot, board: chess.Board) -> Snapshot:
    """Returns the (8, 14) steps of one ``encode_batch`` item, checking what can be checked."""
    if isinstance(source, PlaneHistory):
        source.check_board(board)
        return source._steps()
    if isinstance(source, np.ndarray) and source.shape == (HISTORY_STEPS, ROW_WIDTH):
        return source
    raise EncodingShapeError(
        f"item {index}: expected a PlaneHistory or a ({HISTORY_STEPS}, {ROW_WIDTH}) snapshot, "
        f"got {type(source).__name__} of shape {getattr(source, 'shape', None)}"
    )


def encode_board(board: chess.Board) -> Planes:
    """Encodes ``board`` (with its move stack as history) from scratch; (119, 8, 8) uint8."""
    return PlaneHistory.from_board(board).encode(board)
