"""Tournament bookkeeping without Ray: the schedule of game pairs, results per
pairing, statistics (score, Elo with CI, pentanomial, SPRT) and ratings."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from pipeline.evaluation.match import GameOutcome, Opening
from pipeline.stats import (
    Estimate,
    Sprt,
    SprtConfig,
    pentanomial_estimate,
    pentanomial_from_pairs,
    ratings,
    trinomial_estimate,
)


@dataclass(frozen=True)
class PairTask:
    """Two games from one opening, colours swapped: ``a`` is White first."""

    index: int
    a: str
    b: str
    opening: Opening


def schedule(players: list[str], openings: list[Opening], pairs_per_pairing: int) -> list[PairTask]:
    """Every pairing of a round-robin, ``pairs_per_pairing`` pairs each, the
    pairings interleaved.  Round ``r`` plays opening ``r`` (cycling through the
    book) in every pairing, so each opening is used before any repeats and all
    pairings see the same openings."""
    if len(players) < 2:
        raise ValueError(f"a match needs at least two players, got {players}")
    if len(set(players)) != len(players):
        raise ValueError(f"players must differ (give a distinguishing setting), got {players}")
    if not openings:
        raise ValueError("the opening book is empty")
    pairings = list(itertools.combinations(players, 2))
    tasks = []
    for round_index in range(pairs_per_pairing):
        for a, b in pairings:
            opening = openings[round_index % len(openings)]
            tasks.append(PairTask(len(tasks), a, b, opening))
    return tasks


@dataclass
class PairingResult:
    """Results of ``a`` against ``b`` (every figure from ``a``'s side)."""

    a: str
    b: str
    wins: int = 0
    draws: int = 0
    losses: int = 0
    aborted: int = 0
    pairs: list[tuple[float, float]] = field(default_factory=list)

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    def add_pair(self, first: GameOutcome, second: GameOutcome, a_name: str) -> None:
        scores = [game.score_for(a_name) for game in (first, second)]
        for score in scores:
            if score is None:
                self.aborted += 1
            elif score == 1.0:
                self.wins += 1
            elif score == 0.5:
                self.draws += 1
            else:
                self.losses += 1
        if None not in scores:
            self.pairs.append((scores[0], scores[1]))  # type: ignore[arg-type]

    def estimate(self) -> Estimate | None:
        """Elo of ``a`` over ``b`` with a 95% CI from the game pairs
        (pentanomial), or from single games when no pair is complete."""
        if self.pairs:
            return pentanomial_estimate(pentanomial_from_pairs(self.pairs))
        if self.games:
            return trinomial_estimate(self.wins, self.draws, self.losses)
        return None

    def summary(self) -> dict[str, object]:
        estimate = self.estimate()
        return {
            "player": self.a,
            "opponent": self.b,
            "games": self.games,
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "aborted": self.aborted,
            "score": None if estimate is None else round(estimate.score, 4),
            "elo": None if estimate is None else round(estimate.elo, 1),
            "elo_low": None if estimate is None else round(estimate.elo_low, 1),
            "elo_high": None if estimate is None else round(estimate.elo_high, 1),
        }


@dataclass
class TournamentReport:
    """Everything a tournament produced."""

    players: list[str]
    names: dict[str, str] = field(default_factory=dict)
    pairings: dict[tuple[str, str], PairingResult] = field(default_factory=dict)
    games: list[GameOutcome] = field(default_factory=list)
    sprt: Sprt | None = None
    stopped_early: bool = False

    def record(self, task: PairTask, names: tuple[str, str], outcomes: list[GameOutcome]) -> None:
        """Add a finished pair (``names`` are the players' display names)."""
        self.names[task.a], self.names[task.b] = names
        pairing = self.pairings.setdefault((task.a, task.b), PairingResult(task.a, task.b))
        pairing.add_pair(outcomes[0], outcomes[1], names[0])
        self.games.extend(outcomes)
        if self.sprt is not None:
            scores = [game.score_for(names[0]) for game in outcomes]
            if None not in scores:
                self.sprt.update_pair(scores[0], scores[1])  # type: ignore[arg-type]

    def ratings(self) -> dict[str, float]:
        """Ordo-style maximum-likelihood ratings of a round-robin, mean 0."""
        results = []
        for (a, b), pairing in self.pairings.items():
            results += [(a, b, 1.0)] * pairing.wins + [(a, b, 0.5)] * pairing.draws + [(a, b, 0.0)] * pairing.losses
        return ratings(results) if results else {}

    def summary(self) -> dict[str, object]:
        out: dict[str, object] = {
            "games": len(self.games),
            "aborted": sum(game.aborted for game in self.games),
            "pairings": [pairing.summary() for pairing in self.pairings.values()],
        }
        if len(self.players) > 2:
            out["ratings"] = {player: round(value, 1) for player, value in self.ratings().items()}
        if self.sprt is not None:
            out["sprt"] = {"llr": round(self.sprt.llr, 3), "decision": self.sprt.decision}
        return out

    def pgn(self) -> str:
        return "\n\n".join(game.pgn for game in self.games) + ("\n" if self.games else "")


@dataclass
class InOrder:
    """Records finished pairs into ``report`` in schedule order, whatever order
    they finish in, and nothing after an SPRT has decided.

    Pairs finish in an order that depends on timing (two actors, games of
    different lengths).  Fed in that order, an SPRT could stop at a different
    pair, with a different verdict, from one run to the next; fed in schedule
    order it sees the same sequence every time, so the same games give the
    same report (games, PGN order, verdict)."""

    report: TournamentReport
    next_index: int = 0
    waiting: dict[int, tuple[PairTask, tuple[str, str], list[GameOutcome]]] = field(default_factory=dict)

    @property
    def decided(self) -> bool:
        """The report's SPRT has accepted or rejected."""
        sprt = self.report.sprt
        return sprt is not None and sprt.decision != "continue"

    def add(self, task: PairTask, names: tuple[str, str], outcomes: list[GameOutcome]) -> int:
        """Hold a finished pair; record every pair now next in order.  Returns how many were recorded."""
        if task.index < self.next_index or task.index in self.waiting:
            raise ValueError(f"pair {task.index} was already added")
        self.waiting[task.index] = (task, names, outcomes)
        recorded = 0
        while not self.decided and self.next_index in self.waiting:
            self.report.record(*self.waiting.pop(self.next_index))
            self.next_index += 1
            recorded += 1
        return recorded


def sprt_from(config: object) -> SprtConfig:
    """The SPRT settings of a :class:`~pipeline.evaluation.config.GatingConfig`."""
    return SprtConfig(
        elo0=config.sprt_elo0, elo1=config.sprt_elo1, alpha=config.sprt_alpha, beta=config.sprt_beta  # type: ignore[attr-defined]
    )
