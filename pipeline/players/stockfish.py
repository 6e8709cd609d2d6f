"""Stockfish through python-chess's UCI driver, made robust for long tournaments.

* a position is checked with ``board.is_valid()`` before it is sent (Stockfish
  crashes on some invalid boards, e.g. one without a king);
* a dead engine (``EngineTerminatedError``, "event loop dead") or a frozen one
  (``TimeoutError`` after the limit plus ``timeout_s``) is killed, restarted
  with back-off and asked again; after ``retries`` failures the move raises
  :class:`EngineFailure`, which a match records as an aborted game, never a loss;
* ``close`` always leaves no process behind (quit, else kill by process id);
* an engine that dies during its start-up is started again (up to ``retries``
  times, with back-off);
* a missing or non-UCI binary is a start-up error naming the configured path;
* every game starts with ``ucinewgame`` (a cleared hash table), so a game does
  not depend on the games the engine played before it.

Reproducibility: with ``Threads`` 1, a node or depth limit and no ``Skill
Level`` or ``UCI_LimitStrength`` Stockfish plays the same moves in the same
position every time (:attr:`StockfishSettings.reproducible`).  Its skill
levels pick among the best moves with a random generator seeded from the
clock, and a time limit depends on the machine's speed: such games differ
from run to run.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import time
from concurrent.futures import CancelledError, ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass

import chess
import chess.engine

from pipeline.players.base import Limits, PlayerError

log = logging.getLogger(__name__)

DEBIAN_PATH = "/usr/games/stockfish"


class EngineFailure(PlayerError):
    """The engine kept failing on one position; the game is aborted."""


def find_stockfish(configured: str = "") -> str:
    """The Stockfish binary: ``configured`` if set, else ``stockfish`` on PATH,
    else Debian's ``/usr/games/stockfish``.  Raises :class:`PlayerError` naming
    the path (and the ``gating.stockfish_path`` setting) when none is usable."""
    if configured:
        path = shutil.which(configured) or configured
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise PlayerError(f"gating.stockfish_path {configured!r} is not an executable file")
        return path
    found = shutil.which("stockfish") or (DEBIAN_PATH if os.access(DEBIAN_PATH, os.X_OK) else None)
    if found is None:
        raise PlayerError(
            "Stockfish not found on PATH nor at /usr/games/stockfish; install Debian's package "
            "(apt-get install stockfish) or set gating.stockfish_path"
        )
    return found


@dataclass(frozen=True)
class StockfishSettings:
    """Strength and budget of a Stockfish player.

    Attributes:
        skill: UCI ``Skill Level`` 0..20 (None: engine default, full strength).
        elo: ``UCI_LimitStrength`` with this ``UCI_Elo`` (Stockfish 15: 1350..2850).
        nodes / depth / movetime_s: the default per-move limit.
        threads / hash_mb: engine resources.
        timeout_s: how long past the move limit a reply may take before the
            engine counts as frozen.
        start_timeout_s: how long the start-up handshake (``uci``, options)
            may take: a first start reads the binary and its network from a
            cold disk, which can take seconds on a loaded machine.
        retries: restarts tried for one move before the game is aborted.
    """

    skill: int | None = None
    elo: int | None = None
    nodes: int | None = None
    depth: int | None = None
    movetime_s: float | None = None
    threads: int = 1
    hash_mb: int = 16
    timeout_s: float = 10.0
    start_timeout_s: float = 60.0
    retries: int = 3

    def __post_init__(self) -> None:
        if self.skill is not None and not 0 <= self.skill <= 20:
            raise PlayerError(f"stockfish skill must be in 0..20, got {self.skill}")
        if self.elo is not None and self.elo < 0:
            raise PlayerError(f"stockfish elo must be >= 0, got {self.elo}")
        if self.nodes is None and self.depth is None and self.movetime_s is None:
            object.__setattr__(self, "nodes", 1000)
        Limits(nodes=self.nodes, depth=self.depth, movetime_s=self.movetime_s)  # validates
        if self.timeout_s <= 0 or self.retries < 0:
            raise PlayerError(f"stockfish timeout_s must be > 0 and retries >= 0, got {self.timeout_s}, {self.retries}")
        if self.start_timeout_s <= 0:
            raise PlayerError(f"stockfish start_timeout_s must be > 0, got {self.start_timeout_s}")

    @property
    def reproducible(self) -> bool:
        """Whether the same position always gets the same move: one thread, a
        node or depth limit (not a time limit) and no strength limit (Skill
        Level and UCI_Elo draw their weakening moves at random, seeded from
        the clock)."""
        weakened = (self.skill is not None and self.skill < 20) or self.elo is not None
        return self.threads == 1 and self.movetime_s is None and not weakened

    def label(self) -> str:
        parts = ["stockfish"]
        for key in ("skill", "elo", "nodes", "depth", "movetime_s"):
            value = getattr(self, key)
            if value is not None:
                parts.append(f"{key}={value}")
        return ":".join(parts)


class StockfishPlayer:
    """A Stockfish process playing at a configured strength."""

    def __init__(self, settings: StockfishSettings, path: str = "") -> None:
        self.settings = settings
        self.path = find_stockfish(path)
        self.name = settings.label()
        self._engine: chess.engine.SimpleEngine | None = None
        self._calls = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stockfish")
        self._game = object()  # python-chess sends ucinewgame when this changes
        self.restarts = 0
        self._start()

    # -- process life cycle ------------------------------------------------

    def _start(self) -> None:
        """Start the engine; one that dies during its start-up (killed, crashed) is
        started again with back-off, up to ``retries`` times."""
        for attempt in range(self.settings.retries + 1):
            try:
                self._start_once()
                return
            except _DiedStarting as died:
                if attempt == self.settings.retries:
                    raise PlayerError(
                        f"Stockfish at {self.path!r} (gating.stockfish_path) died while starting, "
                        f"{attempt + 1} times: {died.__cause__}"
                    ) from died.__cause__
                log.warning("Stockfish died while starting (%s); start %d", died.__cause__, attempt + 2)
                time.sleep(min(0.1 * 4**attempt, 2.0))

    def _start_once(self) -> None:
        try:
            engine = chess.engine.SimpleEngine.popen_uci(self.path, timeout=self.settings.start_timeout_s)
        except chess.engine.EngineTerminatedError as error:
            raise _DiedStarting from error
        except TimeoutError as error:
            raise PlayerError(f"Stockfish at {self.path!r} (gating.stockfish_path) did not finish its UCI handshake "
                              f"within {self.settings.start_timeout_s:g} s") from error  # fmt: skip
        except (OSError, chess.engine.EngineError) as error:
            raise PlayerError(f"cannot start Stockfish at {self.path!r} (gating.stockfish_path): {error}") from error
        options: dict[str, int | bool] = {"Threads": self.settings.threads, "Hash": self.settings.hash_mb}
        if self.settings.skill is not None:
            options["Skill Level"] = self.settings.skill
        if self.settings.elo is not None:
            low, high = _elo_range(engine)
            options["UCI_LimitStrength"] = True
            options["UCI_Elo"] = min(max(self.settings.elo, low), high)
        try:
            engine.configure(options)
        except chess.engine.EngineTerminatedError as error:
            _kill(engine)
            raise _DiedStarting from error
        except (chess.engine.EngineError, TimeoutError) as error:
            _kill(engine)
            raise PlayerError(f"Stockfish at {self.path!r} rejected options {options}: {error}") from error
        self._engine = engine

    def _restart(self, attempt: int) -> None:
        self._shutdown()
        time.sleep(min(0.1 * 4**attempt, 2.0))
        self.restarts += 1
        self._start()

    def _shutdown(self) -> None:
        if self._engine is not None:
            _kill(self._engine)
            self._engine = None

    @property
    def pid(self) -> int | None:
        """Process id of the running engine (for tests and clean-up)."""
        return None if self._engine is None else self._engine.transport.get_pid()

    # -- Player --------------------------------------------------------------

    def play(self, board: chess.Board, limits: Limits | None = None) -> chess.Move:
        if not board.is_valid():
            raise PlayerError(f"refusing to send an invalid position to Stockfish: {board.fen()} ({board.status()!r})")
        own = Limits(nodes=self.settings.nodes, depth=self.settings.depth, movetime_s=self.settings.movetime_s)
        chosen = (limits or Limits()).merged(own)
        limit = chess.engine.Limit(nodes=chosen.nodes, depth=chosen.depth, time=chosen.movetime_s)
        last_error: Exception | None = None
        for attempt in range(self.settings.retries + 1):
            try:
                if self._engine is None:
                    self._start()
                assert self._engine is not None
                move = self._play_with_deadline(board, limit, chosen)
                if move is None or move not in board.legal_moves:
                    raise chess.engine.EngineError(f"engine returned no legal move ({move})")
                return move
            except (
                chess.engine.EngineTerminatedError,
                chess.engine.EngineError,
                TimeoutError,
                CancelledError,  # a call pending when the engine died
            ) as error:
                last_error = error
                log.warning("Stockfish failed on %s (%s); restart %d", board.fen(), error, attempt + 1)
                if attempt < self.settings.retries:
                    self._restart(attempt)
        self._shutdown()
        raise EngineFailure(f"Stockfish failed {self.settings.retries + 1} times on {board.fen()}: {last_error}")

    def _play_with_deadline(self, board: chess.Board, limit: chess.engine.Limit, chosen: Limits) -> chess.Move | None:
        """``engine.play`` bounded in time even for node or depth limits (python-chess
        waits forever there): past ``movetime + timeout_s`` the engine is frozen."""
        assert self._engine is not None
        future = self._calls.submit(self._engine.play, board, limit, game=self._game)
        budget = (chosen.movetime_s or 0.0) + self.settings.timeout_s
        try:
            return future.result(timeout=budget).move
        except TimeoutError:
            self._shutdown()  # unblocks the waiting call with EngineTerminatedError
            raise TimeoutError(f"no reply within {budget:.1f} s") from None

    def new_game(self) -> None:
        """The next move starts a new game: ``ucinewgame`` clears the hash."""
        self._game = object()

    def close(self) -> None:
        self._shutdown()
        self._calls.shutdown(wait=False)

    def __enter__(self) -> StockfishPlayer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _DiedStarting(Exception):
    """The engine process died during its start-up (its ``__cause__`` says how)."""


def _elo_range(engine: chess.engine.SimpleEngine) -> tuple[int, int]:
    option = engine.options.get("UCI_Elo")
    if option is None or option.min is None or option.max is None:
        return (0, 10_000)
    return int(option.min), int(option.max)


def _kill(engine: chess.engine.SimpleEngine) -> None:
    """Stop an engine for sure: polite ``quit``; if that fails, SIGKILL by process id."""
    pid = None
    with suppress(Exception):
        pid = engine.transport.get_pid()
    if pid is not None:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGCONT)  # a stopped (SIGSTOP) process cannot quit
    try:
        engine.quit()
        return
    except Exception:  # noqa: BLE001 - dead or frozen: fall through to the kill
        pass
    if pid is not None:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    with suppress(Exception):
        engine.close()
