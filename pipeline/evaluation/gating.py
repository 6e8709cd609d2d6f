"""The gating stage: should a candidate network replace the current best?

1. candidate vs best, game pairs from the opening book, until the SPRT
   (H0: Elo <= elo0, H1: Elo >= elo1) decides or ``max_games`` are played;
   the candidate is promoted only when H1 is accepted, unless
   ``always_promote`` (AlphaZero's choice: the match is only measured);
2. candidate vs each level of a Stockfish ladder: score and Elo +- 95% CI,
   which anchors the network's strength to an external engine over a run;
   each level says whether its Elo is only the bound of the estimate's clamp
   (``elo_clamped``: e.g. 0/2 and 1/2 points both read -190.8, and only the
   second is a measurement) and whether its games are ``reproducible``
   (Stockfish with one thread, a node or depth limit and no skill level);
   the candidate's **conversion** over the match against the best and over
   each level (:mod:`pipeline.evaluation.conversion`: of the games where it
   led by a rook's worth of material for two plies, how many it won; from
   the moves alone, no engine);
3. with ``gating.rate``, a promoted candidate's rating on Stockfish's
   UCI_Elo scale (:mod:`pipeline.evaluation.rating`, played in this process);
4. the decision as JSON (``gate.json``, a DVC metrics file) and PGNs of every
   game beside it.

Also the loop's learning measure (:func:`run_measure`).  Neither starts Ray:
the games are played by the ``play`` function the caller passes
(:func:`actors.evaluation.run_tournament` on Ray actors).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pipeline.atomic import atomic_write
from pipeline.config import Config, flatten
from pipeline.evaluation.conversion import DEFAULT_HOLD, DEFAULT_MARGIN, ConversionError, conversion
from pipeline.evaluation.match import Opening, load_openings
from pipeline.evaluation.measure import mate_rate_figures, score_figures
from pipeline.evaluation.rating import RateRequest, rate_checkpoint
from pipeline.evaluation.rating_levels import LevelPlan
from pipeline.evaluation.settings import MatchSettings, TournamentRunner
from pipeline.evaluation.tournament import TournamentReport, sprt_from
from pipeline.players.base import Limits, PlayerError
from pipeline.players.spec import PlayerContext, check_player, stockfish_settings
from pipeline.players.stockfish import find_stockfish
from pipeline.stats import score_to_elo

log = logging.getLogger(__name__)

RATE_MAX_LEVELS = 6
"""Levels a promoted net plays at most when ``gating.rate`` rates it."""


@dataclass(frozen=True)
class GateDecision:
    """The verdict and the figures behind it (``as_dict`` is ``gate.json``)."""

    promote: bool
    reason: str
    report: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"promote": self.promote, "reason": self.reason, **self.report}


def match_settings(config: Config) -> MatchSettings:
    """How the gate's (and the measure's) games are played, from ``config.gating``."""
    gating = config.gating
    context = PlayerContext(
        search=config.search,
        stockfish_path=gating.stockfish_path,
        device=config.selfplay.device,
        seed=config.selfplay.seed,
        engine_timeout_s=gating.engine_timeout_s,
        precision=gating.precision,
        compile=gating.compile,
    )
    limits = Limits(movetime_s=gating.movetime_s) if gating.movetime_s > 0 else None
    return MatchSettings(context, limits, gating.max_plies, gating.workers, event="zerochess gate",
                         num_cpus=gating.cpus_per_worker, num_gpus=gating.gpus_per_worker)  # fmt: skip


def run_gate(
    config: Config,
    candidate: str,
    best: str | None,
    out: str | Path,
    on_pair: Callable[[str, TournamentReport], None] | None = None,
    *,
    play: TournamentRunner,
) -> GateDecision:
    """Gate ``candidate`` against ``best`` (None: no incumbent, promote) and the
    Stockfish ladder, the matches played by ``play``; write ``gate.json`` and
    PGNs under ``out``."""
    gating = config.gating
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if gating.ladder:
        find_stockfish(gating.stockfish_path)  # a missing engine fails now, naming the path
    if best is not None and Path(candidate).resolve() == Path(best).resolve():
        raise PlayerError(f"candidate and best are the same file: {candidate}")
    settings = match_settings(config)
    openings = load_openings(gating.book)
    cand_spec = f"net:{candidate}:sims={gating.simulations}"
    report: dict[str, Any] = {"candidate": candidate, "best": best}

    if best is None:
        promote, reason = True, "no current best network"
    else:
        head = play(
            [cand_spec, f"net:{best}:sims={gating.simulations}"], openings, gating.max_games // 2, settings,
            sprt=sprt_from(gating), pgn_path=str(out / "vs_best.pgn"),
            on_pair=(lambda r: on_pair("vs best", r)) if on_pair else None,
        )  # fmt: skip
        report["vs_best"] = head.summary()
        report["conversion"] = match_conversion(head, cand_spec)
        decision = head.sprt.decision if head.sprt is not None else "continue"
        if gating.always_promote:
            promote, reason = True, f"always_promote (SPRT: {decision})"
        else:
            promote = decision == "H1"
            reason = {"H1": "SPRT accepted H1", "H0": "SPRT accepted H0"}.get(
                decision, f"SPRT undecided after {len(head.games)} games"
            )

    report["ladder"] = [
        ladder_level(play, cand_spec, level, openings, settings, gating.ladder_games, out / f"ladder_{i}.pgn", on_pair)
        for i, level in enumerate(gating.ladder)
    ]
    if promote and gating.rate:
        report["rating"] = rate_promoted(config, candidate, out)
    report["params"] = {k: v for k, v in flatten(config).items() if k.startswith(("gating.", "search."))}
    decision = GateDecision(promote, reason, report)
    with atomic_write(out / "gate.json") as handle:
        handle.write(json.dumps(decision.as_dict(), indent=2, default=str).encode("utf-8"))
    log.info("gate: %s (%s)%s", "promote" if promote else "reject", reason, conversion_text(report.get("conversion")))
    return decision


def match_conversion(result: TournamentReport, spec: str) -> dict[str, Any] | None:
    """The conversion of player ``spec`` over a match's games, with the
    definition's ``margin`` and ``hold``; None (and a warning) when a game
    cannot be replayed: a figure must not fail the gate."""
    name = result.names.get(spec)
    try:
        converted = conversion(result.games if name else [], name or spec)
    except ConversionError as error:
        log.warning("gate: no conversion figure: %s", error)
        return None
    return {**converted.as_dict(), "margin": DEFAULT_MARGIN, "hold": DEFAULT_HOLD}


def conversion_text(figure: dict[str, Any] | None) -> str:
    """``; conversion W/A (rate)`` for the gate's log line ('' without a match)."""
    if not figure:
        return ""
    if not figure["ahead"]:
        return "; conversion -: never clearly ahead"
    return f"; conversion {figure['won']}/{figure['ahead']} ({figure['rate']:.2f})"


def ladder_level(
    play: TournamentRunner,
    cand_spec: str,
    level: str,
    openings: list,
    settings: MatchSettings,
    games: int,
    pgn_path: Path,
    on_pair: Callable[[str, TournamentReport], None] | None,
) -> dict[str, Any]:
    """The candidate's match against one Stockfish level of the ladder."""
    spec = f"stockfish:{level}"
    result = play(
        [cand_spec, spec], openings, max(1, games // 2), settings, pgn_path=str(pgn_path),
        on_pair=(lambda r: on_pair(spec, r)) if on_pair else None,
    )  # fmt: skip
    pairing = next(iter(result.pairings.values()))
    summary = pairing.summary()
    return {
        "level": spec,
        **summary,
        "elo_clamped": elo_clamped(summary.get("score"), summary.get("elo")),
        "reproducible": stockfish_settings(spec).reproducible,
        "conversion": match_conversion(result, cand_spec),
    }


def rate_promoted(config: Config, candidate: str, out: Path) -> dict[str, Any]:
    """``gating.rate``: the promoted ``candidate``'s rating on Stockfish's
    UCI_Elo scale (:mod:`pipeline.evaluation.rating`, ``gating.ladder_games``
    games a level, in this process), its games in ``out/rating.pgn``."""
    return rate_net(config, candidate, out / "rating.pgn", config.gating.ladder_games)


def rate_net(config: Config, net: str, pgn: Path, games: int, max_levels: int = RATE_MAX_LEVELS) -> dict[str, Any]:
    """``net``'s rating on Stockfish's UCI_Elo scale as ``zerochess rate``
    makes it (:func:`~pipeline.evaluation.rating.rate_checkpoint`): ``games``
    games a level, at most ``max_levels`` levels, from ``gating``'s book,
    simulations and ``max_plies`` (which the levels cache is keyed by), in
    this process; its games in ``pgn``.  ``rating.json``'s figures plus ``line``."""
    gating = config.gating
    context = replace(match_settings(config).context, stockfish_path=find_stockfish(gating.stockfish_path))
    request = RateRequest(checkpoint=net, simulations=gating.simulations, games=games,
                          max_levels=max_levels, openings=load_openings(gating.book), context=context,
                          max_plies=gating.max_plies, plan=LevelPlan(max_plies=gating.max_plies), book=gating.book)  # fmt: skip
    rated = rate_checkpoint(request, on_event=log.info)
    with atomic_write(pgn) as handle:
        handle.write(rated.pgn().encode("utf-8"))
    log.info("rated %s: %s", net, rated.rating.line())
    return {**rated.as_dict(), "line": rated.rating.line()}


def elo_clamped(score: float | None, elo: float | None) -> bool:
    """Whether ``elo`` (rounded to 0.1) is not the Elo of ``score`` but the
    bound the estimate clamps it to: a score of 0 or 1, or one too close to
    them for the number of games."""
    if score is None or elo is None:
        return False
    exact = score_to_elo(score)
    return not math.isfinite(exact) or abs(exact - elo) > 0.05


def run_measure(config: Config, net: str, gen0: str, out: str | Path, *, play: TournamentRunner) -> dict[str, float]:
    """The learning measure ``gating.measure`` of ``net`` (flat ``measure/...``
    figures, :mod:`pipeline.evaluation.measure`), its games as PGNs under
    ``out``; ``{}`` when the measure is ``none``.  ``net == gen0`` (generation
    0 itself) skips the match against generation 0."""
    gating = config.gating
    if gating.measure == "none":
        return {}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    settings = replace(match_settings(config), max_plies=gating.measure_max_plies, event="zerochess measure")
    openings = load_openings(gating.measure_book)
    spec = f"net:{net}:sims={gating.simulations}"
    if gating.measure == "mate_rate":
        return mate_rate(play, spec, openings[: gating.measure_games], settings, gating.measure_defence, out)
    pairs = max(1, gating.measure_games // 2)
    figures: dict[str, float] = {}
    opponents = [("random", "random")]
    if Path(net).resolve() != Path(gen0).resolve():
        opponents.insert(0, ("gen0", f"net:{gen0}:sims={gating.simulations}"))
    for name, opponent in opponents:
        report = play([spec, opponent], openings, pairs, settings, pgn_path=str(out / f"vs_{name}.pgn"))
        figures.update(score_figures(next(iter(report.pairings.values())).summary(), name))
    return figures


def mate_rate(
    play: TournamentRunner, spec: str, openings: list[Opening], settings: MatchSettings, defence: str, out: Path
) -> dict[str, float]:
    """Mates by ``spec`` from each start it has the move in, against Stockfish.
    A pair plays each start with colours swapped; only the net's games as
    the side to move count (the other game, Stockfish attacking, is short)."""
    defender = f"stockfish:{defence}"
    check_player(defender, settings.context)  # a bad spec or a missing engine fails before the games
    report = play([spec, defender], openings, len(openings), settings, pgn_path=str(out / "mate_rate.pgn"))
    return mate_rate_figures(report.games, report.names[spec], openings)
