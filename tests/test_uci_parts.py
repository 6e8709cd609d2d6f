"""The UCI engine's parts: scores, mate proofs, time management, parsing, options."""

from __future__ import annotations

import math

import chess
import pytest

from models.evaluation import UniformEvaluator
from models.search_config import SearchConfig
from pipeline.uci.analysis import (
    loss_plies,
    main_line_depth,
    principal_variation,
    root_lines,
    value_to_centipawns,
    win_plies,
)
from pipeline.uci.clock import MIN_BUDGET_S, clock_budget_s, movetime_budget_s
from pipeline.uci.options import UciOption, engine_options
from pipeline.uci.parsing import UciCommandError, parse_go, parse_position, parse_setoption
from pipeline.uci.player import NetPlayer, SearchControl

MORPHY_MATE_IN_2 = "kbK5/pp6/1P6/8/8/8/8/R7 w - - 0 1"  # 1.Ra6! bxa6 2.b7#
BACK_RANK_MATE_IN_1 = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"
MATED_IN_1 = "k7/2K5/8/1Q6/8/8/8/8 b - - 0 1"  # 1...Ka7 (the only move) 2.Qb7#


def searched(fen: str, nodes: int, backend: str = "native") -> NetPlayer:
    player = NetPlayer(UniformEvaluator(), SearchConfig(backend=backend))
    player.set_position(chess.Board(fen))
    player.search(SearchControl(nodes=nodes))
    return player


# -- value to centipawns -----------------------------------------------------


def test_centipawns_follow_lc0s_formula() -> None:
    assert value_to_centipawns(0.0) == 0
    assert value_to_centipawns(0.5) == round(111.714640912 * math.tan(1.5620688421 * 0.5)) == 111
    assert value_to_centipawns(1.0) == 12800
    assert value_to_centipawns(2.0) == 12800  # clipped


def test_centipawns_are_odd_and_increasing() -> None:
    values = [i / 100 for i in range(-100, 101)]
    cps = [value_to_centipawns(q) for q in values]
    assert cps == sorted(cps)
    assert all(value_to_centipawns(-q) == -value_to_centipawns(q) for q in values)


# -- mates and lines ---------------------------------------------------------


@pytest.mark.parametrize("backend", ["native", "python"])
def test_mate_in_one_is_reported_and_first(backend: str) -> None:
    player = searched(BACK_RANK_MATE_IN_1, 200, backend)
    assert player.tree is not None
    best = root_lines(player.tree)[0]
    assert best.move == chess.Move.from_uci("a1a8")
    assert best.mate == 1 and best.pv == [best.move] and best.depth == 1


@pytest.mark.parametrize("backend", ["native", "python"])
def test_mate_in_two_is_proven_inside_the_tree(backend: str) -> None:
    player = searched(MORPHY_MATE_IN_2, 3000, backend)
    assert player.tree is not None
    assert win_plies(player.tree.root, 10) == 3
    best = root_lines(player.tree)[0]
    assert (best.move.uci(), best.mate) == ("a1a6", 2)


@pytest.mark.parametrize("backend", ["native", "python"])
def test_being_mated_gives_a_negative_mate(backend: str) -> None:
    player = searched(MATED_IN_1, 500, backend)
    assert player.tree is not None
    assert loss_plies(player.tree.root, 10) == 2
    assert root_lines(player.tree)[0].mate == -1


def test_no_mate_is_claimed_without_a_proof() -> None:
    player = searched(chess.STARTING_FEN, 300)
    assert player.tree is not None
    lines = root_lines(player.tree)
    assert all(line.mate is None for line in lines)
    assert len(lines) == 20 and sum(line.visits for line in lines) == 300
    assert [line.visits for line in lines] == sorted((line.visits for line in lines), reverse=True)


def test_principal_variation_is_legal_and_matches_the_depth() -> None:
    player = searched(chess.STARTING_FEN, 400)
    assert player.tree is not None
    board = chess.Board()
    best = root_lines(player.tree)[0]
    for move in best.pv:
        assert move in board.legal_moves
        board.push(move)
    assert main_line_depth(player.tree) == best.depth == len(best.pv) >= 2
    index = player.tree.root.moves.index(best.move)  # type: ignore[union-attr]
    assert principal_variation(best.move, player.tree.root.children[index], limit=1) == [best.move]


# -- time management -----------------------------------------------------------


def test_sudden_death_spends_a_thirtieth_less_the_overhead() -> None:
    assert clock_budget_s(60_000, overhead_ms=50) == pytest.approx(60 / 30 - 0.05)


def test_increment_and_movestogo_shape_the_budget() -> None:
    assert clock_budget_s(60_000, increment_ms=2_000) == pytest.approx(2.0 + 1.5)
    assert clock_budget_s(60_000, moves_to_go=10) == pytest.approx(6.0)
    assert clock_budget_s(60_000, moves_to_go=1000) == pytest.approx(60 / 50)


def test_budget_never_takes_more_than_half_the_clock() -> None:
    assert clock_budget_s(1_000, increment_ms=10_000) == pytest.approx(0.5)
    assert clock_budget_s(10_000, moves_to_go=1, overhead_ms=100) == pytest.approx(10 - 0.2)


def test_tiny_or_negative_clocks_still_search_a_little() -> None:
    assert clock_budget_s(-500) == MIN_BUDGET_S
    assert clock_budget_s(20, overhead_ms=50) == MIN_BUDGET_S
    assert movetime_budget_s(30, overhead_ms=50) == MIN_BUDGET_S
    assert movetime_budget_s(1_000, overhead_ms=50) == pytest.approx(0.95)


# -- parsing ---------------------------------------------------------------------


def test_position_startpos_with_moves_keeps_the_stack() -> None:
    board = parse_position(["startpos", "moves", "e2e4", "e7e5", "g1f3"])
    assert [move.uci() for move in board.move_stack] == ["e2e4", "e7e5", "g1f3"]
    assert board.root() == chess.Board()


def test_position_fen_with_moves() -> None:
    board = parse_position(f"fen {BACK_RANK_MATE_IN_1} moves a1a8".split())
    assert board.is_checkmate()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "expected 'startpos' or 'fen"),
        ("fen", "the FEN is missing"),
        ("fen not/a/fen w - - 0 1", "position fen 'not/a/fen w - - 0 1'"),
        ("fen 8/8/8/8/8/8/8/8 w - - 0 1", "not a legal chess position (NO_WHITE_KING"),
        ("startpos moves e2e4 e2e4", "illegal move 'e2e4' in rnbqkbnr/pppppppp/8/8/4P3"),
        ("startpos e2e4", "unexpected 'e2e4'"),
        ("somewhere", "got 'somewhere'"),
    ],
)
def test_bad_positions_raise_with_context(text: str, message: str) -> None:
    with pytest.raises(UciCommandError) as caught:
        parse_position(text.split())
    assert message in str(caught.value)


def test_go_reads_every_limit() -> None:
    go, warnings = parse_go(
        [
            "wtime",
            "60000",
            "btime",
            "50000",
            "winc",
            "1000",
            "binc",
            "900",
            "movestogo",
            "20",
            "depth",
            "5",
            "nodes",
            "800",
            "movetime",
            "1500",
        ]
    )
    assert warnings == []
    assert (go.wtime, go.btime, go.winc, go.binc, go.movestogo) == (60000, 50000, 1000, 900, 20)
    assert (go.depth, go.nodes, go.movetime, go.infinite, go.ponder) == (5, 800, 1500, False, False)


def test_go_flags_and_searchmoves() -> None:
    go, warnings = parse_go(["searchmoves", "e2e4", "d2d4", "infinite"])
    assert go.infinite and go.searchmoves == ("e2e4", "d2d4") and warnings == []
    go, _ = parse_go(["ponder", "wtime", "1000"])
    assert go.ponder and go.wtime == 1000


def test_go_drops_bad_values_with_warnings() -> None:
    go, warnings = parse_go(
        ["nodes", "-5", "movetime", "abc", "depth", "wtime", "1000.0", "frobnicate"]
    )
    assert go.nodes is None and go.movetime is None and go.wtime == 1000
    assert any("nodes -5: must be positive" in warning for warning in warnings)
    assert any("movetime 'abc': not an integer" in warning for warning in warnings)
    assert any("depth: missing value" in warning for warning in warnings) and go.depth is None
    assert any("unknown parameter 'frobnicate'" in warning for warning in warnings)


def test_setoption_names_and_values_may_have_spaces() -> None:
    assert parse_setoption(["name", "Move", "Overhead", "value", "100"]) == ("Move Overhead", "100")
    assert parse_setoption(["name", "Clear", "Hash"]) == ("Clear Hash", None)
    with pytest.raises(UciCommandError, match="expected 'name"):
        parse_setoption(["value", "3"])


# -- options ---------------------------------------------------------------------


def test_options_declare_and_parse() -> None:
    options = {
        option.name: option for option in engine_options(SearchConfig(), threads=2, max_threads=4)
    }
    assert options["Threads"].declaration() == "option name Threads type spin default 2 min 1 max 4"
    assert options["CPuct"].declaration() == "option name CPuct type string default 1.25"
    assert options["Ponder"].declaration() == "option name Ponder type check default false"
    assert options["MultiPV"].parse("3") == 3
    assert options["CPuct"].parse("2.5") == 2.5
    assert options["Ponder"].parse("TRUE") is True


@pytest.mark.parametrize(
    ("value", "message"),
    [(None, "a value is required"), ("x", "expected an integer"), ("0", "outside [1, 256]")],
)
def test_bad_option_values_are_refused(value: str | None, message: str) -> None:
    option = UciOption("MultiPV", "spin", 1, 1, 256)
    with pytest.raises(UciCommandError, match=message.replace("[", r"\[")):
        option.parse(value)
