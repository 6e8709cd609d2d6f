"""Shard rows of PGN games: one row per ply (the position before the move),
pi one-hot on the move played or label-smoothed, z the game's result (see
:mod:`pipeline.supervised.convert`); and :class:`ShardBuffer`, which writes
buffered rows of one split as shards.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

import chess
import numpy as np
import numpy.typing as npt

from models.encoding import PlaneHistory, board_meta
from models.policy import PolicyMap
from pipeline.shards import UNKNOWN_PLIES, table_from_columns, write_shard
from pipeline.supervised.pgn import ParsedGame

__all__ = ["GameRows", "ShardBuffer", "fast_fen", "game_rows"]

_WHITE_SCORE: Final = {"1-0": 1, "0-1": -1, "1/2-1/2": 0}


@dataclass
class GameRows:
    """Shard columns of some positions (n rows), e.g. one game's.

    Attributes:
        game_id: n game ids.
        ply: (n,) ply of each position in its game.
        fen: n FENs.
        history: (n, 8, 14) uint64 PlaneHistory snapshots.
        meta: (n, 7) uint8.
        policy_index / policy_prob: n sparse policies.
        z: (n,) int8 result from the side to move.
        root_q: (n,) float32 value target: a move's ``[%eval ...]`` comment
            from the side to move (0 for PGN games without one).
        result: n results (White's view, as in PGN).
        termination: n terminations.
        root_d: (n,) float32 draw probabilities, or None (0 for every row).
        game_plies: (n,) int64 plies of each row's game, or None (unknown).
    """

    game_id: list[str]
    ply: npt.NDArray[np.int64]
    fen: list[str]
    history: npt.NDArray[np.uint64]
    meta: npt.NDArray[np.uint8]
    policy_index: list[npt.NDArray[np.int64]]
    policy_prob: list[npt.NDArray[np.float32]]
    z: npt.NDArray[np.int8]
    root_q: npt.NDArray[np.float32]
    result: list[str]
    termination: list[str]
    root_d: npt.NDArray[np.float32] | None = None
    game_plies: npt.NDArray[np.int64] | None = None

    def __len__(self) -> int:
        return len(self.fen)


_PIECE_LETTERS: Final = tuple(
    (chess.piece_symbol(piece_type).upper(), chess.piece_symbol(piece_type))
    for piece_type in chess.PIECE_TYPES
)

_EMPTY_RUNS: Final = tuple("1" * n for n in range(8, 1, -1))


def fast_fen(board: chess.Board) -> str:
    """``board.fen()`` for standard chess, from the bitboards (~5x faster).

    python-chess builds the placement with 64 ``piece_at`` calls; here each
    piece bitboard is scanned once. The en passant square is shown only when
    a legal en passant capture exists, as ``board.fen()`` does by default.
    """
    cells = ["1"] * 64
    white = board.occupied_co[chess.WHITE]
    bitboards = (board.pawns, board.knights, board.bishops, board.rooks, board.queens,
                 board.kings)
    for (upper, lower), pieces in zip(_PIECE_LETTERS, bitboards, strict=True):
        for mask, letter in ((pieces & white, upper), (pieces & ~white, lower)):
            while mask:
                low = mask & -mask
                cells[low.bit_length() - 1] = letter
                mask ^= low
    placement = "/".join("".join(cells[start : start + 8]) for start in range(56, -8, -8))
    for run in _EMPTY_RUNS:  # runs of empty squares, longest first
        placement = placement.replace(run, str(len(run)))
    rights = board.clean_castling_rights()
    castling = "".join(letter for square, letter in ((chess.H1, "K"), (chess.A1, "Q"),
                                                     (chess.H8, "k"), (chess.A8, "q"))
                       if rights & chess.BB_SQUARES[square]) or "-"
    ep = board.ep_square
    en_passant = chess.SQUARE_NAMES[ep] if ep is not None and board.has_legal_en_passant() \
        else "-"
    return (f"{placement} {'w' if board.turn else 'b'} {castling} {en_passant} "
            f"{board.halfmove_clock} {board.fullmove_number}")


def _smoothed_policy(board: chess.Board, move: chess.Move, policy_map: PolicyMap,
                     smoothing: float) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """(indices, probabilities) of pi for the move played: one-hot or label-smoothed."""
    if smoothing <= 0.0:
        return policy_map.indices(board, [move]), np.ones(1, dtype=np.float32)
    legal = list(board.legal_moves)
    index = policy_map.indices(board, legal)
    prob = np.full(len(legal), smoothing / len(legal), dtype=np.float64)
    prob[legal.index(move)] += 1.0 - smoothing
    return index, (prob / prob.sum()).astype(np.float32)


def game_rows(game: ParsedGame, game_id: str, policy_map: PolicyMap,
              smoothing: float = 0.0) -> GameRows:
    """The rows of an accepted game (one per ply, the position before the move)."""
    assert game.start is not None
    board = game.start.copy(stack=False)
    history = PlaneHistory.from_board(board)
    result = game.headers["Result"]
    white_score = _WHITE_SCORE[result]
    plies = len(game.moves)
    snapshots = np.empty((plies, *history.snapshot().shape), dtype=np.uint64)
    metas = np.empty((plies, 7), dtype=np.uint8)
    fens, indices, probs = [], [], []
    z = np.empty(plies, dtype=np.int8)
    root_q = np.zeros(plies, dtype=np.float32)
    evals = game.evals if len(game.evals) == plies else [None] * plies
    for ply, move in enumerate(game.moves):
        snapshots[ply] = history.snapshot()
        metas[ply] = board_meta(board)
        fens.append(fast_fen(board))
        index, prob = _smoothed_policy(board, move, policy_map, smoothing)
        indices.append(index)
        probs.append(prob)
        z[ply] = white_score if board.turn == chess.WHITE else -white_score
        if evals[ply] is not None:  # the mover's search score, from White's side
            root_q[ply] = evals[ply] if board.turn == chess.WHITE else -evals[ply]
        board.push(move)
        history.push(board)
    termination = game.headers.get("Termination", "").strip() or "pgn"
    return GameRows(game_id=[game_id] * plies, ply=np.arange(plies, dtype=np.int64), fen=fens,
                    history=snapshots, meta=metas, policy_index=indices, policy_prob=probs, z=z,
                    root_q=root_q, result=[result] * plies,
                    termination=[termination] * plies)


class ShardBuffer:
    """Rows of one split, written as a shard once ``limit`` rows are buffered.

    Rows are added a :class:`GameRows` at a time (a whole game from PGN), so a
    game never spans two shards. Shards are
    named ``<prefix>-<number:05d>`` (``write_shard`` is atomic; the same
    prefix rewrites the same names).
    """

    def __init__(self, directory: Path, prefix: str, limit: int, policy_encoding: str) -> None:
        self.directory = directory
        self.prefix = prefix
        self.limit = limit
        self.policy_encoding = policy_encoding
        self.games: list[GameRows] = []
        self.rows = 0
        self.written: list[str] = []
        self.positions = 0

    def add(self, rows: GameRows) -> None:
        """Buffers a game; writes a shard when the buffer is full."""
        self.games.append(rows)
        self.rows += len(rows)
        if self.rows >= self.limit:
            self.flush()

    def flush(self) -> None:
        """Writes the buffered rows as the next shard (nothing when empty)."""
        if not self.rows:
            return
        games, count = self.games, self.rows
        self.games, self.rows = [], 0
        table = table_from_columns(
            game_id=[value for g in games for value in g.game_id],
            ply=np.concatenate([g.ply for g in games]),
            fen=[fen for g in games for fen in g.fen],
            history=np.concatenate([g.history for g in games]),
            meta=np.concatenate([g.meta for g in games]),
            policy_encoding=[self.policy_encoding] * count,
            policy_index=[i for g in games for i in g.policy_index],
            policy_prob=[p for g in games for p in g.policy_prob],
            z=np.concatenate([g.z for g in games]).astype(np.int64),
            root_q=np.concatenate([g.root_q for g in games]),
            root_visits=np.zeros(count, dtype=np.int64),
            full_search=np.ones(count, dtype=bool),
            generation=np.zeros(count, dtype=np.int64),
            result=[value for g in games for value in g.result],
            termination=[value for g in games for value in g.termination],
            root_d=np.concatenate([_or_fill(g.root_d, len(g), 0.0, np.float32) for g in games]),
            game_plies=np.concatenate([_or_fill(g.game_plies, len(g), UNKNOWN_PLIES, np.int64) for g in games]),
        )
        name = f"{self.prefix}-{len(self.written):05d}"
        self.written.append(write_shard(table, self.directory, name))
        self.positions += count


def _or_fill(values: npt.NDArray | None, rows: int, fill: float, dtype: type) -> npt.NDArray:
    """``values``, or ``rows`` copies of ``fill`` when None."""
    return np.full(rows, fill, dtype=dtype) if values is None else np.asarray(values, dtype=dtype)
