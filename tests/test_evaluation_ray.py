"""Tournaments and gating on a real local Ray cluster with the real Stockfish."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import chess.pgn
import pytest
import torch

from models.net import AlphaZeroNet
from pipeline.checkpoint import save_net
from pipeline.evaluation.match import load_openings
from pipeline.evaluation.tournament import schedule
from pipeline.players.spec import PlayerContext
from pipeline.stats import SprtConfig
from tests.helpers import ROOT
from tests.helpers.cli import child_env, run_zerochess, set_args
from tests.helpers.nets import TINY_CONFIG

ray = pytest.importorskip("ray")
BOOK = load_openings(ROOT / "data" / "openings.epd")
WEAKEST = "stockfish:skill=0:depth=1"


def stockfish_processes() -> int:
    out = subprocess.run(["pgrep", "-c", "-f", "stockfish"], capture_output=True, text=True)
    return int(out.stdout.strip() or 0)


def parse_pgns(text: str) -> list[chess.pgn.Game]:
    games, handle = [], io.StringIO(text)
    while (game := chess.pgn.read_game(handle)) is not None:
        assert not game.errors, game.errors
        games.append(game)
    return games


def test_schedule_alternates_colours_and_rotates_openings() -> None:
    tasks = schedule(["a", "b", "c"], BOOK[:4], pairs_per_pairing=2)
    assert [(t.a, t.b) for t in tasks] == [("a", "b"), ("a", "c"), ("b", "c")] * 2
    # each round plays one opening in every pairing, the next round the next one
    assert [t.opening.name for t in tasks] == [BOOK[0].name] * 3 + [BOOK[1].name] * 3


@pytest.mark.parametrize("pairs", [1, 5, 12, 30])
def test_a_match_uses_every_opening_before_repeating_one(pairs: int) -> None:
    book = BOOK[:12]
    names = [t.opening.name for t in schedule(["a", "b"], book, pairs_per_pairing=pairs)]
    assert names == [book[i % len(book)].name for i in range(pairs)]
    with pytest.raises(ValueError, match="players must differ"):
        schedule(["a", "a"], BOOK, 1)


@pytest.mark.slow
def test_stockfish_beats_the_random_mover_and_leaves_no_process(local_ray: None, tmp_path: Path) -> None:
    from actors.evaluation import run_tournament
    from pipeline.evaluation.settings import MatchSettings

    before = stockfish_processes()
    pgn = tmp_path / "games.pgn"
    report = run_tournament(
        ["random", WEAKEST], BOOK, 5, MatchSettings(PlayerContext(), max_plies=300, workers=2), pgn_path=str(pgn)
    )
    pairing = report.pairings[("random", WEAKEST)]
    assert pairing.games == 10 and pairing.aborted == 0
    assert (pairing.losses + pairing.draws / 2) / pairing.games >= 0.95  # Stockfish's share
    games = parse_pgns(pgn.read_text())
    assert len(games) == 10
    assert {g.headers["White"] for g in games} == {"random", WEAKEST}  # colours alternate
    assert all(g.headers["Termination"] for g in games)
    assert stockfish_processes() == before


@pytest.mark.slow
def test_sprt_stops_a_lopsided_match_early(local_ray: None) -> None:
    from actors.evaluation import run_tournament
    from pipeline.evaluation.settings import MatchSettings

    report = run_tournament(
        [WEAKEST, "random"], BOOK, 50, MatchSettings(PlayerContext(), max_plies=300, workers=2),
        sprt=SprtConfig(elo0=0, elo1=200, alpha=0.05, beta=0.05),
    )  # fmt: skip
    assert report.sprt is not None and report.sprt.decision == "H1"
    assert report.stopped_early and len(report.games) < 100


@pytest.mark.slow
def test_round_robin_gives_ratings(local_ray: None) -> None:
    from actors.evaluation import run_tournament
    from pipeline.evaluation.settings import MatchSettings

    players = ["random", "uct:rollouts=30:plies=6", WEAKEST]
    report = run_tournament(players, BOOK, 2, MatchSettings(PlayerContext(), max_plies=80, workers=2))
    summary = report.summary()
    assert set(summary["ratings"]) == set(players)
    assert summary["ratings"][WEAKEST] > summary["ratings"]["random"]


@pytest.mark.slow
def test_gate_command_writes_a_decision(tmp_path: Path) -> None:
    torch.manual_seed(0)
    tiny = TINY_CONFIG
    candidate, best = tmp_path / "candidate.pt", tmp_path / "best.pt"
    save_net(AlphaZeroNet(tiny), candidate)
    save_net(AlphaZeroNet(tiny), best)
    out = tmp_path / "gate"
    settings = ["gating.max_games=4", "gating.simulations=4", "gating.max_plies=30", "gating.ladder_games=2",
                "gating.ladder=[skill=0:depth=1]", "selfplay.device=cpu"]  # fmt: skip
    result = run_zerochess("gate", "--params", "none", "--candidate", str(candidate), "--best", str(best),
                           "--out", str(out), *set_args(settings), env=child_env("token"), timeout=600)  # fmt: skip
    assert result.returncode in (0, 10), result.stderr[-2000:]
    decision = json.loads((out / "gate.json").read_text())
    assert decision["promote"] == (result.returncode == 0)
    assert decision["vs_best"]["games"] + decision["vs_best"]["aborted"] == 4
    assert decision["ladder"][0]["level"] == "stockfish:skill=0:depth=1"
    assert {"ahead", "won", "rate", "margin", "hold"} <= set(decision["conversion"])  # the candidate's, vs best
    assert len(parse_pgns((out / "vs_best.pgn").read_text())) == 4
    assert len(parse_pgns((out / "ladder_0.pgn").read_text())) == 2


def test_gate_refuses_a_missing_stockfish(tmp_path: Path) -> None:
    from zerochess.cli import main

    candidate = tmp_path / "c.pt"
    save_net(AlphaZeroNet(TINY_CONFIG), candidate)
    code = main(["gate", "--params", "none", "--candidate", str(candidate), "--out", str(tmp_path / "g"),
                 "--set", "gating.stockfish_path=/nowhere/stockfish"])  # fmt: skip
    assert code == 2
