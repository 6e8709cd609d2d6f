"""Players named on the command line, e.g. ``net:runs/net.pt:sims=200``,
``stockfish:skill=0:nodes=1000``, ``uct:rollouts=1000:rave=1``, ``random``.

A spec is a kind followed by ``:``-separated fields; ``key=value`` fields are
settings and, for ``net``, the first plain field is the checkpoint path.
"""

from __future__ import annotations

from dataclasses import dataclass

from models.net import pick_device
from models.search_config import SearchConfig
from pipeline.players.base import Player, PlayerError
from pipeline.players.simple import NetPlayer, RandomPlayer
from pipeline.players.stockfish import StockfishPlayer, StockfishSettings

KINDS = ("net", "stockfish", "uct", "random")


@dataclass(frozen=True)
class PlayerContext:
    """What building a player needs besides its spec."""

    search: SearchConfig = SearchConfig()
    stockfish_path: str = ""
    device: str = "auto"
    seed: int = 0
    engine_timeout_s: float = 10.0
    precision: str = "fp32"
    compile: str = "eager"


def parse_fields(spec: str) -> tuple[str, list[str], dict[str, str]]:
    """``kind``, plain fields and ``key=value`` settings of a spec."""
    parts = [part for part in spec.strip().split(":") if part != ""]
    if not parts or parts[0] not in KINDS:
        raise PlayerError(f"player spec {spec!r}: kind must be one of {', '.join(KINDS)}")
    plain, settings = [], {}
    for part in parts[1:]:
        key, sep, value = part.partition("=")
        if sep:
            settings[key] = value
        else:
            plain.append(part)
    return parts[0], plain, settings


def _number(spec: str, settings: dict[str, str], key: str, kind: type, default: object = None) -> object:
    if key not in settings:
        return default
    try:
        return kind(settings.pop(key))
    except ValueError as error:
        raise PlayerError(f"player spec {spec!r}: {key} must be a {kind.__name__}") from error


def build_player(spec: str, context: PlayerContext = PlayerContext()) -> Player:
    """The player a spec names; errors name the spec and the bad field (and
    come before any engine starts or network loads)."""
    kind, plain, settings = parse_fields(spec)
    if kind == "net":
        path, sims = _net_fields(spec, plain, settings, context)
        _reject_unknown(spec, [], settings)
        return _net_player(path, sims, context)
    if kind == "stockfish":
        sf = _stockfish_settings(spec, settings, context)
        _reject_unknown(spec, plain, settings)
        return StockfishPlayer(sf, context.stockfish_path)
    if kind == "random":
        seed = _number(spec, settings, "seed", int, context.seed)
        _reject_unknown(spec, plain, settings)
        return RandomPlayer(seed=seed)  # type: ignore[arg-type]
    kwargs = _uct_settings(spec, settings, context)
    _reject_unknown(spec, plain, settings)
    from pipeline.players.uct import UCTPlayer

    return UCTPlayer(**kwargs)  # type: ignore[arg-type]


def check_player(spec: str, context: PlayerContext = PlayerContext()) -> None:
    """Validate ``spec`` where it is typed (on the driver, before any work goes
    to Ray): its kind, fields and numbers, a ``net`` checkpoint (it is loaded
    on the CPU: missing, a folder, corrupt or another architecture is an
    error naming the file) and the Stockfish binary.  Starts no engine."""
    kind, plain, settings = parse_fields(spec)
    if kind == "net":
        from pipeline.checkpoint import load_net

        path, _ = _net_fields(spec, plain, settings, context)
        _reject_unknown(spec, [], settings)
        load_net(path, device="cpu")
    elif kind == "stockfish":
        from pipeline.players.stockfish import find_stockfish

        _stockfish_settings(spec, settings, context)
        _reject_unknown(spec, plain, settings)
        find_stockfish(context.stockfish_path)
    else:
        build_player(spec, context).close()


def stockfish_settings(spec: str, context: PlayerContext = PlayerContext()) -> StockfishSettings:
    """The settings a ``stockfish:...`` spec names (validated; starts no engine)."""
    kind, plain, settings = parse_fields(spec)
    if kind != "stockfish":
        raise PlayerError(f"player spec {spec!r}: not a stockfish spec")
    sf = _stockfish_settings(spec, settings, context)
    _reject_unknown(spec, plain, settings)
    return sf


FIELDS = {
    "net": ("sims",),
    "stockfish": ("skill", "elo", "nodes", "depth", "movetime", "threads"),
    "uct": ("rollouts", "rave", "c", "k", "plies", "seed"),
    "random": ("seed",),
}
"""The ``key=value`` fields of each kind of player."""


def _reject_unknown(spec: str, plain: list[str], settings: dict[str, str]) -> None:
    if plain or settings:
        kind = spec.strip().split(":")[0]
        raise PlayerError(f"player spec {spec!r}: unknown field(s) {plain + sorted(settings)}; "
                          f"{kind} takes {', '.join(f + '=' for f in FIELDS[kind])}")  # fmt: skip


def _net_fields(spec: str, plain: list[str], settings: dict[str, str], context: PlayerContext) -> tuple[str, int]:
    """The checkpoint path and simulations of a ``net`` spec."""
    if len(plain) != 1:
        raise PlayerError(f"player spec {spec!r}: expected net:PATH[:sims=N]")
    sims = _number(spec, settings, "sims", int, context.search.num_simulations)
    if sims < 1:  # type: ignore[operator]
        raise PlayerError(f"player spec {spec!r}: sims must be >= 1, got {sims}")
    return plain[0], sims  # type: ignore[return-value]


def _net_player(path: str, sims: int, context: PlayerContext) -> Player:
    from pipeline.checkpoint import load_net

    net = load_net(path, device=pick_device(context.device))
    return NetPlayer(net, context.search, sims, label=f"net:{path}", precision=context.precision,
                     compile=context.compile)


def _stockfish_settings(spec: str, settings: dict[str, str], context: PlayerContext) -> StockfishSettings:
    return StockfishSettings(
        skill=_number(spec, settings, "skill", int),  # type: ignore[arg-type]
        elo=_number(spec, settings, "elo", int),  # type: ignore[arg-type]
        nodes=_number(spec, settings, "nodes", int),  # type: ignore[arg-type]
        depth=_number(spec, settings, "depth", int),  # type: ignore[arg-type]
        movetime_s=_number(spec, settings, "movetime", float),  # type: ignore[arg-type]
        threads=_number(spec, settings, "threads", int, 1),  # type: ignore[arg-type]
        timeout_s=context.engine_timeout_s,
    )


def _uct_settings(spec: str, settings: dict[str, str], context: PlayerContext) -> dict[str, object]:
    return {
        "rollouts": _number(spec, settings, "rollouts", int, 1000),
        "exploration": _number(spec, settings, "c", float, 1.4),
        "rave": bool(_number(spec, settings, "rave", int, 0)),
        "rave_k": _number(spec, settings, "k", float, 1000.0),
        "rollout_plies": _number(spec, settings, "plies", int, 40),
        "seed": _number(spec, settings, "seed", int, context.seed),
    }
