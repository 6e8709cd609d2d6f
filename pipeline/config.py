"""The one configuration of zerochess: typed dataclasses, values in ``params.yaml``.

Every parameter is declared once, in the section this module composes
(``models``' ``NetConfig`` and ``SearchConfig``, :mod:`pipeline.selfplay.config`,
:mod:`pipeline.training.config`, :mod:`pipeline.supervised.config`,
:mod:`pipeline.evaluation.config`, :mod:`pipeline.loop_config`, ``demo``
here), and documented where it is declared.  ``params.yaml`` holds the values; the CLI (``--set key=value``),
DVC (``params:``) and MLflow (flattened dotted keys) all read this same tree.
Unknown keys and values of the wrong type are errors that name the key and
the file.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from models.net import NetConfig
from models.search_config import SearchConfig
from pipeline.config_errors import ConfigError, check_at_least, require
from pipeline.evaluation.config import GatingConfig
from pipeline.loop_config import (
    RunConfig,
    check_async_measure,
    check_retention,
    check_training_devices,
)
from pipeline.resources import PRESETS_DIR
from pipeline.selfplay.config import SelfPlayConfig, check_curriculum_measure
from pipeline.supervised.config import SupervisedConfig
from pipeline.training.config import TrainConfig

__all__ = ["Config", "ConfigError", "DemoConfig", "GatingConfig", "RunConfig", "SelfPlayConfig", "TrainConfig", "load_config"]


@dataclass(frozen=True)
class DemoConfig:
    """The short self-play demo that ``make demo`` runs."""

    games: int = 4
    """games played side by side (their leaves share each network batch)."""
    max_plies: int = 60
    """plies per demo game before it is adjudicated a draw."""
    simulations: int = 64
    """simulations per move in the demo."""

    def __post_init__(self) -> None:
        check_at_least("demo", self, ("games", "max_plies", "simulations"), 1)


@dataclass(frozen=True)
class Config:
    """The whole parameter tree (the sections of ``params.yaml``)."""

    net: NetConfig = field(default_factory=NetConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    selfplay: SelfPlayConfig = field(default_factory=SelfPlayConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    supervised: SupervisedConfig = field(default_factory=SupervisedConfig)
    gating: GatingConfig = field(default_factory=GatingConfig)
    run: RunConfig = field(default_factory=RunConfig)
    demo: DemoConfig = field(default_factory=DemoConfig)

    def __post_init__(self) -> None:
        check_training_devices(self.run, self.train.devices)  # rules across sections
        check_async_measure(self.run, self.gating.measure)
        check_retention(self.run, self.train.window_positions, self.train.window_growth)
        check_curriculum_measure(self.selfplay.curriculum, self.gating.measure)
        require("train.soft_policy_weight", self.train.soft_policy_weight,
                self.train.soft_policy_weight == 0 or self.net.soft_policy, "0 unless net.soft_policy is true")  # fmt: skip


# ---------------------------------------------------------------------------
# Building from plain data


def from_dict(cls: type, data: Any, where: str = "", source: str = "<dict>") -> Any:
    """Build dataclass ``cls`` from nested mappings, rejecting unknown keys and
    values of the wrong type; validation errors name ``source`` and the key."""
    prefix = f"{where}." if where else ""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: {where or 'top level'} must be a mapping, got {data!r}")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        names = ", ".join(prefix + str(key) for key in unknown)
        raise ConfigError(f"{source}: unknown key(s) {names}; valid keys: {', '.join(prefix + k for k in fields)}")
    hints = typing.get_type_hints(cls)
    kwargs = {name: _convert(hints[name], value, prefix + name, source) for name, value in data.items()}
    try:
        return cls(**kwargs)
    except ConfigError:
        raise
    except ValueError as error:
        raise ConfigError(f"{source}: {error}") from error


def _convert(kind: Any, value: Any, key: str, source: str) -> Any:
    if dataclasses.is_dataclass(kind):
        return from_dict(kind, value, key, source)
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(kind)
        if value is None and type(None) in options:
            return None
        kind = next(option for option in options if option is not type(None))
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{source}: {key} must be a list, got {value!r}")
        (item,) = typing.get_args(kind)[:1]
        items = [_convert(item, element, f"{key}[{i}]", source) for i, element in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if kind is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{source}: {key} must be true or false, got {value!r}")
        return value
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{source}: {key} must be an integer, got {value!r}")
        return value
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{source}: {key} must be a number, got {value!r}")
        return float(value)
    if kind is str:
        if not isinstance(value, str):
            raise ConfigError(f"{source}: {key} must be a string, got {value!r}")
        return value
    raise ConfigError(f"{source}: {key} has an unsupported type {kind!r}")


def to_dict(config: Any) -> dict[str, Any]:
    """Nested plain data of a config (the shape of ``params.yaml``); tuples
    become lists."""
    return dataclasses.asdict(config, dict_factory=lambda items: {k: _plain(v) for k, v in items})


def _plain(value: Any) -> Any:
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else value


def flatten(config: Any) -> dict[str, Any]:
    """Dotted keys to scalar values, e.g. ``{"search.num_simulations": 200}``
    (the MLflow params and DVC ``-S`` keys)."""
    flat: dict[str, Any] = {}

    def walk(data: dict[str, Any], prefix: str) -> None:
        for key, value in data.items():
            if isinstance(value, dict):
                walk(value, f"{prefix}{key}.")
            else:
                flat[f"{prefix}{key}"] = value

    walk(to_dict(config), "")
    return flat


def apply_overrides(data: dict[str, Any], overrides: list[str], source: str = "--set") -> dict[str, Any]:
    """Apply ``key.sub=value`` strings (values parsed as YAML) to nested data."""
    merged = _deep_copy(data)
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"{source}: expected key=value, got {item!r}")
        parts = key.split(".")
        node = merged
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"{source}: {key} does not name a section")
        node[parts[-1]] = yaml.safe_load(raw)
    return merged


def _deep_copy(data: dict[str, Any]) -> dict[str, Any]:
    return {k: _deep_copy(v) if isinstance(v, dict) else v for k, v in data.items()}


def preset_names() -> list[str]:
    """The presets shipped in ``presets/`` (tiny, cpu, gpu, cluster, endgame)."""
    return sorted(path.stem for path in PRESETS_DIR.glob("*.yaml"))


def _read_yaml(path: str | Path) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read params file {path}: {error.strerror}") from error
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not a YAML text file (byte {error.start} is not UTF-8)") from error
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {error}") from error
    if loaded is not None and not isinstance(loaded, dict):
        raise ConfigError(f"{path}: top level must be a mapping")
    return loaded or {}


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = _deep_copy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_config(
    path: str | Path | None = None, overrides: list[str] | None = None, preset: str | None = None
) -> Config:
    """Load ``params.yaml`` (or the embedded defaults when ``path`` is None),
    then the ``preset`` (``presets/NAME.yaml``) merged over it, then overrides."""
    data: dict[str, Any] = {}
    source = "<defaults>"
    if path is not None:
        source = str(path)
        data = _read_yaml(path)
    if preset:
        if preset not in preset_names():
            raise ConfigError(f"unknown preset {preset!r}; presets: {', '.join(preset_names())}")
        data = _deep_merge(data, _read_yaml(PRESETS_DIR / f"{preset}.yaml"))
        source = f"{source} + preset {preset}"
    if not overrides:
        return from_dict(Config, data, "", source)
    from_dict(Config, data, "", source)  # the file's own errors name the file
    return from_dict(Config, apply_overrides(data, overrides), "", "--set")


def dump_yaml(config: Config) -> str:
    """``params.yaml`` text for ``config``."""
    return yaml.safe_dump(to_dict(config), sort_keys=False)
