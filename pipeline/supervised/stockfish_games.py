"""Stockfish self-play games as a supervised source (``zerochess sfgames``).

No human game database ships offline, so the supervised phase of seed 001
(learn the expert's move and the game's outcome, then self-play) takes
Stockfish as the expert: it plays itself at a node limit, and each game is
written as PGN, the move it played and its evaluation on every move (a
``[%eval ...]`` comment, from White's side, in pawns or ``#N`` for a mate, as
lichess writes them).  ``zerochess pgn2shards`` turns the file into shards:
the played move is the policy target, the outcome ``z``, and the evaluation
``root_q`` (:mod:`pipeline.supervised.rows`), which ``train.value_target: q``
or ``mix`` trains on.

Variety comes from the starts: each game first plays ``random_plies``
uniformly random legal moves (seeded by ``seed`` and the game's number), and
the PGN starts after them (a ``FEN`` header), so no random move is ever a
policy target.  A start that is already over, or a game whose engine fails,
is retried from a new start (at most ``attempts`` times).  A game longer than
``max_plies`` is a draw (``Termination "max plies"``).  With one thread per
engine, the same seed and node limit give the same games.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import chess
import chess.engine
import chess.pgn

from pipeline.players.base import PlayerError
from pipeline.players.stockfish import find_stockfish

log = logging.getLogger(__name__)

MATE_EVAL = "#"


class StockfishGamesError(ValueError):
    """The games cannot be played; the message names the value or the engine."""


@dataclass(frozen=True)
class PlayedGame:
    """One finished game: its PGN text, its moves and its result."""

    text: str
    plies: int
    result: str


@dataclass(frozen=True)
class GamePlan:
    """How the games are played.

    Attributes:
        nodes: Stockfish nodes a move (both sides).
        random_plies: random legal moves before the recorded game starts.
        max_plies: a recorded game longer than this is a draw.
        seed: seed of the random starts (game ``i`` uses ``(seed, i)``).
        hash_mb: Stockfish's hash table per engine.
        attempts: starts tried for one game before it is given up.
    """

    nodes: int = 1000
    random_plies: int = 8
    max_plies: int = 300
    seed: int = 0
    hash_mb: int = 16
    attempts: int = 5

    def __post_init__(self) -> None:
        for name, minimum in (("nodes", 1), ("random_plies", 0), ("max_plies", 1), ("hash_mb", 1), ("attempts", 1)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
                raise StockfishGamesError(f"{name} must be a whole number >= {minimum}, got {value!r}")


def eval_comment(score: chess.engine.PovScore | None) -> str:
    """The ``[%eval ...]`` comment of a search score, from White's side."""
    if score is None:
        return ""
    white = score.white()
    mate = white.mate()
    if mate is not None:
        return f"[%eval {MATE_EVAL}{mate}]"
    cp = white.score()
    return "" if cp is None else f"[%eval {cp / 100:.2f}]"


def random_start(rng: random.Random, plies: int) -> chess.Board | None:
    """The position after ``plies`` random legal moves (None: the game ended first)."""
    board = chess.Board()
    for _ in range(plies):
        moves = list(board.legal_moves)
        if not moves:
            return None
        board.push(rng.choice(moves))
    return None if board.is_game_over() else chess.Board(board.fen())


def play_game(engine: chess.engine.SimpleEngine, start: chess.Board, plan: GamePlan, number: int) -> chess.pgn.Game:
    """One game of ``engine`` against itself from ``start``, as PGN with evals."""
    game = chess.pgn.Game()
    game.setup(start)
    game.headers.update({"Event": "zerochess sfgames", "Round": str(number), "White": "Stockfish",
                         "Black": "Stockfish", "Annotator": f"nodes={plan.nodes}"})  # fmt: skip
    board, node = start.copy(), game
    limit = chess.engine.Limit(nodes=plan.nodes)
    key = object()  # a new game for python-chess: it sends ucinewgame (Stockfish clears its hash)
    while not board.is_game_over(claim_draw=True) and board.ply() - start.ply() < plan.max_plies:
        result = engine.play(board, limit, info=chess.engine.INFO_SCORE, game=key)
        if result.move is None:
            raise PlayerError(f"game {number}: Stockfish returned no move in {board.fen()}")
        node = node.add_variation(result.move, comment=eval_comment(result.info.get("score")))
        board.push(result.move)
    over = board.outcome(claim_draw=True)
    game.headers["Result"] = over.result() if over is not None else "1/2-1/2"
    game.headers["Termination"] = over.termination.name.lower() if over is not None else "max plies"
    return game


class GameWorker:
    """One Stockfish process playing games one after the other."""

    def __init__(self, path: str, plan: GamePlan) -> None:
        self.path, self.plan = path, plan
        self.engine: chess.engine.SimpleEngine | None = None

    def _engine(self) -> chess.engine.SimpleEngine:
        if self.engine is None:
            try:
                self.engine = chess.engine.SimpleEngine.popen_uci(self.path, timeout=60.0)
                self.engine.configure({"Threads": 1, "Hash": self.plan.hash_mb})
            except (OSError, chess.engine.EngineError, TimeoutError) as error:
                raise StockfishGamesError(f"cannot start Stockfish at {self.path!r}: {error}") from error
        return self.engine

    def game(self, number: int) -> PlayedGame:
        """Game ``number`` (retried from new starts on a failure)."""
        rng = random.Random(f"{self.plan.seed}:{number}")
        failures: list[str] = []
        for _ in range(self.plan.attempts):
            start = random_start(rng, self.plan.random_plies)
            if start is None:
                continue
            try:
                game = play_game(self._engine(), start, self.plan, number)
            except (chess.engine.EngineError, chess.engine.EngineTerminatedError, TimeoutError, PlayerError) as error:
                failures.append(str(error))
                self.close()
                continue
            text = str(game.accept(chess.pgn.StringExporter(headers=True, variations=False, comments=True)))
            return PlayedGame(text, sum(1 for _ in game.mainline_moves()), game.headers["Result"])
        raise StockfishGamesError(f"game {number}: no game after {self.plan.attempts} starts"
                                  + (f" ({'; '.join(failures)[:500]})" if failures else ""))  # fmt: skip

    def close(self) -> None:
        if self.engine is not None:
            try:
                self.engine.quit()
            except (chess.engine.EngineError, chess.engine.EngineTerminatedError, TimeoutError, OSError):
                pass
            self.engine = None


def stockfish_games(games: int, plan: GamePlan, stockfish_path: str = "", workers: int = 2,
                    on_game: Callable[[int, PlayedGame], None] | None = None) -> Iterator[PlayedGame]:  # fmt: skip
    """Games ``0 .. games - 1``, in order, played by
    ``workers`` Stockfish processes at once (each a thread here driving its
    own engine process)."""
    if games < 1 or workers < 1:
        raise StockfishGamesError(f"games and workers must be >= 1, got {games} and {workers}")
    path = find_stockfish(stockfish_path)
    pool = [GameWorker(path, plan) for _ in range(workers)]
    free = list(pool)

    def one(number: int) -> PlayedGame:
        worker = free.pop()
        try:
            return worker.game(number)
        finally:
            free.append(worker)

    try:
        with ThreadPoolExecutor(max_workers=workers) as executor:
            for number, played in enumerate(executor.map(one, range(games))):
                if on_game is not None:
                    on_game(number, played)
                yield played
    finally:
        for worker in pool:
            worker.close()

