"""Row validation of a shard table: nulls, policy, scalars, positions (a vectorised FEN path with
python-chess as the authority), results and legality.

Part of :mod:`pipeline.shards` (import from there)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, cast

import chess
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from models.encoding import MAX_COUNT, PIECE_PLANES, board_row, meta_values
from models.policy import get_policy_map
from pipeline.shards.decode import (
    decode_history,
    decode_meta,
    list_numpy,
    list_row_ids,
    policy_sizes,
    string_categories,
)
from pipeline.shards.schema import (
    LE_U64,
    PROB_SUM_TOLERANCE,
    RESULTS,
    SHARD_SCHEMA,
    UNKNOWN_PLIES,
    WHITE_SCORE,
    ShardTableError,
    check_schema,
    first_true,
)

_ROW_STRIDE: Final = 1 << 16  # > any uint16 policy index: row * stride + index is unique

# ---------------------------------------------------------------------------
# Row validation
# ---------------------------------------------------------------------------


def _check_nulls(table: pa.Table) -> None:
    """No nulls in any column (all are required)."""
    for name in SHARD_SCHEMA.names:
        column = table.column(name)
        if column.null_count:
            row = first_true(pc.is_null(column).to_numpy(zero_copy_only=False))
            raise ShardTableError(name, "null value in a required column", row=row)


def _check_policy(table: pa.Table) -> tuple[npt.NDArray[np.int64], np.ndarray, np.ndarray]:
    """Checks pi's structure and values; returns (row ids, flat indices, flat probs)."""
    index_offsets, index = list_numpy(table, "policy_index")
    prob_offsets, prob = list_numpy(table, "policy_prob")
    row = first_true(np.diff(index_offsets) != np.diff(prob_offsets))
    if row is not None:
        raise ShardTableError("policy_prob", "list length differs from policy_index", row=row,
                              value=(int(np.diff(prob_offsets)[row]),
                                     int(np.diff(index_offsets)[row])))
    rows = list_row_ids(index_offsets)
    for bad, reason in ((~np.isfinite(prob), "probability is not finite"),
                        (prob < 0, "probability is negative")):
        k = first_true(bad)
        if k is not None:
            raise ShardTableError("policy_prob", reason, row=int(rows[k]), value=float(prob[k]))
    sums = np.bincount(rows, weights=prob.astype(np.float64), minlength=table.num_rows)
    row = first_true(np.abs(sums - 1.0) > PROB_SUM_TOLERANCE)
    if row is not None:
        raise ShardTableError("policy_prob", f"probabilities sum to {sums[row]:.6g}, "
                                             f"not 1 (tolerance {PROB_SUM_TOLERANCE})", row=row,
                              value=float(sums[row]))
    _check_policy_indices(table, rows, index)
    return rows, index, prob


def _check_policy_indices(table: pa.Table, rows: np.ndarray, index: np.ndarray) -> None:
    """Indices are in range for the row's encoding and unique within the row."""
    names, codes = string_categories(table, "policy_encoding")
    sizes = policy_sizes(names, codes)
    row_size = np.array([sizes[name] for name in names], dtype=np.int64)[codes]
    k = first_true(index.astype(np.int64) >= row_size[rows])
    if k is not None:
        row = int(rows[k])
        raise ShardTableError("policy_index", f"out of range for {names[codes[row]]} "
                                              f"(size {row_size[row]})", row=row,
                              value=int(index[k]))
    keys = np.sort(rows * _ROW_STRIDE + index)
    k = first_true(np.diff(keys) == 0)
    if k is not None:
        raise ShardTableError("policy_index", "duplicated index in one row",
                              row=int(keys[k] // _ROW_STRIDE), value=int(keys[k] % _ROW_STRIDE))


def _check_scalars(table: pa.Table) -> None:
    """z in {-1, 0, 1}, known result, non-negative counters, finite root_q,
    root_d in [0, 1], game_plies beyond the row's ply (or unknown, -1)."""
    z = table.column("z").to_numpy()
    checks: list[tuple[str, np.ndarray, np.ndarray, str]] = [
        ("z", z, ~np.isin(z, (-1, 0, 1)), "z must be -1, 0 or 1"),
    ]
    for name in ("ply", "root_visits", "generation"):
        values = table.column(name).to_numpy()
        checks.append((name, values, values < 0, "must be >= 0"))
    root_q = table.column("root_q").to_numpy()
    checks.append(("root_q", root_q, ~np.isfinite(root_q), "must be finite"))
    root_d = table.column("root_d").to_numpy()
    checks.append(("root_d", root_d, ~((root_d >= 0) & (root_d <= 1)), "must be in [0, 1]"))
    game_plies, ply = table.column("game_plies").to_numpy(), table.column("ply").to_numpy()
    unknown = game_plies == UNKNOWN_PLIES
    checks.append(("game_plies", game_plies, ~unknown & (game_plies <= ply),
                   f"must exceed the row's ply (or be {UNKNOWN_PLIES}: unknown)"))
    for name, values, bad, reason in checks:
        row = first_true(bad)
        if row is not None:
            raise ShardTableError(name, reason, row=row, value=values[row].item())
    names, codes = string_categories(table, "result")
    for position, name in enumerate(names):
        if name not in WHITE_SCORE:
            row = first_true(codes == position)
            raise ShardTableError("result", f"must be one of {', '.join(RESULTS)}", row=row,
                                  value=name)


# --- positions: a vectorised fast path, python-chess as the authority ----------------
#
# The fast path reads each FEN's short fields in Python (split, compare with
# meta), expands every placement to 64 characters, and turns the whole batch
# into bitboards with numpy; it accepts a row only if they equal the step-0
# history bitboards (after undoing the encoder's en passant marker) and pass
# cheap validity checks (one king per side, no pawn on a back rank, castling
# rights only with king and rook at home; python-chess ``is_valid`` is not run
# on these rows: three independent representations already agree). Every other
# row goes to ``_checked_board`` (``chess.Board(fen)``), which accepts it or
# raises the precise error. About 10 us per row instead of ~90 us.

_FEN_SLOTS: Final = np.full(256, -1, dtype=np.int8)
for _slot, _symbol in enumerate("PNBRQKpnbrqk."):
    _FEN_SLOTS[ord(_symbol)] = _slot  # 12 = empty square
_DIGIT_RUNS: Final = tuple((str(n), "." * n) for n in range(8, 0, -1))
_TWO_DIGITS: Final = re.compile(r"[1-8]{2}")
_RANK_SEPARATORS: Final = "/" * 7
_FILES: Final = "abcdefgh"
# Column k of an expanded placement (rank 8 first) is square (7 - k // 8) * 8 + k % 8.
_SQUARE_TO_FEN: Final = np.array([(7 - s // 8) * 8 + s % 8 for s in range(64)], dtype=np.intp)
_META_FLAGS: Final = (0, 2, 3, 4, 5)  # meta entries that are 0/1 flags
Words = list[int]
_U64_ONE: Final = np.uint64(1)
# (king home, rook corner) per meta castling flag, for white then black: K, Q, k, q.
_CASTLING_HOMES: Final = (
    (chess.BB_E1, chess.BB_H1), (chess.BB_E1, chess.BB_A1),
    (chess.BB_E8, chess.BB_H8), (chess.BB_E8, chess.BB_A8),
)  # fmt: skip


@dataclass(frozen=True)
class _FenFields:
    """The parts of one FEN the fast path uses."""

    placement: str  # 64 characters, rank 8 first, '.' = empty
    ep_file: int  # -1 when the FEN has no en passant square
    halfmove: int
    fullmove: int


def _castling_field(meta: list[int]) -> str:
    """The FEN castling field implied by meta (our/their flags, side to move in meta[0])."""
    key = (meta[0], meta[2], meta[3], meta[4], meta[5])
    field = _CASTLING_FIELDS.get(key)
    if field is None:
        white, black = _white_black_castling(meta)
        field = "".join(c for c, flag in zip("KQkq", white + black, strict=True) if flag) or "-"
        _CASTLING_FIELDS[key] = field
    return field


_CASTLING_FIELDS: dict[tuple[int, ...], str] = {}
"""Memo of ``_castling_field`` (at most 32 keys: meta flags are checked to be 0/1 first)."""


def _white_black_castling(meta: list[int]) -> tuple[tuple[int, int], tuple[int, int]]:
    """((white K, white Q), (black k, black q)) castling flags from side-relative meta."""
    our, their = (meta[2], meta[3]), (meta[4], meta[5])
    return (their, our) if meta[0] else (our, their)


def _read_fen(fen: str, meta: list[int]) -> _FenFields | None:
    """The fast-path fields of ``fen`` if its turn, castling and clocks agree with meta.

    None for anything unusual or inconsistent (python-chess then decides).
    """
    fields = fen.split(" ")
    if len(fields) != 6 or fields[1] != ("b" if meta[0] else "w"):
        return None
    halfmove, fullmove = _counter(fields[4]), _counter(fields[5])
    if halfmove is None or not fullmove or fields[2] != _castling_field(meta):
        return None
    if min(halfmove, MAX_COUNT) != meta[6] or min(2 * fullmove - 2 + meta[0], MAX_COUNT) != meta[1]:
        return None
    ep_file = _ep_file(fields[3], bool(meta[0]))
    placement = fields[0]
    expanded = _expand_digits(placement)
    if ep_file is None or len(expanded) != 71 or expanded[8::9] != _RANK_SEPARATORS \
            or not expanded.isascii() or _TWO_DIGITS.search(placement):
        return None
    return _FenFields(expanded.replace("/", ""), ep_file, halfmove, fullmove)


def _expand_digits(placement: str) -> str:
    """The placement with every digit n replaced by n dots (str.replace beats translate 5x)."""
    for digit, dots in _DIGIT_RUNS:
        placement = placement.replace(digit, dots)
    return placement


def _counter(text: str) -> int | None:
    """A non-negative FEN counter, or None."""
    return int(text) if text.isdigit() and len(text) <= 9 else None


def _ep_file(field: str, black: bool) -> int | None:
    """File of the en passant square (-1 for "-"), None if malformed for the side to move."""
    if field == "-":
        return -1
    if len(field) == 2 and field[0] in _FILES and field[1] == ("3" if black else "6"):
        return _FILES.index(field[0])
    return None


def _placement_words(placements: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(bitboards (n, 12) uint64 white P..K black P..K, ok (n,)) of expanded placements."""
    if not placements:
        return np.zeros((0, PIECE_PLANES), dtype=np.uint64), np.zeros(0, dtype=bool)
    chars = np.frombuffer("".join(placements).encode("ascii"), dtype=np.uint8)
    slots = _FEN_SLOTS[chars].reshape(len(placements), 64)[:, _SQUARE_TO_FEN]
    ok: np.ndarray = np.asarray((slots >= 0).all(axis=1))
    masks = slots[:, None, :] == np.arange(PIECE_PLANES, dtype=np.int8)[None, :, None]
    packed = np.packbits(masks, axis=2, bitorder="little")  # (n, 12, 8) bytes, a1 first
    return packed.view(LE_U64).reshape(len(placements), PIECE_PLANES).astype(np.uint64), ok


def _undo_ep_marker(
    history: np.ndarray, ep_file: np.ndarray, black: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(real step-0 bitboards, ok): moves the encoder's en passant marker pawn back.

    The encoder draws the pawn capturable en passant on the last rank of its
    file; ``ok`` is False where the FEN names an ep square but the marker is absent.
    """
    words = history.copy()
    rows = np.flatnonzero(ep_file >= 0)
    file = ep_file[rows].astype(np.uint64)
    row_black = black[rows]
    slot = np.where(row_black, 0, 6)
    marker = np.where(row_black, file, file + np.uint64(56))
    real = np.where(row_black, file + np.uint64(24), file + np.uint64(32))
    ok = np.ones(len(history), dtype=bool)
    ok[rows] = (words[rows, slot] >> marker) & _U64_ONE == _U64_ONE
    words[rows, slot] ^= (_U64_ONE << marker) | (_U64_ONE << real)
    return words, ok


def _plausible(words: np.ndarray, meta: np.ndarray) -> np.ndarray:
    """(n,) bool: one king per side, no pawn on a back rank, castling flags have king + rook."""
    ok = (np.bitwise_count(words[:, 5]) == 1) & (np.bitwise_count(words[:, 11]) == 1)
    back_ranks = np.uint64(chess.BB_BACKRANKS)
    ok &= ((words[:, 0] | words[:, 6]) & back_ranks) == 0
    black = meta[:, 0] != 0
    white_flags = np.where(black[:, None], meta[:, 4:6], meta[:, 2:4])
    black_flags = np.where(black[:, None], meta[:, 2:4], meta[:, 4:6])
    flags = np.concatenate([white_flags, black_flags], axis=1) != 0
    for column, (king, rook) in enumerate(_CASTLING_HOMES):
        colour = 0 if column < 2 else 6
        home = ((words[:, colour + 5] & np.uint64(king)) != 0) \
            & ((words[:, colour + 3] & np.uint64(rook)) != 0)
        ok &= ~flags[:, column] | home
    return np.asarray(ok, dtype=bool)


def _board_from_words(words: Words, meta: list[int], fen: _FenFields) -> chess.Board:
    """A python-chess board from 12 absolute bitboards, meta and the FEN's ep and clocks."""
    board = chess.Board(None)
    white_pieces, black_pieces = words[:6], words[6:]
    board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings = (
        w | b for w, b in zip(white_pieces, black_pieces, strict=True)
    )
    board.occupied_co[chess.WHITE] = _union(white_pieces)
    board.occupied_co[chess.BLACK] = _union(black_pieces)
    board.occupied = board.occupied_co[chess.WHITE] | board.occupied_co[chess.BLACK]
    black = bool(meta[0])
    board.turn = chess.BLACK if black else chess.WHITE
    white_castling, black_castling = _white_black_castling(meta)
    flags = white_castling + black_castling
    board.castling_rights = _union(
        rook for (_, rook), flag in zip(_CASTLING_HOMES, flags, strict=True) if flag
    )
    if fen.ep_file >= 0:
        board.ep_square = fen.ep_file + (16 if black else 40)
    board.halfmove_clock, board.fullmove_number = fen.halfmove, fen.fullmove
    return board


def _union(words: Any) -> int:
    """Bitwise or of bitboards."""
    result = 0
    for word in words:
        result |= word
    return result


def _checked_board(fen: str, row: int, history: Words, meta: list[int]) -> chess.Board:
    """The board of ``fen`` via python-chess; ShardTableError unless it is valid and
    matches meta and the step-0 history bitboards (the authority behind the fast path)."""
    try:
        board = chess.Board(fen)
    except ValueError as exc:
        raise ShardTableError("fen", f"does not parse ({exc})", row=row, value=fen) from None
    if not board.is_valid():
        raise ShardTableError("fen", f"invalid position (status {board.status()!r})", row=row,
                              value=fen)
    expected_meta = list(meta_values(board))
    if expected_meta != meta:
        raise ShardTableError("meta", f"does not match fen {fen!r} (expected {expected_meta})",
                              row=row, value=meta)
    if list(board_row(board)[:PIECE_PLANES]) != history:
        raise ShardTableError("history", "step-0 piece bitboards do not match fen", row=row,
                              value=fen)
    return board


def fast_rows(
    fens: list[str], history: np.ndarray, meta: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[_FenFields | None]]:
    """(accepted (B,) bool, real bitboards (B, 12), per-row FEN fields) of the fast path."""
    metas = meta.tolist()
    parsed = [_read_fen(fen, m) for fen, m in zip(fens, metas, strict=True)]
    rows = np.array([i for i, p in enumerate(parsed) if p is not None], dtype=np.intp)
    fields = [p for p in parsed if p is not None]
    placement, ok = _placement_words([f.placement for f in fields])
    ep_file = np.array([f.ep_file for f in fields], dtype=np.int64)
    real, marker_ok = _undo_ep_marker(history[rows], ep_file, meta[rows, 0] != 0)
    ok &= marker_ok & (placement == real).all(axis=1) & _plausible(real, meta[rows])
    accepted = np.zeros(len(fens), dtype=bool)
    accepted[rows[ok]] = True
    words = np.zeros((len(fens), PIECE_PLANES), dtype=np.uint64)
    words[rows] = real
    return accepted, words, parsed


def check_positions(table: pa.Table, need_boards: bool) -> list[chess.Board | None]:
    """FENs parse to valid positions; meta and the step-0 history bitboards match them.

    Returns a board per row when ``need_boards`` (for the legality check), else
    only the rows the fast path could not settle have one.
    """
    meta = decode_meta(table)
    row = first_true(np.asarray((meta[:, _META_FLAGS] > 1).any(axis=1)))
    if row is not None:
        raise ShardTableError("meta", "turn and castling entries must be 0 or 1", row=row,
                              value=meta[row].tolist())
    fens = table.column("fen").to_pylist()
    history = decode_history(table)[:, 0, :PIECE_PLANES]
    accepted, words, parsed = fast_rows(fens, history, meta)
    boards: list[chess.Board | None] = [None] * len(fens)
    for row in np.flatnonzero(~accepted).tolist():
        boards[row] = _checked_board(fens[row], row, history[row].tolist(), meta[row].tolist())
    if need_boards:
        for row in np.flatnonzero(accepted).tolist():
            fields = cast(_FenFields, parsed[row])
            boards[row] = _board_from_words(words[row].tolist(), meta[row].tolist(), fields)
    return boards


def _check_z_matches_result(table: pa.Table) -> None:
    """z is the result seen from the side to move (meta[0] = black to move)."""
    names, codes = string_categories(table, "result")
    white_score = np.array([WHITE_SCORE[name] for name in names], dtype=np.int64)[codes]
    black_to_move = decode_meta(table)[:, 0].astype(np.int64)
    expected = white_score * (1 - 2 * black_to_move)
    z = table.column("z").to_numpy().astype(np.int64)
    row = first_true(z != expected)
    if row is not None:
        raise ShardTableError("z", f"does not match result {names[codes[row]]!r} for the side "
                                   f"to move (expected {int(expected[row])})", row=row,
                              value=int(z[row]))


def _check_legality(
    table: pa.Table, boards: list[chess.Board | None], rows: np.ndarray, index: np.ndarray,
    prob: np.ndarray,
) -> None:
    """Every policy index with mass is a legal move of the row's FEN.

    One legal-move generation per distinct position (cached on the FEN's
    first four fields), then one vectorised ``np.isin`` over all rows.
    """
    names, codes = string_categories(table, "policy_encoding")
    maps = [get_policy_map(name) for name in names]
    fens = table.column("fen").to_pylist()
    cache: dict[tuple[int, str], np.ndarray] = {}
    legal_keys = []
    for row, maybe_board in enumerate(boards):
        board = maybe_board if maybe_board is not None else chess.Board(fens[row])
        code = int(codes[row])
        key = (code, fens[row].rsplit(" ", 2)[0])
        legal = cache.get(key)
        if legal is None:
            legal = maps[code].indices(board, list(board.legal_moves))
            cache[key] = legal
        legal_keys.append(legal + row * _ROW_STRIDE)
    allowed = np.concatenate(legal_keys) if legal_keys else np.zeros(0, dtype=np.int64)
    with_mass = prob > 0
    support = rows[with_mass] * _ROW_STRIDE + index[with_mass]
    k = first_true(~np.isin(support, allowed))
    if k is not None:
        row = int(support[k] // _ROW_STRIDE)
        raise ShardTableError("policy_index", f"mass {float(prob[with_mass][k]):.4g} on an "
                                              f"index that is not a legal move in "
                                              f"{fens[row]!r} ({names[codes[row]]})", row=row,
                              value=int(support[k] % _ROW_STRIDE))


def _row_context(table: pa.Table, row: int) -> str:
    """'game_id=..., ply=...' of a row, for error messages ('' if unavailable)."""
    try:
        return f"game_id={table.column('game_id')[row].as_py()!r}, " \
               f"ply={table.column('ply')[row].as_py()}"
    except (KeyError, IndexError, pa.ArrowException):
        return ""


def validate_table(table: pa.Table, *, check_legality: bool = True) -> None:
    """Raises ShardTableError (column, row, value) unless every row of ``table`` is valid.

    Checks: schema; no nulls; pi lists of equal length, finite, >= 0, summing
    to 1 within 1e-4, indices in range and unique; z in {-1, 0, 1} and equal
    to the result from the side to move; root_d in [0, 1]; game_plies above
    the ply or unknown (-1); FEN parses and is valid; meta and the
    step-0 history bitboards match the FEN; with ``check_legality`` every
    index with mass is a legal move (the slow part: ~legal-move generation per
    distinct position).
    """
    check_schema(table.schema)
    try:
        _check_nulls(table)
        rows, index, prob = _check_policy(table)
        _check_scalars(table)
        boards = check_positions(table, need_boards=check_legality)
        _check_z_matches_result(table)
        if check_legality:
            _check_legality(table, boards, rows, index, prob)
    except ShardTableError as err:
        if err.row is None:
            raise
        raise ShardTableError(err.column, err.reason, row=err.row, value=err.value,
                              context=_row_context(table, err.row)) from None
