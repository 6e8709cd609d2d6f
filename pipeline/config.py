"""The one configuration of zerochess: typed dataclasses, values in ``params.yaml``.

Every parameter is declared once, here or in the ``models`` dataclasses this
module composes (``NetConfig``, ``SearchConfig``), and documented where it is
declared.  ``params.yaml`` holds the values; the CLI (``--set key=value``),
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
from models.search import SearchConfig
from pipeline.config_errors import ConfigError, check_inference
from pipeline.curriculum import CurriculumStage, check_curriculum, check_curriculum_measure
from pipeline.evaluation.config import GatingConfig
from pipeline.loop_config import RunConfig, check_async_measure, check_training_devices
from pipeline.supervised.config import SupervisedConfig
from pipeline.training.config import TrainConfig


__all__ = ["Config", "ConfigError", "DemoConfig", "GatingConfig", "RunConfig", "SelfPlayConfig", "TrainConfig", "load_config"]


@dataclass(frozen=True)
class SelfPlayConfig:
    """Self-play games and the workers that play them.

    Attributes:
        games_per_task: games one worker task plays side by side (their
            leaves share each network batch) and writes as one shard.
        overlap_inference: python backend (``search.backend: python``):
            split the games into two lanes so the network evaluates one
            lane's leaves while the search works on the other's.  Worth it
            when the network runs on a GPU; on a 2-core CPU the two compete
            for the cores (see ``bench/selfplay.py``).  The native backend
            always has two lanes and overlaps them when this is true or the
            network runs on CUDA; on a CPU it evaluates them in turn
            (measured: +15-18% evaluations/s, network-bound share 0.98-1.00
            against 0.84-0.94 with the 2x32 net on 2 cores).
        search_threads: C++ threads of the native search that drive one
            worker's games (``search.backend: native``; the python backend
            searches on one thread).  1 on a small CPU, where the network
            needs the cores; 4-8 per GPU actor, with enough games in flight
            (``games_per_task``) to fill both the threads and the batches.
        max_plies: a game reaching this many plies ends as a draw
            (termination ``max_plies``).
        full_search_prob: playout cap randomization (KataGo): the share of
            moves searched with ``search.num_simulations`` and recorded as
            training targets; the others get ``fast_simulations``, no noise,
            and are stored with ``full_search = false``.  1.0 turns it off.
        fast_simulations: simulations of a fast (cheap) search.
        resign_threshold: a side resigns when its root value stays below this
            for ``resign_plies`` consecutive own moves; -1 disables resigning.
        resign_plies: consecutive own moves below the threshold to resign.
        resign_playthrough: share of games where resigning is disabled, to
            measure how often a resignation would have been wrong.
        draw_adjudication_plies: not AlphaZero (lc0/KataGo practice): a game
            of at least this many plies whose root |q| stayed below
            ``draw_adjudication_q`` for its last ``draw_adjudication_window``
            plies (either side's searches) ends as a draw, z = 0
            (termination ``draw_adjudicated``); 0 turns it off.
        draw_adjudication_window: consecutive plies of small root |q| that
            adjudicate a draw.
        draw_adjudication_q: root |q| below which a ply counts as drawish.
        draw_adjudication_playthrough: share of games where draw adjudication
            is disabled, to measure how often an adjudicated draw would have
            been a decisive game (``false_draws``).
        start_positions: EPD or FEN file (one position a line, ``#`` starts a
            comment) to draw start positions from; empty for the standard start.
        random_plies: uniformly random moves played from the start position
            before the game is recorded, for diversity.
        seed: seed for noise, temperature sampling and start positions.
        device: ``auto`` (CUDA when present, else CPU), ``cpu`` or ``cuda``.
        precision: number format of the network's forward: ``auto`` (bf16
            autocast on CUDA; on a CPU, bf16 only where it computes bf16
            natively, AMX-BF16 or AVX512-BF16, and a start-up calibration
            shows it faster; else fp32), ``fp32`` or ``bf16``
            (:mod:`models.precision`).  Reduced precision differs from CPU
            to CPU: the tiny preset (DVC, tests) pins ``fp32``.  Also the
            default of ``zerochess uci``/``play``/``analyse --precision``.
        compile: the inference graph (:mod:`models.inference_net`):
            ``auto`` (``jit`` on a CPU, ``eager`` on CUDA), ``eager`` (eager,
            batch norm folded), ``jit`` (traced and frozen: +5-10% over
            ``eager`` measured with both CPU nets, built in under a second) or
            ``inductor`` (``torch.compile``, one graph per batch-size bucket,
            ~10 s to build each on 2 cores).  A failed compilation falls
            back to ``eager`` with a warning.
        workers: self-play actors on Ray.
        cpus_per_worker: Ray ``num_cpus`` of each actor.
        gpus_per_worker: Ray ``num_gpus`` of each actor (fractions share a GPU).
        threads_per_worker: ``torch.set_num_threads`` inside each actor.
        max_restarts: Ray restarts of a dead actor.
        max_task_retries: Ray retries of a task whose actor died.
        adjudicate_material: not zero-knowledge (a deviation from AlphaZero,
            which draws every game at its length limit): a game reaching
            ``max_plies`` is won by the side ahead by at least
            ``material_margin`` points (P1 N3 B3 R5 Q9), else drawn;
            termination ``material`` (:mod:`pipeline.adjudication`).
        material_margin: points ahead that win a material adjudication.
        adjudicate_stockfish: not zero-knowledge: a game reaching
            ``max_plies`` is scored by a short Stockfish search of its final
            position: a win beyond ``stockfish_adjudication_cp`` (or a mate
            score), else a draw; termination ``stockfish_adjudication``.
            Stockfish missing is an error before the games start.
        stockfish_adjudication_cp: centipawns beyond which Stockfish's score wins.
        stockfish_adjudication_nodes: nodes of that Stockfish search.
        stockfish_path: Stockfish binary for the adjudication; empty:
            ``stockfish`` on PATH, else ``/usr/games/stockfish``.
        curriculum: not zero-knowledge: stages of endgame start positions,
            mixed with full games, by generation (:mod:`pipeline.curriculum`);
            empty: every game from ``start_positions``.
    """

    games_per_task: int = 64
    overlap_inference: bool = False
    search_threads: int = 1
    max_plies: int = 512
    full_search_prob: float = 0.25
    fast_simulations: int = 32
    resign_threshold: float = -0.95
    resign_plies: int = 3
    resign_playthrough: float = 0.1
    draw_adjudication_plies: int = 0
    draw_adjudication_window: int = 20
    draw_adjudication_q: float = 0.05
    draw_adjudication_playthrough: float = 0.1
    start_positions: str = ""
    random_plies: int = 0
    seed: int = 0
    device: str = "auto"
    precision: str = "auto"
    compile: str = "auto"
    workers: int = 2
    cpus_per_worker: float = 1.0
    gpus_per_worker: float = 0.0
    threads_per_worker: int = 1
    max_restarts: int = 3
    max_task_retries: int = 3
    adjudicate_material: bool = False
    material_margin: int = 3
    adjudicate_stockfish: bool = False
    stockfish_adjudication_cp: int = 300
    stockfish_adjudication_nodes: int = 20000
    stockfish_path: str = ""
    curriculum: tuple[CurriculumStage, ...] = ()

    def __post_init__(self) -> None:
        at_least_one = ("games_per_task", "max_plies", "fast_simulations", "resign_plies", "workers",
                        "threads_per_worker", "search_threads", "material_margin",
                        "stockfish_adjudication_nodes", "draw_adjudication_window")  # fmt: skip
        for name in at_least_one:
            _require(f"selfplay.{name}", getattr(self, name), getattr(self, name) >= 1, ">= 1")
        for name in ("random_plies", "cpus_per_worker", "gpus_per_worker", "max_restarts", "max_task_retries",
                     "draw_adjudication_plies"):  # fmt: skip
            _require(f"selfplay.{name}", getattr(self, name), getattr(self, name) >= 0, ">= 0")
        for name in ("full_search_prob", "resign_playthrough", "draw_adjudication_playthrough"):
            value = getattr(self, name)
            _require(f"selfplay.{name}", value, 0.0 <= value <= 1.0, "in [0, 1]")
        _require("selfplay.resign_threshold", self.resign_threshold, -1.0 <= self.resign_threshold <= 1.0, "in [-1, 1]")
        _require("selfplay.draw_adjudication_q", self.draw_adjudication_q, 0.0 < self.draw_adjudication_q <= 1.0,
                 "in (0, 1]")  # fmt: skip
        _require("selfplay.device", self.device, self.device in ("auto", "cpu", "cuda"), "auto, cpu or cuda")
        check_inference("selfplay", self.precision, self.compile)
        _require("selfplay.stockfish_adjudication_cp", self.stockfish_adjudication_cp,
                 self.stockfish_adjudication_cp >= 0, ">= 0")  # fmt: skip
        both = self.adjudicate_material and self.adjudicate_stockfish
        _require("selfplay.adjudicate_material", True, not both, "false when selfplay.adjudicate_stockfish is on")
        check_curriculum(self.curriculum)

    @property
    def resign_enabled(self) -> bool:
        return self.resign_threshold > -1.0

    @property
    def draw_adjudication_enabled(self) -> bool:
        return self.draw_adjudication_plies > 0


def _require(key: str, value: object, ok: bool, what: str) -> None:
    if not ok:
        raise ConfigError(f"{key} must be {what}, got {value!r}")


@dataclass(frozen=True)
class DemoConfig:
    """The short self-play demo that ``make demo`` runs.

    Attributes:
        games: games played side by side (their leaves share each network batch).
        max_plies: plies per demo game before it is adjudicated a draw.
        simulations: simulations per move in the demo.
    """

    games: int = 4
    max_plies: int = 60
    simulations: int = 64

    def __post_init__(self) -> None:
        for name in ("games", "max_plies", "simulations"):
            if getattr(self, name) < 1:
                raise ConfigError(f"demo.{name} must be >= 1, got {getattr(self, name)!r}")


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
        check_curriculum_measure(self.selfplay.curriculum, self.gating.measure)


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


PRESETS_DIR = Path(__file__).resolve().parents[1] / "presets"


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
