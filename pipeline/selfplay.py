"""Self-play: many games side by side, all their leaves in one network batch.

:class:`SelfPlayWorker` is a plain class (Ray wraps it in :mod:`actors`): it
keeps ``selfplay.games_per_task`` games in flight and, each round, collects
the pending leaves of every game's search, evaluates them in one call and
delivers the results; a game whose search is done plays its move at once and
starts the next search, so the batch stays full (lc0's multiplexing, minigo's
concurrent games).  It implements what lc0 and KataGo users expect:
Dirichlet noise and a temperature schedule, playout cap randomization,
resignation with a play-through share to measure false resignations, a
maximum length, and start positions from a file plus random plies.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import chess
import chess.pgn
import numpy as np

from models.encoding import board_meta
from models.evaluation import EvalCache, Evaluator, Leaf
from models.policy import PolicyMap
from models.search import GameTree, Owner, SearchConfig, collect_leaves, deliver_results, select_move
from pipeline.config import ConfigError, SelfPlayConfig
from pipeline.shards import PositionRecord

log = logging.getLogger(__name__)


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


@dataclass
class GameRecord:
    """A finished self-play game.

    Attributes:
        game_id: the id the driver assigned (shards are named from it).
        start_fen: the position the recorded game starts from.
        plies: the searched positions, in order.
        result: ``1-0``, ``0-1`` or ``1/2-1/2``.
        termination: checkmate, stalemate, resign, max_plies,
            threefold_repetition, fifty_moves, insufficient_material, ...
        playthrough: resigning was disabled in this game.
        would_resign: in a play-through game, the side that would have
            resigned first (None if neither).
    """

    game_id: str
    start_fen: str
    plies: list[PlyRecord] = field(default_factory=list)
    result: str = "*"
    termination: str = ""
    playthrough: bool = False
    would_resign: chess.Color | None = None

    def z(self, ply: int) -> int:
        """Outcome in {-1, 0, 1} from the side to move at ``ply``."""
        if self.result not in ("1-0", "0-1"):
            return 0
        winner = chess.WHITE if self.result == "1-0" else chess.BLACK
        return 1 if self.plies[ply].turn == winner else -1

    @property
    def false_resign(self) -> bool:
        """A play-through game in which the side that would have resigned did not lose."""
        if self.would_resign is None:
            return False
        loser_result = "0-1" if self.would_resign == chess.WHITE else "1-0"
        return self.result != loser_result

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
        for ply in self.plies:
            node = node.add_variation(ply.move)
            kind = "" if ply.full_search else " fast"
            node.comment = f"q={ply.root_value:+.2f} n={int(ply.visits.sum())}{kind}"
        return game


def game_positions(record: GameRecord, policy_map: PolicyMap, generation: int) -> list[PositionRecord]:
    """The game's (s, pi, z) rows for a shard: pi is sparse over the visited moves."""
    rows = []
    for index, ply in enumerate(record.plies):
        visits = ply.visits
        total = int(visits.sum())
        visited = np.flatnonzero(visits)
        indices = policy_map.indices(chess.Board(ply.fen), [ply.moves[i] for i in visited])
        rows.append(
            PositionRecord(
                game_id=record.game_id,
                ply=index,
                fen=ply.fen,
                history=ply.history,
                meta=ply.meta,
                policy_encoding=policy_map.name,
                policy_index=indices,
                policy_prob=(visits[visited] / total).astype(np.float32),
                z=record.z(index),
                root_q=ply.root_value,
                root_visits=total,
                full_search=ply.full_search,
                generation=generation,
                result=record.result,
                termination=record.termination,
            )
        )
    return rows


def load_start_positions(path: str | Path) -> list[str]:
    """FENs from an EPD or FEN file, one position a line; ``#`` starts a comment.

    Raises :class:`ConfigError` naming the file and line of an invalid position.
    """
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read start positions {path}: {error}") from error
    fens = []
    for number, raw in enumerate(lines, 1):
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        try:
            parts = text.split()
            is_fen = len(parts) == 6 and parts[4].isdigit() and parts[5].isdigit()
            board = chess.Board(text) if is_fen else chess.Board.from_epd(text)[0]
        except ValueError as error:
            raise ConfigError(f"{path}:{number}: invalid position {text!r}: {error}") from error
        if not board.is_valid() or board.outcome() is not None:
            raise ConfigError(f"{path}:{number}: position {text!r} is not playable ({board.status()!r})")
        fens.append(board.fen())
    if not fens:
        raise ConfigError(f"{path}: no positions")
    return fens


@dataclass
class _Game:
    """A game in flight."""

    record: GameRecord
    tree: GameTree
    full_search: bool = True
    low_streak: dict[chess.Color, int] = field(default_factory=lambda: {chess.WHITE: 0, chess.BLACK: 0})


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


class SelfPlayWorker:
    """Plays self-play games with one evaluator, many games per batch.

    Args:
        evaluator: the network (or any :class:`~models.evaluation.Evaluator`).
        search: search parameters of a full search.
        selfplay: self-play parameters.
        start_fens: start positions to draw from (default: the standard one).
    """

    def __init__(
        self,
        evaluator: Evaluator,
        search: SearchConfig,
        selfplay: SelfPlayConfig,
        start_fens: list[str] | None = None,
    ) -> None:
        self.evaluator = evaluator
        self.search = search
        self.selfplay = selfplay
        self.start_fens = start_fens or [chess.STARTING_FEN]
        self.stats = SelfPlayStats()

    def play(
        self,
        games: int,
        seed: int,
        id_prefix: str = "game",
        on_move: Callable[[], None] | None = None,
    ) -> list[GameRecord]:
        """Play ``games`` games (at most ``games_per_task`` at a time) and
        return their records in id order.  The same ``seed`` gives the same
        games for a deterministic evaluator.

        With ``selfplay.overlap_inference`` the games form two lanes: while
        the network evaluates one lane's leaves in a background thread (torch
        releases the GIL), the search delivers and collects the other's.
        """
        if games < 0:
            raise ConfigError(f"games must be >= 0, got {games}")
        rng = np.random.default_rng(seed)
        cache = EvalCache(self.search.cache_size)
        lanes = 2 if self.selfplay.overlap_inference else 1
        per_lane = -(-self.selfplay.games_per_task // lanes)
        groups: list[list[_Game]] = [[] for _ in range(lanes)]
        in_flight: list[tuple[Future[Sequence[tuple[np.ndarray, float]]], list[Owner]] | None] = [None] * lanes
        finished: list[GameRecord] = []
        started = 0
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="evaluator") as executor:
            while started < games or any(groups):
                for lane, group in enumerate(groups):
                    batch = in_flight[lane]
                    if batch is not None:
                        in_flight[lane] = None
                        deliver_results(batch[1], batch[0].result())
                    for game in [game for game in group if game.tree.finished]:
                        if self._play_move(game, rng):
                            group.remove(game)
                            finished.append(self._finish(game))
                        if on_move is not None:
                            on_move()
                    while started < games and len(group) < per_lane:
                        group.append(self._new_game(f"{id_prefix}-{started:05d}", rng, cache))
                        started += 1
                    owners, leaves = self._collect(group)
                    if leaves:
                        in_flight[lane] = (executor.submit(self.evaluator.evaluate, leaves), owners)
        return sorted(finished, key=lambda record: record.game_id)

    # -- one round of batched search --------------------------------------

    def _collect(self, group: list[_Game]) -> tuple[list[Owner], list[Leaf]]:
        owners, leaves = collect_leaves([game.tree for game in group])
        if leaves:
            self.stats.evaluations += len(leaves)
            self.stats.batches += 1
        return owners, leaves

    # -- game life cycle ---------------------------------------------------

    def _new_game(self, game_id: str, rng: np.random.Generator, cache: EvalCache) -> _Game:
        board = self._start_board(rng)
        tree = GameTree(board, self.search, needs_planes=self.evaluator.needs_planes, cache=cache, rng=rng)
        playthrough = self.selfplay.resign_enabled and rng.random() < self.selfplay.resign_playthrough
        record = GameRecord(game_id, board.fen(), playthrough=playthrough)
        game = _Game(record, tree)
        self._start_search(game, rng)
        return game

    def _start_board(self, rng: np.random.Generator) -> chess.Board:
        """A start position plus ``random_plies`` random moves (never a finished game)."""
        for _ in range(100):
            board = chess.Board(self.start_fens[int(rng.integers(len(self.start_fens)))])
            for _ in range(self.selfplay.random_plies):
                moves = list(board.legal_moves)
                if not moves:
                    break
                board.push(moves[int(rng.integers(len(moves)))])
            if board.outcome(claim_draw=True) is None:
                # The recorded game starts here: earlier random plies are not history.
                return chess.Board(board.fen())
        raise ConfigError("could not draw a playable start position in 100 tries")

    def _start_search(self, game: _Game, rng: np.random.Generator) -> None:
        full = rng.random() < self.selfplay.full_search_prob
        game.full_search = full
        sims = self.search.num_simulations if full else self.selfplay.fast_simulations
        game.tree.start(num_simulations=sims, add_noise=full)

    def _play_move(self, game: _Game, rng: np.random.Generator) -> bool:
        """Record the finished search, play a move; True when the game is over."""
        tree, record = game.tree, game.record
        board = tree.board
        result = tree.result()
        ply = len(record.plies)
        move = select_move(result, ply, self.search, rng)
        record.plies.append(
            PlyRecord(
                fen=board.fen(),
                turn=board.turn,
                history=tree.history_snapshot(),
                meta=board_meta(board),
                moves=result.moves,
                visits=result.visits,
                root_value=result.root_value,
                move=move,
                full_search=game.full_search,
            )
        )
        if self._resigns(game, board.turn, result.root_value):
            record.result = "0-1" if board.turn == chess.WHITE else "1-0"
            record.termination = "resign"
            return True
        tree.advance(move)
        outcome = tree.board.outcome(claim_draw=True)
        if outcome is not None:
            record.result = outcome.result()
            record.termination = outcome.termination.name.lower()
            return True
        if len(record.plies) >= self.selfplay.max_plies:
            record.result, record.termination = "1/2-1/2", "max_plies"
            return True
        self._start_search(game, rng)
        return False

    def _resigns(self, game: _Game, side: chess.Color, value: float) -> bool:
        config = self.selfplay
        if not config.resign_enabled:
            return False
        game.low_streak[side] = game.low_streak[side] + 1 if value < config.resign_threshold else 0
        if game.low_streak[side] < config.resign_plies:
            return False
        if game.record.playthrough:
            if game.record.would_resign is None:
                game.record.would_resign = side
            return False
        return True

    def _finish(self, game: _Game) -> GameRecord:
        record = game.record
        stats = self.stats
        stats.games += 1
        stats.positions += len(record.plies)
        stats.full_searches += sum(ply.full_search for ply in record.plies)
        stats.resigned += record.termination == "resign"
        stats.playthrough += record.playthrough
        stats.false_resigns += record.false_resign
        log.debug("%s: %s by %s after %d plies", record.game_id, record.result, record.termination, len(record.plies))
        return record
