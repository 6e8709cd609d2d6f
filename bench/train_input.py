"""The training input at GPU rates: samples/s of the real data path (Parquet -> decode -> batches).

Reads a replay window of ``--positions`` training positions (default 1M, the
``gpu`` preset's ``train.window_positions``) from Parquet shards and times the
batch stream of :mod:`pipeline.training.data` at the ``gpu`` preset's batch
(4096) and shuffle buffer (500k), the old path (``reference``: the readable
Python decoder, :func:`pipeline.training.data.decode_batch`) beside
the new one (``fast``), in one process (per core) and through the DataLoader
with ``--workers`` loader processes (what the trainer's process receives).
A batch is what ``AlphaZeroModule.losses`` takes: planes ``[B, 119, 8, 8]``
uint8 (the net casts them to float on its device), dense pi ``[B, 4672]``
float32, the value target ``[B]`` float32.

Rates are amortised over whole shuffle groups (the group's Parquet read
included): each timed run streams ``--batches`` batches from a fresh stream,
so the first group's load is in every run.  Figures are medians of
``--repeats`` runs.

The shards (built once with ``--data DIR``, reused when DIR exists) hold
random legal games (python-chess), ``--full-search`` of the rows searched in
full (the training rows; the ``gpu`` preset's ``selfplay.full_search_prob``
0.25), so 1M training positions are 4M shard rows, in ``--shards`` shards,
whole games in ply order as self-play plays them; pi is a random
distribution over the legal moves.  ``DIR/shards`` holds them as
:func:`~pipeline.shards.write_shard` writes them (training rows first, in row
groups of their own, which are all a trainer reads); ``DIR/mixed`` the same
rows in game order in mixed row groups, as shards were written before that
layout (every row read, then filtered): ``--layouts`` times both, the
baseline in the same run.

The consumption of one trainer GPU it prints is ``--gpu-steps`` steps/s times
the batch: an assumption (not measured here: no GPU), 12 steps/s of 4096 for
the ``gpu`` preset's 10x128 SE net in bf16 on one current GPU, ~49k samples/s
(the issue plans with "several steps per second, tens of thousands of samples
per second").

Rows: ``1 process`` decodes in this process (per core); ``loader workers,
full batches`` decodes in DataLoader workers and passes planes + dense pi
(~26 KB a sample) through shared memory, as the Lightning loader did;
``compact + expand`` passes :class:`~pipeline.training.data.CompactBatch` es
(~1.3 KB a sample) and builds planes + dense pi in this process on the CPU
(:func:`~pipeline.training.data.expand_batch`; on a GPU trainer that step runs
on the GPU), as :class:`~pipeline.training.data.ShardDataModule` now does.
The loader rows start their clock after every worker's first batch (its
group load is charged to the CPU rate only); ``whole window`` is the wall
clock of one pass over the window from the loader's start, every group
load and the workers' start-up included: the rate a trainer on this CPU sees;
``expand on the GPU`` is the same pass without building planes and dense pi
here, what a GPU trainer's process does (it expands on its device).
``/ CPU-s`` counts the CPU time of every process involved: with the machine
shared it is the per-core rate; the wall-clock rate is what this machine gave
at that moment.

    .venv/bin/python bench/train_input.py --data /tmp/zc_window_1m [--positions 1000000] [--shards 200] \\
        [--batches 40] [--repeats 3] [--workers 2] [--paths reference,fast] [--layouts training-first,mixed]
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chess
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import torch
from torch.utils.data import DataLoader

from models.encoding import PlaneHistory, board_meta
from models.policy import get_policy_map
from pipeline.shards import SHARD_SCHEMA, list_shards, write_shard
from pipeline.shards.schema import HISTORY_BYTES, INDEX_LIST, PROB_LIST
from pipeline.shards.store import PARQUET_OPTIONS
from pipeline.training import data as training_data
from pipeline.training.config import TrainConfig
from pipeline.training.window import Piece, Window

log = logging.getLogger("bench.train_input")

ENCODING = "az4672"


# ---------------------------------------------------------------------------
# The window: random legal games as shard rows
# ---------------------------------------------------------------------------


@dataclass
class Pool:
    """Positions of random games, game after game, as shard columns."""

    history: np.ndarray  # (N, 8, 14) uint64
    meta: np.ndarray  # (N, 7) uint8
    fen: list[str]
    ply: np.ndarray  # (N,)
    offsets: np.ndarray  # (N + 1,) into index
    index: np.ndarray  # legal-move policy indices, ascending per row
    starts: np.ndarray  # (G + 1,) first row of each game


def random_pool(games: int, max_plies: int, seed: int) -> Pool:
    """Rows of ``games`` random legal games (at most ``max_plies`` plies each)."""
    rng = random.Random(seed)
    policy = get_policy_map(ENCODING)
    history, meta, fen, ply, index, lengths, starts = [], [], [], [], [], [], [0]
    for _ in range(games):
        board = chess.Board()
        line = PlaneHistory.from_board(board)
        for number in range(max_plies):
            moves = list(board.legal_moves)
            if not moves:
                break
            history.append(line.snapshot())
            meta.append(board_meta(board))
            fen.append(board.fen())
            ply.append(number)
            indices = np.sort(policy.indices(board, moves))
            index.append(indices)
            lengths.append(len(indices))
            board.push(rng.choice(moves))
            line.push(board)
        starts.append(len(fen))
    offsets = np.zeros(len(fen) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return Pool(np.stack(history), np.stack(meta), fen, np.array(ply), offsets,
                np.concatenate(index).astype(np.uint16), np.array(starts))  # fmt: skip


def shard_table(pool: Pool, rows: int, full_search: float, rng: np.random.Generator, name: str) -> pa.Table:
    """``rows`` rows of whole random games of the pool (the last one cut)."""
    games = len(pool.starts) - 1
    picked: list[np.ndarray] = []
    game_ids: list[str] = []
    total = 0
    while total < rows:
        game = int(rng.integers(games))
        span = np.arange(pool.starts[game], pool.starts[game + 1])
        picked.append(span)
        game_ids += [f"{name}-{len(picked)}"] * len(span)
        total += len(span)
    take = np.concatenate(picked)[:rows]
    lengths = np.diff(pool.offsets)[take]
    offsets = np.zeros(rows + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    index = np.concatenate([pool.index[pool.offsets[r] : pool.offsets[r + 1]] for r in take])
    weights = rng.gamma(0.3, size=len(index)) + 1e-6
    sums = np.add.reduceat(weights, offsets[:-1])
    prob = (weights / np.repeat(sums, lengths)).astype(np.float32)
    game_plies = np.diff(pool.starts)[np.searchsorted(pool.starts, take, side="right") - 1]
    outcome = np.repeat(rng.integers(-1, 2, size=len(picked)), [len(span) for span in picked])[:rows]
    results = np.array(["1/2-1/2", "1-0", "0-1"])[outcome]  # white's score 0, 1, -1
    z = (outcome * np.where(pool.ply[take] % 2 == 0, 1, -1)).astype(np.int8)
    history = np.ascontiguousarray(pool.history[take]).astype("<u8")
    columns = {
        "game_id": pa.array(game_ids[:rows]),
        "ply": pa.array(pool.ply[take].astype(np.int32)),
        "fen": pa.array([pool.fen[r] for r in take]),
        "history": pa.Array.from_buffers(pa.binary(HISTORY_BYTES), rows, [None, pa.py_buffer(history.tobytes())]),
        "meta": pa.Array.from_buffers(pa.binary(7), rows, [None, pa.py_buffer(pool.meta[take].tobytes())]),
        "policy_encoding": pa.array([ENCODING] * rows),
        "policy_index": pa.ListArray.from_arrays(pa.array(offsets), pa.array(index), type=INDEX_LIST),
        "policy_prob": pa.ListArray.from_arrays(pa.array(offsets), pa.array(prob), type=PROB_LIST),
        "z": pa.array(z),
        "root_q": pa.array(rng.uniform(-1, 1, rows).astype(np.float32)),
        "root_visits": pa.array(np.where(rng.random(rows) < full_search, 800, 160).astype(np.int32)),
        "full_search": pa.array(rng.random(rows) < full_search),
        "generation": pa.array(np.zeros(rows, dtype=np.int32)),
        "result": pa.array(results),
        "termination": pa.array(["checkmate"] * rows),
        "root_d": pa.array(rng.uniform(0, 0.5, rows).astype(np.float32)),
        "game_plies": pa.array(game_plies.astype(np.int32)),
    }
    return pa.Table.from_arrays(list(columns.values()), schema=SHARD_SCHEMA)


def make_data(folder: Path, positions: int, shards: int, full_search: float, seed: int = 0) -> None:
    """``shards`` shards holding ``positions`` training rows in all (about)."""
    started = time.perf_counter()
    pool = random_pool(games=800, max_plies=160, seed=seed)
    log.info("pool: %d positions of 800 random games in %.1f s", len(pool.fen), time.perf_counter() - started)
    rng = np.random.default_rng(seed)
    rows = round(positions / full_search / shards)
    (folder / "shards").mkdir(parents=True, exist_ok=True)
    for number in range(shards):
        name = f"gen{number // 50:04d}-task{number:05d}"
        write_shard(shard_table(pool, rows, full_search, rng, name), folder / "shards", name, validate=False)
    log.info("%d shards of %d rows in %.1f s", shards, rows, time.perf_counter() - started)


def quick_window(directory: Path, positions: int) -> Window:
    """The window of the newest shards holding ``positions`` training rows, like
    :func:`~pipeline.training.window.build_window` but without validating the
    rows (the bench wrote them): only the ``full_search`` column is read."""
    pieces: list[Piece] = []
    taken = 0
    for path in reversed(list_shards(str(directory))):
        if taken >= positions:
            break
        full = pq.read_table(path, columns=["full_search"]).column("full_search")
        rows = int(pc.sum(full).as_py() or 0)
        used = min(rows, positions - taken)
        pieces.append(Piece(path, len(full), rows, rows - used, rows))
        taken += used
    return Window(str(directory), taken, positions, tuple(pieces))


LAYOUTS = ("training-first", "mixed")
"""``training-first``: shards as :func:`~pipeline.shards.write_shard` writes them
(the training rows in row groups of their own, read alone); ``mixed``: the
same rows in game order in mixed row groups, as shards were written before
(every row is read, then filtered): the baseline."""


def mixed_copy(source: Path, target: Path) -> None:
    """``source``'s shards rewritten in game order (each game's rows in ply order,
    whatever their full_search) with mixed row groups: the layout before
    training-first."""
    target.mkdir(parents=True, exist_ok=True)
    for path in list_shards(str(source)):
        table = pq.read_table(path)
        order = pc.sort_indices(table, sort_keys=[("game_id", "ascending"), ("ply", "ascending")])
        pq.write_table(table.take(order), target / Path(path).name, **PARQUET_OPTIONS)  # the writer's options


def load_window(
    folder: Path, config: TrainConfig, positions: int, shards: int, full_search: float, layout: str
) -> Window:
    """The window of ``folder``'s shards in ``layout`` (built, and its shards made, the first time)."""
    path = folder / f"window-{layout}.json"
    if path.exists():
        return Window.load(path)
    if not (folder / "shards").exists():
        make_data(folder, positions, shards, full_search)
    directory = folder / ("shards" if layout == "training-first" else layout)
    if not directory.exists():
        mixed_copy(folder / "shards", directory)
    started = time.perf_counter()
    window = quick_window(directory, config.window_positions)
    window.save(path)
    log.info("window of %d positions in %.1f s", window.positions, time.perf_counter() - started)
    return window


# ---------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Rate:
    """Samples per CPU second (per core: every process involved) and per wall second."""

    cpu: float
    wall: float


def group_batches(config: TrainConfig) -> int:
    """Batches of a shuffle group: what one group load is amortised over."""
    return max(config.shuffle_buffer, config.batch_size) // config.batch_size


def single_rate(window: Window, config: TrainConfig, batches: int, decoder: str) -> Rate:
    """One consumer's stream in this process (one core): batches ready for ``losses``.

    The first batch carries the group's load; the rate charges each batch
    its share of that load (1 / :func:`group_batches`) on top of its decode."""
    dataset = training_data.WindowDataset(window, config, ENCODING, decoder=decoder)
    stream = iter(dataset)
    wall, cpu = time.perf_counter(), time.process_time()
    next(stream)
    first_wall, first_cpu = time.perf_counter() - wall, time.process_time() - cpu
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(batches):
        next(stream)
    batch_wall, batch_cpu = (time.perf_counter() - wall) / batches, (time.process_time() - cpu) / batches
    share = 1 / group_batches(config)
    return Rate(
        config.batch_size / (batch_cpu + (first_cpu - batch_cpu) * share),
        config.batch_size / (batch_wall + (first_wall - batch_wall) * share),
    )


def loader_rate(
    window: Window, config: TrainConfig, batches: int, decoder: str, compact: bool, load_cpu: float
) -> Rate:
    """What the trainer's process receives from ``config.loader_workers`` DataLoader
    workers, batches ready for ``losses`` (compact ones expanded in this process),
    after every worker's first batch (its group load); ``load_cpu`` (CPU seconds
    a sample, from :func:`load_cost`) is added to the CPU rate, as in :func:`single_rate`."""
    dataset = training_data.WindowDataset(window, config, ENCODING, decoder=decoder, compact=compact)
    loader = DataLoader(dataset, batch_size=None, num_workers=config.loader_workers, prefetch_factor=4)
    stream: Any = iter(loader)
    pids = [worker.pid for worker in stream._workers]  # their CPU time
    for _ in range(config.loader_workers):
        next(stream)
    before = sum(cpu_seconds(pid) for pid in pids)
    started, cpu = time.perf_counter(), time.process_time()
    for _ in range(batches):
        batch = next(stream)
        if compact:
            batch = training_data.expand_batch(batch)
    wall = time.perf_counter() - started
    used = time.process_time() - cpu + sum(cpu_seconds(pid) for pid in pids) - before
    del stream
    samples = batches * config.batch_size
    return Rate(1 / (used / samples + load_cpu), samples / wall)


def sustained_rate(window: Window, config: TrainConfig, decoder: str, expand: bool = True) -> Rate:
    """One pass over the whole window as the trainer takes it (``config.loader_workers``
    workers, compact batches expanded here, or with ``expand`` off left as a GPU
    trainer gets them, to expand on its device): the wall clock runs from the loader's
    start, so every group load, the workers' start and the first batches' wait are in it."""
    dataset = training_data.WindowDataset(window, config, ENCODING, decoder=decoder, compact=True)
    batches = window.positions // config.batch_size
    started, cpu = time.perf_counter(), time.process_time()
    loader = DataLoader(dataset, batch_size=None, num_workers=config.loader_workers, prefetch_factor=4)
    stream: Any = iter(loader)
    pids = [worker.pid for worker in stream._workers]
    for _ in range(batches):
        batch = next(stream)
        if expand:
            training_data.expand_batch(batch)
    wall = time.perf_counter() - started
    used = time.process_time() - cpu + sum(cpu_seconds(pid) for pid in pids)
    del stream
    samples = batches * config.batch_size
    return Rate(samples / used, samples / wall)


def load_cost(window: Window, config: TrainConfig, decoder: str) -> float:
    """CPU seconds a sample of loading its shuffle group (Parquet read, filter, numpy columns)."""
    spec = training_data.WindowDataset(window, config, ENCODING, decoder=decoder).spec(0, 1)
    group = spec.groups(0)[0]
    cpu = time.process_time()
    columns = training_data.stream_columns(spec) if decoder == "fast" else training_data.TRAINING_COLUMNS
    table = training_data.load_group(group, columns)
    if decoder == "fast":
        training_data.GroupArrays.of(table, spec)
    return (time.process_time() - cpu) / table.num_rows


def median_of(run: Callable[[], Rate], repeats: int) -> tuple[Rate, list[Rate]]:
    runs = [run() for _ in range(repeats)]
    return Rate(statistics.median(r.cpu for r in runs), statistics.median(r.wall for r in runs)), runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="window folder (built once, then reused)")
    parser.add_argument("--positions", type=int, default=1_000_000, help="training positions in the window")
    parser.add_argument("--shards", type=int, default=200)
    parser.add_argument("--full-search", type=float, default=0.25, help="fraction of training rows")
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--shuffle-buffer", type=int, default=500_000)
    parser.add_argument("--batches", type=int, default=40, help="batches per timed run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2, help="DataLoader workers (0: skip that row)")
    parser.add_argument("--paths", default="reference,fast", help="decoders to time")
    parser.add_argument("--layouts", default=",".join(LAYOUTS),
                        help="shard layouts to time (the first for the loader rows): " + ", ".join(LAYOUTS))  # fmt: skip
    parser.add_argument("--gpu-steps", type=float, default=12.0,
                        help="assumed steps/s of the gpu preset's net (10x128 SE, bf16) on one GPU")  # fmt: skip
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.set_num_threads(1)
    config = TrainConfig(batch_size=args.batch, shuffle_buffer=args.shuffle_buffer,
                         window_positions=args.positions, loader_workers=args.workers, seed=0)  # fmt: skip
    windows = {layout: load_window(args.data, config, args.positions, args.shards, args.full_search, layout)
               for layout in args.layouts.split(",")}  # fmt: skip
    window = next(iter(windows.values()))
    print(f"window {window.positions:,} training positions in {len(window.pieces)} shards ({args.data}); "
          f"batch {args.batch}, shuffle buffer {args.shuffle_buffer:,}; {args.batches} batches a run, "
          f"median of {args.repeats}; machine: {os.cpu_count()} cores (shared)")  # fmt: skip
    target = args.gpu_steps * args.batch
    print(f"one trainer GPU consumes {target:,.0f} samples/s (assumed {args.gpu_steps:g} steps/s x batch {args.batch})")
    rows: list[tuple[str, Rate, list[Rate]]] = []
    for path in args.paths.split(","):
        for layout, window in windows.items():
            rows.append((f"{path}: 1 process, {layout}", *median_of(
                lambda path=path, window=window: single_rate(window, config, args.batches, path), args.repeats)))  # fmt: skip
        if not args.workers:
            continue
        first = next(iter(windows.values()))
        load = load_cost(first, config, path)
        rows.append((f"{path}: {args.workers} loader workers, full batches", *median_of(
            lambda path=path, load=load, first=first: loader_rate(first, config, args.batches, path, False, load), args.repeats)))  # fmt: skip
        if path != "fast":
            continue
        rows.append((f"{path}: {args.workers} workers, compact + expand", *median_of(
            lambda path=path, load=load, first=first: loader_rate(first, config, args.batches, path, True, load), args.repeats)))  # fmt: skip
        for layout, window in windows.items():
            rows.append((f"{path}: {args.workers} workers, whole window, {layout}", *median_of(
                lambda path=path, window=window: sustained_rate(window, config, path), args.repeats)))  # fmt: skip
            rows.append((f"{path}: the same, expand on the GPU (untimed)", *median_of(
                lambda path=path, window=window: sustained_rate(window, config, path, expand=False), args.repeats)))  # fmt: skip
    print(f"{'path (batches ready for module.losses)':<58}{'/ CPU-s':>10}{'x GPU/2':>9}{'wall/s':>9}   "
          f"runs (per CPU-s | wall)")  # fmt: skip
    for label, median, runs in rows:
        shown = ", ".join(f"{r.cpu:,.0f}|{r.wall:,.0f}" for r in runs)
        print(f"{label:<58}{median.cpu:>10,.0f}{2 * median.cpu / target:>9.2f}{median.wall:>9,.0f}   [{shown}]")
    print("/ CPU-s: samples per CPU second of every process involved, group load amortised over its "
          f"{group_batches(config)} batches (the per-core rate); x GPU/2: what 2 such cores give over the "
          "GPU's need; wall/s: wall clock on this machine at that moment (the loader rows after every worker's first "
          "batch; 'whole window': one pass over the window from the loader's start, every group load included)")

if __name__ == "__main__":
    main()
