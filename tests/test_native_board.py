"""The native chess rules (models._native.Board) against published perft counts and python-chess.

python-chess is the reference: legal move sets, checks, FENs, validity,
insufficient material, game-over reasons and repetition keys are compared
position by position on seeded random games and fuzzed FENs.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Hashable

import chess
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models import _native
from tests.helpers.boards import KIWIPETE
from tests.helpers.native_random_games import random_games

STARTING_FEN = chess.STARTING_FEN

# (FEN, depth, leaf count): the Chess Programming Wiki's perft positions 1-6
# (and position 4 mirrored) plus classic special-rule positions.
PERFT_CASES = [
    (STARTING_FEN, 5, 4_865_609),
    (KIWIPETE, 4, 4_085_603),
    (KIWIPETE, 5, 193_690_690),
    ("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", 6, 11_030_083),
    ("r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", 5, 15_833_292),
    ("r2q1rk1/pP1p2pp/Q4n2/bbp1p3/Np6/1B3NBn/pPPP1PPP/R3K2R b KQ - 0 1", 5, 15_833_292),
    ("rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8", 5, 89_941_194),
    ("r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10", 5, 164_075_551),
    ("8/5bk1/8/2Pp4/8/1K6/8/8 w - d6 0 1", 6, 824_064),  # en passant would expose the king
    ("8/8/1k6/2b5/2pP4/8/5K2/8 b - d3 0 1", 6, 1_440_467),  # en passant gives check
    ("5k2/8/8/8/8/8/8/4K2R w K - 0 1", 6, 661_072),  # castling gives check
    ("3k4/8/8/8/8/8/8/R3K3 w Q - 0 1", 6, 803_711),
    ("r3k2r/1b4bq/8/8/8/8/7B/R3K2R w KQkq - 0 1", 4, 1_274_206),  # rights lost by captures
    ("r3k2r/8/3Q4/8/8/5q2/8/R3K2R b KQkq - 0 1", 4, 1_720_476),  # castling through check
    ("2K2r2/4P3/8/8/8/8/8/3k4 w - - 0 1", 6, 3_821_001),  # promotion out of check
    ("8/8/1P2K3/8/2n5/1q6/8/5k2 b - - 0 1", 5, 1_004_658),  # discovered check
    ("4k3/1P6/8/8/8/8/K7/8 w - - 0 1", 6, 217_342),
    ("8/P1k5/K7/8/8/8/8/8 w - - 0 1", 6, 92_683),  # under-promotion
    ("K1k5/8/P7/8/8/8/8/8 w - - 0 1", 6, 2_217),  # self stalemate
    ("8/k1P5/8/1K6/8/8/8/8 w - - 0 1", 7, 567_584),
    ("8/8/2k5/5q2/5n2/8/5K2/8 b - - 0 1", 4, 23_527),  # double check
]


def transposition_key(board: chess.Board) -> Hashable:
    """python-chess's repetition identity of a position."""
    return board._transposition_key()  # noqa: SLF001 - the reference definition


def expected_reason(board: chess.Board, legal: list[str], repetitions: int) -> str:
    """python-chess's facts put in the project's order (models.search.terminal_value)."""
    if not legal:
        return "checkmate" if board.is_checkmate() else "stalemate"
    if repetitions >= 2:
        return "threefold_repetition"
    if board.halfmove_clock >= 100:
        return "fifty_moves"
    if board.is_insufficient_material():
        return "insufficient_material"
    return ""


@pytest.mark.parametrize(("fen", "depth", "nodes"), PERFT_CASES)
def test_perft_matches_published_counts(fen: str, depth: int, nodes: int) -> None:
    assert _native.perft(fen, depth) == nodes
    assert _native.Board(fen).perft(depth) == nodes


def test_perft_small_depths_and_errors() -> None:
    board = _native.Board()
    assert [board.perft(d) for d in range(4)] == [1, 20, 400, 8_902]
    with pytest.raises(_native.ChessError, match="-1"):
        board.perft(-1)
    with pytest.raises(ValueError, match="-3"):
        _native.perft(STARTING_FEN, -3)


class GameChecker:
    """Replays one game on both boards, comparing every position."""

    def __init__(self, key_to_tkey: dict[int, Hashable], tkey_to_key: dict[Hashable, int]) -> None:
        self.key_to_tkey = key_to_tkey
        self.tkey_to_key = tkey_to_key

    def check_position(
        self, ref: chess.Board, nat: _native.Board, seen: Counter[Hashable], deep: bool
    ) -> str:
        """Compares one position; returns the game-over reason."""
        legal = [m.uci() for m in ref.generate_legal_moves()]
        fen = ref.fen()
        assert nat.fen() == fen
        assert sorted(nat.legal_moves()) == sorted(legal), fen
        assert nat.is_check() == ref.is_check(), fen
        assert nat.halfmove_clock == ref.halfmove_clock
        assert nat.turn == ref.turn
        assert nat.ply() == ref.ply()
        tkey = transposition_key(ref)
        key = nat.key()
        assert self.key_to_tkey.setdefault(key, tkey) == tkey, f"key collision at {fen}"
        assert self.tkey_to_key.setdefault(tkey, key) == key, f"two keys for one position at {fen}"
        repetitions = seen[tkey]
        reason = _native.terminal_reason(fen, repetitions)
        assert reason == expected_reason(ref, legal, repetitions), fen
        if deep:
            assert _native.Board(fen).fen() == fen
            assert nat.compute_key() == key
            assert nat.has_legal_en_passant() == ref.has_legal_en_passant(), fen
            assert nat.is_insufficient_material() == ref.is_insufficient_material(), fen
            assert nat.status() == ""
        return reason

    def replay(self, moves: list[str], deep: bool) -> str:
        """Plays the game on both boards; returns how it ended ("" for the ply cap)."""
        ref = chess.Board()
        nat = _native.Board()
        seen: Counter[Hashable] = Counter()
        reason = ""
        for uci in moves:
            reason = self.check_position(ref, nat, seen, deep)
            assert reason == "", f"game should have ended ({reason}) before {uci}"
            seen[transposition_key(ref)] += 1
            ref.push_uci(uci)
            nat.push_uci(uci)
        return self.check_position(ref, nat, seen, deep)


def check_random_games(count: int, seed: int, deep: bool) -> Counter[str]:
    """Replays ``count`` random games; returns how many ended for each reason."""
    checker = GameChecker({}, {})
    endings: Counter[str] = Counter()
    for moves in random_games(count, seed=seed):
        endings[checker.replay(moves, deep) or "ply cap"] += 1
    return endings


def test_random_games_match_python_chess() -> None:
    endings = check_random_games(200, seed=1, deep=True)
    assert endings["checkmate"] > 0 and endings["threefold_repetition"] > 0


@pytest.mark.slow
def test_many_random_games_match_python_chess() -> None:
    endings = check_random_games(5_000, seed=2, deep=False)
    for reason in ("checkmate", "stalemate", "threefold_repetition", "fifty_moves"):
        assert endings[reason] > 0, endings
    assert endings["insufficient_material"] > 0, endings


def test_random_games_cover_the_special_rules() -> None:
    """The generator reaches promotions, castling and en passant (else the checks prove little)."""
    kinds: Counter[str] = Counter()
    for moves in random_games(200, seed=1):
        board = chess.Board()
        for uci in moves:
            move = chess.Move.from_uci(uci)
            kinds["promotion"] += move.promotion is not None
            kinds["castling"] += board.is_castling(move)
            kinds["en passant"] += board.is_en_passant(move)
            board.push(move)
    assert min(kinds.values()) >= 10, kinds
    assert len(kinds) == 3


def test_random_games_are_reproducible() -> None:
    assert list(random_games(3, seed=7)) == list(random_games(3, seed=7))
    assert list(random_games(3, seed=7)) != list(random_games(3, seed=8))


def test_make_unmake_restores_position_and_key() -> None:
    checked = 0
    for moves in random_games(30, seed=3):
        board = _native.Board()
        for uci in moves:
            checked += board.check_make_unmake()
            board.push_uci(uci)
    assert checked > 10_000


TRICKY_FENS = [
    "8/8/8/KPp4r/8/8/8/7k w - c6 0 1",  # en passant exposes the king along the rank
    "8/8/8/KPp5/8/8/8/7k w - c6 0 1",
    "7k/8/8/1PpK4/8/8/8/8 w - c6 0 1",
    "8/8/3k4/8/2pP4/8/8/4K2B b - d3 0 1",  # pinned capturer (diagonal)
    "8/8/8/8/k1pP3R/8/8/4K3 b - d3 0 1",  # horizontal skewer
    "4k3/8/8/2Pp4/8/8/8/4K3 w - d6 0 1",
    "4k3/8/8/8/3Pp3/8/8/3K4 b - d3 0 1",
    "8/8/8/2k5/3Pp3/8/8/4K3 b - d3 0 1",  # the double-pushed pawn gives check
    "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",
    "r3k2r/8/8/8/8/8/6p1/R3K2R w KQkq - 0 1",
    "r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1",
    "1r2k2r/8/8/8/8/8/8/R3K2R w KQk - 0 1",  # b1 attacked: queen side still legal
    "r3k2r/8/8/8/8/8/8/Rn2K2R w KQkq - 0 1",
    "r3k2r/8/8/8/4r3/8/8/R3K2R w KQkq - 0 1",  # in check: no castling
    "r3k1r1/8/8/8/8/8/8/R3K2R w KQq - 0 1",
    "4k3/8/8/8/8/8/8/4K2R w K - 0 1",
    "rnbqkbnr/ppp1pppp/8/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3",
    "1k6/1b6/8/3pP3/8/8/6K1/8 w - d6 0 1",
    "n1n5/PPPk4/8/8/8/8/4Kppp/5N1N b - - 0 1",
    "8/8/8/8/8/5k2/4p3/4K3 b - - 0 1",
]


@pytest.mark.parametrize("fen", TRICKY_FENS)
def test_special_positions_match_python_chess(fen: str) -> None:
    ref = chess.Board(fen)
    nat = _native.Board(fen)
    assert nat.status() == ""
    assert nat.fen() == ref.fen()
    assert sorted(nat.legal_moves()) == sorted(m.uci() for m in ref.legal_moves)
    assert nat.has_legal_en_passant() == ref.has_legal_en_passant()
    assert nat.is_check() == ref.is_check()
    nat.check_make_unmake()
    for uci in nat.legal_moves():  # every child position too
        child = nat.copy()
        child.push_uci(uci)
        ref.push_uci(uci)
        assert child.fen() == ref.fen()
        assert sorted(child.legal_moves()) == sorted(m.uci() for m in ref.legal_moves)
        ref.pop()


def test_key_ignores_unusable_en_passant_and_move_counters() -> None:
    board = _native.Board()
    for uci in ("e2e4", "e7e5", "g1f3", "b8c6", "f3g1", "c6b8"):
        board.push_uci(uci)
    fen = "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 4 4"
    assert board.fen() == fen
    assert board.key() == _native.Board(fen.replace("- 4 4", "- 40 90")).key()
    assert board.key() != _native.Board(fen.replace(" w ", " b ")).key()
    assert board.key() != _native.Board(fen.replace("KQkq", "Kkq")).key()
    usable = "4k3/8/8/8/3Pp3/8/8/4K3 b - d3 0 1"
    assert _native.Board(usable).key() != _native.Board(usable.replace("d3", "-")).key()
    pinned = "8/8/8/8/k1pP3R/8/8/4K3 b - d3 0 1"  # the capture would expose the king
    assert _native.Board(pinned).key() == _native.Board(pinned.replace("d3", "-")).key()
    assert _native.Board(pinned).fen() == pinned.replace("d3", "-")


TERMINAL_REASONS = {  # reason: (FEN, earlier occurrences of the position), ...; "": the game goes on
    "checkmate": [("7k/6Q1/6K1/8/8/8/8/8 b - - 0 1", 0), ("7k/6Q1/6K1/8/8/8/8/8 b - - 120 1", 2)],
    "stalemate": [("7k/8/6QK/8/8/8/8/8 b - - 0 1", 0), ("7k/8/6QK/8/8/8/8/8 b - - 0 1", 3)],
    "fifty_moves": [("4k3/8/8/8/8/8/8/R3K3 w - - 100 80", 0)],
    "threefold_repetition": [("4k3/8/8/8/8/8/8/R3K3 w - - 100 80", 2)],
    "insufficient_material": [("4k3/8/8/8/8/8/8/4KB2 w - - 0 1", 0), ("4k3/8/8/8/8/8/8/4KN2 w - - 0 1", 1),
                              ("2b1k3/8/8/8/8/8/8/4KB2 w - - 0 1", 0)],
    "": [("4k3/8/8/8/8/8/8/R3K3 w - - 99 80", 0), ("4k3/8/8/8/8/8/8/R3K3 w - - 0 80", 1),
         ("4k3/8/8/8/8/8/8/3NKN2 w - - 0 1", 0), ("3bk3/8/8/8/8/8/8/4KB2 w - - 0 1", 0)],
}  # fmt: skip


@pytest.mark.parametrize(
    ("fen", "repetitions", "reason"),
    [(fen, repetitions, reason) for reason, cases in TERMINAL_REASONS.items() for fen, repetitions in cases],
)
def test_terminal_reason(fen: str, repetitions: int, reason: str) -> None:
    assert _native.terminal_reason(fen, repetitions) == reason
    expected = chess.Board(fen).is_insufficient_material()
    assert _native.Board(fen).is_insufficient_material() == expected


# --- Fuzzing: malformed input raises ChessError naming it, never crashes. ---

FEN_ALPHABET = "pnbrqkPNBRQK12345678/ /wb-KQkqabcdefgh0123456789~_+"


def native_or_error(fen: str) -> _native.Board | None:
    """The native board, or None after checking the error names the FEN."""
    try:
        return _native.Board(fen)
    except _native.ChessError as error:
        assert isinstance(error, ValueError)
        assert fen in str(error) or not fen.isprintable()
        return None


def reference_or_none(fen: str) -> chess.Board | None:
    """python-chess's board, or None when it refuses the FEN."""
    try:
        return chess.Board(fen)
    except ValueError:
        return None


def big_number(fen: str) -> bool:
    """A clock field beyond the native parser's range (python ints are unbounded)."""
    return any(len(re.sub(r"[^0-9]", "", part)) > 9 for part in fen.split()[4:])


def exercise(board: _native.Board) -> None:
    """Calls everything on a board python-chess may call invalid: no crash, no hang."""
    board.status()
    board.fen()
    board.key()
    board.is_check()
    board.is_insufficient_material()
    for uci in board.legal_moves()[:8]:
        child = board.copy()
        child.push_uci(uci)
        child.legal_moves()
        child.fen()
    board.perft(2)
    board.check_make_unmake()


def compare_fen(fen: str) -> None:
    """Native and python-chess agree on accepting ``fen``, on validity and on a valid position."""
    ref = reference_or_none(fen)
    nat = native_or_error(fen)
    if ref is None or nat is None:
        assert nat is None or ref is not None, fen  # never accept what python-chess refuses
        assert ref is None or big_number(fen), fen
        return
    promoted_king = re.search(r"[Kk]~", fen.split()[0]) is not None  # see Board::status
    expected_valid = ref.is_valid() and not promoted_king
    assert (nat.status() == "") == expected_valid, (fen, nat.status(), ref.status())
    if nat.status() == "":
        assert nat.fen() == ref.fen()
        assert sorted(nat.legal_moves()) == sorted(m.uci() for m in ref.legal_moves)
        assert nat.is_check() == ref.is_check()
        assert nat.is_insufficient_material() == ref.is_insufficient_material()
    exercise(nat)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=FEN_ALPHABET, max_size=90))
def test_fuzz_garbage_fens(fen: str) -> None:
    compare_fen(fen)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_fuzz_any_text_never_crashes(text: str) -> None:
    board = native_or_error(text)
    if board is not None:
        exercise(board)


def random_placement(rng: random.Random) -> str:
    """A random valid-looking FEN: kings usually present, random pieces and fields."""
    squares: dict[int, str] = {}
    for king in "Kk":
        if rng.random() < 0.95:
            squares[rng.randrange(64)] = king
    for _ in range(rng.randint(0, 24)):
        piece = rng.choice("PNBRQPPPpnbrqppp" + ("Kk" if rng.random() < 0.05 else ""))
        low, high = (8, 56) if piece in "Pp" and rng.random() < 0.95 else (0, 64)
        square = rng.randrange(low, high)
        if squares.get(square) not in ("K", "k"):
            squares[square] = piece
    if rng.random() < 0.3:  # castling-ready corners
        squares.update({4: "K", 0: "R", 7: "R", 60: "k", 56: "r", 63: "r"})
    rows = []
    for rank in range(7, -1, -1):
        row, empty = "", 0
        for file in range(8):
            piece = squares.get(rank * 8 + file)
            if piece is None:
                empty += 1
                continue
            row += (str(empty) if empty else "") + piece
            empty = 0
        rows.append(row + (str(empty) if empty else ""))
    castling = rng.choice(["-"] * 9 + ["KQkq", "K", "q", "Kq", "AH", "ha", "Bb", "KQ", "kq"])
    ep = rng.choice(["-"] * 40 + [f"{f}{r}" for f in "abcdefgh" for r in "36"] + ["a1", "e4"])
    clocks = f"{rng.randint(0, 120)} {rng.randint(0, 90)}"
    return f"{'/'.join(rows)} {rng.choice('wb')} {castling} {ep} {clocks}"


def test_move_list_never_overflows() -> None:
    """A king-less pile of queens has more moves than any legal position: capped, no overrun."""
    fen = "QQQ4Q/3QQQ2/1Q4QQ/Q6Q/Q1Q4Q/Q4Q1Q/n2Q3Q/QQ2Q1Qp w - - 0 1"
    assert chess.Board(fen).legal_moves.count() == 258
    board = _native.Board(fen)
    assert "no white king" in board.status()
    assert len(board.legal_moves()) == 256
    exercise(board)


def test_fuzz_random_placements() -> None:
    rng = random.Random(11)
    valid = 0
    for _ in range(3_000):
        fen = random_placement(rng)
        compare_fen(fen)
        valid += chess.Board(fen).is_valid()
    assert valid > 300


def test_fuzz_positions_from_games_with_bogus_fields() -> None:
    """Real positions with their en passant / castling fields replaced: validity as python-chess."""
    rng = random.Random(5)
    for moves in random_games(20, seed=9):
        board = chess.Board()
        for uci in moves[: rng.randint(0, len(moves))]:
            board.push_uci(uci)
        parts = board.fen().split()
        for ep in ("-", "e3", "e6", "d6", "c3", "h6", "a3", "b5"):
            for castling in ("-", "KQkq", "Kk", "Qq", parts[2]):
                compare_fen(" ".join([parts[0], parts[1], castling, ep, parts[4], parts[5]]))


@pytest.mark.parametrize(
    "fen",
    [
        "",
        "   ",
        "8/8/8/8/8/8/8 w - - 0 1",
        "8/8/8/8/8/8/8/8/8 w - - 0 1",
        "9/8/8/8/8/8/8/8 w - - 0 1",
        "44/8/8/8/8/8/8/8 w - - 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkqK - 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e9 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - -1 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 -1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 extra",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNX w KQkq - 0 1",
        "~nbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0x 1",
    ],
)
def test_malformed_fens_raise_chess_error_naming_them(fen: str) -> None:
    assert reference_or_none(fen) is None
    with pytest.raises(_native.ChessError) as error:
        _native.Board(fen)
    assert fen in str(error.value)
    with pytest.raises(ValueError):
        _native.perft(fen, 1)
    with pytest.raises(ValueError):
        _native.terminal_reason(fen, 0)


@pytest.mark.parametrize(
    ("fen", "reason"),
    [
        ("8/8/8/8/8/8/8/8 w - - 0 1", "empty"),
        ("4k3/8/8/8/8/8/8/8 w - - 0 1", "no white king"),
        ("4k3/8/8/8/8/8/8/3KK3 w - - 0 1", "too many kings"),
        ("4k3/8/8/8/8/8/8/P3K3 w - - 0 1", "back rank"),
        ("4k3/8/8/8/8/8/8/4K3 w K - 0 1", "castling"),
        ("4k3/8/8/8/8/8/8/4K3 w - e6 0 1", "en passant"),
        ("4k3/8/8/8/8/8/8/4K2R b - - 0 1", ""),
        ("4k2R/8/8/8/8/8/8/4K3 w - - 0 1", "opposite check"),
        ("3rkr2/8/8/8/8/8/4q3/4K3 w - - 0 1", ""),
        ("4k3/8/8/8/1b6/3n4/8/r3K3 w - - 0 1", "too many checkers"),
        ("4k3/8/8/8/8/8/8/r3K2r w - - 0 1", "impossible check"),
        ("4k3/8/8/8/8/8/8/4K3 w - - 0 1", ""),
        ("4K~3/8/8/8/8/8/8/4k3 w - - 0 1", "promoted king"),
    ],
)
def test_status_reasons(fen: str, reason: str) -> None:
    status = _native.Board(fen).status()
    if reason:
        assert reason in status
        if "promoted" not in reason:
            assert not chess.Board(fen).is_valid()
    else:
        assert status == ""
        assert chess.Board(fen).is_valid()


FUZZ_GAME = next(random_games(1, seed=4))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abcdefgh12345678qrbnkp0 -", max_size=7), st.integers(0, 29))
def test_fuzz_move_strings(uci: str, game_ply: int) -> None:
    moves = FUZZ_GAME[:game_ply]
    board = _native.Board()
    for played in moves:
        board.push_uci(played)
    fen = board.fen()
    if uci in board.legal_moves():
        board.push_uci(uci)
        assert board.fen() != fen
        return
    with pytest.raises(_native.ChessError) as error:
        board.push_uci(uci)
    assert uci in str(error.value) and fen in str(error.value)
    assert board.fen() == fen


def test_illegal_moves_in_the_start_position() -> None:
    board = _native.Board()
    for uci in ("e2e5", "e1g1", "a1a2", "e7e5", "e2e4q", "g1g3", "b1b3", "0000", "e2e2"):
        with pytest.raises(_native.ChessError, match=uci):
            board.push_uci(uci)
    assert board.fen() == STARTING_FEN


def test_board_api_mirrors_python_chess() -> None:
    board = _native.Board()
    assert board.turn is True and board.ply() == 0 and board.fullmove_number == 1
    board.push_uci("e2e4")
    assert board.turn is False and board.ply() == 1 and board.halfmove_clock == 0
    copy = board.copy()
    copy.push_uci("g8f6")
    assert board.fen() != copy.fen() and copy.halfmove_clock == 1 and copy.fullmove_number == 2
    assert isinstance(board.key(), int) and board.key() == board.compute_key()
    assert repr(board).startswith("Board('")
