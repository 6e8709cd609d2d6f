"""Stockfish-labelled positions: a second source of supervised shards.

A user without a game database can bootstrap from positions alone: EPD/FEN
files, positions reached by random moves, or the positions of existing
(self-play) shards. Each position is searched by Stockfish with MultiPV and
written in the shard schema (:mod:`pipeline.shards`) with:

Policy target pi
    A softmax over the MultiPV moves' scores in centipawns (for the side to
    move) at temperature ``T = supervised.label_temperature_cp``:
    ``pi(a) = exp((cp(a) - cp(best)) / T) / sum``. Moves Stockfish did not
    score get no mass. A mate score counts as 100 000 cp less the plies to
    mate (so a mate dominates every other move).

Value target
    Stockfish's score of its best move is mapped to an expected score
    ``q`` in [-1, 1] from the side to move with the inverse of the mapping
    ``zerochess uci`` reports (lc0's):
    ``q = atan(cp / 111.714640912) / 1.5620688421``
    (100 cp -> 0.47, 300 cp -> 0.77, 1000 cp -> 0.94); a mate for the side to
    move is +1, against it -1. The exact ``q`` is stored in ``root_q``.
    The shard's ``z`` column holds game outcomes {-1, 0, 1} (and the trainer
    regresses the value head on ``z``), so ``z`` is an outcome *drawn* with
    expectation ``q``: for ``q >= 0``, ``z = 1`` with probability ``q`` and
    ``0`` otherwise (``-1`` with probability ``-q`` for ``q < 0``). The
    squared error's expectation over the draw is minimised by ``v = q``, so
    training on ``z`` fits Stockfish's value without changing the trainer,
    at the price of extra noise. The draw is seeded by
    ``supervised.label_seed``, the game id, ply and FEN (reproducible, and
    independent of the order of the positions). ``result`` holds the drawn
    outcome from White's view, so ``z`` agrees with it as the schema requires.
    ``termination`` is ``stockfish``, ``root_visits`` 0, ``generation`` 0.

Positions already over (no legal move) and invalid positions are skipped and
counted. The split is by ``game_id`` (:func:`~pipeline.supervised.splits.is_heldout`):
a FEN line's game id is a hash of its FEN, a random position's is its own,
and a shard position keeps its shard's game id, so a game's positions stay
in one split.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import time
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Final, Protocol

import chess
import chess.engine
import numpy as np
import numpy.typing as npt

from models.encoding import PlaneHistory, board_meta
from models.policy import PolicyMap, get_policy_map
from pipeline.atomic import atomic_write
from pipeline.players.base import PlayerError
from pipeline.players.stockfish import EngineFailure, StockfishPlayer, StockfishSettings
from pipeline.shards import decode_history, decode_meta, load_shards
from pipeline.supervised.config import SupervisedConfig
from pipeline.supervised.evals import CP_ANGLE, CP_SCALE, centipawns_to_value
from pipeline.supervised.rows import GameRows, ShardBuffer
from pipeline.supervised.splits import HELDOUT, TRAIN, is_heldout, split_dirs

__all__ = [
    "CP_ANGLE",
    "CP_SCALE",
    "LABEL_MANIFEST",
    "LabelPosition",
    "LabelReport",
    "Labeller",
    "StockfishLabeller",
    "centipawns_to_value",
    "label_positions",
    "label_rows",
    "multipv_policy",
    "positions_from_file",
    "positions_from_shards",
    "random_positions",
    "sample_outcome",
    "score_to_centipawns",
    "score_to_value",
]

log = logging.getLogger(__name__)

MATE_CP: Final = 100_000
"""Centipawns of a mate in the policy softmax (less the plies to mate)."""
LABEL_MANIFEST: Final = "label.json"
TERMINATION: Final = "stockfish"
LABEL_TIMEOUT_S: Final = 120.0
"""Seconds past the search a reply may take before the engine counts as frozen."""


# ---------------------------------------------------------------------------
# Scores, values and policies
# ---------------------------------------------------------------------------


def score_to_value(score: chess.engine.Score) -> float:
    """Expected score of a Stockfish score for its side: mates are +-1, else the cp mapping."""
    mate = score.mate()
    if mate is not None:
        return 1.0 if mate > 0 else -1.0
    cp = score.score()
    assert cp is not None
    return centipawns_to_value(cp)


def score_to_centipawns(score: chess.engine.Score) -> int:
    """Centipawns for the policy softmax: mates are +-(100 000 - plies to mate)."""
    value = score.score(mate_score=MATE_CP)
    assert value is not None
    return value


def multipv_policy(scores: list[tuple[chess.Move, int]], temperature_cp: float
                   ) -> tuple[list[chess.Move], npt.NDArray[np.float32]]:
    """(moves, probabilities): softmax of the moves' centipawns at ``temperature_cp``.

    Raises:
        ValueError: no scored move.
    """
    if not scores:
        raise ValueError("multipv_policy needs at least one scored move")
    centipawns = np.array([cp for _, cp in scores], dtype=np.float64)
    logits = (centipawns - centipawns.max()) / temperature_cp
    weights = np.exp(np.maximum(logits, -80.0))
    return [move for move, _ in scores], (weights / weights.sum()).astype(np.float32)


def sample_outcome(value: float, rng: random.Random) -> int:
    """An outcome in {-1, 0, 1} whose expectation is ``value`` (in [-1, 1])."""
    draw = rng.random()
    if value >= 0:
        return 1 if draw < value else 0
    return -1 if draw < -value else 0


def _outcome_rng(seed: int, game_id: str, ply: int, fen: str) -> random.Random:
    """The generator of one position's drawn outcome (independent of the order)."""
    digest = hashlib.sha256(f"{seed}|{game_id}|{ply}|{fen}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


# ---------------------------------------------------------------------------
# Positions to label
# ---------------------------------------------------------------------------


@dataclass
class LabelPosition:
    """A position to label, with its encoder inputs.

    Attributes:
        game_id: its game (the held-out split keeps a game together).
        ply: its ply in that game.
        board: the position (a board without moves is enough); None for a
            source line that is not a position (counted, never labelled).
        history: (8, 14) uint64 PlaneHistory snapshot of the position.
        meta: (7,) uint8 meta values.
    """

    game_id: str
    ply: int
    board: chess.Board | None
    history: npt.NDArray[np.uint64] | None
    meta: npt.NDArray[np.uint8] | None


def _position(game_id: str, ply: int, board: chess.Board) -> LabelPosition:
    """A LabelPosition whose history is the board's own move stack."""
    snapshot = PlaneHistory.from_board(board).snapshot()
    return LabelPosition(game_id, ply, board.copy(stack=False), snapshot, board_meta(board))


def _parse_position(text: str) -> chess.Board:
    """A board from a FEN or an EPD line (ValueError when neither)."""
    parts = text.split()
    if len(parts) == 6 and parts[4].isdigit() and parts[5].isdigit():
        return chess.Board(text)
    return chess.Board.from_epd(text)[0]


def positions_from_file(path: str | os.PathLike[str]) -> Iterator[LabelPosition]:
    """The positions of an EPD or FEN file (one a line, ``#`` comments), read lazily.

    A position has no history (as a FEN has none). A line that is not a
    position is logged with the file and line number and comes back as a
    position without a board (``board`` None), which labelling counts as
    ``unreadable``; invalid and finished positions are counted likewise.

    Raises:
        OSError: the file cannot be opened.
    """
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, raw in enumerate(handle, 1):
            text = raw.split("#", 1)[0].strip()
            if not text:
                continue
            try:
                board = _parse_position(text)
            except ValueError as error:
                log.warning("%s:%d: not a FEN or EPD position %r: %s", os.fspath(path), number,
                            text, error)
                yield LabelPosition(f"line-{number}", 0, None, None, None)
                continue
            digest = hashlib.sha256(board.fen().encode()).hexdigest()[:16]
            yield _position(f"fen-{digest}", 0, board)


def random_positions(count: int, seed: int, max_plies: int) -> Iterator[LabelPosition]:
    """``count`` positions, each reached by 0..``max_plies`` uniformly random moves.

    Each position is its own game (``random-<seed>-<number>``); its history
    is the random line. A line that ends the game early stops one move before.
    """
    rng = random.Random(seed)
    for number in range(count):
        board = chess.Board()
        for _ in range(rng.randint(0, max_plies)):
            moves = list(board.legal_moves)
            move = rng.choice(moves)
            board.push(move)
            if board.is_game_over():
                board.pop()
                break
        yield _position(f"random-{seed}-{number:07d}", board.ply(), board)


def positions_from_shards(directory: str | os.PathLike[str]) -> Iterator[LabelPosition]:
    """The positions of a shard folder (e.g. self-play), with their stored history.

    Bad shards are skipped (and quarantined, as :func:`pipeline.shards.load_shards` does).
    """
    tables, bad = load_shards(directory, check_legality=False)
    for path, reason in bad:
        log.warning("skipping shard %s: %s", path, reason)
    for table in tables:
        history, meta = decode_history(table), decode_meta(table)
        fens = table.column("fen").to_pylist()
        games = table.column("game_id").to_pylist()
        plies = table.column("ply").to_pylist()
        for row, fen in enumerate(fens):
            yield LabelPosition(games[row], plies[row], chess.Board(fen), history[row].copy(),
                                meta[row].copy())


# ---------------------------------------------------------------------------
# Stockfish
# ---------------------------------------------------------------------------


class StockfishLabeller(StockfishPlayer):
    """A Stockfish process that scores positions with MultiPV.

    The robustness of :class:`~pipeline.players.stockfish.StockfishPlayer`
    (invalid boards refused, a dead or frozen engine restarted with back-off,
    no process left behind) applies to :meth:`analyse` too. The hash is
    cleared before every position (``ucinewgame``), so a position's label does
    not depend on the positions searched before it.
    """

    def __init__(self, settings: SupervisedConfig, depth: int | None = None,
                 nodes: int | None = None) -> None:
        depth = settings.label_depth if depth is None else depth
        nodes = (settings.label_nodes or None) if nodes is None else nodes
        player = StockfishSettings(
            depth=None if nodes else depth, nodes=nodes, threads=settings.stockfish_threads,
            hash_mb=settings.stockfish_hash_mb, timeout_s=LABEL_TIMEOUT_S)
        super().__init__(player, settings.stockfish_path)
        self.limit = chess.engine.Limit(depth=player.depth, nodes=player.nodes)

    def analyse(self, board: chess.Board, multipv: int) -> list[chess.engine.InfoDict]:
        """Stockfish's MultiPV lines for ``board`` (at most ``multipv``, best first).

        Raises:
            PlayerError: ``board`` is not a valid position.
            EngineFailure: the engine failed on it after every retry.
        """
        if not board.is_valid():
            raise PlayerError(f"refusing to send an invalid position to Stockfish: "
                              f"{board.fen()} ({board.status()!r})")
        last_error: Exception | None = None
        for attempt in range(self.settings.retries + 1):
            try:
                return self._analyse_with_deadline(board, multipv)
            except (chess.engine.EngineTerminatedError, chess.engine.EngineError,
                    TimeoutError, CancelledError) as error:  # a killed engine can cancel the call
                last_error = error
                log.warning("Stockfish failed on %s (%s); restart %d", board.fen(), error,
                            attempt + 1)
                if attempt < self.settings.retries:
                    self._restart(attempt)
        self._shutdown()
        raise EngineFailure(f"Stockfish failed {self.settings.retries + 1} times on "
                            f"{board.fen()}: {last_error}")

    def _analyse_with_deadline(self, board: chess.Board, multipv: int
                               ) -> list[chess.engine.InfoDict]:
        """One ``engine.analyse`` call, bounded in time (a frozen engine is killed)."""
        if self._engine is None:
            self._start()
        assert self._engine is not None
        future = self._calls.submit(self._engine.analyse, board, self.limit, multipv=multipv,
                                    game=object())
        try:
            infos = future.result(timeout=self.settings.timeout_s)
        except FutureTimeout:
            self._shutdown()
            raise TimeoutError(f"no reply within {self.settings.timeout_s:.0f} s") from None
        return infos if isinstance(infos, list) else [infos]

    def label(self, position: LabelPosition, policy_map: PolicyMap, settings: SupervisedConfig) -> GameRows:
        """The shard row of ``position`` from Stockfish's MultiPV lines (EngineFailure when it fails)."""
        assert position.board is not None
        return label_rows(position, self.analyse(position.board, settings.label_multipv), policy_map, settings)


def label_rows(position: LabelPosition, infos: list[chess.engine.InfoDict],
               policy_map: PolicyMap, settings: SupervisedConfig) -> GameRows:
    """The shard row of a position from Stockfish's MultiPV lines (see the module docstring)."""
    board = position.board
    assert board is not None and position.history is not None and position.meta is not None
    turn = board.turn
    lines = [info for info in infos if info.get("pv") and "score" in info]
    if not lines:
        raise EngineFailure(f"Stockfish returned no scored move for {board.fen()}")
    scored = [(info["pv"][0], score_to_centipawns(info["score"].pov(turn))) for info in lines]
    best = max(range(len(scored)), key=lambda i: scored[i][1])
    value = score_to_value(lines[best]["score"].pov(turn))
    moves, probs = multipv_policy(scored, settings.label_temperature_cp)
    fen = board.fen()
    z = sample_outcome(value, _outcome_rng(settings.label_seed, position.game_id,
                                           position.ply, fen))
    white_z = z if turn == chess.WHITE else -z
    result = {1: "1-0", -1: "0-1", 0: "1/2-1/2"}[white_z]
    return GameRows(
        game_id=[position.game_id], ply=np.array([position.ply], dtype=np.int64), fen=[fen],
        history=position.history[None], meta=position.meta[None],
        policy_index=[policy_map.indices(board, moves)], policy_prob=[probs],
        z=np.array([z], dtype=np.int8), root_q=np.array([value], dtype=np.float32),
        result=[result], termination=[TERMINATION])


# ---------------------------------------------------------------------------
# A labelling run
# ---------------------------------------------------------------------------


@dataclass
class LabelReport:
    """What a labelling run did.

    Attributes:
        positions: positions read from the source.
        labelled: positions written, per split.
        skipped: positions left out, per reason (``game-over``, ``invalid``,
            ``unreadable``, ``engine-failure``: Stockfish failed after its
            retries, ``no-table``: labelling from the tables, none holds it).
        shards: shard paths written.
        seconds: wall time.
    """

    positions: int = 0
    labelled: dict[str, int] = field(default_factory=lambda: {TRAIN: 0, HELDOUT: 0})
    skipped: dict[str, int] = field(default_factory=dict)
    shards: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def positions_per_s(self) -> float:
        """Positions read per second."""
        return self.positions / self.seconds if self.seconds > 0 else 0.0


def _skip_reason(board: chess.Board | None) -> str | None:
    """Why a position cannot be labelled, or None."""
    if board is None:
        return "unreadable"
    if not board.is_valid():
        return "invalid"
    if board.is_checkmate() or board.is_stalemate() or not any(board.legal_moves):
        return "game-over"
    return None


class Labeller(Protocol):
    """What labels a position: :class:`StockfishLabeller`, or
    :class:`~pipeline.supervised.tablebase_labels.TablebaseLabeller`."""

    def label(self, position: LabelPosition, policy_map: PolicyMap, settings: SupervisedConfig) -> GameRows: ...


def _label_one(position: LabelPosition, labeller: Labeller, policy_map: PolicyMap,
               settings: SupervisedConfig, buffers: dict[str, ShardBuffer],
               report: LabelReport) -> str | None:
    """Labels one valid position into its split's buffer; the reason it was
    skipped otherwise (``engine-failure``: Stockfish failed; ``no-table``: no
    table holds it).

    The labeller restarts Stockfish by itself, so the next position is tried anew.
    """
    from pipeline.supervised.tablebase_labels import NotInTables

    assert position.board is not None
    try:
        rows = labeller.label(position, policy_map, settings)
    except EngineFailure as error:
        log.error("position %s (ply %d) not labelled: %s", position.game_id, position.ply, error)
        return "engine-failure"
    except NotInTables:
        return "no-table"
    split = HELDOUT if is_heldout(position.game_id, settings.heldout_fraction) else TRAIN
    buffers[split].add(rows)
    report.labelled[split] += 1
    return None


def label_positions(
    positions: Iterator[LabelPosition],
    labeller: Labeller,
    out: str | os.PathLike[str],
    settings: SupervisedConfig,
    policy_encoding: str,
    *,
    prefix: str = "label",
    on_position: Callable[[LabelReport], None] | None = None,
) -> LabelReport:
    """Labels ``positions`` (with Stockfish, or the tables) into ``OUT/train`` and ``OUT/heldout`` shards.

    Shards are named ``<prefix>-<split>-<number>``; ``OUT`` must be prepared
    (:func:`pipeline.supervised.splits.prepare_output`). ``on_position``
    gets the running report after every position (for a progress bar).
    The report is also written to ``OUT/label.json``.
    """
    started = time.perf_counter()
    policy_map = get_policy_map(policy_encoding)
    directories = split_dirs(out)
    buffers = {split: ShardBuffer(directories[split], f"{prefix}-{split}",
                                  settings.positions_per_shard, policy_encoding)
               for split in (TRAIN, HELDOUT)}
    report = LabelReport()
    skipped: dict[str, int] = {}
    for position in positions:
        report.positions += 1
        reason = _skip_reason(position.board)
        if reason is None:
            reason = _label_one(position, labeller, policy_map, settings, buffers, report)
        if reason is not None:
            skipped[reason] = skipped.get(reason, 0) + 1
        if on_position is not None:
            on_position(report)
    for buffer in buffers.values():
        buffer.flush()
    report.skipped = dict(sorted(skipped.items()))
    report.shards = [path for buffer in buffers.values() for path in buffer.written]
    report.seconds = time.perf_counter() - started
    _write_label_manifest(out, report, settings, policy_encoding)
    log.info("labelled %d of %d positions (%d train, %d held-out) in %.1f s, skipped %s",
             sum(report.labelled.values()), report.positions, report.labelled[TRAIN],
             report.labelled[HELDOUT], report.seconds, report.skipped or "none")
    return report


def _write_label_manifest(out: str | os.PathLike[str], report: LabelReport,
                          settings: SupervisedConfig, policy_encoding: str) -> None:
    """Writes ``OUT/label.json``: settings and the report."""
    data = {"settings": asdict(settings), "policy_encoding": policy_encoding,
            "report": {**asdict(report), "positions_per_s": report.positions_per_s}}
    with atomic_write(Path(out) / LABEL_MANIFEST) as handle:
        handle.write(json.dumps(data, indent=1).encode())
