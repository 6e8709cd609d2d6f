"""The UCI protocol loop: commands in, ``info``/``bestmove`` out.

The reader (:meth:`UciEngine.run`) stays on the calling thread and answers
``isready`` and ``stop`` at once; each ``go`` starts a search thread that owns
the tree until it has written its ``bestmove``.  Commands that change the
position or the options while a search runs stop it first (the GUI gets its
``bestmove``), as lc0 does.  ``go infinite`` and ``go ponder`` never answer
before ``stop`` (or ``ponderhit``, which turns the ponder search into a timed
one).

Malformed or unknown commands never end the process: they are answered with
an ``info string`` that says why they were ignored.  All protocol output goes
through :class:`UciWriter` (one line at a time, flushed, from any thread);
logging goes to stderr.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

import chess

from models.search_config import SearchError
from pipeline.uci.analysis import value_to_centipawns
from pipeline.uci.clock import clock_budget_s, movetime_budget_s
from pipeline.uci.options import OptionValue, UciOption, engine_options
from pipeline.uci.parsing import (
    GoCommand,
    UciCommandError,
    parse_go,
    parse_position,
    parse_setoption,
)
from pipeline.uci.player import NetPlayer, SearchControl, SearchReport

log = logging.getLogger(__name__)

ENGINE_NAME = "zerochess"
ENGINE_AUTHOR = "the zerochess developers"
PROGRESS_INTERVAL_S = 1.0
"""Seconds between ``info`` lines during a search."""
QUIT_JOIN_TIMEOUT_S = 30.0
"""How long ``quit`` waits for a running search to write its ``bestmove``."""
ANSWERED_JOIN_TIMEOUT_S = 5.0
"""How long a ``go`` waits for the previous search's thread, whose ``bestmove`` is out, to return."""


def engine_version() -> str:
    """The installed zerochess version (``dev`` when not installed)."""
    try:
        return importlib.metadata.version("zerochess")
    except importlib.metadata.PackageNotFoundError:
        return "dev"


class UciWriter:
    """Writes protocol lines to ``stream`` (stdout), one whole line at a time.

    A closed stream (the GUI went away) is logged once, then ignored.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._broken = False

    def send(self, line: str) -> None:
        with self._lock:
            if self._broken:
                return
            try:
                self._stream.write(line + "\n")
                self._stream.flush()
            except (OSError, ValueError) as error:  # BrokenPipe, or write to a closed file
                self._broken = True
                log.warning("cannot write to the GUI any more: %s", error)

    def info_string(self, text: str) -> None:
        """``info string <text>`` on one line."""
        self.send("info string " + " ".join(text.split()))


@dataclass
class _SearchJob:
    """One ``go``: its thread, its limits and how it may end."""

    control: SearchControl
    go: GoCommand
    board: chess.Board
    release: threading.Event = field(default_factory=threading.Event)
    answered: threading.Event = field(default_factory=threading.Event)  # set just before ``bestmove``
    waits_for_release: bool = False
    thread: threading.Thread | None = None


class UciEngine:
    """A UCI engine around a :class:`NetPlayer`.

    Args:
        player: the searcher; its evaluator is already loaded.
        writer: where protocol lines go.
        set_threads: applies the ``Threads`` option (e.g. ``torch.set_num_threads``);
            ``None`` when there is no network.
        threads: the current thread count (the option's default).
        name: the ``id name`` sent to the GUI.
    """

    def __init__(
        self,
        player: NetPlayer,
        writer: UciWriter,
        *,
        set_threads: Callable[[int], None] | None = None,
        threads: int = 1,
        name: str | None = None,
    ) -> None:
        self.player = player
        self.writer = writer
        self.name = name or f"{ENGINE_NAME} {engine_version()}"
        self._set_threads = set_threads
        self.options: dict[str, UciOption] = {
            option.name.lower(): option
            for option in engine_options(player.config, threads, max(os.cpu_count() or 1, threads))
        }
        self.values: dict[str, OptionValue] = {
            key: option.default for key, option in self.options.items()
        }
        self._job: _SearchJob | None = None
        self._position_error: str | None = None
        self._handlers: dict[str, Callable[[list[str]], None]] = {
            "uci": self._uci,
            "debug": self._debug,
            "isready": self._isready,
            "setoption": self._setoption,
            "register": self._register,
            "ucinewgame": self._ucinewgame,
            "position": self._position,
            "go": self._go,
            "stop": self._stop,
            "ponderhit": self._ponderhit,
        }
        self.player.set_position(chess.Board())

    # -- the loop --------------------------------------------------------

    def run(self, stream: TextIO) -> int:
        """Read commands from ``stream`` until ``quit`` or end of input; return 0."""
        while True:
            line = stream.readline()
            if not line:
                log.info("end of input: quitting")
                break
            if not self.handle(line):
                break
        self.finish_search(QUIT_JOIN_TIMEOUT_S)
        return 0

    def handle(self, line: str) -> bool:
        """Obey one command line; ``False`` after ``quit``.  Never raises."""
        tokens = line.split()
        if not tokens:
            return True
        command, arguments = tokens[0].lower(), tokens[1:]
        if command == "quit":
            self.finish_search(QUIT_JOIN_TIMEOUT_S)
            return False
        handler = self._handlers.get(command)
        if handler is None:
            self.writer.info_string(f"unknown command {tokens[0]!r} ignored")
            return True
        try:
            handler(arguments)
        except UciCommandError as error:
            self.writer.info_string(f"{command} ignored: {error}")
        except Exception as error:  # the engine must survive anything a GUI sends
            log.exception("error while handling %r", line.strip())
            self.writer.info_string(f"{command} failed: {type(error).__name__}: {error}")
        return True

    @property
    def searching(self) -> bool:
        job = self._job
        return job is not None and job.thread is not None and job.thread.is_alive()

    def finish_search(self, timeout_s: float | None = None) -> None:
        """Stop a running search and wait until it has written ``bestmove``."""
        job = self._job
        if job is None or job.thread is None:
            return
        job.control.stop()
        job.release.set()
        job.thread.join(timeout_s)
        if job.thread.is_alive():
            log.warning("the search thread did not end within %s s", timeout_s)

    def wait_search(self, timeout_s: float | None = None) -> bool:
        """Wait for the running search to end by itself; ``True`` if it did."""
        job = self._job
        if job is None or job.thread is None:
            return True
        job.thread.join(timeout_s)
        return not job.thread.is_alive()

    # -- commands --------------------------------------------------------

    def _uci(self, _: list[str]) -> None:
        self.writer.send(f"id name {self.name}")
        self.writer.send(f"id author {ENGINE_AUTHOR}")
        for option in self.options.values():
            self.writer.send(option.declaration())
        self.writer.send("uciok")

    def _debug(self, arguments: list[str]) -> None:
        if arguments not in (["on"], ["off"]):
            raise UciCommandError(
                f"expected 'debug on' or 'debug off', got {' '.join(arguments)!r}"
            )

    def _isready(self, _: list[str]) -> None:
        self.writer.send("readyok")

    def _register(self, _: list[str]) -> None:
        """No registration is needed; accepted silently."""

    def _setoption(self, arguments: list[str]) -> None:
        name, text = parse_setoption(arguments)
        option = self.options.get(name.lower())
        if option is None:
            known = ", ".join(option.name for option in self.options.values())
            raise UciCommandError(f"no option named {name!r} (options: {known})")
        value = option.parse(text)
        self.finish_search()
        self._apply_option(option.name, value)
        self.values[option.name.lower()] = value

    def _apply_option(self, name: str, value: OptionValue) -> None:
        if name == "Threads" and self._set_threads is not None:
            self._set_threads(int(value))
        elif name == "BatchSize":
            self.player.update_config(leaves_per_batch=int(value))
        elif name == "CPuct":
            self.player.update_config(c_puct_init=float(value))

    def _ucinewgame(self, _: list[str]) -> None:
        self.finish_search()
        self.player.new_game()
        self.player.set_position(chess.Board())
        self._position_error = None

    def _position(self, arguments: list[str]) -> None:
        self.finish_search()
        try:
            board = parse_position(arguments)
            self.player.set_position(board)
        except (UciCommandError, SearchError) as error:
            self._position_error = str(error)
            raise UciCommandError(
                f"{error}; 'go' answers 'bestmove (none)' until a valid position"
            ) from error
        self._position_error = None

    def _go(self, arguments: list[str]) -> None:
        previous = self._job
        if previous is not None and previous.thread is not None and previous.answered.is_set():
            # its bestmove is out (a GUI answers it with the next go at once): let the thread return
            previous.thread.join(ANSWERED_JOIN_TIMEOUT_S)
        if self.searching:
            raise UciCommandError("a search is running: send 'stop' first")
        go, warnings = parse_go(arguments)
        for warning in warnings:
            self.writer.info_string(warning)
        if go.mate is not None:
            self.writer.info_string("go mate is not supported: searching with the other limits")
        if go.searchmoves:
            self.writer.info_string("go searchmoves is not supported: searching every move")
        if self._position_error is not None:
            self.writer.info_string(f"no valid position: {self._position_error}")
            self.writer.send("bestmove (none)")
            return
        board = self.player.board
        assert board is not None
        job = _SearchJob(self._control(go, board.turn), go, board)
        job.waits_for_release = go.infinite or go.ponder
        job.thread = threading.Thread(
            target=self._search_main, args=(job,), name="uci-search", daemon=True
        )
        self._job = job
        job.thread.start()

    def _stop(self, _: list[str]) -> None:
        job = self._job
        if job is not None:
            job.control.stop()
            job.release.set()

    def _ponderhit(self, _: list[str]) -> None:
        job = self._job
        if job is None or not self.searching or not job.go.ponder:
            raise UciCommandError("no ponder search is running")
        nodes, time_s, depth = self._limits(job.go, job.board.turn)
        job.control.nodes, job.control.depth = nodes, depth
        job.control.set_time(time_s)
        job.waits_for_release = False
        job.release.set()

    # -- searching -------------------------------------------------------

    def _control(self, go: GoCommand, turn: chess.Color) -> SearchControl:
        """The stop conditions of ``go`` (none for infinite and ponder)."""
        if go.infinite or go.ponder:
            return SearchControl()
        nodes, time_s, depth = self._limits(go, turn)
        return SearchControl(nodes=nodes, time_s=time_s, depth=depth)

    def _limits(
        self, go: GoCommand, turn: chess.Color
    ) -> tuple[int | None, float | None, int | None]:
        """``(nodes, seconds, depth)`` of a ``go``; with no limit at all, the
        ``Simulations`` option's node count."""
        overhead = float(self.values["moveoverhead"])
        times = []
        if go.movetime is not None:
            times.append(movetime_budget_s(go.movetime, overhead))
        remaining = go.wtime if turn == chess.WHITE else go.btime
        if remaining is not None:
            increment = (go.winc if turn == chess.WHITE else go.binc) or 0
            times.append(clock_budget_s(remaining, increment, go.movestogo, overhead))
        time_s = min(times) if times else None
        nodes = go.nodes
        if nodes is None and time_s is None and go.depth is None:
            nodes = int(self.values["simulations"])
        return nodes, time_s, go.depth

    def _search_main(self, job: _SearchJob) -> None:
        """The search thread: search, report, wait for stop if it must, ``bestmove``."""
        best: chess.Move | None = None
        ponder: chess.Move | None = None
        try:
            report = self.player.search(
                job.control,
                temperature=float(self.values["temperature"]),
                on_progress=self._send_info,
                progress_interval_s=PROGRESS_INTERVAL_S,
            )
            if report.note:
                self.writer.info_string(report.note)
            self._send_info(report)
            best, ponder = report.best_move, report.ponder_move
        except Exception as error:  # a GUI must get its bestmove whatever happened
            log.exception("search failed on %s", job.board.fen())
            self.writer.info_string(f"search failed: {type(error).__name__}: {error}")
            best = next(iter(job.board.legal_moves), None)
        if job.waits_for_release:
            job.release.wait()
        if best is None:
            line = "bestmove (none)"
        elif ponder is not None:
            line = f"bestmove {best.uci()} ponder {ponder.uci()}"
        else:
            line = f"bestmove {best.uci()}"
        job.answered.set()  # before the line: a GUI may send its next go the moment it reads it
        self.writer.send(line)

    def _send_info(self, report: SearchReport) -> None:
        for line in info_lines(report, int(self.values["multipv"])):
            self.writer.send(line)


def info_lines(report: SearchReport, multipv: int) -> list[str]:
    """``info`` lines for the best ``multipv`` moves of ``report``.

    Lines after the first are sent only for visited (or proven) moves.  The
    score is ``mate N`` when the tree proves a mate, else the move's Q mapped
    to centipawns (the root value for an unvisited first move).
    """
    out = []
    time_ms = int(report.elapsed_s * 1000)
    for rank, line in enumerate(report.lines[:multipv], 1):
        if rank > 1 and line.visits == 0 and line.mate is None:
            break
        if line.mate is not None:
            score = f"mate {line.mate}"
        elif line.q is None:
            score = f"cp {value_to_centipawns(report.root_value)}"
        else:
            score = f"cp {line.centipawns}"
        pv = " ".join(move.uci() for move in line.pv)
        out.append(
            f"info depth {line.depth} multipv {rank} score {score} nodes {report.nodes} "
            f"nps {report.nps} time {time_ms} pv {pv}"
        )
    return out
