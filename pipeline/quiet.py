"""Quiet by default: the libraries' notices that tell a zerochess user nothing.

``zerochess`` calls :func:`quiet_libraries` unless ``--verbose`` is given.
Progress bars, the status lines and every warning or error stay.
``zerochess run`` goes further (:func:`report_only`): its output is its
report, one line a generation.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator

# Lightning's rank-zero notices (its hardware lines, "💡 Tip: ... litlogger",
# "`Trainer.fit` stopped: `max_steps=100` reached", checkpoint restores) and
# its seed line: zerochess's own lines say what matters.  They go to
# Lightning's own console handler, whatever the root logger's level.
_LIGHTNING_LOGGERS = (
    "lightning.pytorch.utilities.rank_zero",
    "lightning.fabric.utilities.rank_zero",
    "lightning.fabric.utilities.seed",
)


class _WarningsOnly(logging.Filter):
    """Lets warnings and errors through and drops the rest."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING


def quiet_libraries() -> None:
    """Silence Lightning's notices (its warnings stay), matplotlib's
    font-cache notice, MLflow's database set-up lines and its artifact
    download bar (idempotent)."""
    for name in _LIGHTNING_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _WarningsOnly) for f in logger.filters):
            logger.addFilter(_WarningsOnly())
    logging.getLogger("matplotlib").setLevel(logging.ERROR)
    logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)  # "Creating initial MLflow database tables"
    # MLflow's "Downloading artifacts" bar (tqdm on stderr, as \r frames even
    # when piped): e.g. --checkpoint champion.  A user's own setting stays.
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")


def report_only() -> None:
    """Keep log records below warnings out of ``zerochess run``'s output (its
    report lines are printed, not logged): the loop's own progress notes
    (``pipeline.training.trainer``, ``pipeline.training.window``,
    ``pipeline.evaluation.gating``), Lightning's (```Trainer.fit` stopped``,
    its checkpoint restores) and MLflow's.  Warnings and errors stay;
    ``--verbose`` does not call it."""
    import lightning.pytorch  # noqa: F401 - its import sets its logger to INFO: set the level after it

    for name in ("", "lightning", "lightning.pytorch", "lightning.fabric"):
        logging.getLogger(name).setLevel(logging.WARNING)


@contextlib.contextmanager
def native_stderr_muted(enabled: bool = True) -> Iterator[None]:
    """Silence what C++ code writes to file descriptor 2 while the block runs.

    For a call that logs a notice synchronously from Ray's C++ core, e.g.
    creating an actor whose constructor takes an object-store reference with
    ``max_restarts > 0`` (``core_worker.cc``: "has constructor arguments in
    the object store"): zerochess keeps the reference alive for the actors'
    whole life, so the notice does not apply.  Keep the block to that call:
    anything else written to stderr meanwhile is lost too.  With
    ``enabled=False`` (``--verbose``) nothing is muted."""
    if not enabled:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)
