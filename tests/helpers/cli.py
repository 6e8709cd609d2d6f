"""The ``zerochess`` command line in a child process, as a user types it: the
command, ``--set`` pairs, the child's environment and a runner."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping

from . import ROOT

INHERITED_STORES = ("MLFLOW_TRACKING_URI", "RAY_ADDRESS")
"""Variables a child run must not inherit: it writes its own MLflow store and starts its own Ray."""


def zerochess_command(*args: str) -> list[str]:
    """``python -m zerochess ARGS`` with this interpreter."""
    return [sys.executable, "-m", "zerochess", *args]


def set_args(settings: list[str] | Mapping[str, object]) -> list[str]:
    """``--set KEY=VALUE`` for each setting (``KEY=VALUE`` strings, or a mapping)."""
    items = [f"{key}={value}" for key, value in settings.items()] if isinstance(settings, Mapping) else settings
    return [arg for item in items for arg in ("--set", item)]


def child_env(ray_auth: str | None = None, **extra: str) -> dict[str, str]:
    """This environment for a child ``zerochess``: without :data:`INHERITED_STORES`,
    with ``RAY_AUTH_MODE`` set to ``ray_auth`` where given (``token`` as
    ``zerochess`` runs it, ``disabled`` for a throwaway cluster), plus ``extra``."""
    env = {name: value for name, value in os.environ.items() if name not in INHERITED_STORES}
    if ray_auth is not None:
        env["RAY_AUTH_MODE"] = ray_auth
    return {**env, **extra}


def run_zerochess(*args: str, env: Mapping[str, str] | None = None, timeout: float = 300,
                  stdin: str | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``zerochess ARGS`` run to its end from the repository root, its output
    captured as text (no exception on a failure); ``env`` defaults to
    :func:`child_env`, ``stdin`` is the text typed in (none: no input)."""
    return subprocess.run(zerochess_command(*args), cwd=ROOT, env=dict(env) if env is not None else child_env(),
                          capture_output=True, text=True, timeout=timeout, check=False,
                          **({"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}))  # fmt: skip
