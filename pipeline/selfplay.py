"""Self-play: many games side by side, all their leaves in one network batch.

:class:`SelfPlayWorker` is a plain class (Ray wraps it in :mod:`actors`): it
keeps ``selfplay.games_per_task`` games in flight and, each round, collects
the pending leaves of every game's search, evaluates them in one call and
delivers the results; a game whose search is done plays its move at once and
starts the next search, so the batch stays full (lc0's multiplexing, minigo's
concurrent games).  It implements what lc0 and KataGo users expect:
Dirichlet noise and a temperature schedule, playout cap randomization,
resignation with a play-through share to measure false resignations, a
maximum length, and start positions from a file plus random plies.  Off by
default, not AlphaZero: draw adjudication of a long game whose root values
stay near 0 (``selfplay.draw_adjudication_*``, with its own play-through
share), and, not zero-knowledge, a game reaching the maximum length can be
scored by material or by Stockfish (:mod:`pipeline.adjudication`).

Two backends play the same rules (``search.backend``):

* ``native`` (the default): :class:`models.native_search.SelfPlayDriver` keeps
  the games in flight in C++ on ``selfplay.search_threads`` threads, without
  the GIL, and hands the network one ``evaluate_batch`` call per batch
  (two lanes, double-buffered on CUDA or with ``selfplay.overlap_inference``:
  the search fills one batch while the network evaluates the other; on a CPU
  in turn, so the search does not take the forward's cores).  A finished game comes back as arrays
  (:class:`~models.native_search.NativeGame`); :class:`NativeGameRecord` wraps
  it as a :class:`GameRecord` whose plies are only built when asked for (a PGN
  needs none of them), and :func:`game_positions` reads the arrays directly.
* ``python``: the readable reference below (:class:`models.search.GameTree`
  per game, ``selfplay.overlap_inference`` lanes).  It is also used for an
  evaluator that only implements ``evaluate(leaves)``.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import chess
import chess.pgn
import numpy as np

from models.encoding import board_meta
from models.evaluation import EvalCache, Evaluator, Leaf
from models.policy import PolicyMap, get_policy_map
from models.search import GameTree, Owner, SearchConfig, collect_leaves, deliver_results, select_move
from models.search_backend import policy_encoding
from pipeline.adjudication import Adjudicator
from pipeline.config import ConfigError, SelfPlayConfig
from pipeline.shards import PositionRecord

if TYPE_CHECKING:
    from models.native_search import NativeGame

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[1]


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
            )
        )
    return plies


def game_positions(
    record: GameRecord | NativeGame, policy_map: PolicyMap, generation: int
) -> list[PositionRecord]:
    """The game's (s, pi, z) rows for a shard: pi is sparse over the visited
    moves, in ascending policy index (the same rows from both backends).

    ``record`` may be a native game (:class:`NativeGameRecord`, or the
    driver's ``NativeGame`` itself): its arrays are read directly, and pi is
    the search's target (visits / their sum for PUCT; the improved policy
    over every legal move for a Gumbel search).
    """
    if isinstance(record, NativeGameRecord):
        if record.policy_encoding != policy_map.name:
            raise ConfigError(
                f"game {record.game_id} was searched with policy encoding {record.policy_encoding!r}, "
                f"not {policy_map.name!r}"
            )
        return _native_positions(record.native, policy_map.name, generation)
    if not isinstance(record, GameRecord):
        return _native_positions(record, policy_map.name, generation)
    rows = []
    for index, ply in enumerate(record.plies):
        visits = ply.visits
        total = int(visits.sum())
        visited = np.flatnonzero(visits if ply.policy is None else ply.policy > 0)
        indices = policy_map.indices(chess.Board(ply.fen), [ply.moves[i] for i in visited])
        order = np.argsort(indices, kind="stable")
        indices, visited = indices[order], visited[order]
        if ply.policy is None:
            probs = (visits[visited] / total).astype(np.float32)
        else:  # Gumbel: the improved policy
            probs = np.asarray(ply.policy, dtype=np.float32)[visited]
        rows.append(
            PositionRecord(
                game_id=record.game_id,
                ply=index,
                fen=ply.fen,
                history=ply.history,
                meta=ply.meta,
                policy_encoding=policy_map.name,
                policy_index=indices,
                policy_prob=probs,
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


def _native_positions(game: NativeGame, policy_encoding: str, generation: int) -> list[PositionRecord]:
    """:func:`game_positions` of a native game, from its arrays."""
    rows = []
    offsets = game.policy_offsets
    targets = getattr(game, "policy_probs", None)  # the search's pi (Gumbel: the improved policy)
    for ply in range(len(game.moves)):
        span = slice(int(offsets[ply]), int(offsets[ply + 1]))
        indices = game.policy_index[span]
        visits = game.policy_visits[span]
        order = np.argsort(indices, kind="stable")
        indices, visits = indices[order], visits[order]
        total = int(visits.sum())
        probs = (visits / total).astype(np.float32) if targets is None else targets[span][order].astype(np.float32)
        rows.append(
            PositionRecord(
                game_id=game.game_id,
                ply=ply,
                fen=game.fens[ply],
                history=game.history[ply],
                meta=game.meta[ply],
                policy_encoding=policy_encoding,
                policy_index=indices,
                policy_prob=probs,
                z=game.z(ply),
                root_q=float(game.root_q[ply]),
                root_visits=total,
                full_search=bool(game.full_search[ply]),
                generation=generation,
                result=game.result,
                termination=game.termination,
            )
        )
    return rows


def project_file(path: str | Path) -> Path:
    """``path``, or the project's file of that relative path when the working
    directory has none (``data/endgames.epd`` in a preset works from anywhere)."""
    in_project = PROJECT_ROOT / path
    if not Path(path).is_absolute() and not Path(path).exists() and in_project.exists():
        return in_project
    return Path(path)


def load_start_positions(path: str | Path) -> list[str]:
    """FENs from an EPD or FEN file, one position a line; ``#`` starts a comment.

    A relative path missing from the working directory is looked up in the
    project's folder (so ``data/endgames.epd`` in a preset works from anywhere).
    Raises :class:`ConfigError` naming the file and line of an invalid position.
    """
    path = project_file(path)
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
    quiet_streak: int = 0
    """Consecutive plies with root |q| below ``selfplay.draw_adjudication_q``."""


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


class SelfPlayWorker:
    """Plays self-play games with one evaluator, many games per batch.

    Args:
        evaluator: the network (:class:`~models.net_evaluator.NetEvaluator`),
            or any evaluator with ``evaluate_batch`` (native backend) or
            ``evaluate`` (python backend); its ``policy_encoding`` attribute
            (default ``az4672``) names the policy indices the native core sends.
        search: search parameters of a full search (``backend`` picks the core).
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
        self.adjudicator = Adjudicator(selfplay)  # checks Stockfish's path before any game
        self.stats = SelfPlayStats()
        self.native_stats: dict[str, float] = {}
        """The native driver's counters of the last :meth:`play` (eval/wait/wall seconds too)."""

    def play(
        self,
        games: int,
        seed: int,
        id_prefix: str = "game",
        on_move: Callable[[], None] | None = None,
    ) -> list[GameRecord]:
        """Play ``games`` games (at most ``games_per_task`` at a time) and
        return their records in id order.  The same ``seed`` gives the same
        games for a deterministic evaluator (and the same backend).

        Native backend: ``selfplay.search_threads`` C++ threads, two lanes
        (overlapped as :meth:`_native_overlap` says); ``on_move`` is called for each move of a game when
        the game ends.  Python backend: with ``selfplay.overlap_inference``
        the games form two lanes: while the network evaluates one lane's
        leaves in a background thread (torch releases the GIL), the search
        delivers and collects the other's; ``on_move`` follows every move.
        """
        if games < 0:
            raise ConfigError(f"games must be >= 0, got {games}")
        if self.search.uses_native(self.evaluator):
            records = self._play_native(games, seed, id_prefix, on_move)
        else:
            records = self._play_python(games, seed, id_prefix, on_move)
        self._adjudicate(records)
        return records

    def _adjudicate(self, records: list[GameRecord]) -> None:
        """Score the games that reached ``max_plies`` with the adjudication in
        force (``selfplay.adjudicate_*``, :mod:`pipeline.adjudication`): their
        result and termination, hence the z of their rows, change."""
        if not self.adjudicator.enabled:
            return
        try:
            for record in records:
                if record.termination != "max_plies" or record.num_plies == 0:
                    continue
                verdict = self.adjudicator.adjudicate(final_position(record))
                if verdict is None:
                    continue
                record.result, record.termination = verdict
                if isinstance(record, NativeGameRecord):
                    record.native.result, record.native.termination = verdict
                self.stats.adjudicated += 1
        finally:
            self.adjudicator.close()

    def _play_native(
        self, games: int, seed: int, id_prefix: str, on_move: Callable[[], None] | None
    ) -> list[GameRecord]:
        """:meth:`play` on the native core (``search.backend: native``)."""
        from models.native_search import SelfPlayDriver  # native_search imports models.search

        if games == 0:
            return []
        config = self.selfplay
        encoding = policy_encoding(self.evaluator)
        driver = SelfPlayDriver(
            self.search,
            games=games,
            games_in_flight=config.games_per_task,
            seed=seed,
            policy_encoding=encoding,
            start_fens=list(self.start_fens),
            random_plies=config.random_plies,
            max_plies=config.max_plies,
            full_search_prob=config.full_search_prob,
            fast_simulations=config.fast_simulations,
            resign_threshold=config.resign_threshold,
            resign_plies=config.resign_plies,
            resign_playthrough=config.resign_playthrough,
            draw_adjudication_plies=config.draw_adjudication_plies,
            draw_adjudication_window=config.draw_adjudication_window,
            draw_adjudication_q=config.draw_adjudication_q,
            draw_adjudication_playthrough=config.draw_adjudication_playthrough,
            threads=config.search_threads,
            id_prefix=id_prefix,
            overlap=self._native_overlap(),
        )

        def finished(game: NativeGame) -> None:
            if on_move is not None:
                for _ in game.moves:
                    on_move()

        played = driver.play(self.evaluator, on_game=finished)  # type: ignore[arg-type]
        self.native_stats = dict(driver.stats)
        records = [NativeGameRecord(game, encoding) for game in played]
        self._count_native(driver.stats)
        for record in records:
            log.debug("%s: %s by %s after %d plies", record.game_id, record.result, record.termination,
                      record.num_plies)  # fmt: skip
        return records

    def _native_overlap(self) -> bool:
        """Whether the native driver evaluates one lane's batch while its
        search steps the other: when ``selfplay.overlap_inference`` asks for
        it or the network runs on a GPU.  On a CPU the search thread and the
        forward's threads compete for the same cores (``bench/selfplay.py``,
        2x32 net, 2 cores: 5,026-5,839 evaluations/s overlapped against
        5,760-6,874 in turn, network-bound share 0.84-0.94 against 0.98-1.00)."""
        device = getattr(self.evaluator, "device", None)
        return self.selfplay.overlap_inference or getattr(device, "type", "cpu") == "cuda"

    def _count_native(self, counters: dict[str, Any]) -> None:
        stats = self.stats
        for name in ("games", "positions", "full_searches", "evaluations", "batches", "resigned",
                     "playthrough", "false_resigns", "draws_adjudicated", "draw_playthrough",
                     "false_draws"):  # fmt: skip
            setattr(stats, name, getattr(stats, name) + int(counters[name]))

    def _play_python(
        self, games: int, seed: int, id_prefix: str, on_move: Callable[[], None] | None
    ) -> list[GameRecord]:
        """:meth:`play` on the python reference search (``search.backend: python``)."""
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
        config = self.selfplay
        playthrough = config.resign_enabled and rng.random() < config.resign_playthrough
        draw_playthrough = config.draw_adjudication_enabled and rng.random() < config.draw_adjudication_playthrough
        record = GameRecord(game_id, board.fen(), playthrough=playthrough, draw_playthrough=draw_playthrough)
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
                policy=None if result.improved_policy is None else result.improved_policy.astype(np.float32),
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
        if self._adjudicates_draw(game, result.root_value):
            record.result, record.termination = "1/2-1/2", "draw_adjudicated"
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

    def _adjudicates_draw(self, game: _Game, value: float) -> bool:
        """Draw adjudication, after every ply that did not end the game
        otherwise; ``value`` is the ply's root q (only |q| counts)."""
        config = self.selfplay
        if not config.draw_adjudication_enabled:
            return False
        game.quiet_streak = game.quiet_streak + 1 if abs(value) < config.draw_adjudication_q else 0
        plies = len(game.record.plies)
        if plies < config.draw_adjudication_plies or game.quiet_streak < config.draw_adjudication_window:
            return False
        if game.record.draw_playthrough:
            if game.record.would_draw is None:
                game.record.would_draw = plies
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
        stats.draws_adjudicated += record.termination == "draw_adjudicated"
        stats.draw_playthrough += record.draw_playthrough
        stats.false_draws += record.false_draw
        log.debug("%s: %s by %s after %d plies", record.game_id, record.result, record.termination, len(record.plies))
        return record
