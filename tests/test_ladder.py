"""The Stockfish ladder of the gate: reproducible games where the engine
allows it (one thread, a depth or node limit, no skill level), and an Elo
that says when it is only the bound of the estimate's clamp."""

from __future__ import annotations

import chess
import pytest

from pipeline.evaluation.gating import elo_clamped
from pipeline.evaluation.match import Opening, play_game
from pipeline.players.spec import stockfish_settings
from pipeline.players.stockfish import StockfishPlayer, StockfishSettings
from pipeline.stats import pentanomial_estimate
from tests.helpers.stockfish import needs_stockfish


@pytest.mark.parametrize(
    ("spec", "reproducible"),
    [
        ("stockfish:depth=1", True),
        ("stockfish:nodes=500", True),
        ("stockfish:skill=20:depth=3", True),  # 20: the skill level is off
        ("stockfish:skill=0:depth=1", False),  # picks among the best moves at random
        ("stockfish:elo=1400:depth=5", False),  # UCI_LimitStrength: the same
        ("stockfish:movetime=0.01", False),  # how far it searches depends on the machine
        ("stockfish:depth=4:threads=2", False),  # threads race
    ],
)
def test_which_ladder_levels_are_reproducible(spec: str, reproducible: bool) -> None:
    assert stockfish_settings(spec).reproducible is reproducible


def test_zero_and_half_a_point_of_two_read_the_same_elo_but_only_zero_is_clamped() -> None:
    lost = pentanomial_estimate([1, 0, 0, 0, 0])  # 0/2
    drew = pentanomial_estimate([0, 1, 0, 0, 0])  # 1/2 of 2
    assert round(lost.elo, 1) == round(drew.elo, 1) == -190.8
    assert elo_clamped(lost.score, round(lost.elo, 1)) is True
    assert elo_clamped(drew.score, round(drew.elo, 1)) is False
    assert elo_clamped(1.0, 190.8) is True and elo_clamped(None, None) is False


@needs_stockfish
def test_a_reproducible_level_plays_the_same_game_whatever_it_played_before() -> None:
    opening = Opening("start", chess.STARTING_FEN)
    settings = StockfishSettings(depth=3)
    with StockfishPlayer(settings) as first, StockfishPlayer(StockfishSettings(depth=1)) as other:
        reference = play_game(first, other, opening, max_plies=40).pgn
        # another game in between fills the hash table: ucinewgame clears it
        play_game(other, first, opening, max_plies=40)
        again = play_game(first, other, opening, max_plies=40).pgn
    with StockfishPlayer(settings) as fresh, StockfishPlayer(StockfishSettings(depth=1)) as other:
        new_process = play_game(fresh, other, opening, max_plies=40).pgn
    assert again == reference == new_process
