"""The champion: the net ``zerochess run`` promoted last, as MLflow's registry names it.

Imports nothing heavy (no torch, no MLflow), so the CLI's ``--help`` can name
these values.  :mod:`pipeline.uci.loading` loads the champion's weights.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CHAMPION", "DEFAULT_MODEL_NAME", "DEFAULT_RUN", "champion_store"]

CHAMPION = "champion"
"""The ``--checkpoint`` value (and registry alias) of the current best network."""

DEFAULT_MODEL_NAME = "zerochess"
"""Registered model name searched for the ``champion`` alias."""

DEFAULT_RUN = "runs/pipeline"
"""``zerochess run``'s default ``--out``: its ``mlflow.db`` holds the champion."""


def champion_store(tracking_uri: str | None, run_folder: str) -> str:
    """The MLflow store the champion is read from: ``tracking_uri``, else
    ``MLFLOW_TRACKING_URI`` (as ``zerochess run`` itself uses it), else the run
    folder's ``mlflow.db``, where ``zerochess run`` registers it."""
    if tracking_uri:
        return tracking_uri
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    return f"sqlite:///{Path(run_folder).resolve() / 'mlflow.db'}"
