"""The drivers' settings declared once (models.driver_settings) and copied,
field by field under the same names, into the native core's config classes
(models.native_drivers.native_config, models.native_tree.search_params)."""

from __future__ import annotations

import math
from dataclasses import fields

import chess
import pytest

from models import _native
from models.driver_settings import DriverConfigError, GamesSettings, SelfPlayRules, settings_from
from models.native_drivers import native_config
from models.native_tree import search_params
from models.search_config import SearchConfig

KRK = "4k3/8/8/8/8/8/8/R3K3 w - - 0 1"
GAMES = GamesSettings(games=7, games_in_flight=3, seed=-5, policy_encoding="lc0_1858", start_fens=(KRK,),
                      random_plies=2, max_plies=99, threads=2, id_prefix="x")  # fmt: skip
RULES = SelfPlayRules(full_search_prob=0.3, fast_simulations=9, resign_threshold=-0.8, resign_plies=4,
                      resign_playthrough=0.2, draw_adjudication_plies=40, draw_adjudication_window=11,
                      draw_adjudication_q=0.07, draw_adjudication_playthrough=0.4)  # fmt: skip


def _same(got: object, want: object) -> bool:
    if isinstance(want, float):
        return math.isclose(float(got), want)  # type: ignore[arg-type]
    if isinstance(want, tuple):
        return list(got) == list(want)  # type: ignore[call-overload]
    return got == want


def test_every_self_play_setting_reaches_the_core() -> None:
    search = SearchConfig(num_simulations=17, algorithm="gumbel", fpu_mode="absolute")
    config = native_config(GAMES, (search,), RULES)
    assert isinstance(config, _native.DriverConfig)
    for settings in (GAMES, RULES):
        for field in fields(settings):
            if field.name in ("id_prefix", "seed"):
                continue
            want = getattr(settings, field.name)
            assert _same(getattr(config, field.name), want), field.name
    assert config.seed == (-5) & (2**64 - 1)
    assert (
        config.search.num_simulations == 17 and config.search.gumbel and config.search.fpu_absolute
    )


def test_a_match_config_holds_both_searches() -> None:
    config = native_config(
        GAMES, (SearchConfig(num_simulations=3), SearchConfig(num_simulations=5))
    )
    assert isinstance(config, _native.MatchConfig)
    assert (config.search_a.num_simulations, config.search_b.num_simulations) == (3, 5)
    assert config.games == 7 and config.start_fens == [KRK]


def test_search_params_copies_every_search_field() -> None:
    search = SearchConfig()
    values = {f.name: getattr(search, f.name) for f in fields(search)}
    changed = {name: value * 2 if isinstance(value, (int, float)) and not isinstance(value, bool) else value
               for name, value in values.items()}  # fmt: skip
    changed.update(solver=not search.solver, solver_threats=not search.solver_threats)
    changed["dirichlet_epsilon"] = 0.5
    changed.update(moves_left_threshold=0.4, moves_left_slope=0.01)  # in [0, 1); 0 doubled stays 0
    params = search_params(SearchConfig(**changed))
    for name, value in changed.items():
        if name in ("backend", "fpu_mode", "algorithm"):
            continue
        assert _same(getattr(params, name), value), name


def test_default_start_is_the_starting_position() -> None:
    assert GamesSettings(games=1, games_in_flight=1, seed=0).start_fens == (chess.STARTING_FEN,)


@pytest.mark.parametrize(
    ("key", "value"),
    [("seed", 1.5), ("policy_encoding", "az9999"), ("start_fens", KRK), ("threads", True),
     ("draw_adjudication_q", math.nan), ("full_search_prob", math.nan)],
)  # fmt: skip
def test_bad_settings_name_the_field(key: str, value: object) -> None:
    with pytest.raises(ValueError, match=key if key != "policy_encoding" else "az9999"):
        settings_from(**{"games": 1, "games_in_flight": 1, "seed": 0, key: value})


def test_unknown_keyword_is_named() -> None:
    with pytest.raises(DriverConfigError, match="draw_adjudication_ply"):
        settings_from(games=1, games_in_flight=1, seed=0, draw_adjudication_ply=3)


@pytest.mark.parametrize(
    ("key", "value"),
    [("games", -1), ("games_in_flight", 0), ("threads", 0), ("max_plies", 0), ("fast_simulations", 0),
     ("resign_threshold", -1.5), ("draw_adjudication_q", 0.0), ("full_search_prob", math.nan)],
)  # fmt: skip
def test_the_core_checks_a_config_written_directly(key: str, value: float) -> None:
    """The bound configs are writable from Python: the core checks them
    again and names the field instead of misbehaving."""
    config = native_config(
        GamesSettings(games=1, games_in_flight=1, seed=0), (SearchConfig(),), SelfPlayRules()
    )
    setattr(config, key, value)
    with pytest.raises(_native.ChessError, match=key):
        _native.SelfPlayCore(config)
    if key in ("games", "games_in_flight", "threads", "max_plies"):
        match = native_config(
            GamesSettings(games=1, games_in_flight=1, seed=0), (SearchConfig(), SearchConfig())
        )
        setattr(match, key, value)
        with pytest.raises(_native.ChessError, match=key):
            _native.MatchCore(match)
