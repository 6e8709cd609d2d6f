"""UCT / RAVE baseline player: tactics, legality, budgets, statistics, strength."""

from __future__ import annotations

import math
import random
import time
from collections import Counter

import chess
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.search_config import terminal_value
from pipeline.players.base import Limits, Player, PlayerError
from pipeline.players.random_moves import nth_move, pseudo_legal_groups, random_legal_move
from pipeline.players.uct import UCTPlayer
from pipeline.players.uct_search import adjudicate, rave_beta, rave_value, ucb1_bonus
from pipeline.selfplay.adjudication import material_balance
from tests.helpers.boards import random_board, random_walk
from tests.helpers.search_positions import SIMPLE_MATES_IN_ONE

# An undefended queen en prise to a knight, for each side.
HANGING_QUEENS = [
    ("rnb1kbnr/ppp2ppp/8/3q4/8/2N5/PPPP1PPP/R1BQKBNR w KQkq - 0 1", "c3d5"),
    ("r1bqkbnr/pppp1ppp/2n5/8/3Q4/8/PPP2PPP/RNB1KBNR b KQkq - 0 1", "c6d4"),
]

OPENINGS = [
    chess.STARTING_FEN,
    "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",  # 1.e4 e5 2.Nf3 Nc6
    "rnbqkbnr/pp1ppppp/8/2p5/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2",  # Sicilian
    "rnbqkbnr/ppp1pppp/8/3p4/2PP4/8/PP2PPPP/RNBQKBNR b KQkq - 0 2",  # Queen's Gambit
]


def fast(**kwargs: object) -> UCTPlayer:
    """A player with short rollouts, to keep the tests quick."""
    kwargs.setdefault("rollout_plies", 10)
    return UCTPlayer(**kwargs)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# Formulas


def test_ucb1_bonus() -> None:
    assert ucb1_bonus(1.4, 10, 0) == math.inf
    assert ucb1_bonus(1.4, 100, 4) == pytest.approx(1.4 * math.sqrt(math.log(100) / 4))
    assert ucb1_bonus(0.0, 100, 4) == 0.0


def test_rave_beta_schedule() -> None:
    assert rave_beta(0, 1000.0) == 1.0
    assert rave_beta(100, 1000.0) == pytest.approx(1000 / 1300)  # 0.77
    assert rave_beta(1000, 1000.0) == pytest.approx(0.25)
    assert rave_beta(10, 30.0) == pytest.approx(30 / 60)
    values = [rave_beta(n, 1000.0) for n in range(0, 5000, 50)]
    assert values == sorted(values, reverse=True)


def test_rave_value_mixes_by_beta() -> None:
    assert rave_value(0.2, 0.8, 0, 1000.0) == pytest.approx(0.8)
    beta = 1000 / 1300
    assert rave_value(0.2, 0.8, 100, 1000.0) == pytest.approx((1 - beta) * 0.2 + beta * 0.8)
    assert rave_value(-1.0, 1.0, 1000, 1000.0) == pytest.approx(0.75 * -1.0 + 0.25 * 1.0)


def test_material_and_adjudication() -> None:
    assert material_balance(chess.Board()) == 0
    board = chess.Board("4k3/8/8/3q4/8/8/PP6/4K3 w - - 0 1")  # Black: Q; White: 2 P
    assert material_balance(board) == 2 - 9
    assert adjudicate(board) == pytest.approx(math.tanh(-7 / 5))
    board.turn = chess.BLACK
    assert adjudicate(board) == pytest.approx(math.tanh(7 / 5))


def test_terminal_value_rules() -> None:
    mate = chess.Board("R5k1/5ppp/8/8/8/8/8/6K1 b - - 1 1")
    assert terminal_value(mate, list(mate.legal_moves), 0) == -1.0
    stalemate = chess.Board("k7/8/1Q6/8/8/8/8/6K1 b - - 0 1")
    assert terminal_value(stalemate, list(stalemate.legal_moves), 0) == 0.0
    board = chess.Board("4k3/8/8/8/8/8/8/R3K3 w - - 0 1")
    moves = list(board.legal_moves)
    assert terminal_value(board, moves, 0) is None
    assert terminal_value(board, moves, 2) == 0.0  # threefold
    board.halfmove_clock = 100
    assert terminal_value(board, moves, 0) == 0.0
    bare = chess.Board("4k3/8/8/8/8/8/3n4/4K3 w - - 0 1")
    assert terminal_value(bare, list(bare.legal_moves), 0) == 0.0


# ---------------------------------------------------------------------------
# Rollout move sampling


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), plies=st.integers(0, 160))
def test_pseudo_legal_groups_are_python_chess_moves(seed: int, plies: int) -> None:
    for board in random_walk(seed, plies):
        groups, total = pseudo_legal_groups(board)
        got = [nth_move(groups, i) for i in range(total)]
        assert len(got) == len(set(got))
        assert set(got) == set(board.generate_pseudo_legal_moves()), board.fen()


@pytest.mark.parametrize(
    "fen",
    [
        "4k3/8/8/1b6/8/3P4/4P3/4K3 w - - 0 1",  # pinned pawn e2: rejections
        "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",  # castling
        "4k3/1P6/8/3pP3/8/8/8/4K3 w - d6 0 1",  # promotions and en passant
        "4k3/8/8/8/8/8/4q3/4K3 w - - 0 1",  # in check
    ],
)
def test_rollout_moves_are_uniform_over_legal_moves(fen: str) -> None:
    board = chess.Board(fen)
    legal = set(board.legal_moves)
    draws = 200 * len(legal)
    rng = random.Random(7)
    counts = Counter(random_legal_move(board, None, rng.random) for _ in range(draws))
    assert set(counts) == legal
    for move in legal:  # binomial(draws, 1/len): 200 expected, sd ~14
        assert 130 <= counts[move] <= 270, (move, counts[move])


def test_rollout_sampler_reports_no_move() -> None:
    rng = random.Random(0)
    stalemate = chess.Board("k7/8/1Q6/8/8/8/8/6K1 b - - 0 1")
    mate = chess.Board("R5k1/5ppp/8/8/8/8/8/6K1 b - - 1 1")
    assert random_legal_move(stalemate, None, rng.random) is None
    assert random_legal_move(mate, None, rng.random) is None


# ---------------------------------------------------------------------------
# Tactics


@pytest.mark.parametrize("rave", [False, True])
@pytest.mark.parametrize(("fen", "best"), SIMPLE_MATES_IN_ONE)
def test_finds_mate_in_one(fen: str, best: str, rave: bool) -> None:
    player = UCTPlayer(rollouts=300, rave=rave)
    move = player.play(chess.Board(fen))
    assert move.uci() == best
    root = player.last_root
    assert root is not None
    index = root.moves.index(move)
    assert root.children[index].terminal == -1.0  # the side to move there is mated
    assert root.q(index) == 1.0  # +1 for the player who mates


@pytest.mark.parametrize("rave", [False, True])
@pytest.mark.parametrize(("fen", "best"), HANGING_QUEENS)
def test_captures_a_hanging_queen(fen: str, best: str, rave: bool) -> None:
    moves = [
        fast(rollouts=200, rave=rave, seed=seed).play(chess.Board(fen)).uci() for seed in range(3)
    ]
    assert moves.count(best) >= 2, moves


# ---------------------------------------------------------------------------
# Legality, budgets, the input board


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), plies=st.integers(0, 200), rave=st.booleans())
def test_never_returns_an_illegal_move(seed: int, plies: int, rave: bool) -> None:
    board = random_board(seed, plies)
    if not any(board.generate_legal_moves()):
        return
    player = UCTPlayer(rollouts=6, rave=rave, rollout_plies=6, seed=seed)
    assert board.is_legal(player.play(board))


@pytest.mark.parametrize("rave", [False, True])
def test_input_board_is_unchanged(rave: bool) -> None:
    board = random_board(3, 30)
    fen, stack = board.fen(), list(board.move_stack)
    fast(rollouts=50, rave=rave).play(board)
    assert board.fen() == fen
    assert board.move_stack == stack


def test_nodes_limit_overrides_rollouts() -> None:
    player = fast(rollouts=20)
    player.play(chess.Board())
    assert player.last_simulations == 20
    player.play(chess.Board(), Limits(nodes=37))
    root = player.last_root
    assert player.last_simulations == 37
    assert root is not None and root.visits == 37 and sum(root.child_n) == 37


def test_movetime_stops_the_search() -> None:
    player = fast(rollouts=10**7)
    start = time.perf_counter()
    player.play(chess.Board(), Limits(movetime_s=0.2))
    elapsed = time.perf_counter() - start
    assert 1 <= player.last_simulations < 10**7
    assert elapsed < 3.0  # generous: the machine is shared
    player.play(chess.Board(), Limits(movetime_s=1e-9))
    assert player.last_simulations == 1  # at least one simulation always runs


def test_forced_move_needs_no_search() -> None:
    board = chess.Board("k7/8/8/8/8/8/1r6/K7 w - - 0 1")  # Kxb2 only
    player = fast(rollouts=100)
    assert player.play(board).uci() == "a1b2"
    assert player.last_simulations == 0 and player.last_root is None


@pytest.mark.parametrize(
    "fen",
    [
        "R5k1/5ppp/8/8/8/8/8/6K1 b - - 1 1",  # checkmated
        "k7/8/1Q6/8/8/8/8/6K1 b - - 0 1",  # stalemated
    ],
)
def test_finished_game_raises(fen: str) -> None:
    with pytest.raises(PlayerError, match="finished game"):
        fast(rollouts=5).play(chess.Board(fen))


def test_invalid_position_raises() -> None:
    with pytest.raises(PlayerError, match="invalid position"):
        fast(rollouts=5).play(chess.Board("8/8/8/8/8/8/8/4K3 w - - 0 1"))


def test_same_seed_same_search() -> None:
    board = random_board(11, 20)
    a, b = fast(rollouts=60, seed=5), fast(rollouts=60, seed=5)
    assert a.play(board) == b.play(board)
    assert a.last_root is not None and b.last_root is not None
    assert a.last_root.child_n == b.last_root.child_n


# ---------------------------------------------------------------------------
# Statistics and draw rules in the tree


@pytest.mark.parametrize("rave", [False, True])
def test_visit_statistics_are_consistent(rave: bool) -> None:
    player = fast(rollouts=120, rave=rave)
    player.play(random_board(5, 12))
    root = player.last_root
    assert root is not None
    assert sum(root.child_n) == root.visits == 120
    for i, child in enumerate(root.children):
        if child is None:
            assert root.child_n[i] == 0
            continue
        assert child.visits == root.child_n[i]
        assert -1.0 <= root.q(i) <= 1.0
        if child.moves:  # a child's visits are its own first visit plus its children's
            assert sum(child.child_n) == child.visits - 1


def test_rave_keeps_amaf_statistics() -> None:
    player = fast(rollouts=150, rave=True)
    player.play(chess.Board())
    root = player.last_root
    assert root is not None
    assert len(root.amaf_n) == len(root.moves)
    # The move taken at a node counts as played by its side: AMAF >= visits.
    assert all(a >= n for a, n in zip(root.amaf_n, root.child_n))
    assert sum(root.amaf_n) > sum(root.child_n)
    assert all(abs(w) <= n for w, n in zip(root.amaf_w, root.amaf_n))
    plain = fast(rollouts=20)
    plain.play(chess.Board())
    assert plain.last_root is not None and plain.last_root.amaf_n == []


def test_threefold_repetition_in_the_game_history_is_a_draw() -> None:
    board = chess.Board()
    for uci in ["g1f3", "g8f6", "f3g1", "f6g8"] * 2:
        board.push_uci(uci)
    # The position after 1.Nf3 has occurred twice: playing it again draws.
    player = UCTPlayer(rollouts=60, rollout_plies=2)
    player.play(board)
    root = player.last_root
    assert root is not None
    for move, child in zip(root.moves, root.children):
        assert child is not None
        if move.uci() == "g1f3":
            assert child.terminal == 0.0
        else:
            assert child.terminal is None


def test_fifty_move_rule_in_the_tree() -> None:
    board = chess.Board("4k3/8/8/8/8/8/8/R3K3 w - - 99 80")
    player = UCTPlayer(rollouts=60, rollout_plies=4)
    player.play(board)
    root = player.last_root
    assert root is not None
    # No mate in one exists, so every move reaches halfmove clock 100: a draw.
    assert all(child is not None and child.terminal == 0.0 for child in root.children)
    assert all(w == 0.0 for w in root.child_w)


def test_rollouts_end_by_the_rules_before_the_cutoff() -> None:
    # K+R vs K without pawns: within 100 random plies the game ends (mate,
    # the rook lost, or the 50-move rule), so no value is a material score.
    player = UCTPlayer(rollouts=30, rollout_plies=150, seed=3)
    player.play(chess.Board("4k3/8/8/8/8/8/8/R3K3 w - - 0 1"))
    root = player.last_root
    assert root is not None
    assert all(w == int(w) for w in root.child_w)


# ---------------------------------------------------------------------------
# Arguments and names


def test_name_and_protocol() -> None:
    player: Player = UCTPlayer(rollouts=1000)
    assert player.name == "uct:rollouts=1000"
    assert UCTPlayer(rollouts=1000, rave=True).name == "uct:rollouts=1000:rave=1"
    assert (
        UCTPlayer(rollouts=50, rave=True, rave_k=300, rollout_plies=8, exploration=2.0, seed=4).name
        == "uct:rollouts=50:rave=1:k=300:c=2:plies=8:seed=4"
    )
    player.new_game()
    player.close()


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"rollouts": 0}, "rollouts must be >= 1, got 0"),
        ({"rollouts": 2.5}, "rollouts must be an int, got 2.5"),
        ({"rollouts": True}, "rollouts must be an int, got True"),
        ({"exploration": -0.1}, "exploration must be >= 0, got -0.1"),
        ({"exploration": float("nan")}, "exploration must be a finite number, got nan"),
        ({"rave": "yes"}, "rave must be a bool, got 'yes'"),
        ({"rave_k": 0}, "rave_k must be > 0, got 0"),
        ({"rollout_plies": -1}, "rollout_plies must be >= 0, got -1"),
        ({"seed": "1"}, "seed must be an int, got '1'"),
    ],
)
def test_bad_arguments_raise(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(PlayerError) as info:
        UCTPlayer(**kwargs)  # type: ignore[arg-type]
    assert needle in str(info.value)


# ---------------------------------------------------------------------------
# Strength: more rollouts beat fewer


def _play_game(white: UCTPlayer, black: UCTPlayer, fen: str, max_plies: int) -> float:
    """White's score: the game result, or the sign of the material at the cap."""
    board = chess.Board(fen)
    for _ in range(max_plies):
        outcome = board.outcome(claim_draw=True)
        if outcome is not None:
            return 0.5 if outcome.winner is None else float(outcome.winner == chess.WHITE)
        player = white if board.turn == chess.WHITE else black
        move = player.play(board)
        assert board.is_legal(move)
        board.push(move)
    balance = material_balance(board)
    return 0.5 if balance == 0 else float(balance > 0)


@pytest.mark.slow
def test_more_rollouts_beat_fewer() -> None:
    """150 vs 8 rollouts, 8 games: 4 openings, colours alternated, 60-ply cap."""
    strong = UCTPlayer(rollouts=150, rollout_plies=8, seed=1)
    weak = UCTPlayer(rollouts=8, rollout_plies=8, seed=2)
    score = 0.0
    for fen in OPENINGS:
        for strong_is_white in (True, False):
            strong.new_game()
            weak.new_game()
            if strong_is_white:
                score += _play_game(strong, weak, fen, max_plies=60)
            else:
                score += 1.0 - _play_game(weak, strong, fen, max_plies=60)
    assert score / (2 * len(OPENINGS)) > 0.6, score
