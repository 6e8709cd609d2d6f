"""Pairs finish in any order; the report sees them in schedule order (so an
SPRT stops at the same pair, with the same verdict, in every run)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.evaluation.match import GameOutcome, Opening
from pipeline.evaluation.tournament import InOrder, PairTask, TournamentReport
from pipeline.stats import Sprt, SprtConfig

OPENING = Opening("start", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1")
PAIRS = 24


def outcome(white: str, black: str, result: str) -> GameOutcome:
    return GameOutcome(white, black, "start", result, "test", 10, f"[White \"{white}\"]\n\n{result}\n")


def pair(index: int) -> tuple[PairTask, tuple[str, str], list[GameOutcome]]:
    """Pair ``index``: the candidate ``a`` wins both games of the first 12
    pairs' even ones and loses the rest, so where an SPRT stops depends on order."""
    won = index % 2 == 0 and index < 12
    first = outcome("a", "b", "1-0" if won else "0-1")
    second = outcome("b", "a", "0-1" if won else "1-0")
    return PairTask(index, "a", "b", OPENING), ("a", "b"), [first, second]


def report_after(order: list[int]) -> TournamentReport:
    report = TournamentReport(["a", "b"], sprt=Sprt(SprtConfig(elo0=0, elo1=100, alpha=0.2, beta=0.2)))
    recorder = InOrder(report)
    for index in order:
        if recorder.decided:
            break
        recorder.add(*pair(index))
    return report


@settings(max_examples=60, deadline=None)
@given(st.permutations(list(range(PAIRS))))
def test_any_finishing_order_gives_the_schedule_orders_report(order: list[int]) -> None:
    expected = report_after(list(range(PAIRS)))
    got = report_after(order)
    assert got.sprt is not None and expected.sprt is not None
    assert got.sprt.decision == expected.sprt.decision != "continue"
    assert [g.result for g in got.games] == [g.result for g in expected.games]
    assert got.pgn() == expected.pgn()


def test_a_pair_waits_for_the_ones_before_it_and_is_added_once() -> None:
    report = TournamentReport(["a", "b"])
    recorder = InOrder(report)
    assert recorder.add(*pair(2)) == 0 and recorder.add(*pair(1)) == 0
    assert report.games == []
    assert recorder.add(*pair(0)) == 3
    assert len(report.games) == 6
    with pytest.raises(ValueError, match="pair 1 was already added"):
        recorder.add(*pair(1))
