"""The loop's per-generation learning measure, without Ray: figures from
finished games (``gating.measure``).

* ``mate_rate``: the generation's network plays the side to move of each
  held-out start (the strong side of an endgame start) against a Stockfish
  defence; the figure is the share of those games it mates within
  ``gating.measure_max_plies`` plies, with a Wilson 95% interval;
* ``vs_gen0``: its score against generation 0 (the random network) and
  against the random mover, colour-swapped pairs from the held-out starts,
  with the 95% interval of the pentanomial Elo estimate.

Every figure is a flat ``{"measure/...": float}`` dict: the MLflow metrics,
the ledger's ``measure`` entry and the generation summary share it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import chess

from pipeline.evaluation.elo_text import elo_text
from pipeline.evaluation.match import GameOutcome, Opening
from pipeline.stats import StatsError, elo_to_score

PREFIX = "measure/"


def wilson_interval(successes: int, trials: int, z: float = 1.96) -> tuple[float, float, float]:
    """The rate ``successes / trials`` and its Wilson score interval (95% for
    ``z = 1.96``); trials must be >= 1."""
    if trials < 1 or not 0 <= successes <= trials:
        raise StatsError(f"need 0 <= successes <= trials and trials >= 1, got {successes}/{trials}")
    rate = successes / trials
    denominator = 1 + z * z / trials
    centre = (rate + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / trials + z * z / (4 * trials * trials)) / denominator
    return rate, max(0.0, centre - half), min(1.0, centre + half)


def mate_rate_figures(games: Iterable[GameOutcome], player: str, openings: Iterable[Opening]) -> dict[str, float]:
    """Mates by ``player`` in the games where it had the move at the start
    (the strong side); aborted games are left out, anything else (a draw, a
    loss, a game cut at the ply limit) counts as no mate."""
    to_move = {opening.name: chess.Board(opening.fen).turn for opening in openings}
    strong = [game for game in games if not game.aborted and game.opening in to_move
              and (game.white if to_move[game.opening] == chess.WHITE else game.black) == player]  # fmt: skip
    if not strong:
        return {}
    mates = [game for game in strong if game.termination == "checkmate" and game.score_for(player) == 1.0]
    rate, low, high = wilson_interval(len(mates), len(strong))
    figures = {"mate_rate": rate, "mate_rate_low": low, "mate_rate_high": high,
               "mates": float(len(mates)), "mate_games": float(len(strong))}  # fmt: skip
    if mates:
        plies = sorted(game.plies for game in mates)
        figures["mate_plies_median"] = float(plies[len(plies) // 2])
    return {PREFIX + key: value for key, value in figures.items()}


def score_figures(pairing: dict[str, Any], name: str) -> dict[str, float]:
    """``measure/score_vs_<name>`` and its interval, Elo and game counts from
    a :meth:`~pipeline.evaluation.tournament.PairingResult.summary`."""
    if pairing.get("score") is None:
        return {}
    figures = {"score": pairing["score"], "elo": pairing["elo"], "games": float(pairing["games"]),
               "wins": float(pairing["wins"]), "draws": float(pairing["draws"]),
               "losses": float(pairing["losses"])}  # fmt: skip
    named = {f"{PREFIX}{key}_vs_{name}": float(value) for key, value in figures.items()}
    for end in ("low", "high"):
        elo = pairing.get(f"elo_{end}")
        if elo is not None:
            named[f"{PREFIX}score_vs_{name}_{end}"] = elo_to_score(elo)
    return named


def measure_text(figures: dict[str, float]) -> str:
    """The measure as the status line shows it, e.g. ``mate rate 5/24 = 0.21
    [0.09, 0.40]`` or ``vs gen0 0.62 [0.48, 0.74] (+5 =3 -2)``; a score of 0
    or 1 reads as a bound (``0/4, below -280``)."""
    parts = []
    if PREFIX + "mate_rate" in figures:
        get = lambda key: figures[PREFIX + key]  # noqa: E731
        parts.append(f"mate rate {get('mates'):.0f}/{get('mate_games'):.0f} = {get('mate_rate'):.2f} "
                     f"[{get('mate_rate_low'):.2f}, {get('mate_rate_high'):.2f}]")  # fmt: skip
    for name, label in (("gen0", "vs gen0"), ("random", "vs random")):
        key = f"{PREFIX}score_vs_{name}"
        if key not in figures:
            continue
        score, games = figures[key], int(figures[f"{PREFIX}games_vs_{name}"])
        record = (f"(+{figures[f'{PREFIX}wins_vs_{name}']:.0f} ={figures[f'{PREFIX}draws_vs_{name}']:.0f} "
                  f"-{figures[f'{PREFIX}losses_vs_{name}']:.0f})")  # fmt: skip
        if score <= 0.0 or score >= 1.0:
            text = elo_text(figures[f"{PREFIX}elo_vs_{name}"], score, games) + " Elo"
        else:
            low, high = figures.get(f"{key}_low", math.nan), figures.get(f"{key}_high", math.nan)
            text = f"{score:.2f} [{low:.2f}, {high:.2f}]"
        parts.append(f"{label} {text} {record}")
    return ", ".join(parts)

