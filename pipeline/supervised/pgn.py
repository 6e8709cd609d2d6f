"""Streaming PGN reading: compressed files, bounded memory, every game checked.

Opening (:func:`open_pgn`)
    The compression is recognised from the file's first bytes, whatever its
    name: gzip, bzip2, Zstandard (the ``zstandard`` package) or plain text.
    The file is read as a stream, one line at a time, so its size does not
    matter.

Decoding
    Each line is decoded as UTF-8; a line that is not valid UTF-8 is decoded
    as Latin-1 instead (the usual encoding of old PGN collections; every byte
    is valid), so a non-UTF-8 byte never stops a run. Such lines are counted.
    Moves and results are ASCII either way; only names in headers and
    comments can differ.

Games (:func:`iter_games`)
    python-chess parses each game with a visitor that keeps the main line
    only: variations are skipped unparsed, comments and NAGs ignored. Header
    filters (:class:`HeaderFilter`) run before the movetext, which is then
    skipped unparsed. python-chess does not raise on a bad game: it reports
    the error and cuts the main line; such a game is dropped. Each
    :class:`ParsedGame` carries its number in the file (1-based), the byte
    offset and line of its first line in the decompressed text.

Outcomes (:func:`check_game`): a game is *dropped*, with a :class:`Rejection`
naming the kind and the detail, when
    ``parse-error``   python-chess reported an error (illegal or ambiguous
                      move, invalid FEN header): the main line would be cut;
    ``null-move``     the main line holds a null move (``--``, ``Z0``);
    ``variant``       a ``Variant`` header other than standard chess, or a
                      Chess960 game;
    ``bad-start``     the start position (``FEN`` header) is not a valid position;
    ``no-result``     the ``Result`` header is missing or not 1-0, 0-1, 1/2-1/2
                      (``*``: unfinished);
    ``truncated``     the movetext does not end with a result token (a game
                      cut short, e.g. at the end of a truncated file);
    ``result-mismatch`` the movetext's result differs from the header, or the
                      final position is a checkmate or stalemate the result
                      contradicts;
    ``too-long``      the game's text exceeds ``supervised.max_game_bytes``;
                      the reader skips to the next game's headers;
    ``unconvertible`` the encoder or the policy map refused a position (a
                      safety net: not expected for a legal standard game).
A game is *filtered* (counted, not reported one by one) by ``elo``,
``time-control`` and ``too-short`` (:class:`HeaderFilter`, ``min_plies``).
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import logging
import os
import re
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Final

import chess
import chess.pgn

from pipeline.supervised.evals import comment_value

__all__ = [
    "DROP_KINDS",
    "FILTER_KINDS",
    "GameTooLongError",
    "HeaderFilter",
    "ParsedGame",
    "PgnLineReader",
    "PgnOpenError",
    "Rejection",
    "check_game",
    "iter_games",
    "open_pgn",
    "parse_time_control",
]

log = logging.getLogger(__name__)

RESULTS: Final = ("1-0", "0-1", "1/2-1/2")
DROP_KINDS: Final = ("parse-error", "null-move", "variant", "bad-start", "no-result",
                     "truncated", "result-mismatch", "too-long", "unconvertible")  # fmt: skip
FILTER_KINDS: Final = ("elo", "time-control", "too-short")
STANDARD_VARIANTS: Final = frozenset({"", "standard", "chess", "normal", "from position"})
MAX_LINE_BYTES: Final = 1 << 16
"""Longest line read at once; a longer line is read in pieces (memory stays bounded)."""
MOVES_PER_GAME_ESTIMATE: Final = 40
"""Moves per player assumed when a time control is turned into seconds (as lichess)."""

BINARY_SNIFF_BYTES: Final = 4096
"""A NUL byte in the first this many bytes of text marks a binary file
(:func:`check_pgn_start`)."""
_GZIP_MAGIC: Final = b"\x1f\x8b"
_BZ2_MAGIC: Final = b"BZh"
_ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"


class PgnOpenError(ValueError):
    """A PGN file cannot be opened or decompressed; names the file and the reason."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"PGN {path}: {reason}")
        self.path = path
        self.reason = reason


class GameTooLongError(ValueError):
    """One game's text exceeds the byte budget; names the file, offset and size."""

    def __init__(self, path: str, offset: int, size: int) -> None:
        super().__init__(f"PGN {path}: game at byte offset {offset} is longer than {size} bytes")
        self.path = path
        self.offset = offset
        self.size = size


# ---------------------------------------------------------------------------
# Opening and line reading
# ---------------------------------------------------------------------------


def _decompressed(raw: BinaryIO, path: str) -> BinaryIO:
    """The decompressed stream of ``raw`` (compression recognised by magic bytes)."""
    head = raw.peek(4)[:4] if isinstance(raw, io.BufferedReader) else b""
    if head.startswith(_GZIP_MAGIC):
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if head.startswith(_BZ2_MAGIC):
        return bz2.BZ2File(raw, mode="rb")  # type: ignore[return-value]
    if head.startswith(_ZSTD_MAGIC):
        try:
            import zstandard
        except ImportError as error:
            raise PgnOpenError(path, "Zstandard-compressed; install the zstandard package") \
                from error
        return io.BufferedReader(_ZstdReader(raw, zstandard), buffer_size=1 << 20)
    return raw


class _ZstdReader(io.RawIOBase):
    """Zstandard frames of ``raw``, decompressed one after the other.

    Corrupt data raises ``OSError`` (the PGN reader reports it, naming the
    file and the offset), and so does a stream that ends inside a frame (a
    truncated download), which ``zstandard``'s own stream reader takes for
    the end of the file."""

    def __init__(self, raw: BinaryIO, zstandard: Any) -> None:
        super().__init__()
        self._raw = raw
        self._zstd = zstandard
        self._frame = zstandard.ZstdDecompressor().decompressobj()
        self._in_frame = False  # bytes of an unfinished frame were fed
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            chunk = self._raw.read(1 << 16)
            if not chunk:
                if self._in_frame:
                    raise OSError("truncated Zstandard data: the file ends inside a frame")
                return 0
            self._pending = self._feed(chunk)
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def _feed(self, chunk: bytes) -> bytes:
        """The text decompressed from ``chunk`` (across frame boundaries)."""
        out = []
        while chunk:
            try:
                out.append(self._frame.decompress(chunk))
            except self._zstd.ZstdError as error:
                raise OSError(f"corrupt Zstandard data: {error}") from error
            self._in_frame = not self._frame.eof
            chunk = self._frame.unused_data if self._frame.eof else b""
            if self._frame.eof:
                self._frame = self._zstd.ZstdDecompressor().decompressobj()
        return b"".join(out)


@contextmanager
def open_pgn(path: str | os.PathLike[str], max_game_bytes: int = 1_000_000
             ) -> Iterator[PgnLineReader]:
    """Opens a PGN file (plain, gzip, bzip2 or Zstandard) as a :class:`PgnLineReader`.

    Raises:
        PgnOpenError: the file cannot be opened (missing, a folder, no permission).
    """
    name = os.fspath(path)
    try:
        raw = open(name, "rb")  # noqa: SIM115 - closed below
    except OSError as error:
        raise PgnOpenError(name, error.strerror or str(error)) from error
    try:
        yield PgnLineReader(_decompressed(raw, name), name, max_game_bytes)
    finally:
        raw.close()


def check_pgn_start(path: str | os.PathLike[str]) -> bool:
    """Read the first ``BINARY_SNIFF_BYTES`` of ``path``'s text: a missing or
    unreadable file, an empty file or corrupt compressed data raises
    :class:`PgnOpenError` (before any output is written).  Returns whether
    the text looks binary (a NUL byte), which a reader of the games only
    skips over but which explains a file where no game is found."""
    with contextlib.suppress(OSError):
        if os.path.getsize(path) == 0:
            raise PgnOpenError(os.fspath(path), "empty file")
    with open_pgn(path) as reader:
        head = b""
        while len(head) < BINARY_SNIFF_BYTES:
            data, _, _ = reader._raw_line()  # noqa: SLF001 - bytes, before any decoding
            if not data:
                break
            head += data
    return b"\x00" in head[:BINARY_SNIFF_BYTES]


class PgnLineReader:
    """A text handle for ``chess.pgn.read_game`` over a binary stream.

    Decodes line by line (UTF-8, else Latin-1), counts bytes and lines, and
    marks where each game starts. Past ``max_game_bytes`` of one game it
    raises :class:`GameTooLongError`; :meth:`skip_to_next_game` then
    resynchronises on the next header line that follows a blank line.

    Attributes:
        path: the file, for messages.
        offset: bytes of decompressed text consumed.
        line_number: lines consumed.
        non_utf8_lines: lines decoded as Latin-1.
        game_offset / game_line: byte offset and line number of the current
            game's first non-blank line (None before it is read).
    """

    def __init__(self, stream: BinaryIO, path: str, max_game_bytes: int) -> None:
        self._stream = stream
        self.path = path
        self.max_game_bytes = max_game_bytes
        self.offset = 0
        self.line_number = 0
        self.non_utf8_lines = 0
        self.game_offset: int | None = None
        self.game_line: int | None = None
        self._game_bytes = 0
        self._pushed: tuple[bytes, int, int] | None = None

    def begin_game(self) -> None:
        """Starts the byte budget and the start marker of the next game."""
        self.game_offset = None
        self.game_line = None
        self._game_bytes = 0

    def _raw_line(self) -> tuple[bytes, int, int]:
        """(bytes, offset, line number) of the next raw line (b"" at the end)."""
        if self._pushed is not None:
            pushed, self._pushed = self._pushed, None
            return pushed
        try:
            data = self._stream.readline(MAX_LINE_BYTES)
        except (OSError, EOFError, ValueError, zlib.error) as error:  # corrupt compressed data
            raise PgnOpenError(self.path, f"cannot decompress after byte {self.offset}: "
                                          f"{error}") from error
        start, number = self.offset, self.line_number + 1
        self.offset += len(data)
        if data:
            self.line_number = number
        return data, start, number

    def readline(self) -> str:
        """The next line as text ('' at the end of the file)."""
        data, start, number = self._raw_line()
        if not data:
            return ""
        if self.game_offset is None and data.strip():
            self.game_offset, self.game_line = start, number
        self._game_bytes += len(data)
        if self._game_bytes > self.max_game_bytes:
            raise GameTooLongError(self.path, self.game_offset or start, self.max_game_bytes)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            self.non_utf8_lines += 1
            return data.decode("latin-1")

    def skip_to_next_game(self) -> None:
        """Skips lines up to the next header line that follows a blank line (kept for reading)."""
        blank_before = False
        while True:
            data, start, number = self._raw_line()
            if not data:
                return
            if data.startswith(b"[") and (blank_before or data.startswith(b"[Event ")):
                self._pushed = (data, start, number)
                return
            blank_before = not data.strip()


# ---------------------------------------------------------------------------
# Header filters
# ---------------------------------------------------------------------------

_TIME_CONTROL: Final = re.compile(r"^(?:\d+/)?(\d+)(?:\+(\d+(?:\.\d+)?))?$")


def parse_time_control(value: str | None) -> float | None:
    """Seconds a ``TimeControl`` header stands for: base + 40 x increment.

    Understands ``300``, ``180+2``, ``40/7200`` and multi-period
    ``40/7200:3600`` (the first period counts) and sandclock ``*60``. Returns
    None for a missing, unknown (``?``) or untimed (``-``) control, or text it
    cannot read.
    """
    if not value:
        return None
    first = value.strip().split(":", 1)[0].lstrip("*")
    match = _TIME_CONTROL.match(first)
    if match is None:
        return None
    base = float(match.group(1))
    increment = float(match.group(2) or 0.0)
    return base + MOVES_PER_GAME_ESTIMATE * increment


def _rating(value: str | None) -> int | None:
    """A rating header as an int; None when missing or not a number (``?``, ``-``)."""
    if value is None:
        return None
    text = value.strip()
    return int(text) if text.isdigit() else None


@dataclass(frozen=True)
class HeaderFilter:
    """Which games to keep from their headers alone (before the moves are parsed).

    Attributes:
        min_elo: every rating present must be at least this (0 = off).
        min_time_control_s: the time control, when readable, must last at
            least this many seconds (:func:`parse_time_control`; 0 = off).
    """

    min_elo: int = 0
    min_time_control_s: float = 0.0

    def reason(self, headers: dict[str, str]) -> Rejection | None:
        """The filter that rejects these headers, or None to keep the game."""
        if self.min_elo:
            ratings = [_rating(headers.get(key)) for key in ("WhiteElo", "BlackElo")]
            low = [r for r in ratings if r is not None and r < self.min_elo]
            if low:
                return Rejection("elo", f"rating {min(low)} < {self.min_elo}")
        if self.min_time_control_s:
            seconds = parse_time_control(headers.get("TimeControl"))
            if seconds is not None and seconds < self.min_time_control_s:
                return Rejection("time-control", f"TimeControl {headers.get('TimeControl')!r} "
                                                 f"= {seconds:g} s < {self.min_time_control_s:g}")
        return None


# ---------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Rejection:
    """Why a game is not used: ``kind`` (one of DROP_KINDS / FILTER_KINDS) and the detail."""

    kind: str
    detail: str

    @property
    def filtered(self) -> bool:
        """True for a filter (counted only), False for a dropped game (reported)."""
        return self.kind in FILTER_KINDS

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


@dataclass
class ParsedGame:
    """One game as read: the main line only.

    Attributes:
        number: the game's number in its file (1-based, every game counted).
        offset: byte offset of its first line in the decompressed text.
        line: line number of its first line.
        headers: the tag pairs.
        start: the start position (a board without moves); None when the
            start position could not be set up (see ``errors``).
        final: the position after the parsed main line (None with ``start``).
        moves: the main-line moves that python-chess parsed.
        errors: the errors python-chess reported (a non-empty list means the
            main line was cut).
        movetext_result: the result token ending the main line, if any.
        null_move_ply: ply of the first null move, if any.
        rejection: set when a header filter rejected the game (its moves are
            then not parsed).
        evals: per move, White's expected score from the move's
            ``[%eval ...]`` comment (:func:`pipeline.supervised.evals.comment_value`;
            None without one).
    """

    number: int
    offset: int
    line: int
    headers: dict[str, str] = field(default_factory=dict)
    start: chess.Board | None = None
    final: chess.Board | None = None
    moves: list[chess.Move] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    movetext_result: str | None = None
    null_move_ply: int | None = None
    rejection: Rejection | None = None
    evals: list[float | None] = field(default_factory=list)


class _MainLineVisitor(chess.pgn.BaseVisitor[ParsedGame]):
    """Collects headers, the main line's moves, errors and result; skips variations."""

    def __init__(self, game: ParsedGame, header_filter: HeaderFilter) -> None:
        self.game = game
        self.header_filter = header_filter

    def visit_header(self, tagname: str, tagvalue: str) -> None:
        self.game.headers[tagname] = tagvalue

    def end_headers(self) -> chess.pgn.SkipType | None:
        rejection = self.header_filter.reason(self.game.headers)
        if rejection is not None:
            self.game.rejection = rejection
            return chess.pgn.SKIP
        return None

    def visit_board(self, board: chess.Board) -> None:
        if self.game.start is None:
            self.game.start = board.copy(stack=False)
            # The parser pushes the main line's moves on this very board (variations
            # are skipped), so after parsing it is the final position.
            self.game.final = board

    def begin_variation(self) -> chess.pgn.SkipType:
        return chess.pgn.SKIP

    def visit_move(self, board: chess.Board, move: chess.Move) -> None:
        if not move and self.game.null_move_ply is None:
            self.game.null_move_ply = len(self.game.moves)
        self.game.moves.append(move)
        self.game.evals.append(None)

    def visit_comment(self, comment: str) -> None:
        if self.game.evals and self.game.evals[-1] is None:  # a move's comment, not the game's
            self.game.evals[-1] = comment_value(comment)

    def visit_result(self, result: str) -> None:
        self.game.movetext_result = result

    def handle_error(self, error: Exception) -> None:
        self.game.errors.append(str(error))

    def result(self) -> ParsedGame:
        return self.game


def iter_games(reader: PgnLineReader, header_filter: HeaderFilter | None = None
               ) -> Iterator[ParsedGame]:
    """The games of a PGN stream, in order; never raises for a bad game.

    A game longer than the reader's byte budget comes back with the
    ``too-long`` rejection (and the reader skips to the next game).

    Raises:
        PgnOpenError: the compressed data itself is corrupt (the file cannot
            be read further).
    """
    keep = header_filter or HeaderFilter()
    number = 0
    while True:
        reader.begin_game()
        game = ParsedGame(number=number + 1, offset=reader.offset, line=reader.line_number + 1)
        visitor: Callable[[], _MainLineVisitor] = lambda: _MainLineVisitor(game, keep)  # noqa: B023
        try:
            parsed = chess.pgn.read_game(reader, Visitor=visitor)  # type: ignore[arg-type]
        except GameTooLongError as error:
            number += 1
            _locate(game, reader)
            game.rejection = Rejection("too-long", str(error))
            reader.skip_to_next_game()
            yield game
            continue
        if parsed is None:
            return
        number += 1
        _locate(game, reader)
        yield game


def _locate(game: ParsedGame, reader: PgnLineReader) -> None:
    """Sets the game's offset and line from the reader's start marker."""
    if reader.game_offset is not None:
        game.offset = reader.game_offset
        game.line = reader.game_line or game.line


# ---------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------


def _result_contradiction(board: chess.Board, result: str) -> str | None:
    """Why ``result`` cannot be the result of a game ending in ``board``, or None."""
    if board.is_checkmate():
        expected = "0-1" if board.turn == chess.WHITE else "1-0"
        if result != expected:
            return f"final position is checkmate ({expected}) but Result is {result!r}"
    elif board.is_stalemate() and result != "1/2-1/2":
        return f"final position is stalemate but Result is {result!r}"
    return None


def _variant_rejection(game: ParsedGame) -> Rejection | None:
    """A ``variant`` rejection for non-standard chess, else None."""
    variant = game.headers.get("Variant", "").strip().lower()
    if variant not in STANDARD_VARIANTS:
        return Rejection("variant", f"Variant {game.headers.get('Variant')!r} is not standard chess")
    if game.start is not None and (game.start.chess960 or type(game.start) is not chess.Board):
        return Rejection("variant", "Chess960 or variant start position")
    return None


def _result_rejection(game: ParsedGame) -> Rejection | None:
    """``no-result`` / ``truncated`` / ``result-mismatch`` rejections, else None."""
    result = game.headers.get("Result")
    if result not in RESULTS:
        return Rejection("no-result", f"Result header {result!r} is not 1-0, 0-1 or 1/2-1/2")
    if game.movetext_result is None:
        return Rejection("truncated", "the movetext does not end with a result token "
                                      f"(after {len(game.moves)} plies)")
    if game.movetext_result != result:
        return Rejection("result-mismatch", f"movetext result {game.movetext_result!r} differs "
                                            f"from Result header {result!r}")
    return None


def check_game(game: ParsedGame, min_plies: int = 1) -> Rejection | None:
    """Why ``game`` is not used (see the module docstring), or None to keep it."""
    if game.rejection is not None:
        return game.rejection
    if game.errors:
        return Rejection("parse-error", "; ".join(game.errors))
    if game.start is None:
        return Rejection("bad-start", "no start position could be set up")
    variant = _variant_rejection(game)
    if variant is not None:
        return variant
    if game.null_move_ply is not None:
        return Rejection("null-move", f"null move at ply {game.null_move_ply}")
    if not game.start.is_valid():
        return Rejection("bad-start", f"invalid start position {game.start.fen()!r} "
                                      f"({game.start.status()!r})")
    rejection = _result_rejection(game)
    if rejection is not None:
        return rejection
    assert game.final is not None
    contradiction = _result_contradiction(game.final, game.headers["Result"])
    if contradiction is not None:
        return Rejection("result-mismatch", contradiction)
    if len(game.moves) < max(min_plies, 1):
        return Rejection("too-short", f"{len(game.moves)} plies < {max(min_plies, 1)}")
    return None
