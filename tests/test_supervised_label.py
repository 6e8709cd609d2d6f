"""Stockfish labels: the centipawn mapping, the MultiPV policy, the drawn outcome, real shards."""

from __future__ import annotations

import os
import random
import signal
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest

from models.policy import get_policy_map
from tests.helpers.stockfish import needs_stockfish
from zerochess.cli import main
from pipeline.players.base import PlayerError
from pipeline.players.stockfish import EngineFailure
from pipeline.shards import decode_targets, load_shards, table_to_records, validate_table
from pipeline.supervised.config import SupervisedConfig
from pipeline.supervised.labelling import (
    StockfishLabeller,
    centipawns_to_value,
    label_positions,
    label_rows,
    multipv_policy,
    positions_from_file,
    positions_from_shards,
    random_positions,
    sample_outcome,
    score_to_value,
)
from pipeline.supervised.splits import prepare_output
from pipeline.uci.analysis import value_to_centipawns


def test_centipawns_map_to_values_as_the_uci_engine_maps_back() -> None:
    assert centipawns_to_value(0) == 0.0
    assert centipawns_to_value(100) == pytest.approx(0.47, abs=0.01)
    assert centipawns_to_value(-300) == pytest.approx(-0.77, abs=0.01)
    values = [centipawns_to_value(cp) for cp in range(-3000, 3001, 50)]
    assert values == sorted(values) and all(-1 <= v <= 1 for v in values)
    for cp in (-1500, -250, -40, 0, 10, 111, 700):
        assert abs(value_to_centipawns(centipawns_to_value(cp)) - cp) <= 1
    assert score_to_value(chess.engine.Mate(3)) == 1.0
    assert score_to_value(chess.engine.Mate(-1)) == -1.0
    assert score_to_value(chess.engine.Cp(100)) == pytest.approx(centipawns_to_value(100))


def test_the_multipv_policy_is_a_softmax_of_centipawns() -> None:
    moves = [chess.Move.from_uci(u) for u in ("e2e4", "d2d4", "a2a3")]
    chosen, probs = multipv_policy(list(zip(moves, [30, 30 - 100, 30 - 300], strict=True)), 100.0)
    assert chosen == moves
    expected = np.exp([0.0, -1.0, -3.0])
    assert probs == pytest.approx(expected / expected.sum(), rel=1e-5)
    _, mate = multipv_policy([(moves[0], 99_997), (moves[1], 500)], 100.0)
    assert mate[0] == pytest.approx(1.0)
    with pytest.raises(ValueError):
        multipv_policy([], 100.0)


@pytest.mark.parametrize("value", [-0.9, -0.3, 0.0, 0.25, 0.8])
def test_the_drawn_outcome_has_the_value_as_expectation(value: float) -> None:
    rng = random.Random(1)
    draws = [sample_outcome(value, rng) for _ in range(20_000)]
    assert set(draws) <= ({0, 1} if value >= 0 else {-1, 0})
    assert np.mean(draws) == pytest.approx(value, abs=0.02)


def _fake_infos(board: chess.Board, cps: list[int]) -> list[dict]:
    moves = list(board.legal_moves)[: len(cps)]
    return [{"pv": [move], "score": chess.engine.PovScore(chess.engine.Cp(cp), board.turn)}
            for move, cp in zip(moves, cps, strict=True)]


def test_a_labelled_row_is_a_valid_shard_row_without_an_engine() -> None:
    settings = SupervisedConfig(label_temperature_cp=50.0)
    policy = get_policy_map("az4672")
    for position in random_positions(12, seed=3, max_plies=30):
        infos = _fake_infos(position.board, [80, 20, -150])
        rows = label_rows(position, infos, policy, settings)
        assert rows.root_q[0] == pytest.approx(centipawns_to_value(80))
        assert rows.z[0] in (0, 1)
        from pipeline.shards import table_from_columns

        table = table_from_columns(
            game_id=rows.game_id, ply=rows.ply, fen=rows.fen, history=rows.history,
            meta=rows.meta, policy_encoding=["az4672"], policy_index=rows.policy_index,
            policy_prob=rows.policy_prob, z=rows.z.astype(np.int64), root_q=rows.root_q,
            root_visits=[0], full_search=[True], generation=[0], result=rows.result,
            termination=rows.termination)
        validate_table(table, check_legality=True)


class _FailingLabeller:
    """Stands in for StockfishLabeller: fails on every second position."""

    def __init__(self) -> None:
        self.calls = 0

    def analyse(self, board: chess.Board, multipv: int) -> list[dict]:
        self.calls += 1
        if self.calls % 2 == 0:
            raise EngineFailure("engine died three times")
        return _fake_infos(board, [10, 0])

    def label(self, position, policy_map, settings):  # as StockfishLabeller.label
        return label_rows(position, self.analyse(position.board, settings.label_multipv), policy_map, settings)


def test_an_engine_failure_skips_one_position_not_the_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    prepare_output(out)
    report = label_positions(random_positions(6, seed=2, max_plies=10), _FailingLabeller(),  # type: ignore[arg-type]
                             out, SupervisedConfig(heldout_fraction=0.0), "az4672")
    assert report.skipped == {"engine-failure": 3} and report.labelled["train"] == 3
    tables, bad = load_shards(out / "train", check_legality=True)
    assert bad == [] and sum(t.num_rows for t in tables) == 3


def test_random_positions_are_reproducible_and_never_over() -> None:
    first = [(p.game_id, p.board.fen()) for p in random_positions(30, seed=9, max_plies=60)]
    second = [(p.game_id, p.board.fen()) for p in random_positions(30, seed=9, max_plies=60)]
    assert first == second and len({fen for _, fen in first}) > 20
    assert all(not chess.Board(fen).is_game_over() for _, fen in first)


def test_positions_from_a_file_and_from_shards(tmp_path: Path) -> None:
    epd = tmp_path / "p.epd"
    epd.write_text("# two positions\n6k1/5ppp/8/8/8/8/8/R5K1 w - - id \"mate\";\n"
                   "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1\n")
    positions = list(positions_from_file(epd))
    assert [p.board.fen().split()[0] for p in positions] == ["6k1/5ppp/8/8/8/8/8/R5K1",
                                                              "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR"]
    assert positions[0].game_id != positions[1].game_id and positions[0].ply == 0


@needs_stockfish
def test_stockfish_labels_real_positions(tmp_path: Path) -> None:
    settings = SupervisedConfig(label_depth=4, label_multipv=4, heldout_fraction=0.3)
    out = tmp_path / "label"
    prepare_output(out)
    epd = tmp_path / "mate.epd"
    epd.write_text("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1\n"
                   "6k1/5ppp/8/8/8/8/8/R5K1 b - - 0 1\n"  # stalemate? no: black king can move
                   "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1\n"  # stalemate: skipped
                   "not a position\n"
                   "8/8/8/8/8/8/8/K7 w - - 0 1\n")  # no black king: skipped
    with StockfishLabeller(settings) as labeller:
        with pytest.raises(PlayerError, match="invalid"):
            labeller.analyse(chess.Board("8/8/8/8/8/8/8/K7 w - - 0 1"), 2)
        report = label_positions(positions_from_file(epd), labeller, out, settings, "az4672",
                                 prefix="mate")
        assert report.skipped == {"game-over": 1, "invalid": 1, "unreadable": 1}
        os.kill(labeller.pid, signal.SIGKILL)  # a dead engine is restarted, not fatal
        more = label_positions(random_positions(16, seed=1, max_plies=30), labeller, out,
                               settings, "az4672", prefix="random")
        assert labeller.restarts >= 1
        pid = labeller.pid
    assert pid is not None and not Path(f"/proc/{pid}").exists()
    assert sum(more.labelled.values()) == 16
    rows = []
    for split in ("train", "heldout"):
        tables, bad = load_shards(out / split, check_legality=True)
        assert bad == []
        for table in tables:
            pi, _ = decode_targets(table)
            assert np.allclose(pi.sum(axis=1), 1.0, atol=1e-5)
            rows.extend(table_to_records(table))
    assert len(rows) == 18
    mate = next(r for r in rows if r.fen.startswith("6k1/5ppp/8/8/8/8/8/R5K1 w"))
    board = chess.Board(mate.fen)
    best = get_policy_map("az4672").move_to_index(board, chess.Move.from_uci("a1a8"))
    assert mate.policy_index[int(np.argmax(mate.policy_prob))] == best
    assert mate.root_q == 1.0 and mate.z == 1 and mate.result == "1-0"
    assert all(-1.0 <= r.root_q <= 1.0 and r.termination == "stockfish" for r in rows)


@needs_stockfish
def test_label_command_on_shards_keeps_games_in_one_split(tmp_path: Path) -> None:
    from tests.helpers.shards import make_shards

    source = tmp_path / "selfplay"
    make_shards(source, shards=1, games=3, max_plies=6)
    out = tmp_path / "label"
    code = main(["label", "--params", "none", "--shards", str(source), "--depth", "2",
                 "--multipv", "3", "--out", str(out), "--set", "supervised.heldout_fraction=0.5"])
    assert code == 0
    splits = {}
    for split in ("train", "heldout"):
        tables, _ = load_shards(out / split)
        for table in tables:
            for game_id in table.column("game_id").to_pylist():
                splits.setdefault(game_id, set()).add(split)
    assert len(splits) == 3 and all(len(s) == 1 for s in splits.values())
    source_positions = sum(t.num_rows for t in load_shards(source)[0])
    assert sum(1 for _ in positions_from_shards(source)) == source_positions
    with pytest.raises(FileNotFoundError):
        next(positions_from_file(tmp_path / "none.epd"))
