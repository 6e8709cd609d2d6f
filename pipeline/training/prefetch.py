"""The continuous trainer's batches made ahead, in a thread beside its training step.

The Parquet reads and the native decode (:func:`pipeline.shards.decode.decode_rows`)
release the GIL, so one thread making the next batches runs on another core
while the trainer's thread computes a step (on a GPU: while it waits for it).
:class:`Prefetched` wraps a :class:`~pipeline.training.moving.MovingStream`:

* ``next`` returns the batches in the stream's order, with the stream's state
  as it was right after each (:meth:`Prefetched.state`: what a checkpoint
  saves, so a resume continues after the last batch *trained*, not the last
  one made);
* :meth:`Prefetched.move` hands a window to the thread, which moves the stream
  before its next batch (the batches already made are served first; of
  several windows handed over meanwhile, it moves onto the newest);
* an error in the thread (a bad shard) is raised by the next ``next``;
* :meth:`Prefetched.close` stops the thread.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

from pipeline.training.batches import Batch
from pipeline.training.moving import MovingStream
from pipeline.training.window import Window

__all__ = ["Prefetched"]

_POLL_S = 0.1


class Prefetched:
    """Batches of ``stream`` made ``depth`` ahead by one thread (see the module's text)."""

    def __init__(self, stream: MovingStream, depth: int = 2) -> None:
        if depth < 1:
            raise ValueError(f"prefetch depth must be >= 1, got {depth}")
        self.stream = stream
        self.made: queue.Queue[tuple[Batch, dict[str, Any]] | BaseException] = queue.Queue(depth)
        self.windows: queue.SimpleQueue[Window] = queue.SimpleQueue()
        self.last_state = stream.state()
        self.stopping = threading.Event()
        self.failed = False
        self.thread = threading.Thread(target=self._run, name="zerochess-prefetch", daemon=True)
        self.thread.start()

    def move(self, window: Window) -> None:
        """Move the stream onto ``window`` before the next batch the thread makes."""
        self.windows.put(window)

    def state(self) -> dict[str, Any]:
        """The stream's state after the last batch ``next`` returned."""
        return self.last_state

    def __iter__(self) -> Prefetched:
        return self

    def __next__(self) -> Batch:
        if self.failed:
            raise RuntimeError("the prefetch thread failed earlier: make a new stream")
        item = self.made.get()
        if isinstance(item, BaseException):
            self.failed = True
            raise item
        batch, self.last_state = item
        return batch

    def close(self) -> None:
        """Stop the thread (the batches made are dropped)."""
        self.stopping.set()
        while self.thread.is_alive():
            try:
                self.made.get_nowait()  # a thread blocked on a full queue sees the stop
            except queue.Empty:
                pass
            self.thread.join(_POLL_S)

    def _run(self) -> None:
        while not self.stopping.is_set():
            try:
                latest = None
                while True:  # the windows handed over since the last batch: the newest is enough
                    try:
                        latest = self.windows.get_nowait()
                    except queue.Empty:
                        break
                if latest is not None:
                    self.stream.move(latest)
                item: tuple[Batch, dict[str, Any]] | BaseException = (
                    next(self.stream),
                    self.stream.state(),
                )
            except Exception as error:  # noqa: BLE001 - handed to the trainer's thread, which rebuilds
                item = error
            if not self._put(item) or isinstance(item, BaseException):
                return

    def _put(self, item: tuple[Batch, dict[str, Any]] | BaseException) -> bool:
        while not self.stopping.is_set():
            try:
                self.made.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False
