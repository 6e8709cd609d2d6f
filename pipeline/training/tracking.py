"""MLflow tracking of training runs.

The store is MLflow 3's embedded default kind, a SQLite file, placed in the
run folder (``sqlite:///<out>/mlflow.db``, artifacts in ``<out>/mlartifacts``)
unless ``MLFLOW_TRACKING_URI`` (or an explicit URI) points elsewhere.
Lightning's ``MLFlowLogger`` is always given the URI: its default is the file
store, which MLflow 3 refuses.

:class:`ResumableMLFlowLogger` continues an existing run on resume and drops
the metric values of the steps the run already has: a resumed trainer
recomputes the steps between its checkpoint and the kill (bit-identically),
and MLflow must keep one value per step.
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lightning.pytorch.loggers import MLFlowLogger
from lightning.pytorch.utilities import rank_zero_only

__all__ = [
    "ResumableMLFlowLogger",
    "default_tracking_uri",
    "git_commit",
    "mark_training_experiment",
    "mlflow_runs_url",
    "mlflow_ui_command",
    "mlflow_ui_hint",
    "resolve_tracking_uri",
]

log = logging.getLogger(__name__)

TRACKING_DB = "mlflow.db"
ARTIFACT_DIR = "mlartifacts"
GIT_COMMIT_TAG = "mlflow.source.git.commit"
MAX_PARAM_LENGTH = 6000


EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
TRAINING_KIND = "custom_model_development"
"""The experiment kind of model training.  MLflow 3.17's UI shows it but
does not choose its GenAI or model-training side by it: the address of
:func:`mlflow_runs_url` does."""


def mark_training_experiment(client: Any, experiment_id: str) -> None:
    """Tag the experiment as model training (an experiment that already has a
    kind keeps it)."""
    experiment = client.get_experiment(experiment_id)
    if EXPERIMENT_KIND_TAG not in (experiment.tags or {}):
        client.set_experiment_tag(experiment_id, EXPERIMENT_KIND_TAG, TRAINING_KIND)


def mlflow_ui_command(tracking_uri: str) -> str:
    """The shell command that opens ``tracking_uri`` in MLflow's UI, with the
    ``mlflow`` of this Python's environment (the venv need not be active) and
    the UI on 127.0.0.1 only."""
    import shlex
    import sys

    mlflow = Path(sys.executable).parent / "mlflow"
    program = os.path.relpath(mlflow) if not os.path.relpath(mlflow).startswith("..") else str(mlflow)
    return f"{shlex.quote(program)} ui --backend-store-uri {shlex.quote(tracking_uri)} --host 127.0.0.1"


UI_PORT = 5000
"""The port ``mlflow ui`` listens on unless given ``--port``."""


WORKFLOW = "workflowType=machine_learning"
"""The address parameter that opens MLflow 3.17's UI on its model-training side."""


def mlflow_runs_url(experiment_id: str, port: int = UI_PORT) -> str:
    """The address of ``experiment_id``'s runs table in ``mlflow ui`` on
    127.0.0.1:``port``.

    MLflow 3.17's UI chooses between its GenAI and model-training sides from
    the ``workflowType`` parameter of the address, else from the browser's
    last choice (GenAI at first), whatever the experiment's kind tag says:
    ``machine_learning`` opens the model-training side, on the *Runs* tab."""
    return f"http://127.0.0.1:{port}/#/experiments/{experiment_id}/runs?{WORKFLOW}"


def mlflow_ui_hint(tracking_uri: str, experiment_id: str) -> str:
    """What ``zerochess run`` prints at the end: the ``mlflow ui`` command of
    its store, then the address of its experiment's runs."""
    return f"compare runs: {mlflow_ui_command(tracking_uri)}\n  then open {mlflow_runs_url(experiment_id)}"


def default_tracking_uri(out_dir: str | os.PathLike[str]) -> str:
    """``sqlite:///<absolute out_dir>/mlflow.db``."""
    return f"sqlite:///{(Path(out_dir) / TRACKING_DB).resolve()}"


def resolve_tracking_uri(
    out_dir: str | os.PathLike[str], explicit: str | None = None
) -> tuple[str, str | None]:
    """(tracking URI, artifact location or None for the store's default).

    ``explicit``, else ``MLFLOW_TRACKING_URI``, else the run folder's SQLite
    file, whose artifacts go to ``<out>/mlartifacts``.
    """
    uri = explicit or os.environ.get("MLFLOW_TRACKING_URI", "")
    if uri:
        return uri, None
    return default_tracking_uri(out_dir), (Path(out_dir) / ARTIFACT_DIR).resolve().as_uri()


def git_commit(path: str | os.PathLike[str] | None = None) -> tuple[str | None, bool]:
    """(HEAD commit, whether tracked files differ from it) of the repository holding ``path``.

    ``(None, False)`` outside a git checkout or without git.
    """
    folder = Path(path) if path is not None else Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(folder), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None, False
    return commit or None, bool(status.strip())


class ResumableMLFlowLogger(MLFlowLogger):
    """``MLFlowLogger`` that, continuing an existing run, logs no step twice.

    With ``run_id`` set, the first ``log_metrics`` call reads the last step
    the run holds for each metric and from then on drops values at or before
    it.  Without ``run_id`` it behaves as ``MLFlowLogger``.  ``step_offset``
    is added to every step (a loop's generation ``g`` starts where the
    training of the generations before it ended).
    """

    def __init__(self, *args: Any, step_offset: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.step_offset = step_offset
        self._resuming = kwargs.get("run_id") is not None
        self._logged_until: dict[str, int] | None = None

    @property
    def resuming(self) -> bool:
        """Whether this logger continues an existing run."""
        return self._resuming

    def last_logged_steps(self) -> dict[str, int]:
        """The last step the run holds for each of its metrics."""
        client = self.experiment
        keys = client.get_run(self.run_id).data.metrics.keys()
        return {
            key: max((m.step for m in client.get_metric_history(self.run_id, key)), default=-1)
            for key in keys
        }

    @rank_zero_only
    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        if step is not None:
            step += self.step_offset
        if self._resuming and self._logged_until is None:
            self._logged_until = self.last_logged_steps()
            log.info(
                "resuming MLflow run %s: it holds steps up to %s",
                self.run_id,
                max(self._logged_until.values(), default=-1),
            )
        if self._logged_until:
            current = step or 0
            metrics = {k: v for k, v in metrics.items() if current > self._logged_until.get(k, -1)}
        if metrics:
            super().log_metrics(metrics, step)

    @rank_zero_only
    def log_params(self, params: Mapping[str, Any]) -> None:
        """Log the params the run does not have yet; warn about any whose value changed.

        (MLflow refuses to change a param, and a resumed run may have another
        ``max_steps``.)
        """
        from mlflow.entities import Param

        existing = self.experiment.get_run(self.run_id).data.params
        new = []
        for key, value in params.items():
            text = str(value)[:MAX_PARAM_LENGTH]
            if key not in existing:
                new.append(Param(key, text))
            elif existing[key] != text:
                log.warning(
                    "param %s was %r in MLflow run %s, now %r (kept the first)",
                    key,
                    existing[key],
                    self.run_id,
                    text,
                )
        for start in range(0, len(new), 100):
            self.experiment.log_batch(self.run_id, params=new[start : start + 100])

    @rank_zero_only
    def set_tags(self, tags: Mapping[str, str]) -> None:
        for key, value in tags.items():
            self.experiment.set_tag(self.run_id, key, value)

    @rank_zero_only
    def mark_running(self) -> None:
        """Set a resumed run (left RUNNING, FAILED or KILLED) back to RUNNING."""
        self.experiment.update_run(self.run_id, status="RUNNING")

    @rank_zero_only
    def log_artifact(self, path: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        self.experiment.log_artifact(self.run_id, os.fspath(path), artifact_path)
