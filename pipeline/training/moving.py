"""Batches over a replay window that moves while the trainer trains (the async loop's).

:func:`pipeline.training.data.batch_stream` is a pure function of one window:
a window that moves needs a new stream, and a new stream loads a whole
shuffle group first (``train.shuffle_buffer`` positions: 500k in the ``gpu``
preset, seconds of CPU).  The continuous trainer moves its window every few
seconds while shards land, so it would spend its time loading groups.

A :class:`MovingStream` instead keeps what it loaded:

* A *group* of at least ``shuffle_buffer`` positions, drawn from random
  pieces of the window as it is when the group starts, permuted, is served
  batch by batch.
* :meth:`MovingStream.move` reads only the pieces the new window gained
  (the shards that landed: a few thousand positions) and adds their rows to
  what the group has still to serve, so the next batches draw from both,
  uniformly: each batch takes its rows at random, without replacement, from
  every position not served yet (a multivariate hypergeometric split of the
  batch over the parts).  Moved rows not yet served are held to one shuffle
  buffer: when self-play lands more than the trainer takes, a move reads the
  newest pieces up to that and leaves the rest to later groups (memory and
  the loading stay bounded however far self-play runs ahead).
* The next group is chosen (random pieces of the window as it is) when the
  current one begins, and loaded by a thread while the current one is
  served (``preload``: two groups in memory, the load off the batch path);
  it is served once fewer than a batch remain.  Pieces that have left the
  window are not chosen again.

Positions that landed are thus served within the current group and again in
later groups, like the rest of the window; a shard that left the window but
sits in the loaded group is served until the group ends (it is in memory:
retention may already have removed its file).

Resuming.  Every draw of a group comes from a generator seeded by ``(seed,
consumer, group number)``, so the stream since its current group began is a
function of the group's pieces (and the next group's) and what happened
since: the moves (the pieces each added) and the batches served.  :meth:`MovingStream.state` is
that record (a few entries: a group lasts ``shuffle_buffer / batch_size``
batches); :meth:`MovingStream.restore` loads the group and the moved pieces
again and replays the draws without decoding, so a trainer that resumes from
its checkpoint takes the same batches it would have taken.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from pipeline.training.batches import (
    Batch,
    GroupArrays,
    concat_compact,
    expand_batch,
    stream_columns,
)
from pipeline.training.data import StreamSpec, load_group
from pipeline.training.window import Piece, TrainDataError, Window

__all__ = ["MovingStream"]

log = logging.getLogger(__name__)


@dataclass
class _Part:
    """Loaded rows and the ones still to serve (in a random order)."""

    arrays: GroupArrays
    left: np.ndarray
    moved: bool = False  # added by a move (not the group)

    def take(self, count: int) -> np.ndarray:
        rows, self.left = self.left[:count], self.left[count:]
        return rows


_GROUP_STREAM = (
    0x40E  # the generator of a group's draws: (seed, consumer, _GROUP_STREAM, group number)
)
_CHOICE_STREAM = 0x40F  # the generator choosing a group's pieces


class MovingStream:
    """Endless batches of a window that moves (:meth:`move`): see the module's text.

    ``spec`` gives the batch size, shuffle buffer, seed and targets; its
    pieces are the window's.  ``decoder`` must be ``fast`` (numpy groups).

    Raises (from ``next``, :meth:`move` and :meth:`restore`):
        TrainDataError: the window has fewer positions than a batch, or a
            shard changed since the window was built.
        ValueError, OSError: a shard cannot be read (the caller rebuilds).
    """

    def __init__(self, spec: StreamSpec, preload: bool = True) -> None:
        if spec.decoder != "fast":
            raise ValueError(f"a moving stream needs the fast decoder, got {spec.decoder!r}")
        self.spec = spec
        self.parts: list[_Part] = []
        self.groups = 0  # groups drawn (the current one's number)
        self.group_pieces: tuple[Piece, ...] = ()
        self.events: list[
            list[Any]
        ] = []  # since the group: ["move", [piece, ...]] or ["batches", n]
        self.rng = np.random.default_rng()
        self.moved_positions = 0  # positions read by moves (the landed shards)
        self.preload = preload  # load the next group in a thread while this one is served
        self.next_pieces: tuple[Piece, ...] = ()
        self.loading: _Loading | None = None

    @property
    def left(self) -> int:
        """Positions loaded and not served yet."""
        return sum(len(part.left) for part in self.parts)

    @property
    def moved_left(self) -> int:
        """Positions that moves added and are not served yet."""
        return sum(len(part.left) for part in self.parts if part.moved)

    def move(self, window: Window) -> int:
        """Follow ``window``: read the pieces it has that the stream's window lacks.

        Returns the positions added to what the current group has to serve."""
        known = {piece.path for piece in self.spec.pieces}
        new = [piece for piece in window.pieces if piece.path not in known]  # newest first
        self.spec = replace(self.spec, pieces=window.pieces)
        budget = max(self.spec.shuffle_buffer, self.spec.batch_size) - self.moved_left
        taken: list[Piece] = []
        for piece in new:
            if budget <= 0:
                break  # the rest is in the window: later groups draw it
            taken.append(piece)
            budget -= piece.rows
        if not taken or not self.parts:
            return 0  # no group yet: the first one is drawn from the new window
        return self._add(tuple(taken))

    def state(self) -> dict[str, Any]:
        """What :meth:`restore` needs to continue this stream exactly (plain data)."""
        return {"seed": self.spec.seed, "groups": self.groups,
                "pieces": [asdict(piece) for piece in self.group_pieces],
                "next": [asdict(piece) for piece in self.next_pieces],
                "events": [list(event) for event in self.events]}  # fmt: skip

    @classmethod
    def restore(cls, spec: StreamSpec, state: dict[str, Any], preload: bool = True) -> MovingStream:
        """The stream ``state`` describes, on the window of ``spec``, at the same
        point (and seed): its group and moved pieces loaded again, its draws replayed."""
        stream = cls(replace(spec, seed=int(state["seed"])), preload)
        if not state["groups"]:
            return stream
        following = tuple(Piece(**piece) for piece in state["next"])
        stream._start_group(
            tuple(Piece(**piece) for piece in state["pieces"]), int(state["groups"]), following
        )
        for kind, value in state["events"]:
            if kind == "move":
                stream._add(tuple(Piece(**piece) for piece in value))
            elif kind == "batches":
                for _ in range(int(value)):
                    stream._draw()
            else:
                raise ValueError(f"moving stream state: unknown event {kind!r}")
        return stream

    def __iter__(self) -> MovingStream:
        return self

    def __next__(self) -> Batch:
        picks = self._draw()
        if len(picks) == 1:
            part, rows = picks[0]
            return part.arrays.batch(rows)
        # Rows of several parts: their compact rows (~1/20 of the bytes) joined, then decoded
        # once, rather than full batches decoded apart and copied together.
        return expand_batch(concat_compact([part.arrays.compact(rows) for part, rows in picks]))

    def _draw(self) -> list[tuple[_Part, np.ndarray]]:
        """The next batch's rows, part by part (a group drawn first when too few are left)."""
        size = self.spec.batch_size
        if self.left < size:
            self._next_group()
        counts = self.rng.multivariate_hypergeometric([len(part.left) for part in self.parts], size)
        picks = [(part, part.take(int(count))) for part, count in zip(self.parts, counts) if count]
        self.parts = [part for part in self.parts if len(part.left)]
        if self.events and self.events[-1][0] == "batches":
            self.events[-1][1] += 1
        else:
            self.events.append(["batches", 1])
        return picks

    def _next_group(self) -> None:
        """Start the next group: the one chosen (and loading) since the current one began."""
        spec = self.spec
        if spec.positions < spec.batch_size:
            raise TrainDataError(
                f"the window has {spec.positions} positions, fewer than train.batch_size {spec.batch_size}"
            )
        number = self.groups + 1
        self._start_group(self.next_pieces or self._choose(number), number)

    def _choose(self, number: int) -> tuple[Piece, ...]:
        """Group ``number``'s pieces: random pieces of the window, at least ``shuffle_buffer`` positions."""
        spec = self.spec
        target = max(spec.shuffle_buffer, spec.batch_size)
        chosen: list[Piece] = []
        rows = 0
        order = np.random.default_rng([spec.seed, spec.consumer, _CHOICE_STREAM, number])
        for index in order.permutation(len(spec.pieces)):
            chosen.append(spec.pieces[index])
            rows += spec.pieces[index].rows
            if rows >= target:
                break
        return tuple(chosen)

    def _start_group(
        self, pieces: tuple[Piece, ...], number: int, following: tuple[Piece, ...] | None = None
    ) -> None:
        """Serve group ``number`` (loaded in the background already when it was chosen
        then); choose the one after it (``following``: given) and start loading it."""
        loading, self.loading = self.loading, None
        arrays = (
            loading.result()
            if loading is not None and loading.pieces == pieces
            else self._load(pieces)
        )
        self.rng = np.random.default_rng(
            [self.spec.seed, self.spec.consumer, _GROUP_STREAM, number]
        )
        self.parts = [_Part(arrays, self.rng.permutation(len(arrays.target)))]
        self.groups, self.group_pieces, self.events = number, pieces, []
        self.next_pieces = following or self._choose(number + 1)
        if self.preload:
            self.loading = _Loading(self.next_pieces, self._load)

    def _add(self, pieces: tuple[Piece, ...]) -> int:
        arrays = self._load(pieces)
        rows = self.rng.permutation(len(arrays.target))
        self.parts.append(_Part(arrays, rows, moved=True))
        self.events.append(["move", [asdict(piece) for piece in pieces]])
        self.moved_positions += len(rows)
        return len(rows)

    def _load(self, pieces: tuple[Piece, ...]) -> GroupArrays:
        return GroupArrays.of(load_group(pieces, stream_columns(self.spec)), self.spec)


class _Loading:
    """A group loading in a thread (Parquet reads release the GIL); :meth:`result` waits."""

    def __init__(
        self, pieces: tuple[Piece, ...], load: Callable[[tuple[Piece, ...]], GroupArrays]
    ) -> None:
        self.pieces = pieces
        self.arrays: GroupArrays | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(
            target=self._run, args=(load,), name="zerochess-group", daemon=True
        )
        self.thread.start()

    def _run(self, load: Callable[[tuple[Piece, ...]], GroupArrays]) -> None:
        try:
            self.arrays = load(self.pieces)
        except Exception as error:  # noqa: BLE001 - raised where the group is needed
            self.error = error

    def result(self) -> GroupArrays:
        self.thread.join()
        if self.error is not None:
            raise self.error
        assert self.arrays is not None
        return self.arrays
