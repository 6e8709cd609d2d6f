"""The learning drivers of ``experiments/``: the compute frontier's points,
fits and page (``frontier.py``), and the forced-mate set (``tactics.py``)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import chess
import pytest

from tests.helpers.stockfish import needs_stockfish


@pytest.fixture(scope="module")
def frontier(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("frontier")


@pytest.fixture(scope="module")
def tactics(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("tactics")


def write_ledger(run: Path, minutes: list[float]) -> None:
    run.mkdir()
    lines = [{"generation": 0, "stage": "init", "net": "gen0000/net.pt"}]
    for generation, minute in enumerate(minutes, 1):
        lines.append({"generation": generation, "stage": "generation", "best": "x", "elapsed_s": 60 * minute,
                      "summary": {"selfplay": {"positions": 100}, "train": {"loss/total": 3.0 / generation}}})  # fmt: skip
    (run / "ledger.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_each_budget_gets_the_last_generation_finished_by_then(tmp_path: Path, frontier: ModuleType) -> None:
    write_ledger(tmp_path / "run", [4.0, 9.0, 14.5, 16.0, 29.0, 33.0])
    curve = frontier.ledger_curve(tmp_path / "run")
    assert [row["generation"] for row in curve] == [1, 2, 3, 4, 5, 6]
    chosen = frontier.points(curve, [15.0, 30.0])
    assert [(p["budget_min"], p["generation"]) for p in chosen] == [(15.0, 3), (30.0, 5)]
    assert chosen[0]["net"].endswith("gen0003/train/net.pt") and chosen[0]["loss/total"] == 1.0
    with pytest.raises(SystemExit, match="within 2 minutes"):
        frontier.points(curve, [2.0])


def test_the_fit_recovers_elo_per_doubling_and_the_exchange_rate(frontier: ModuleType) -> None:
    rows = [(m, s, 300 + 120 * math.log2(m) + 60 * math.log2(s), 75.0) for m in (15, 30, 60, 120) for s in (32, 800)]
    fit = frontier.fit_lines(rows)
    assert fit["per_doubling_time"] == pytest.approx(120.0) and fit["per_doubling_sims"] == pytest.approx(60.0)
    assert fit["exchange_rate"] == pytest.approx(0.5)
    one_size = frontier.fit_lines([(m, 32, 500 + 100 * math.log2(m), 75.0) for m in (15, 30, 60)])
    assert one_size["per_doubling_time"] == pytest.approx(100.0) and "exchange_rate" not in one_size
    assert frontier.fit_lines([(15, 32, 500.0, 75.0)]) is None


def test_the_page_is_drawn_from_the_data_alone(tmp_path: Path, frontier: ModuleType) -> None:
    data = {"command": "zerochess run --preset cpu --hours 2", "cpu": "test CPU", "curve": [], "points": [
        {"budget_min": m, "generation": g, "minutes": m - 0.5,
         "ratings": {"32": {"rating": r, "low": r - 70, "high": r + 70, "games": 120}}}
        for m, g, r in ((15, 30, 600.0), (30, 60, 700.0), (60, 120, 800.0))]}  # fmt: skip
    path = tmp_path / "data" / "frontier-s0.json"
    path.parent.mkdir()
    path.write_text(json.dumps(data))
    out = tmp_path / "results" / "frontier.md"
    solved = tmp_path / "data" / "tactics.json"
    solved.write_text(json.dumps([{"label": "uniform", "simulations": 800, "overrides": [], "mate_in_2": "9/10",
                                   "mate_in_3": "4/10"}]))  # fmt: skip
    frontier.main(["page", str(path), "--out", str(out), "--tactics", str(solved)])
    text = out.read_text()
    assert "| uniform | 800 | params.yaml | 9/10 | 4/10 |" in text
    assert "| 30 | 60 | 29.5 | 700 [630, 770] (120 games) |" in text
    assert "+100 ± 25 Elo per doubling of training time" in text  # 70 / 1.96 a point, three points
    assert "../data/frontier-s0.json" in text and out.with_suffix(".png").stat().st_size > 0


def test_a_set_without_its_key_move_is_refused(tmp_path: Path, tactics: ModuleType) -> None:
    bad = tmp_path / "set.epd"
    bad.write_text("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - dm 1;\n")
    with pytest.raises(SystemExit, match="set.epd:1: needs bm and dm"):
        tactics.read_set(str(bad))


@needs_stockfish
def test_a_mate_in_two_with_one_key_is_drawn_and_found_by_the_full_width_search(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], tactics: ModuleType) -> None:  # fmt: skip
    """The key move of a known mate in 2 (Stockfish), then the search with
    uniform priors finds it when its root considers every move (PUCT);
    a back-rank mate in 1 is not a mate in 2's key."""
    import chess.engine

    from pipeline.players.stockfish import find_stockfish

    engine = chess.engine.SimpleEngine.popen_uci(find_stockfish(""))
    try:
        board = chess.Board("r1r1k3/1b5Q/n6p/3P2p1/pp1B1p2/P6P/B1P2PP1/1R4K1 w - - 0 1")
        key, mate = tactics.key_mate(engine, board, 14)
        assert (board.san(key), mate) == ("Re1+", 2)
        one = tactics.key_mate(engine, chess.Board("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1"), 10)
        assert one is not None and one[1] == 1
    finally:
        engine.quit()
    puzzles = tmp_path / "set.epd"
    puzzles.write_text(f"{board.epd()} bm Re1+; dm 2;\n")
    data = tmp_path / "tactics.json"
    result = tactics.solve(tactics_args(puzzles, data, "search.algorithm=puct"))
    assert result["mate_in_2"] == "1/1"
    tactics.solve(tactics_args(puzzles, data, "search.algorithm=puct"))  # the same entry again: replaced
    (entry,) = json.loads(data.read_text())
    assert entry["label"] == "uniform" and entry["overrides"][-1] == "search.algorithm=puct"


def tactics_args(path: Path, data: Path, *overrides: str):  # noqa: ANN201 - the solve parser's namespace
    import argparse

    return argparse.Namespace(set_file=str(path), uniform=True, checkpoint=None, simulations=800, data=str(data),
                              label=None, set=["search.backend=native", *overrides])  # fmt: skip


def test_ratings_of_several_rate_processes_meet_in_one_data_file(tmp_path: Path, frontier: ModuleType) -> None:
    import argparse

    write_ledger(tmp_path / "run", [14.0, 29.0])
    curve = frontier.ledger_curve(tmp_path / "run")
    fifteen, thirty = frontier.points(curve, [15.0, 30.0])
    args = argparse.Namespace(run=tmp_path / "run", command="zerochess run --preset cpu --hours 0.5")
    data = tmp_path / "frontier.json"
    frontier.save(data, args, curve, thirty, "800", {"rating": 900.0, "low": 800.0, "high": 1000.0, "games": 20})
    frontier.save(data, args, curve, fifteen, "32", {"rating": 500.0, "low": 400.0, "high": 600.0, "games": 40})
    frontier.save(data, args, curve, thirty, "32", {"rating": 700.0, "low": 600.0, "high": 800.0, "games": 40})
    held = frontier.held_ratings(data)
    assert sorted(held) == [15.0, 30.0] and sorted(held[30.0]) == ["32", "800"] and list(held[15.0]) == ["32"]
    document = json.loads(data.read_text())
    assert [p["generation"] for p in document["points"]] == [1, 2] and len(document["curve"]) == 2
    assert "net" not in document["points"][0] and not list(tmp_path.glob("*.tmp"))
