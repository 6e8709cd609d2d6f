"""Fixtures shared by several test modules."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """A real local Ray cluster for one test module (never ``ray stop``),
    with token authentication on, as ``zerochess`` runs it."""
    ray = pytest.importorskip("ray")
    from actors.selfplay import use_auth_mode

    os.environ["RAY_AUTH_MODE"] = "token"  # the token: ~/.ray/auth_token, made by Ray on the first start
    use_auth_mode()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()
