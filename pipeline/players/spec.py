"""Players named on the command line, e.g. ``net:runs/net.pt:sims=200``,
``stockfish:skill=0:nodes=1000``, ``uct:rollouts=1000:rave=1``, ``random``.

A spec is a kind followed by ``:``-separated fields; ``key=value`` fields are
settings and, for ``net``, the first plain field is the checkpoint path.
"""

from __future__ import annotations

from dataclasses import dataclass

from models.net import pick_device
from models.search import SearchConfig
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
    """The player a spec names; errors name the spec and the bad field."""
    kind, plain, settings = parse_fields(spec)
    if kind == "random":
        player: Player = RandomPlayer(seed=_number(spec, settings, "seed", int, context.seed))  # type: ignore[arg-type]
    elif kind == "net":
        player = _net_player(spec, plain, settings, context)
        plain = []
    elif kind == "stockfish":
        player = _stockfish_player(spec, settings, context)
    else:
        player = _uct_player(spec, settings, context)
    if plain or settings:
        player.close()
        raise PlayerError(f"player spec {spec!r}: unknown field(s) {plain + sorted(settings)}")
    return player


def _net_player(spec: str, plain: list[str], settings: dict[str, str], context: PlayerContext) -> Player:
    from pipeline.checkpoint import load_net

    if len(plain) != 1:
        raise PlayerError(f"player spec {spec!r}: expected net:PATH[:sims=N]")
    sims = _number(spec, settings, "sims", int, context.search.num_simulations)
    net = load_net(plain[0], device=pick_device(context.device))
    return NetPlayer(net, context.search, sims, label=f"net:{plain[0]}")  # type: ignore[arg-type]


def _stockfish_player(spec: str, settings: dict[str, str], context: PlayerContext) -> Player:
    sf = StockfishSettings(
        skill=_number(spec, settings, "skill", int),  # type: ignore[arg-type]
        elo=_number(spec, settings, "elo", int),  # type: ignore[arg-type]
        nodes=_number(spec, settings, "nodes", int),  # type: ignore[arg-type]
        depth=_number(spec, settings, "depth", int),  # type: ignore[arg-type]
        movetime_s=_number(spec, settings, "movetime", float),  # type: ignore[arg-type]
        threads=_number(spec, settings, "threads", int, 1),  # type: ignore[arg-type]
        timeout_s=context.engine_timeout_s,
    )
    return StockfishPlayer(sf, context.stockfish_path)


def _uct_player(spec: str, settings: dict[str, str], context: PlayerContext) -> Player:
    from pipeline.players.uct import UCTPlayer

    return UCTPlayer(
        rollouts=_number(spec, settings, "rollouts", int, 1000),  # type: ignore[arg-type]
        exploration=_number(spec, settings, "c", float, 1.4),  # type: ignore[arg-type]
        rave=bool(_number(spec, settings, "rave", int, 0)),
        rave_k=_number(spec, settings, "k", float, 1000.0),  # type: ignore[arg-type]
        rollout_plies=_number(spec, settings, "plies", int, 40),  # type: ignore[arg-type]
        seed=_number(spec, settings, "seed", int, context.seed),  # type: ignore[arg-type]
    )
