"""Adjudication of self-play games at ``selfplay.max_plies`` (material, Stockfish),
on positions whose answer is known, with Debian's real Stockfish."""

from __future__ import annotations

from dataclasses import replace

import chess
import pytest

from models.evaluation import UniformEvaluator
from models.policy import get_policy_map
from models.search_config import SearchConfig
from pipeline.config import ConfigError, SelfPlayConfig, load_config
from pipeline.selfplay import SelfPlayWorker, game_positions
from pipeline.selfplay.adjudication import Adjudicator, check_adjudication, material_balance
from tests.helpers.searches import TINY_SEARCH
from tests.helpers.stockfish import needs_debian_stockfish


TWO_PLIES = SelfPlayConfig(resign_threshold=-1.0, full_search_prob=1.0, games_per_task=4, max_plies=2)
# White is two rooks up; the black king in the centre: no mate, stalemate or
# loss of both rooks is possible within two plies.
WHITE_TWO_ROOKS_UP = "8/8/8/3k4/8/8/8/R3K2R w - - 0 1"
# Equal pawns that cannot meet within two plies.
EQUAL = "4k3/pppp4/8/8/8/8/PPPP4/4K3 w - - 0 1"


@pytest.mark.parametrize(
    ("fen", "balance"),
    [
        (chess.STARTING_FEN, 0),
        (WHITE_TWO_ROOKS_UP, 10),
        ("4k3/8/8/8/8/8/8/q3K3 w - - 0 1", -9),
        ("rnbqkbnr/pppppppp/8/8/8/8/8/4K3 w - - 0 1", -39),  # 8 + 2x3 + 2x3 + 2x5 + 9
        ("4k3/8/8/8/8/8/PPN5/4K1B1 w - - 0 1", 8),
    ],
)
def test_material_balance_counts_p1_n3_b3_r5_q9(fen: str, balance: int) -> None:
    assert material_balance(chess.Board(fen)) == balance


@pytest.mark.parametrize(
    ("fen", "margin", "result"),
    [
        (WHITE_TWO_ROOKS_UP, 3, "1-0"),
        (WHITE_TWO_ROOKS_UP, 10, "1-0"),  # at least the margin wins
        (WHITE_TWO_ROOKS_UP, 11, "1/2-1/2"),
        ("4k3/8/8/8/8/8/8/q3K3 w - - 0 1", 3, "0-1"),
        ("4k3/p7/8/8/8/8/8/4K3 w - - 0 1", 3, "1/2-1/2"),  # a pawn is not enough
        (EQUAL, 1, "1/2-1/2"),
    ],
)
def test_material_adjudication(fen: str, margin: int, result: str) -> None:
    adjudicator = Adjudicator(SelfPlayConfig(adjudicate_material=True, material_margin=margin))
    assert adjudicator.adjudicate(chess.Board(fen)) == (result, "material")


def test_no_adjudication_by_default() -> None:
    adjudicator = Adjudicator(SelfPlayConfig())
    assert not adjudicator.enabled and adjudicator.adjudicate(chess.Board(WHITE_TWO_ROOKS_UP)) is None


@needs_debian_stockfish
@pytest.mark.parametrize(
    ("fen", "result"),
    [
        (WHITE_TWO_ROOKS_UP, "1-0"),
        ("4k3/8/8/8/8/8/8/q3K3 w - - 0 1", "0-1"),  # the side not to move wins
        ("7k/8/6Q1/8/8/8/8/K7 b - - 0 1", "1/2-1/2"),  # stalemate: material says otherwise
        ("6k1/5ppp/8/8/8/8/5PPP/6K1 w - - 0 1", "1/2-1/2"),  # symmetric pawns
        ("6k1/5ppp/8/8/8/8/5PPP/R5K1 b - - 0 1", "1-0"),  # a back-rank mate threat and a rook up
    ],
)
def test_stockfish_adjudication(fen: str, result: str) -> None:
    with Adjudicator(SelfPlayConfig(adjudicate_stockfish=True)) as adjudicator:
        assert adjudicator.adjudicate(chess.Board(fen)) == (result, "stockfish_adjudication")


def test_missing_stockfish_is_a_clear_error_before_any_game() -> None:
    config = SelfPlayConfig(adjudicate_stockfish=True, stockfish_path="/nowhere/stockfish")
    with pytest.raises(ConfigError, match="/nowhere/stockfish.*selfplay.stockfish_path"):
        check_adjudication(config)
    with pytest.raises(ConfigError, match="/nowhere/stockfish"):
        SelfPlayWorker(UniformEvaluator(), TINY_SEARCH, config)
    check_adjudication(replace(config, adjudicate_stockfish=False))  # not needed: no error


def test_material_and_stockfish_together_are_rejected() -> None:
    with pytest.raises(ConfigError, match="adjudicate_material.*adjudicate_stockfish"):
        load_config(None, ["selfplay.adjudicate_material=true", "selfplay.adjudicate_stockfish=true"])


def _rows_agree(records: list, result: str, termination: str) -> None:
    policy_map = get_policy_map("az4672")
    for record in records:
        assert (record.result, record.termination) == (result, termination)
        rows = game_positions(record, policy_map, generation=1)
        assert {(row.result, row.termination) for row in rows} == {(result, termination)}
        winner = {"1-0": 1, "0-1": -1, "1/2-1/2": 0}[result]
        # z from the side to move: white moves first here
        assert [row.z for row in rows] == [winner, -winner]


def test_games_at_the_limit_are_adjudicated_by_material(search: SearchConfig) -> None:
    config = replace(TWO_PLIES, adjudicate_material=True)
    won = SelfPlayWorker(UniformEvaluator(), search, config, [WHITE_TWO_ROOKS_UP])
    records = won.play(games=3, seed=0)
    _rows_agree(records, "1-0", "material")
    assert won.stats.adjudicated == 3
    drawn = SelfPlayWorker(UniformEvaluator(), search, config, [EQUAL]).play(games=2, seed=0)
    _rows_agree(drawn, "1/2-1/2", "material")


def test_without_adjudication_the_limit_is_a_draw(search: SearchConfig) -> None:
    records = SelfPlayWorker(UniformEvaluator(), search, TWO_PLIES, [WHITE_TWO_ROOKS_UP]).play(games=2, seed=0)
    _rows_agree(records, "1/2-1/2", "max_plies")


@needs_debian_stockfish
def test_games_at_the_limit_are_adjudicated_by_stockfish(search: SearchConfig) -> None:
    config = replace(TWO_PLIES, adjudicate_stockfish=True)
    worker = SelfPlayWorker(UniformEvaluator(), search, config, [WHITE_TWO_ROOKS_UP])
    _rows_agree(worker.play(games=2, seed=0), "1-0", "stockfish_adjudication")
    assert worker.adjudicator._engine is None  # Stockfish stopped after the games


def test_only_games_at_the_limit_are_adjudicated() -> None:
    # Black's only move is Kb8, then Rh8 mates: a game that ends before the limit keeps its result.
    config = replace(TWO_PLIES, max_plies=10, adjudicate_material=True)
    worker = SelfPlayWorker(UniformEvaluator(), replace(TINY_SEARCH, num_simulations=200), config,
                            ["k7/8/1K6/8/8/8/8/7R b - - 0 1"])  # fmt: skip
    record = worker.play(games=1, seed=0)[0]
    assert (record.result, record.termination) == ("1-0", "checkmate")
    assert worker.stats.adjudicated == 0
