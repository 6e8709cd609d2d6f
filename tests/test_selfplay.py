"""The self-play worker without Ray: batching, records, resignation, playout caps.

Most tests run on both search backends (``native``, the default, and the
``python`` reference): the same rules must hold on each."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import chess
import numpy as np
import pytest
import torch

from models.encoding import COLOUR_PLANE, encode_board, encode_snapshots
from models.evaluation import Leaf, UniformEvaluator
from models.net import AlphaZeroNet
from models.net_evaluator import NetEvaluator
from models.search_config import SearchConfig
from pipeline.config import ConfigError, SelfPlayConfig
from pipeline.selfplay import GameRecord, PlyRecord, SelfPlayWorker, load_start_positions
from tests.helpers import BACKENDS
from tests.helpers.nets import TINY_CONFIG
from tests.helpers.searches import TINY_SEARCH

NO_RESIGN = SelfPlayConfig(resign_threshold=-1.0, full_search_prob=1.0, games_per_task=4, max_plies=8)


class WhiteIsLost:
    """Uniform priors; every position is lost for white (won for black)."""

    needs_planes = False

    def evaluate(self, leaves: Sequence[Leaf]) -> list[tuple[np.ndarray, float]]:
        return [
            (np.full(len(leaf.moves), 1 / len(leaf.moves)), -0.99 if leaf.board.turn == chess.WHITE else 0.99)
            for leaf in leaves
        ]

    def evaluate_batch(
        self, planes: np.ndarray, rows: np.ndarray, indices: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        black_to_move = planes[:, COLOUR_PLANE, 0, 0] == 1
        return np.zeros(len(indices), np.float32), np.where(black_to_move, 0.99, -0.99).astype(np.float32)


@pytest.mark.parametrize("overlap", [False, True])
def test_games_share_batches_and_respect_the_length_limit(search: SearchConfig, overlap: bool) -> None:
    worker = SelfPlayWorker(UniformEvaluator(), search, replace(NO_RESIGN, overlap_inference=overlap))
    records = worker.play(games=6, seed=1, id_prefix="t")
    assert [record.game_id for record in records] == [f"t-{i:05d}" for i in range(6)]
    for record in records:
        assert len(record.plies) == 8 and record.result == "1/2-1/2" and record.termination == "max_plies"
        board = chess.Board(record.start_fen)
        for ply in record.plies:
            assert ply.fen == board.fen()
            assert int(ply.visits.sum()) >= 16  # more when tree reuse kept more
            assert ply.move in board.legal_moves
            board.push(ply.move)
    assert worker.stats.games == 6 and worker.stats.positions == 48
    lanes = 2 if overlap or search.backend == "native" else 1  # the native driver always double-buffers
    assert worker.stats.evaluations / worker.stats.batches > 8 / lanes  # games' leaves share batches


def test_same_seed_same_games(search: SearchConfig) -> None:
    def moves(seed: int) -> list[list[str]]:
        worker = SelfPlayWorker(UniformEvaluator(), search, NO_RESIGN)
        return [[p.move.uci() for p in r.plies] for r in worker.play(games=3, seed=seed)]

    assert moves(7) == moves(7)
    assert moves(7) != moves(8)


def test_recorded_planes_are_the_positions_planes(search: SearchConfig) -> None:
    torch.manual_seed(0)
    net = AlphaZeroNet(TINY_CONFIG)
    worker = SelfPlayWorker(NetEvaluator(net), search, replace(NO_RESIGN, max_plies=12))
    record = worker.play(games=1, seed=3)[0]
    board = chess.Board(record.start_fen)
    for ply in record.plies:
        planes = encode_snapshots(ply.history[None], ply.meta[None])[0]
        np.testing.assert_array_equal(planes, encode_board(board))
        board.push(ply.move)


def test_z_signs_after_a_mate(search: SearchConfig) -> None:
    # Black's only move is Kb8, then Rh8 mates.
    worker = SelfPlayWorker(
        UniformEvaluator(), replace(search, num_simulations=200), NO_RESIGN, ["k7/8/1K6/8/8/8/8/7R b - - 0 1"]
    )
    record = worker.play(games=1, seed=0)[0]
    assert [p.move.uci() for p in record.plies] == ["a8b8", "h1h8"]
    assert (record.result, record.termination) == ("1-0", "checkmate")
    assert [record.z(i) for i in range(2)] == [-1, 1]


def test_z_of_every_ply_follows_the_side_to_move() -> None:
    def ply(turn: chess.Color) -> PlyRecord:
        return PlyRecord("", turn, np.zeros((8, 14), np.uint64), np.zeros(7, np.uint8), [], np.zeros(0), 0.0,
                         chess.Move.null(), True)  # fmt: skip

    record = GameRecord("g", chess.STARTING_FEN, [ply(chess.WHITE), ply(chess.BLACK)] * 3, result="0-1")
    assert [record.z(i) for i in range(6)] == [-1, 1] * 3
    record.result = "1/2-1/2"
    assert {record.z(i) for i in range(6)} == {0}


def test_resignation_and_playthrough(search: SearchConfig) -> None:
    config = replace(NO_RESIGN, resign_threshold=-0.9, resign_plies=2, max_plies=20, resign_playthrough=0.0)
    resigned = SelfPlayWorker(WhiteIsLost(), search, config).play(games=2, seed=0)
    for record in resigned:
        assert (record.result, record.termination) == ("0-1", "resign")
        assert len(record.plies) == 3  # white's second low move is the resignation
    worker = SelfPlayWorker(WhiteIsLost(), search, replace(config, resign_playthrough=1.0))
    played = worker.play(games=2, seed=0)
    for record in played:
        assert record.playthrough and record.would_resign == chess.WHITE
        assert record.termination == "max_plies" and record.false_resign
    assert worker.stats.false_resigns == 2 and worker.stats.resigned == 0


def test_playout_cap_randomization(search: SearchConfig) -> None:
    config = replace(NO_RESIGN, full_search_prob=0.25, fast_simulations=4, max_plies=40, games_per_task=8)
    worker = SelfPlayWorker(UniformEvaluator(), search, config)
    records = worker.play(games=8, seed=2)
    plies = [ply for record in records for ply in record.plies]
    full = [ply for ply in plies if ply.full_search]
    assert all(int(ply.visits.sum()) >= 16 for ply in full)
    fast = [int(ply.visits.sum()) for ply in plies if not ply.full_search]
    assert min(fast) >= 4 and np.median(fast) < 16
    assert 0.15 < len(full) / len(plies) < 0.35


def test_start_positions_from_epd_and_fen_with_random_plies(search: SearchConfig, tmp_path: Path) -> None:
    book = tmp_path / "book.epd"
    book.write_text(
        "# two openings\n"
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - id \"e4\";\n"
        "rnbqkbnr/pppppppp/8/8/3P4/8/PPP1PPPP/RNBQKBNR b KQkq - 0 1\n"
    )
    fens = load_start_positions(book)
    assert len(fens) == 2
    worker = SelfPlayWorker(UniformEvaluator(), search, replace(NO_RESIGN, random_plies=2, max_plies=2), fens)
    records = worker.play(games=4, seed=0)
    for record in records:
        start = chess.Board(record.start_fen)
        assert start.turn == chess.BLACK and start.fullmove_number == 2  # book move + 2 random plies


def test_bad_start_positions_name_the_line(tmp_path: Path) -> None:
    book = tmp_path / "bad.epd"
    book.write_text("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1\nnot a position\n")
    with pytest.raises(ConfigError, match=r"bad.epd:2: invalid position 'not a position'"):
        load_start_positions(book)
    with pytest.raises(ConfigError, match="cannot read"):
        load_start_positions(tmp_path / "missing.epd")


def test_shard_rows_rebuild_the_planes_and_carry_z(search: SearchConfig) -> None:
    from models.policy import get_policy_map
    from pipeline.selfplay import game_positions
    from pipeline.shards import decode_planes, decode_policy, records_to_table, validate_table

    start = "k7/8/1K6/8/8/8/8/7R b - - 0 1"
    worker = SelfPlayWorker(
        UniformEvaluator(encode=True), replace(search, num_simulations=200), NO_RESIGN, [start]
    )
    mate = worker.play(games=1, seed=0)[0]
    random_game = SelfPlayWorker(UniformEvaluator(encode=True), search, replace(NO_RESIGN, max_plies=12)).play(1, 5)[0]
    policy_map = get_policy_map("az4672")
    for record in (mate, random_game):
        table = records_to_table(game_positions(record, policy_map, generation=3))
        validate_table(table)
        planes = decode_planes(table)
        pi = decode_policy(table, policy_map.size)
        board = chess.Board(record.start_fen)
        for row, ply in enumerate(record.plies):
            np.testing.assert_array_equal(planes[row], encode_board(board))
            legal = policy_map.legal_mask(board)
            assert pi[row].sum() == pytest.approx(1.0, abs=1e-5) and not pi[row][~legal].any()
            board.push(ply.move)
        z = table.column("z").to_pylist()
        turns = [ply.turn for ply in record.plies]
        if record is mate:
            assert all(value == (-1 if turn == chess.BLACK else 1) for value, turn in zip(z, turns))
        else:
            assert set(z) == {0}
        assert set(table.column("generation").to_pylist()) == {3}


def _row_fields(row: object) -> dict[str, object]:
    fields = dict(vars(row))
    for name in ("history", "meta", "policy_index", "policy_prob"):
        fields[name] = np.asarray(fields[name]).tolist()
    return fields


def test_native_games_give_the_same_rows_and_pgn_from_arrays_and_from_plies() -> None:
    from models.policy import get_policy_map
    from pipeline.selfplay import NativeGameRecord, game_positions

    config = replace(NO_RESIGN, full_search_prob=0.5, max_plies=10)
    record = SelfPlayWorker(UniformEvaluator(), replace(TINY_SEARCH, backend="native"), config).play(1, seed=4)[0]
    assert isinstance(record, NativeGameRecord) and record.num_plies == 10
    policy_map = get_policy_map("az4672")
    from_arrays = [_row_fields(row) for row in game_positions(record, policy_map, 2)]
    assert [_row_fields(row) for row in game_positions(record.native, policy_map, 2)] == from_arrays
    pgn_from_arrays = str(record.to_pgn())
    assert len(record.plies) == 10  # built now, from the arrays, with python-chess
    plain = GameRecord(record.game_id, record.start_fen, record.plies, record.result, record.termination)
    assert [_row_fields(row) for row in game_positions(plain, policy_map, 2)] == from_arrays
    assert str(record.to_pgn()) == str(plain.to_pgn()) == pgn_from_arrays
    with pytest.raises(ConfigError, match="policy encoding 'az4672', not 'lc0_1858'"):
        game_positions(NativeGameRecord(record.native, "az4672"), get_policy_map("lc0_1858"), 2)


def test_both_backends_write_the_same_rows_for_the_same_search() -> None:
    from models.hash_evaluator import HashEvaluator
    from models.policy import get_policy_map
    from pipeline.selfplay import game_positions

    # No noise, no sampling, no cache (its entries depend on which game asked first):
    # the two backends then search the same trees, visit for visit.
    search = replace(TINY_SEARCH, dirichlet_epsilon=0.0, temperature_plies=0, cache_size=0)
    config = replace(NO_RESIGN, max_plies=6, games_per_task=3)
    policy_map = get_policy_map("az4672")
    rows = {}
    for backend in BACKENDS:
        records = SelfPlayWorker(HashEvaluator(seed=1), replace(search, backend=backend), config).play(3, seed=0)
        rows[backend] = [_row_fields(row) for record in records for row in game_positions(record, policy_map, 0)]
    assert len(rows["native"]) == 18 and rows["native"] == rows["python"]


def test_native_search_threads_play_the_same_games() -> None:
    def moves(threads: int) -> list[list[str]]:
        config = replace(NO_RESIGN, search_threads=threads, games_per_task=4, full_search_prob=0.5)
        worker = SelfPlayWorker(UniformEvaluator(), replace(TINY_SEARCH, backend="native"), config)
        records = worker.play(games=6, seed=3)
        assert worker.stats.games == 6 and worker.stats.positions == sum(r.num_plies for r in records)
        assert worker.native_stats["wall_seconds"] > 0
        return [list(record.native.moves) for record in records]

    assert moves(1) == moves(2)


def test_native_gumbel_rows_carry_the_improved_policy_over_every_legal_move() -> None:
    from models.policy import get_policy_map
    from pipeline.selfplay import game_positions
    from pipeline.shards import decode_policy, records_to_table, validate_table

    search = replace(TINY_SEARCH, backend="native", algorithm="gumbel", gumbel_considered=4)
    record = SelfPlayWorker(UniformEvaluator(), search, replace(NO_RESIGN, max_plies=6)).play(1, seed=2)[0]
    policy_map = get_policy_map("az4672")
    table = records_to_table(game_positions(record, policy_map, 0))
    validate_table(table)
    pi = decode_policy(table, policy_map.size)
    board = chess.Board(record.start_fen)
    for row, uci in enumerate(record.native.moves):
        legal = policy_map.legal_mask(board)
        assert pi[row].sum() == pytest.approx(1.0, abs=1e-5)
        assert (pi[row] > 0).sum() == legal.sum() and not pi[row][~legal].any()  # every legal move, only those
        board.push_uci(uci)
