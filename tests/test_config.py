"""The one configuration: params.yaml, validation, overrides, flattening."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipeline.config import Config, ConfigError, flatten, load_config, to_dict
from tests.helpers import ROOT


def test_shipped_params_yaml_is_valid_and_complete() -> None:
    load_config(ROOT / "params.yaml")
    shipped = yaml.safe_load((ROOT / "params.yaml").read_text())
    declared = to_dict(Config())
    # Every declared key is written out, so params.yaml documents them all.
    assert _keys(shipped) == _keys(declared)


def _keys(tree: dict, prefix: str = "") -> set[str]:
    keys = set()
    for key, value in tree.items():
        keys |= _keys(value, f"{prefix}{key}.") if isinstance(value, dict) else {prefix + key}
    return keys


def test_flatten_gives_dotted_scalar_keys() -> None:
    flat = flatten(Config())
    assert flat["search.num_simulations"] == 200
    assert flat["net.policy_encoding"] == "az4672"
    assert all(not isinstance(value, dict) for value in flat.values())


def test_overrides_are_parsed_and_validated() -> None:
    config = load_config(None, ["search.num_simulations=50", "net.policy_encoding=lc0_1858"])
    assert config.search.num_simulations == 50
    assert config.net.policy_encoding == "lc0_1858"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("search.num_simulations=-1", "num_simulations.*-1"),
        ("search.bogus=1", "unknown key.*search.bogus"),
        ("bogus.key=1", "unknown key.*bogus"),
        ("search.num_simulations=many", "search.num_simulations must be an integer.*many"),
        ("net.blocks=2.5", "net.blocks must be an integer"),
        ("search.fpu_mode=sideways", "fpu_mode"),
        ("selfplay.device=tpu", "selfplay.device"),
        ("search.backend=cuda", "search.backend must be one of.*'cuda'"),
        ("selfplay.search_threads=0", "selfplay.search_threads must be >= 1, got 0"),
        ("search", "expected key=value"),
        # self-play adjudication
        ("selfplay.material_margin=0", "selfplay.material_margin must be >= 1"),
        ("selfplay.stockfish_adjudication_cp=-5", "selfplay.stockfish_adjudication_cp must be >= 0"),
        ("selfplay.adjudicate_material=sometimes", "selfplay.adjudicate_material must be true or false"),
        # endgame curricula
        ("selfplay.curriculum=[{until_generation: 3, kinds: [KQK]}, {until_generation: 2, kinds: [KRK]}]",
         "must be > 3"),
        ("selfplay.curriculum=[{kinds: [KQK]}, {until_generation: 2, kinds: [KRK]}]", "only the last stage"),
        ("selfplay.curriculum=[{kinds: [KXK]}]", "unknown piece letter"),
        ("selfplay.curriculum=[{kinds: [KQK], full_games: 2}]", "full_games must be in"),
        ("selfplay.curriculum=[{until_generation: 2}]", "needs kinds or start_positions"),
        ("selfplay.curriculum=[{kinds: [KQK], level: 2}]", "unknown key.*selfplay.curriculum\\[0\\].level"),
    ],
)
def test_bad_values_name_the_key(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(None, [override])


def test_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "params.yaml"
    bad.write_text("search:\n  num_simulations: 0\n")
    with pytest.raises(ConfigError, match=str(bad)):
        load_config(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.yaml")
    bad.write_text("search: [1, 2\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


@pytest.mark.parametrize("preset", ["tiny", "cpu", "gpu", "cluster", "endgame", "demo"])
def test_every_preset_loads_over_params_yaml(preset: str) -> None:
    config = load_config(ROOT / "params.yaml", preset=preset)
    assert config.search.backend == "native"
    if preset in ("gpu", "cluster"):  # many games in flight on several C++ search threads per GPU actor
        assert config.selfplay.games_per_task >= 512 and config.selfplay.search_threads >= 4


RECIPE = {  # the measured recipe (docs/results), params.yaml's values
    "search.algorithm": "gumbel", "search.twofold_draw": True, "search.moves_left_slope": 0.0027,
    "search.moves_left_cap": 0.0345, "net.value_head": "wdl", "net.moves_left": True, "net.soft_policy": True,
    "train.soft_policy_weight": 1.0, "train.weight_average_decay": 0.99, "selfplay.adjudicate_material": True,
}  # fmt: skip


def test_params_yaml_holds_the_measured_recipe_and_tiny_pins_alphazero() -> None:
    recipe = flatten(load_config(ROOT / "params.yaml"))
    assert {key: recipe[key] for key in RECIPE} == RECIPE
    cpu = flatten(load_config(ROOT / "params.yaml", preset="cpu"))
    assert {key: cpu[key] for key in RECIPE} == RECIPE
    embedded, tiny = flatten(Config()), flatten(load_config(ROOT / "params.yaml", preset="tiny"))
    assert {key: tiny[key] for key in RECIPE} == {key: embedded[key] for key in RECIPE}  # AlphaZero's choices
    assert tiny["search.algorithm"] == "puct" and tiny["net.value_head"] == "scalar"
