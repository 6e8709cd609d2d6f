"""Fixtures shared by several test modules (the helpers they share are in ``tests/helpers/``)."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

from tests.helpers import BACKENDS, ROOT

if TYPE_CHECKING:
    from models.search_config import SearchConfig

BENCH = ROOT / "bench"
EXPERIMENTS = ROOT / "experiments"


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


@pytest.fixture()
def learning(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    """``experiments/learning.py``, loaded anew for each test (tests patch its functions)."""
    return bench_script("learning")


@pytest.fixture(scope="session")
def shard_folder(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """Makes (once per session for each set of arguments) a folder of shards by
    real self-play: ``shard_folder(**make_shards_arguments)``, see
    ``tests.helpers.shards.make_shards``.  The folders are shared: read them,
    copy one to change it."""
    from tests.helpers.shards import make_shards

    made: dict[tuple[tuple[str, object], ...], Path] = {}

    def make(**arguments: object) -> Path:
        key = tuple(sorted(arguments.items()))
        if key not in made:
            directory = tmp_path_factory.mktemp("shards")
            make_shards(directory, **arguments)  # type: ignore[arg-type]
            made[key] = directory
        return made[key]

    return make


@pytest.fixture(scope="session")
def data_dir(shard_folder: Callable[..., Path]) -> Path:
    """Three real self-play shards of three games (up to 14 plies), about
    half of the positions full searches (training rows); shared: read only."""
    return shard_folder(shards=3, games=3, max_plies=14, full_search_prob=0.5)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Each search backend's name."""
    return str(request.param)


@pytest.fixture()
def search(backend: str) -> SearchConfig:
    """``tests.helpers.searches.TINY_SEARCH`` on each backend."""
    from tests.helpers.searches import TINY_SEARCH

    return replace(TINY_SEARCH, backend=backend)
