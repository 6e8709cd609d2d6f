"""What self-play produces: a game's records (:class:`GameRecord` of
:class:`PlyRecord`), the native core's finished game wrapped as one
(:class:`NativeGameRecord`), and the counters of a run (:class:`SelfPlayStats`).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import chess
import chess.pgn
import numpy as np

from models.policy import get_policy_map

if TYPE_CHECKING:
    from models.native_drivers import NativeGame

__all__ = ["GameRecord", "NativeGameRecord", "PlyRecord", "SelfPlayStats", "final_position", "native_plies"]


@dataclass
class PlyRecord:
    """One searched position of a game.

    Attributes:
        fen: the position before the move.
        turn: its side to move.
        history: ``(8, 14)`` uint64 rows of the input planes (see
            :func:`models.encoding.encode_snapshots`), with ``meta``.
        meta: ``(7,)`` uint8 values of the constant planes.
        moves: the legal moves (order of ``visits``).
        visits: search visits per move; pi = visits / visits.sum().
        root_value: Q of the root from its side to move.
        move: the move played.
        full_search: whether it was a full search (a training target).
        policy: the training target over ``moves`` when it is not the visit
            distribution (a Gumbel search's improved policy), else ``None``.
        root_draw: the root's draw probability D (0 when the evaluator gave none).
    """

    fen: str
    turn: chess.Color
    history: np.ndarray
    meta: np.ndarray
    moves: list[chess.Move]
    visits: np.ndarray
    root_value: float
    move: chess.Move
    full_search: bool
    policy: np.ndarray | None = None
    root_draw: float = 0.0


@dataclass
class GameRecord:
    """A finished self-play game.

    Attributes:
        game_id: the id the driver assigned (shards are named from it).
        start_fen: the position the recorded game starts from.
        plies: the searched positions, in order.
        result: ``1-0``, ``0-1`` or ``1/2-1/2``.
        termination: checkmate, stalemate, resign, max_plies,
            draw_adjudicated, threefold_repetition, fifty_moves,
            insufficient_material, ...;
            material or stockfish_adjudication when a game at ``max_plies``
            was adjudicated (``selfplay.adjudicate_*``).
        playthrough: resigning was disabled in this game.
        would_resign: in a play-through game, the side that would have
            resigned first (None if neither).
        draw_playthrough: draw adjudication was disabled in this game.
        would_draw: in a draw play-through game, the plies after which draw
            adjudication would have ended it (None if never).
    """

    game_id: str
    start_fen: str
    plies: list[PlyRecord] = field(default_factory=list)
    result: str = "*"
    termination: str = ""
    playthrough: bool = False
    would_resign: chess.Color | None = None
    draw_playthrough: bool = False
    would_draw: int | None = None

    def z(self, ply: int) -> int:
        """Outcome in {-1, 0, 1} from the side to move at ``ply``."""
        if self.result not in ("1-0", "0-1"):
            return 0
        winner = chess.WHITE if self.result == "1-0" else chess.BLACK
        return 1 if self.plies[ply].turn == winner else -1

    @property
    def num_plies(self) -> int:
        """Plies recorded (cheap for a native game, whose plies are built lazily)."""
        return len(self.plies)

    def pgn_moves(self) -> list[tuple[chess.Move, float, int, bool]]:
        """(move, root value, visits, full search) of each ply, for :meth:`to_pgn`."""
        return [(ply.move, ply.root_value, int(ply.visits.sum()), ply.full_search) for ply in self.plies]

    def resigns(self, side: chess.Color) -> bool:
        """Whether ``side`` resigns, now that its value calls for it: not in a
        play-through game, which only notes the first side that would have."""
        if self.playthrough:
            self.would_resign = side if self.would_resign is None else self.would_resign
        return not self.playthrough

    def adjudicated_draw(self) -> bool:
        """Whether the game is adjudicated a draw, now that the values call
        for it: not in a draw play-through game, which notes when it would have been."""
        if self.draw_playthrough:
            self.would_draw = self.num_plies if self.would_draw is None else self.would_draw
        return not self.draw_playthrough

    @property
    def false_resign(self) -> bool:
        """A play-through game in which the side that would have resigned did not lose."""
        if self.would_resign is None:
            return False
        loser_result = "0-1" if self.would_resign == chess.WHITE else "1-0"
        return self.result != loser_result

    @property
    def false_draw(self) -> bool:
        """A draw play-through game that would have been adjudicated a draw and was decided."""
        return self.would_draw is not None and self.result != "1/2-1/2"

    def to_pgn(self, headers: dict[str, str] | None = None) -> chess.pgn.Game:
        """The game as PGN, each move commented with the root value and visits."""
        game = chess.pgn.Game.from_board(chess.Board(self.start_fen))
        game.headers["Event"] = "zerochess self-play"
        game.headers["Date"] = datetime.date.today().strftime("%Y.%m.%d")
        game.headers["White"] = game.headers["Black"] = "zerochess"
        game.headers["Result"] = self.result
        game.headers["Termination"] = self.termination
        game.headers["GameId"] = self.game_id
        for key, value in (headers or {}).items():
            game.headers[key] = value
        node: chess.pgn.GameNode = game
        for move, root_value, visits, full_search in self.pgn_moves():
            node = node.add_variation(move)
            kind = "" if full_search else " fast"
            node.comment = f"q={root_value:+.2f} n={visits}{kind}"
        return game


class NativeGameRecord(GameRecord):
    """A :class:`GameRecord` over a finished native game (arrays).

    The :class:`PlyRecord` list is built on first access of :attr:`plies`
    (python-chess boards and moves for every ply); :func:`game_positions`,
    :meth:`to_pgn` and :attr:`num_plies` read the arrays and never build it.

    Args:
        game: the game as the native driver returned it.
        policy_encoding: the policy encoding its ``policy_index`` uses.
    """

    def __init__(self, game: NativeGame, policy_encoding: str) -> None:
        self.native = game
        self.policy_encoding = policy_encoding
        self._plies: list[PlyRecord] | None = None
        super().__init__(
            game.game_id,
            game.start_fen,
            result=game.result,
            termination=game.termination,
            playthrough=bool(game.playthrough),
            would_resign=game.would_resign,
            draw_playthrough=game.draw_playthrough,
            would_draw=game.would_draw,
        )
        self._plies = None  # the dataclass __init__ went through the setter

    @property  # type: ignore[override]
    def plies(self) -> list[PlyRecord]:
        if self._plies is None:
            self._plies = native_plies(self.native, self.policy_encoding)
        return self._plies

    @plies.setter
    def plies(self, value: list[PlyRecord]) -> None:
        self._plies = value

    @property
    def num_plies(self) -> int:
        return len(self.native.moves) if self._plies is None else len(self._plies)

    def z(self, ply: int) -> int:
        if self._plies is not None:
            return super().z(ply)
        if self.result not in ("1-0", "0-1"):
            return 0
        white_won = self.result == "1-0"
        return 1 if bool(self.native.turns[ply]) == white_won else -1

    def pgn_moves(self) -> list[tuple[chess.Move, float, int, bool]]:
        if self._plies is not None:
            return super().pgn_moves()
        game = self.native
        running = np.concatenate([[0], np.cumsum(game.policy_visits)])
        visits = running[game.policy_offsets[1:]] - running[game.policy_offsets[:-1]]
        return [
            (chess.Move.from_uci(uci), float(game.root_q[i]), int(visits[i]), bool(game.full_search[i]))
            for i, uci in enumerate(game.moves)
        ]


def final_position(record: GameRecord) -> chess.Board:
    """The position after the last recorded move of a game (no move history)."""
    if isinstance(record, NativeGameRecord) and record._plies is None:
        board = chess.Board(record.native.fens[-1])
        board.push_uci(record.native.moves[-1])
    else:
        board = chess.Board(record.plies[-1].fen)
        board.push(record.plies[-1].move)
    return board


def native_plies(game: NativeGame, policy_encoding: str) -> list[PlyRecord]:
    """The :class:`PlyRecord` of every ply of a native game: the legal moves in
    python-chess's order, with the visits of the visited ones (0 elsewhere)."""
    policy_map = get_policy_map(policy_encoding)
    plies = []
    for i, uci in enumerate(game.moves):
        board = chess.Board(game.fens[i])
        moves = list(board.legal_moves)
        position = {int(index): k for k, index in enumerate(policy_map.indices(board, moves))}
        visits = np.zeros(len(moves), dtype=np.int64)
        span = slice(int(game.policy_offsets[i]), int(game.policy_offsets[i + 1]))
        for index, count in zip(game.policy_index[span].tolist(), game.policy_visits[span].tolist()):
            visits[position[index]] = count
        policy = None
        probs = getattr(game, "policy_probs", None)
        listed = game.policy_visits[span]
        if probs is not None and not np.array_equal(probs[span], (listed / max(int(listed.sum()), 1)).astype(np.float32)):
            policy = np.zeros(len(moves), dtype=np.float32)  # Gumbel: the improved policy, every move
            for index, prob in zip(game.policy_index[span].tolist(), probs[span].tolist()):
                policy[position[index]] = prob
        plies.append(
            PlyRecord(
                fen=game.fens[i],
                turn=bool(game.turns[i]),
                history=game.history[i],
                meta=game.meta[i],
                moves=moves,
                visits=visits,
                root_value=float(game.root_q[i]),
                move=chess.Move.from_uci(uci),
                full_search=bool(game.full_search[i]),
                policy=policy,
                root_draw=0.0 if game.root_d is None else float(game.root_d[i]),
            )
        )
    return plies


@dataclass
class SelfPlayStats:
    """Counters of one :meth:`SelfPlayWorker.play` call."""

    games: int = 0
    positions: int = 0
    full_searches: int = 0
    evaluations: int = 0
    batches: int = 0
    resigned: int = 0
    playthrough: int = 0
    false_resigns: int = 0
    adjudicated: int = 0
    draws_adjudicated: int = 0
    draw_playthrough: int = 0
    false_draws: int = 0
