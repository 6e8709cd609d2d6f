"""PGN games into the self-play shard schema, with a held-out split by game.

Every accepted game (:func:`pipeline.supervised.pgn.check_game`) becomes one
row per ply, the position *before* each move of the main line:

* ``history`` / ``meta`` / ``fen``: the position as the search would see it,
  from :class:`~models.encoding.PlaneHistory` pushed along the game (history
  before the game's start position is empty, as in self-play);
* pi: one-hot on the move played, or with ``supervised.label_smoothing`` = e:
  ``1 - e`` on it plus ``e / n`` on each of the ``n`` legal moves;
* ``z``: the game's result from the side to move (draw 0);
* ``root_q``: the move's ``[%eval ...]`` comment from the side to move
  (``zerochess sfgames`` writes one on every move), else 0.0;
  ``root_visits`` 0 (no search), ``full_search`` true (a
  training target), ``generation`` 0, ``result`` the ``Result`` header,
  ``termination`` the ``Termination`` header or ``pgn``;
* ``game_id``: ``<file tag>-g<game number in the file>``, e.g.
  ``pgn0002-g0000153`` (the manifest maps tags to files).

The split: a game goes to ``OUT/heldout/`` when the hash of its start
position and moves falls below ``supervised.heldout_fraction``, else to
``OUT/train/``. The hash is stable (SHA-256), so a rerun, another machine or
another worker split the same games the same way, and duplicates of a game
always share its split. Shards are named ``<file tag>-<split>-<number>`` and
written atomically (:func:`pipeline.shards.write_shard`); a Ray retry of a
file rewrites the same names.

Reports: a dropped game is logged (the first
:data:`LOGGED_DROPS_PER_FILE` of a file at WARNING, the rest at DEBUG) and
written to ``OUT/dropped/<file tag>.jsonl`` with its file, number, byte
offset, line, kind and reason. Filtered games are only counted.
``OUT/pgn2shards.json`` is the manifest: settings, per-file counts and
throughput.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, Final

from models.policy import get_policy_map
from pipeline.atomic import atomic_write
from pipeline.supervised.config import SupervisedConfig
from pipeline.supervised.pgn import (
    HeaderFilter,
    ParsedGame,
    PgnOpenError,
    Rejection,
    check_game,
    iter_games,
    open_pgn,
)
from pipeline.supervised.rows import ShardBuffer, game_rows
from pipeline.supervised.splits import (
    DROPPED_DIR,
    HELDOUT,
    MANIFEST,
    TRAIN,
    is_heldout,
    split_dirs,
    split_key,
)

__all__ = [
    "ConversionReport",
    "FileReport",
    "PgnFileConverter",
    "Progress",
    "convert_files",
    "file_tag",
    "write_manifest",
]

log = logging.getLogger(__name__)

LOGGED_DROPS_PER_FILE: Final = 20
PROGRESS_EVERY: Final = 200
"""Games between two progress events of a file."""


@dataclass(frozen=True)
class Progress:
    """A progress event of one file: games read so far (``delta`` since the last event).

    ``done`` marks the file's last event.
    """

    tag: str
    games: int
    delta: int
    accepted: int
    positions: int
    done: bool = False


@dataclass
class FileReport:
    """What converting one PGN file did.

    Attributes:
        tag: the file's tag (shard and game-id prefix).
        path: the file.
        games: games read (every game, kept or not).
        accepted: games written.
        positions: rows written per split (``train``, ``heldout``).
        games_per_split: accepted games per split.
        dropped: dropped games per kind (each also in ``dropped_log``).
        filtered: filtered games per kind.
        non_utf8_lines: lines decoded as Latin-1.
        shards: shard paths written.
        dropped_log: the JSON-lines file listing every dropped game.
        error: set when the file could not be read to its end (corrupt
            compressed data, unreadable file); what was read before is kept.
        seconds: wall time.
    """

    tag: str
    path: str
    games: int = 0
    accepted: int = 0
    positions: dict[str, int] = field(default_factory=lambda: {TRAIN: 0, HELDOUT: 0})
    games_per_split: dict[str, int] = field(default_factory=lambda: {TRAIN: 0, HELDOUT: 0})
    dropped: dict[str, int] = field(default_factory=dict)
    filtered: dict[str, int] = field(default_factory=dict)
    non_utf8_lines: int = 0
    shards: list[str] = field(default_factory=list)
    dropped_log: str = ""
    error: str = ""
    seconds: float = 0.0


class PgnFileConverter:
    """Converts one PGN file into train/held-out shards (a plain class: Ray wraps it).

    Args:
        path: the PGN file.
        out: the output folder (``OUT/train``, ``OUT/heldout`` must exist:
            :func:`prepare_output`).
        tag: the file's tag, assigned by the driver (``pgn0003``).
        settings: the ``supervised`` parameters.
        policy_encoding: the network's policy encoding.
    """

    def __init__(self, path: str | os.PathLike[str], out: str | os.PathLike[str], tag: str,
                 settings: SupervisedConfig, policy_encoding: str) -> None:
        self.path = os.fspath(path)
        self.out = Path(out)
        self.tag = tag
        self.settings = settings
        self.policy_map = get_policy_map(policy_encoding)
        self.filter = HeaderFilter(settings.min_elo, float(settings.min_time_control_s))
        directories = split_dirs(out)
        self.buffers = {
            split: ShardBuffer(directories[split], f"{tag}-{split}",
                               settings.positions_per_shard, policy_encoding)
            for split in (TRAIN, HELDOUT)
        }
        self.report = FileReport(tag=tag, path=self.path)
        self._dropped: Counter[str] = Counter()
        self._filtered: Counter[str] = Counter()

    def run(self) -> Iterator[Progress]:
        """Converts the file, yielding a :class:`Progress` every few hundred games.

        ``self.report`` holds the result once the iterator is exhausted.
        """
        started = time.perf_counter()
        log_path = self.out / DROPPED_DIR / f"{self.tag}.jsonl"
        reported = 0
        with atomic_write(log_path) as drop_log:
            try:
                for game in self._games():
                    self._handle(game, drop_log)
                    if self.report.games - reported >= PROGRESS_EVERY:
                        yield self._progress(reported)
                        reported = self.report.games
            except PgnOpenError as error:  # unreadable file or corrupt compressed data
                self.report.error = str(error)
                log.error("%s", error)
            for buffer in self.buffers.values():
                buffer.flush()
        self._finish(log_path, started)
        yield self._progress(reported, done=True)

    def _games(self) -> Iterator[ParsedGame]:
        """The file's games (the reader's line counters go to the report)."""
        with open_pgn(self.path, self.settings.max_game_bytes) as reader:
            try:
                yield from iter_games(reader, self.filter)
            finally:
                self.report.non_utf8_lines = reader.non_utf8_lines

    def _handle(self, game: ParsedGame, drop_log: IO[bytes]) -> None:
        """Writes an accepted game's rows, or records why it is not used."""
        self.report.games += 1
        rejection = check_game(game, self.settings.min_plies)
        if rejection is not None:
            self._reject(game, rejection, drop_log)
            return
        assert game.start is not None
        split = HELDOUT if is_heldout(split_key(game.start, game.moves),
                                      self.settings.heldout_fraction) else TRAIN
        try:
            rows = game_rows(game, f"{self.tag}-g{game.number:07d}", self.policy_map,
                             self.settings.label_smoothing)
        except ValueError as error:  # encoder or policy map refused a position: never stop a file
            self._reject(game, Rejection("unconvertible", f"{type(error).__name__}: {error}"),
                         drop_log)
            return
        self.buffers[split].add(rows)
        self.report.accepted += 1
        self.report.games_per_split[split] += 1

    def _reject(self, game: ParsedGame, rejection: Rejection, drop_log: IO[bytes]) -> None:
        """Counts a filtered game; logs and records a dropped one."""
        if rejection.filtered:
            self._filtered[rejection.kind] += 1
            return
        self._dropped[rejection.kind] += 1
        entry = {"file": self.path, "game": game.number, "offset": game.offset,
                 "line": game.line, "kind": rejection.kind, "reason": rejection.detail,
                 "white": game.headers.get("White", ""), "black": game.headers.get("Black", "")}
        drop_log.write((json.dumps(entry, ensure_ascii=False) + "\n").encode())
        level = logging.WARNING if sum(self._dropped.values()) <= LOGGED_DROPS_PER_FILE \
            else logging.DEBUG
        log.log(level, "dropped game %d of %s (byte offset %d, line %d): %s", game.number,
                self.path, game.offset, game.line, rejection)

    def _progress(self, reported: int, done: bool = False) -> Progress:
        positions = sum(self.buffers[s].positions + self.buffers[s].rows for s in self.buffers)
        return Progress(self.tag, self.report.games, self.report.games - reported,
                        self.report.accepted, positions, done)

    def _finish(self, log_path: Path, started: float) -> None:
        """Fills the report's counts and logs its summary."""
        report = self.report
        report.dropped = dict(sorted(self._dropped.items()))
        report.filtered = dict(sorted(self._filtered.items()))
        report.positions = {split: buffer.positions for split, buffer in self.buffers.items()}
        report.shards = [path for buffer in self.buffers.values() for path in buffer.written]
        report.dropped_log = str(log_path)
        report.seconds = time.perf_counter() - started
        if sum(self._dropped.values()) > LOGGED_DROPS_PER_FILE:
            log.warning("%s: %d dropped games in all, listed in %s", self.path,
                        sum(self._dropped.values()), log_path)
        log.info("%s: %d games, %d accepted (%d + %d positions), dropped %s, filtered %s, "
                 "%.1f games/s", self.path, report.games, report.accepted,
                 report.positions[TRAIN], report.positions[HELDOUT], report.dropped or "none",
                 report.filtered or "none", report.games / max(report.seconds, 1e-9))


def file_tag(index: int) -> str:
    """The tag of the ``index``-th input file (shard and game-id prefix)."""
    return f"pgn{index:04d}"


# ---------------------------------------------------------------------------
# Several files, without Ray
# ---------------------------------------------------------------------------


@dataclass
class ConversionReport:
    """A whole ``pgn2shards`` run: per-file reports and totals."""

    files: list[FileReport]
    seconds: float

    def totals(self) -> dict[str, Any]:
        """Summed counts and throughput (games read per second of wall time)."""
        dropped: Counter[str] = Counter()
        filtered: Counter[str] = Counter()
        for report in self.files:
            dropped.update(report.dropped)
            filtered.update(report.filtered)
        games = sum(r.games for r in self.files)
        return {
            "files": len(self.files),
            "files_with_errors": sum(1 for r in self.files if r.error),
            "games": games,
            "accepted": sum(r.accepted for r in self.files),
            "train_games": sum(r.games_per_split[TRAIN] for r in self.files),
            "heldout_games": sum(r.games_per_split[HELDOUT] for r in self.files),
            "train_positions": sum(r.positions[TRAIN] for r in self.files),
            "heldout_positions": sum(r.positions[HELDOUT] for r in self.files),
            "dropped": dict(sorted(dropped.items())),
            "filtered": dict(sorted(filtered.items())),
            "non_utf8_lines": sum(r.non_utf8_lines for r in self.files),
            "seconds": self.seconds,
            "games_per_s": games / self.seconds if self.seconds > 0 else 0.0,
        }


def convert_files(files: Sequence[Path], out: str | os.PathLike[str],
                  settings: SupervisedConfig, policy_encoding: str,
                  on_progress: Callable[[Progress], None] | None = None) -> ConversionReport:
    """Converts ``files`` one after the other in this process (tags by position).

    ``on_progress`` gets every :class:`Progress` event (for a progress bar).
    ``OUT`` must be prepared (:func:`prepare_output`).
    """
    started = time.perf_counter()
    reports = []
    for index, path in enumerate(files):
        converter = PgnFileConverter(path, out, file_tag(index), settings, policy_encoding)
        for event in converter.run():
            if on_progress is not None:
                on_progress(event)
        reports.append(converter.report)
    return ConversionReport(reports, time.perf_counter() - started)


def write_manifest(out: str | os.PathLike[str], report: ConversionReport,
                   settings: SupervisedConfig, policy_encoding: str) -> Path:
    """Writes ``OUT/pgn2shards.json`` (settings, totals, per-file reports); returns its path."""
    path = Path(out) / MANIFEST
    data = {
        "settings": asdict(settings),
        "policy_encoding": policy_encoding,
        "totals": report.totals(),
        "files": [asdict(r) for r in report.files],
    }
    with atomic_write(path) as handle:
        handle.write(json.dumps(data, indent=1, ensure_ascii=False).encode())
    return path
