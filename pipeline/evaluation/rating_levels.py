"""The ladder of Stockfish levels ``zerochess rate`` plays, and the levels
below ``UCI_Elo``'s minimum, measured once per Stockfish version and cached.

From the engine's lowest ``UCI_Elo`` (1350 in Stockfish 15.1) to its highest
(2850), one level every ``elo_step``: ``UCI_LimitStrength`` with that
``UCI_Elo``, at ``elo_nodes`` nodes a move.  Their ratings are their
settings (Stockfish's maintainers calibrated them at 60 s + 0.6 s a game).

Below the minimum, the levels of a chain (:data:`DEFAULT_SHARES`): Stockfish
at ``nodes=1`` playing a share of its moves at random
(:mod:`pipeline.evaluation.rating_players`), down to the random mover.  Each
plays the next stronger one (the strongest plays the lowest ``UCI_Elo``
level); the offsets add up from the anchor (:func:`chain_levels`), and so do
their errors.  The result, with the links' games and intervals, is cached in
a JSON file (default ``~/.cache/zerochess/stockfish_levels.json``) under the
engine's ``id name``, with the settings it was measured with: other
settings, or another Stockfish, measure again.
"""

from __future__ import annotations

import datetime
import json
import logging
import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import chess.engine

from pipeline.atomic import atomic_write
from pipeline.evaluation.rating_fit import ChainLink, Level, chain_levels
from pipeline.evaluation.rating_players import MatchResult, mix_name
from pipeline.players.base import PlayerError
from pipeline.players.stockfish import _elo_range
from pipeline.stats import Estimate, score_to_elo

log = logging.getLogger(__name__)

CACHE_ENV = "ZEROCHESS_CACHE_DIR"
CACHE_FILE = "stockfish_levels.json"
CACHE_FORMAT = 1
DEFAULT_BASE = "stockfish:nodes=1"
DEFAULT_SHARES = (0.03, 0.05, 0.08, 0.12, 0.17, 0.24, 0.33, 0.45, 0.6, 0.8, 1.0)
"""Random shares of the chain's levels, strongest first (1.0: the random mover)."""


class LevelsError(ValueError):
    """The levels cannot be measured or read; the message names the file or value."""


@dataclass(frozen=True)
class LevelPlan:
    """How the ladder is made.

    Attributes:
        base: the chain's Stockfish (full strength, a node limit: reproducible).
        shares: the chain levels' random shares, strongest first.
        elo_nodes: nodes a move of the ``UCI_Elo`` levels.
        elo_step: ``UCI_Elo`` between two of those levels.
        games_per_link: games of each chain link (colour-swapped pairs).
        max_plies: a longer game is a draw.
    """

    base: str = DEFAULT_BASE
    shares: tuple[float, ...] = DEFAULT_SHARES
    elo_nodes: int = 50_000
    elo_step: int = 150
    games_per_link: int = 100
    max_plies: int = 400

    def __post_init__(self) -> None:
        if not self.shares or any(not 0.0 < s <= 1.0 for s in self.shares):
            raise LevelsError(f"level shares must lie in (0, 1], got {self.shares}")
        if list(self.shares) != sorted(set(self.shares)):
            raise LevelsError(f"level shares must rise strictly (strongest level first), got {self.shares}")
        for name in ("elo_nodes", "elo_step", "games_per_link", "max_plies"):
            if getattr(self, name) < 1:
                raise LevelsError(f"{name} must be >= 1, got {getattr(self, name)}")

    def elo_spec(self, elo: int) -> str:
        return f"stockfish:elo={elo}:nodes={self.elo_nodes}"

    def chain_names(self) -> list[str]:
        return [mix_name(self.base, share) for share in self.shares]

    def measured_with(self, anchor: str) -> dict[str, Any]:
        """What a cached chain must have been measured with to be reused."""
        return {"anchor": anchor, "base": self.base, "shares": list(self.shares),
                "games_per_link": self.games_per_link, "max_plies": self.max_plies}  # fmt: skip


@dataclass(frozen=True)
class EngineInfo:
    """The Stockfish binary: its ``id name`` (the cache's key) and ``UCI_Elo`` range."""

    path: str
    name: str
    elo_min: int
    elo_max: int


def engine_info(path: str, timeout_s: float = 10.0) -> EngineInfo:
    """Start the engine once to read its name and ``UCI_Elo`` range."""
    try:
        engine = chess.engine.SimpleEngine.popen_uci(path, timeout=timeout_s)
    except (OSError, chess.engine.EngineError, TimeoutError) as error:
        raise PlayerError(f"cannot start Stockfish at {path!r}: {error}") from error
    try:
        if "UCI_Elo" not in engine.options:
            raise PlayerError(f"{path!r} ({engine.id.get('name', 'no id name')}) has no UCI_Elo option")
        low, high = _elo_range(engine)
        return EngineInfo(path, engine.id.get("name", path), low, high)
    finally:
        engine.quit()


@dataclass
class Ladder:
    """The levels to rate against, weakest first, and where they came from."""

    engine: EngineInfo
    anchor: str
    chain: list[Level]
    links: list[dict[str, Any]] = field(default_factory=list)
    elo_levels: list[Level] = field(default_factory=list)
    measured_now: bool = False

    @property
    def levels(self) -> list[Level]:
        """Chain levels below the anchor, then the ``UCI_Elo`` levels, weakest first."""
        below = [level for level in self.chain if level.rating < self.engine.elo_min]
        return sorted(below, key=lambda level: level.rating) + self.elo_levels


def elo_levels(engine: EngineInfo, plan: LevelPlan) -> list[Level]:
    """The ``UCI_Elo`` levels from the engine's minimum to its maximum."""
    elos = list(range(engine.elo_min, engine.elo_max + 1, plan.elo_step))
    if elos[-1] != engine.elo_max:
        elos.append(engine.elo_max)
    return [Level(plan.elo_spec(elo), float(elo), float(elo), float(elo)) for elo in elos]


def default_cache_path() -> Path:
    """``$ZEROCHESS_CACHE_DIR``, else ``$XDG_CACHE_HOME/zerochess``, else
    ``~/.cache/zerochess``; the file ``stockfish_levels.json`` in it."""
    folder = os.environ.get(CACHE_ENV)
    if not folder:
        xdg = os.environ.get("XDG_CACHE_HOME")
        folder = os.path.join(xdg, "zerochess") if xdg else os.path.join(os.path.expanduser("~"), ".cache", "zerochess")
    return Path(folder) / CACHE_FILE


def read_cache(path: Path) -> dict[str, Any]:
    """The cache's engines (``{id name: entry}``); a missing file is empty, an
    unreadable or foreign one too (with a warning: it will be rewritten)."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        log.warning("ignoring the levels cache %s: %s", path, error)
        return {}
    if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT or not isinstance(data.get("engines"), dict):
        log.warning("ignoring the levels cache %s: not a format-%d levels file", path, CACHE_FORMAT)
        return {}
    return data["engines"]


def cached_chain(path: Path, engine: EngineInfo, plan: LevelPlan, anchor: str) -> tuple[list[Level], list[dict]] | None:
    """The chain cached for this engine and these settings, else None."""
    entry = read_cache(path).get(engine.name)
    if not isinstance(entry, dict) or entry.get("measured_with") != plan.measured_with(anchor):
        return None
    try:
        return [Level.from_dict(item) for item in entry["levels"]], list(entry.get("links", []))
    except (KeyError, TypeError, ValueError) as error:
        log.warning("ignoring the cached levels of %s in %s: %s", engine.name, path, error)
        return None


def write_chain(path: Path, engine: EngineInfo, plan: LevelPlan, anchor: str, levels: list[Level],
                links: list[dict[str, Any]]) -> None:  # fmt: skip
    """Store the chain under the engine's name, keeping the other engines'
    entries (temp file, fsync, ``os.replace``)."""
    engines = read_cache(path)
    engines[engine.name] = {
        "measured_with": plan.measured_with(anchor),
        "measured_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "anchor_elo": engine.elo_min,
        "levels": [level.as_dict() for level in levels],
        "links": links,
    }
    text = json.dumps({"format": CACHE_FORMAT, "engines": engines}, indent=2) + "\n"
    with atomic_write(path) as handle:
        handle.write(text.encode("utf-8"))


PlayLink = Callable[[str, str, int], MatchResult]
"""Plays ``pairs`` colour-swapped pairs of the first level against the second."""


def measure_chain(engine: EngineInfo, plan: LevelPlan, anchor: str, play: PlayLink,
                  on_link: Callable[[dict[str, Any]], None] | None = None) -> tuple[list[Level], list[dict[str, Any]]]:  # fmt: skip
    """Play the chain's links from the anchor down; stop at a link whose
    score is 0 or 1 (the levels below could not be placed)."""
    pairs = max(1, -(-plan.games_per_link // 2))
    links: list[ChainLink] = []
    records: list[dict[str, Any]] = []
    upper = anchor
    for lower in plan.chain_names():
        result = play(lower, upper, pairs)
        estimate = result.pairing.estimate()
        if estimate is None:
            raise LevelsError(f"chain link {lower} vs {upper}: every game was aborted")
        link = ChainLink(lower, upper, estimate, clamped=is_clamped(estimate))
        links.append(link)
        records.append(link_record(link, result))
        if on_link is not None:
            on_link(records[-1])
        if link.clamped:
            log.warning("%s scored %s against %s: too far apart to measure; the chain stops above it",
                        lower, f"{estimate.score:.2f}", upper)  # fmt: skip
            break
        upper = lower
    return chain_levels(anchor, engine.elo_min, links), records


def is_clamped(estimate: Estimate) -> bool:
    """Whether the estimate's Elo is only the bound of its clamp (a score of
    0 or 1, or too near them for the games played)."""
    exact = score_to_elo(estimate.score)
    return not math.isfinite(exact) or abs(exact - estimate.elo) > 0.05


def link_record(link: ChainLink, result: MatchResult) -> dict[str, Any]:
    """A link as the cache stores it (the lower level's figures)."""
    pairing = result.pairing
    estimate = asdict(link.estimate)
    return {"lower": link.lower, "upper": link.upper, "wins": pairing.wins, "draws": pairing.draws,
            "losses": pairing.losses, "aborted": pairing.aborted, "clamped": link.clamped,
            **{key: round(estimate[key], 4 if key == "score" else 1) for key in ("score", "elo", "elo_low", "elo_high")}}  # fmt: skip


def ladder(engine: EngineInfo, plan: LevelPlan, cache: Path, play: PlayLink, *, remeasure: bool = False,
           on_link: Callable[[dict[str, Any]], None] | None = None) -> Ladder:  # fmt: skip
    """The ladder for ``engine``: the cached chain, or one measured now (and cached)."""
    anchor = plan.elo_spec(engine.elo_min)
    found = None if remeasure else cached_chain(cache, engine, plan, anchor)
    measured_now = found is None
    if found is None:
        log.info("measuring the levels below UCI_Elo %d of %s (%d games a link)", engine.elo_min, engine.name,
                 plan.games_per_link)  # fmt: skip
        measured, records = measure_chain(engine, plan, anchor, play, on_link)
        write_chain(cache, engine, plan, anchor, measured, records)
        found = [Level.from_dict(level.as_dict()) for level in measured], records  # as the cache holds them
    chain, links = found
    if not chain:
        log.warning("no level below %s could be measured: the ladder starts at UCI_Elo %d", anchor, engine.elo_min)
    return Ladder(engine, anchor, chain, links, elo_levels(engine, plan), measured_now)
