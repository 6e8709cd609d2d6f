"""The C++ core's settings start from the Python defaults: one home per setting.

``models/native/driver.h`` (``GamesConfig``, ``DriverConfig``, ``MatchConfig``) and
``search.h`` (``SearchParams``) repeat the defaults of the dataclasses Python copies
into them field by field; a field whose C++ default differs would change behaviour
the day a caller leaves it unset.
"""

from __future__ import annotations

import dataclasses

import pytest

from models import _native
from models.driver_settings import GamesSettings, SelfPlayRules
from models.search_config import SearchConfig

REQUIRED_GAMES_FIELDS = {"games", "games_in_flight", "seed", "start_fens"}
"""GamesSettings fields with no default (or one Python computes): no C++ default to compare."""


def _shared_defaults(bound: object, settings: object, skip: set[str] = frozenset()) -> list[tuple[str, object, object]]:
    pairs = []
    for field in dataclasses.fields(settings):
        if field.name in skip or not hasattr(bound, field.name):
            continue
        pairs.append((field.name, getattr(bound, field.name), getattr(settings, field.name)))
    return pairs


@pytest.mark.parametrize(
    ("bound", "settings", "skip"),
    [
        (_native.SearchParams(), SearchConfig(), set()),
        (_native.DriverConfig().search, SearchConfig(), set()),
        (_native.DriverConfig(), SelfPlayRules(), set()),
        (_native.DriverConfig(), GamesSettings(games=1, games_in_flight=1, seed=0), REQUIRED_GAMES_FIELDS),
        (_native.MatchConfig(), GamesSettings(games=1, games_in_flight=1, seed=0), REQUIRED_GAMES_FIELDS),
    ],
    ids=["SearchParams", "DriverConfig.search", "DriverConfig-rules", "DriverConfig-games", "MatchConfig-games"],
)
def test_every_cxx_default_equals_the_python_default(bound, settings, skip) -> None:
    pairs = _shared_defaults(bound, settings, skip)
    assert len(pairs) >= 3, "the bound config shares almost no field: names drifted?"
    differ = [(name, cxx, python) for name, cxx, python in pairs if cxx != python]
    assert differ == [], f"C++ default != Python default (name, C++, Python): {differ}"
