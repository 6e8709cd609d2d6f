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
    from actors.runtime import use_auth_mode

    os.environ["RAY_AUTH_MODE"] = "token"  # the token: ~/.ray/auth_token, made by Ray on the first start
    use_auth_mode()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def torch_threads(request: pytest.FixtureRequest) -> Iterator[None]:
    """Torch's thread count set to the test module's ``TORCH_THREADS`` (1 if it
    has none) for the module, restored after it: tiny nets gain nothing from
    threads, and the machine's CPUs are shared.  A module takes it with
    ``pytestmark = pytest.mark.usefixtures("torch_threads")``."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(getattr(request.module, "TORCH_THREADS", 1))
    yield
    torch.set_num_threads(previous)
