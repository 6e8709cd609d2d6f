"""The async trainer's input while its window moves: samples/s of the batch
stream when shards land every few seconds, the old way (a new
:func:`pipeline.training.data.batch_stream` on each move, which loads a whole
shuffle group first) beside the new one (:class:`pipeline.training.moving.MovingStream`,
which reads only the shards that landed and mixes them into its loaded group).

It reuses ``bench/train_input.py``'s window (``--data``: 200 shards of 5,000
training positions, built the first time).  The trainer's window is
``--window-shards`` consecutive shards (800k positions by default, as the
``gpu`` preset's window would hold after a while); every ``--move-every``
batches it moves by one shard (the newest added, the oldest dropped): 36
batches is 3 s (the trainer's :data:`~pipeline.training.continuous.WINDOW_REFRESH_S`)
at the 12 steps/s ``bench/train_input.py`` assumes for one GPU, and one
5,000-position shard per move is about what 24 ``gpu``-preset self-play actors
write in that time.  The shuffle buffer is the ``gpu`` preset's 500k, the batch
4096.  One process decodes full batches (the continuous trainer's path).
Each run streams ``--batches`` batches from a fresh stream (its first group
load included); figures are medians of ``--repeats`` runs.

Two more rows put a training step between batches: ``--step-ms`` of sleep, a
stand-in for a GPU step during which the trainer's thread waits (83 ms: 12
steps/s), the moving stream read in the trainer's thread (serial) beside the
same stream made ahead by the trainer's prefetch thread
(:class:`pipeline.training.prefetch.Prefetched`), in wall-clock samples/s.

    .venv/bin/python bench/train_moving.py --data /tmp/zc_window_1m [--batches 144] [--move-every 36] [--repeats 3] \\
        [--step-ms 83]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.train_input import ENCODING, load_window
from pipeline.training.config import TrainConfig
from pipeline.training.data import StreamSpec, batch_stream
from pipeline.training.moving import MovingStream
from pipeline.training.prefetch import Prefetched
from pipeline.training.window import Piece, Window


def windows(window: Window, size: int, moves: int) -> list[Window]:
    """The trainer's window before each move: ``size`` consecutive shards, sliding by one."""
    pieces = sorted(window.pieces, key=lambda piece: piece.path)
    if size + moves > len(pieces):
        raise SystemExit(f"--window-shards {size} + {moves} moves need {size + moves} shards, "
                         f"the window has {len(pieces)}")  # fmt: skip
    return [replace(window, pieces=tuple(reversed(pieces[k : k + size]))) for k in range(moves + 1)]


def spec_of(pieces: tuple[Piece, ...], args: argparse.Namespace) -> StreamSpec:
    return StreamSpec(
        pieces, args.batch, args.shuffle_buffer, seed=0, consumer=0, policy_encoding=ENCODING
    )


def batch_counts(path: list[Window], args: argparse.Namespace) -> list[int]:
    """Batches served on each window of ``path`` (``--move-every``, the rest on the last)."""
    return [args.move_every] * (len(path) - 1) + [args.batches - (len(path) - 1) * args.move_every]


def rebuilt(path: list[Window], args: argparse.Namespace) -> Iterator[Any]:
    """The old way: a new stream (a shuffle group loaded first) at every move."""
    for window, count in zip(path, batch_counts(path, args), strict=True):
        stream = batch_stream(spec_of(window.pieces, args))
        for _ in range(count):
            yield next(stream)


def followed(stream: MovingStream | Prefetched, path: list[Window], args: argparse.Namespace) -> Iterator[Any]:
    """One stream's batches, moved onto each next window of ``path`` in turn."""
    for number, (window, count) in enumerate(zip(path, batch_counts(path, args), strict=True)):
        if number:
            stream.move(window)
        for _ in range(count):
            yield next(stream)


def moving(path: list[Window], args: argparse.Namespace) -> Iterator[Any]:
    """The new way: one stream, moved (it reads what the move added)."""
    yield from followed(MovingStream(spec_of(path[0].pieces, args)), path, args)


def prefetched(path: list[Window], args: argparse.Namespace) -> Iterator[Any]:
    """The moving stream made ahead in a thread (the continuous trainer's way)."""
    stream = Prefetched(MovingStream(spec_of(path[0].pieces, args)))
    try:
        yield from followed(stream, path, args)
    finally:
        stream.close()


def stepped(batches: Iterator[Any], step_s: float) -> Iterator[Any]:
    """Each batch followed by a step of ``step_s`` (sleep: a GPU step the thread waits for)."""
    for batch in batches:
        time.sleep(step_s)
        yield batch


def rate(make: Callable[[], Iterator[Any]], args: argparse.Namespace) -> tuple[float, float]:
    """(samples per CPU second, samples per wall second) of one run."""
    wall, cpu = time.perf_counter(), time.process_time()
    count = sum(1 for _ in make())
    samples = count * args.batch
    return samples / (time.process_time() - cpu), samples / (time.perf_counter() - wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, required=True, help="bench/train_input.py's window folder"
    )
    parser.add_argument(
        "--window-shards", type=int, default=160, help="shards in the trainer's window"
    )
    parser.add_argument("--batches", type=int, default=144, help="batches per timed run")
    parser.add_argument("--move-every", type=int, default=36, help="batches between two moves")
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--shuffle-buffer", type=int, default=500_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--step-ms",
        type=float,
        default=83.0,
        help="the stand-in training step (0: skip those rows)",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.set_num_threads(1)
    config = TrainConfig(
        batch_size=args.batch, shuffle_buffer=args.shuffle_buffer, window_positions=1_000_000
    )
    window = load_window(args.data, config, 1_000_000, 200, 0.25, "training-first")
    moves = (args.batches - 1) // args.move_every
    path = windows(window, args.window_shards, moves)
    print(f"window of {args.window_shards} shards ({path[0].positions:,} positions), moved by one shard "
          f"every {args.move_every} batches ({moves} moves in {args.batches} batches of {args.batch}); "
          f"shuffle buffer {args.shuffle_buffer:,}; 1 process, median of {args.repeats}")  # fmt: skip
    results = {}
    step = args.step_ms / 1000
    rows = [("new stream at each move (before)", lambda: rebuilt(path, args)),
            ("moving stream (after)", lambda: moving(path, args))]  # fmt: skip
    if step:
        rows += [(f"moving, {args.step_ms:g} ms step, serial", lambda: stepped(moving(path, args), step)),
                 (f"moving, {args.step_ms:g} ms step, prefetched", lambda: stepped(prefetched(path, args), step))]  # fmt: skip
    for label, make in rows:
        runs = [rate(make, args) for _ in range(args.repeats)]
        results[label] = (
            statistics.median(r[0] for r in runs),
            statistics.median(r[1] for r in runs),
        )
        shown = ", ".join(f"{c:,.0f}|{w:,.0f}" for c, w in runs)
        print(
            f"{label:<36}{results[label][0]:>10,.0f} / CPU-s{results[label][1]:>10,.0f} / wall-s   [{shown}]"
        )
    before, after, *stepped_rows = results.values()
    if stepped_rows:
        serial, ahead = stepped_rows
        print(f"with a {args.step_ms:g} ms step: {ahead[1]:,.0f} samples/s prefetched, {serial[1]:,.0f} serial "
              f"(the step alone allows {args.batch / step:,.0f})")  # fmt: skip
    print(f"moving window: {after[0]:,.0f} samples per CPU-s after, {before[0]:,.0f} before "
          f"({after[0] / before[0]:.1f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
