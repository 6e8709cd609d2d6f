"""Fixtures shared by several test modules."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


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


@pytest.fixture(scope="module")
def bench_script() -> Iterator[Callable[[str], ModuleType]]:
    """Loads ``bench/NAME.py`` or ``experiments/NAME.py`` (a script, not a package) as the module
    ``bench_NAME``, executed anew at each call: registered in ``sys.modules``
    (dataclasses look their module up) and with ``bench/`` on ``sys.path`` (a
    bench may import its neighbours, e.g. ``common``); both are undone after
    the test module."""
    with pytest.MonkeyPatch.context() as patch:

        def load(name: str) -> ModuleType:
            folder = BENCH if (BENCH / f"{name}.py").exists() else EXPERIMENTS
            patch.syspath_prepend(str(BENCH))
            patch.syspath_prepend(str(folder))
            spec = importlib.util.spec_from_file_location(f"bench_{name}", folder / f"{name}.py")
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            patch.setitem(sys.modules, spec.name, module)
            spec.loader.exec_module(module)
            return module

        yield load
