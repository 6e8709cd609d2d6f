"""PGN conversion on Ray: one task per file, several files at once.

Each task runs a :class:`~pipeline.supervised.convert.PgnFileConverter` and
streams its progress back (a Ray streaming generator: progress events, then
the file's report), so the driver's progress bar moves while big files are
read and the driver never polls. The driver assigns every file its tag (its
position in the sorted input list), which names the file's shards: a task
that Ray retries after its worker died rewrites the same shards. At most
``supervised.workers`` tasks run at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import ray

from pipeline.config import from_dict, to_dict
from pipeline.supervised.config import SupervisedConfig
from pipeline.supervised.convert import (
    ConversionReport,
    FileReport,
    PgnFileConverter,
    Progress,
    file_tag,
)

__all__ = ["convert_files_on_ray"]

log = logging.getLogger(__name__)


def _convert_one(path: str, out: str, tag: str, settings: dict[str, Any],
                 policy_encoding: str) -> Iterator[Progress | FileReport]:
    """The body of a conversion task: progress events, then the file's report."""
    config = from_dict(SupervisedConfig, settings, "supervised", "task settings")
    converter = PgnFileConverter(path, out, tag, config, policy_encoding)
    yield from converter.run()
    yield converter.report


def convert_files_on_ray(
    files: Sequence[Path],
    out: str,
    settings: SupervisedConfig,
    policy_encoding: str,
    on_progress: Callable[[Progress], None] | None = None,
) -> ConversionReport:
    """Converts ``files`` with at most ``settings.workers`` Ray tasks at a time.

    Ray must be initialised (``actors.runtime.init_ray``); ``OUT`` must be
    prepared (:func:`pipeline.supervised.splits.prepare_output`).
    ``on_progress`` gets every progress event of every file.
    """
    task = ray.remote(num_returns="streaming", num_cpus=settings.cpus_per_worker,
                      max_retries=settings.max_retries)(_convert_one)
    plain = to_dict(settings)
    queue = [(str(path), file_tag(index)) for index, path in enumerate(files)]
    queue.reverse()
    running: list[Any] = []
    reports: dict[str, FileReport] = {}
    started = time.perf_counter()
    while queue or running:
        while queue and len(running) < settings.workers:
            path, tag = queue.pop()
            running.append(task.remote(path, out, tag, plain, policy_encoding))
        ready, running = ray.wait(running, num_returns=1)
        for stream in ready:
            try:
                item = ray.get(next(stream))
            except StopIteration:
                continue
            if isinstance(item, FileReport):
                reports[item.tag] = item
            elif on_progress is not None:
                on_progress(item)
            running.append(stream)
    ordered = [reports[file_tag(index)] for index in range(len(files))]
    return ConversionReport(ordered, time.perf_counter() - started)
