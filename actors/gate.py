"""The gating stage: should a candidate network replace the current best?

1. candidate vs best, game pairs from the opening book, until the SPRT
   (H0: Elo <= elo0, H1: Elo >= elo1) decides or ``max_games`` are played;
   the candidate is promoted only when H1 is accepted, unless
   ``always_promote`` (AlphaZero's choice: the match is only measured);
2. candidate vs each level of a Stockfish ladder: score and Elo +- 95% CI,
   which anchors the network's strength to an external engine over a run;
3. the decision as JSON (``gate.json``, a DVC metrics file) and PGNs of every
   game beside it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actors.evaluation import MatchSettings, run_tournament
from pipeline.atomic import atomic_write
from pipeline.config import Config, flatten
from pipeline.evaluation.match import load_openings
from pipeline.evaluation.tournament import TournamentReport, sprt_from
from pipeline.players.base import Limits, PlayerError
from pipeline.players.spec import PlayerContext
from pipeline.players.stockfish import find_stockfish

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GateDecision:
    """The verdict and the figures behind it (``as_dict`` is ``gate.json``)."""

    promote: bool
    reason: str
    report: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"promote": self.promote, "reason": self.reason, **self.report}


def match_settings(config: Config) -> MatchSettings:
    gating = config.gating
    context = PlayerContext(
        search=config.search,
        stockfish_path=gating.stockfish_path,
        device=config.selfplay.device,
        seed=config.selfplay.seed,
        engine_timeout_s=gating.engine_timeout_s,
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
) -> GateDecision:
    """Gate ``candidate`` against ``best`` (None: no incumbent, promote) and the
    Stockfish ladder; write ``gate.json`` and PGNs under ``out``."""
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
        head = run_tournament(
            [cand_spec, f"net:{best}:sims={gating.simulations}"], openings, gating.max_games // 2, settings,
            sprt=sprt_from(gating), pgn_path=str(out / "vs_best.pgn"),
            on_pair=(lambda r: on_pair("vs best", r)) if on_pair else None,
        )  # fmt: skip
        report["vs_best"] = head.summary()
        decision = head.sprt.decision if head.sprt is not None else "continue"
        if gating.always_promote:
            promote, reason = True, f"always_promote (SPRT: {decision})"
        else:
            promote = decision == "H1"
            reason = {"H1": "SPRT accepted H1", "H0": "SPRT accepted H0"}.get(
                decision, f"SPRT undecided after {len(head.games)} games"
            )

    report["ladder"] = [
        _ladder_level(cand_spec, level, openings, settings, gating.ladder_games, out / f"ladder_{i}.pgn", on_pair)
        for i, level in enumerate(gating.ladder)
    ]
    report["params"] = {k: v for k, v in flatten(config).items() if k.startswith(("gating.", "search."))}
    decision = GateDecision(promote, reason, report)
    with atomic_write(out / "gate.json") as handle:
        handle.write(json.dumps(decision.as_dict(), indent=2, default=str).encode("utf-8"))
    log.info("gate: %s (%s)", "promote" if promote else "reject", reason)
    return decision


def _ladder_level(
    cand_spec: str,
    level: str,
    openings: list,
    settings: MatchSettings,
    games: int,
    pgn_path: Path,
    on_pair: Callable[[str, TournamentReport], None] | None,
) -> dict[str, Any]:
    spec = f"stockfish:{level}"
    result = run_tournament(
        [cand_spec, spec], openings, max(1, games // 2), settings, pgn_path=str(pgn_path),
        on_pair=(lambda r: on_pair(spec, r)) if on_pair else None,
    )  # fmt: skip
    pairing = next(iter(result.pairings.values()))
    return {"level": spec, **pairing.summary()}
