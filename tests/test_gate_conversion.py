"""The candidate's conversion in the gate's report: ``gate.json``'s
``conversion``, the ``gate/conversion*`` metrics and the gate's log line,
from hand-made games fed through a stand-in tournament runner."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import chess
import chess.pgn
import pytest

from pipeline.config import load_config
from pipeline.evaluation.gating import run_gate
from pipeline.evaluation.match import GameOutcome, Opening
from pipeline.evaluation.tournament import PairTask, TournamentReport
from pipeline.loop.text import gate_metrics, status_line
from pipeline.stats import Sprt

KQK = Opening("KQK", "4k3/8/4K3/8/8/8/8/Q7 w - - 0 1")  # White a queen up
MATE = ["a1a7", "e8d8", "a7d7"]  # a queen up for 2 plies, then Qd7#
SHUFFLE = ["a1a2", "e8d8", "a2a1", "d8e8"] * 2 + ["a1a2"]  # a queen up throughout, drawn by threefold repetition
CAND, BEST = "net:cand", "net:best"  # the players' display names


def _game(white: str, black: str, moves: list[str], opening: Opening = KQK) -> GameOutcome:
    board = opening.board()
    for uci in moves:
        board.push_uci(uci)
    outcome = board.outcome(claim_draw=True)
    assert outcome is not None
    pgn = str(chess.pgn.Game.from_board(board))
    return GameOutcome(white, black, opening.name, outcome.result(), outcome.termination.name.lower(), len(moves), pgn)


# Two colour-swapped pairs: the candidate leads by a queen in the games it
# plays White (mates in one, shuffles to a repetition in the other) and is a
# queen down in those it plays Black (never ahead there: not counted).
PAIRS = [
    [_game(CAND, BEST, MATE), _game(BEST, CAND, SHUFFLE)],
    [_game(CAND, BEST, SHUFFLE), _game(BEST, CAND, MATE)],
]


def made_games(pairs: list[list[GameOutcome]]):
    """A tournament runner whose match against the best 'plays' ``pairs``."""

    def play(players: list[str], openings: list, count: int, settings: object, *, sprt: object = None,
             pgn_path: str | None = None, on_pair: object = None) -> TournamentReport:  # fmt: skip
        report = TournamentReport(players, sprt=Sprt(sprt) if sprt is not None else None)  # type: ignore[arg-type]
        for index, outcomes in enumerate(pairs):
            report.record(PairTask(index, players[0], players[1], KQK), (CAND, BEST), outcomes)
        if pgn_path:
            Path(pgn_path).write_text(report.pgn())
        return report

    return play


def _config():
    return load_config(None, ["gating.ladder=[]", "gating.max_games=4", "gating.simulations=2"])


def test_the_gate_reports_the_candidates_conversion(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    out = tmp_path / "gate"
    with caplog.at_level(logging.INFO, logger="pipeline.evaluation.gating"):
        decision = run_gate(_config(), "cand.pt", "best.pt", out, play=made_games(PAIRS))
    expected = {"ahead": 2, "won": 1, "rate": 0.5, "unconverted": {"threefold_repetition": 1}, "margin": 5, "hold": 2}
    assert decision.report["conversion"] == expected
    assert json.loads((out / "gate.json").read_text())["conversion"] == expected
    assert any(record.getMessage().endswith("; conversion 1/2 (0.50)") for record in caplog.records)

    metrics = gate_metrics({"generation": 1, **decision.as_dict()})
    assert (metrics["gate/conversion"], metrics["gate/conversion_ahead"], metrics["gate/conversion_won"]) == (0.5, 2, 1)
    summary = {"generation": 1, "selfplay": {"games": 4}, "train": {"loss/total": 1.0}, "gate": metrics}
    assert "conversion" not in status_line(summary)  # the report line keeps its shape (tests/test_run_output.py)


def test_a_candidate_never_ahead_has_counts_but_no_share(tmp_path: Path) -> None:
    behind = [[_game(BEST, CAND, MATE), _game(BEST, CAND, SHUFFLE)]]  # the candidate a queen down in both
    decision = run_gate(_config(), "cand.pt", "best.pt", tmp_path, play=made_games(behind))
    assert decision.report["conversion"]["ahead"] == 0 and decision.report["conversion"]["rate"] is None
    assert json.loads((tmp_path / "gate.json").read_text())["conversion"]["rate"] is None  # valid JSON, no NaN
    metrics = gate_metrics(decision.as_dict())
    assert metrics["gate/conversion_ahead"] == 0 and "gate/conversion" not in metrics


def test_without_an_incumbent_there_is_no_match_and_no_conversion(tmp_path: Path) -> None:
    decision = run_gate(_config(), "cand.pt", None, tmp_path, play=made_games(PAIRS))
    assert "conversion" not in decision.report
    assert not [key for key in gate_metrics(decision.as_dict()) if "conversion" in key]


def test_an_unreadable_game_costs_the_figure_not_the_gate(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    broken = GameOutcome(CAND, BEST, "KQK", "1-0", "checkmate", 1, '[FEN "not a fen"]\n\n1. e4 *')
    with caplog.at_level(logging.WARNING, logger="pipeline.evaluation.gating"):
        decision = run_gate(_config(), "cand.pt", "best.pt", tmp_path, play=made_games([[broken, PAIRS[0][1]]]))
    assert decision.report["conversion"] is None and (tmp_path / "gate.json").exists()
    assert any("no conversion figure" in record.getMessage() for record in caplog.records)
    assert "gate/conversion_ahead" not in gate_metrics(decision.as_dict())
