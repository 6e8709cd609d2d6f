"""Supervised-phase parameters (the ``supervised`` section of ``params.yaml``)."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.config_errors import check_at_least, require

__all__ = ["SupervisedConfig"]


@dataclass(frozen=True)
class SupervisedConfig:
    """PGN conversion, Stockfish labelling and pretraining evaluation."""

    min_elo: int = 0
    """keep a game only if every rating header present (``WhiteElo``, ``BlackElo``) is at least
    this; a missing or non-numeric rating does not drop a game; 0 = no rating filter."""
    min_time_control_s: int = 0
    """keep a game only if its ``TimeControl`` lasts at least this many seconds, estimated as
    base + 40 x increment (as lichess classifies games: 180+2 counts 260 s); games without a
    usable ``TimeControl`` (missing, ``?``, ``-``) are kept; 0 = off."""
    min_plies: int = 1
    """games with fewer main-line plies are left out."""
    label_smoothing: float = 0.0
    """epsilon of the move target: pi is ``1 - epsilon`` on the move played plus ``epsilon``
    spread evenly over all legal moves; 0 = one-hot (no legal-move generation needed)."""
    heldout_fraction: float = 0.1
    """share of games written to the held-out split, chosen by a stable hash of the game's start
    position and moves (so a game and its duplicates always land in the same split)."""
    positions_per_shard: int = 50_000
    """rows buffered per split before a shard is written: bounds the memory of a conversion (~1
    KB a row)."""
    max_game_bytes: int = 1_000_000
    """a game whose text exceeds this (an unclosed comment, a corrupt file) is dropped and the
    reader resynchronises on the next header, so memory stays bounded."""
    workers: int = 2
    """Ray tasks converting files at the same time (one file each)."""
    cpus_per_worker: float = 1.0
    """Ray ``num_cpus`` of each conversion task."""
    max_retries: int = 2
    """Ray retries of a conversion task whose worker died."""
    label_depth: int = 8
    """Stockfish search depth per labelled position (``zerochess label --depth`` overrides it)."""
    label_nodes: int = 0
    """node limit per labelled position instead of the depth when > 0."""
    label_multipv: int = 8
    """moves Stockfish scores per position (MultiPV); pi is a softmax over these moves only."""
    label_temperature_cp: float = 100.0
    """temperature of that softmax in centipawns: a move ``T`` centipawns worse than the best
    gets ``1/e`` of its weight."""
    label_temperature_plies: float = 1.0
    """temperature of the policy labelled from the distance-to-mate tables (``zerochess label
    --tablebases``): a winning move one ply slower to mate than the fastest gets ``1/e`` of its
    weight (a losing move one ply quicker to be mated likewise)."""
    label_seed: int = 0
    """seed of the outcome drawn for the ``z`` column of labelled positions (see
    :mod:`pipeline.supervised.labelling`) and of ``--random`` positions."""
    label_random_max_plies: int = 40
    """``--random`` positions are reached by 0 to this many uniformly random moves from the start
    position."""
    stockfish_path: str = ""
    """the Stockfish binary; empty = ``stockfish`` on PATH, else ``/usr/games/stockfish``."""
    stockfish_threads: int = 1
    """Stockfish ``Threads`` while labelling."""
    stockfish_hash_mb: int = 16
    """Stockfish ``Hash`` while labelling."""
    heldout_max_positions: int = 50_000
    """held-out positions ``zerochess pretrain`` evaluates (the first ones in shard order); 0 =
    all."""
    eval_batch_size: int = 256
    """positions per forward pass in that evaluation."""

    def __post_init__(self) -> None:
        check_at_least("supervised", self, ("positions_per_shard", "max_game_bytes", "workers", "label_depth",
                                            "label_multipv", "stockfish_threads", "stockfish_hash_mb",
                                            "eval_batch_size"), 1)  # fmt: skip
        check_at_least("supervised", self, ("min_elo", "min_time_control_s", "min_plies", "cpus_per_worker",
                                            "max_retries", "label_nodes", "label_seed", "label_random_max_plies",
                                            "heldout_max_positions"), 0)  # fmt: skip
        require("supervised.label_smoothing", self.label_smoothing, 0.0 <= self.label_smoothing < 1.0, "in [0, 1)")
        require("supervised.heldout_fraction", self.heldout_fraction, 0.0 <= self.heldout_fraction < 1.0,
                "in [0, 1)")  # fmt: skip
        require("supervised.label_temperature_cp", self.label_temperature_cp, self.label_temperature_cp > 0, "> 0")
        require("supervised.label_temperature_plies", self.label_temperature_plies,
                self.label_temperature_plies > 0, "> 0")  # fmt: skip
