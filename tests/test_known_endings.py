"""``train.known_endings``: the z of positions whose result their material
decides is rescored as the strong side's win, in both decoders; every other
row keeps its z."""

from __future__ import annotations


import numpy as np
import pytest

from models.evaluation import UniformEvaluator
from models.policy import get_policy_map
from pipeline.config import SelfPlayConfig, load_config
from pipeline.selfplay import SelfPlayWorker, game_positions
from pipeline.shards import records_to_table
from pipeline.training.batches import GroupArrays, stream_columns
from pipeline.training.config import TrainConfig
from pipeline.training.data import StreamSpec, decode_batch
from pipeline.training.known_endings import known_ending_value, rescore_known_endings
from tests.helpers import ROOT
from tests.helpers.searches import TINY_SEARCH


GOLDEN = [
    ("8/8/8/8/8/2k5/8/1QK5 w - - 0 1", 1),  # KQK, the queen's side to move
    ("8/8/8/8/8/2k5/8/1QK5 b - - 0 1", -1),  # ... the lone king to move, nothing to take
    ("8/8/8/8/8/2K5/8/1qk5 b - - 0 1", 1),  # Black is the strong side
    ("8/8/8/8/8/2k5/3R4/6K1 b - - 0 1", None),  # KRK: the king takes the rook
    ("8/8/8/8/8/2k5/3R4/3K4 b - - 0 1", -1),  # ... the rook is defended
    ("8/8/8/8/8/2k5/3R4/6K1 w - - 0 1", 1),  # ... the rook's side to move saves it
    ("8/8/8/8/8/2k5/2R5/6K1 w - - 0 1", None),  # ... not a legal position (Black in check, White to move)
    ("8/8/8/k7/8/8/8/2B2BK1 w - - 0 1", 1),  # KBBK, bishops on opposite colours (c1 dark, f1 light)
    ("8/8/8/k7/8/4B3/8/2B3K1 w - - 0 1", None),  # ... both on dark squares: a draw
    ("8/8/8/k7/8/8/8/2B2NK1 w - - 0 1", 1),  # KBNK
    ("8/8/8/8/8/2k5/1B1N4/6K1 w - - 0 1", None),  # ... the king forks both pieces
    ("8/8/8/k7/8/8/8/2N2NK1 w - - 0 1", None),  # KNNK: no known win
    ("8/8/8/8/8/2k5/8/1QK2r2 w - - 0 1", None),  # KQKR: not decided by material alone
    ("8/8/8/8/8/2k5/P7/1QK5 w - - 0 1", None),  # a pawn
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", None),
]


@pytest.mark.parametrize(("fen", "value"), GOLDEN)
def test_golden_positions(fen: str, value: int | None) -> None:
    assert known_ending_value(fen) == value


def test_rescoring_keeps_every_other_row_and_the_input() -> None:
    fens = [fen for fen, _ in GOLDEN]
    z = np.array([(0, 1, -1)[row % 3] for row in range(len(fens))], dtype=np.float32)
    before = z.tolist()
    rescored = rescore_known_endings(fens, z)
    expected = [z[row] if value is None else value for row, (_, value) in enumerate(GOLDEN)]
    assert rescored.tolist() == expected
    assert z.tolist() == before  # not changed in place


def drawn_endgame_rows() -> list:
    """Self-play rows of KRK/KBNK games a uniform search does not win in 16 plies (drawn)."""
    starts = ["8/8/8/3k4/8/8/8/R5K1 w - - 0 1", "8/8/8/3k4/8/8/8/1B2N1K1 w - - 0 1"]
    selfplay = SelfPlayConfig(resign_threshold=-1.0, full_search_prob=1.0, games_per_task=4, max_plies=16)
    records = SelfPlayWorker(UniformEvaluator(), TINY_SEARCH, selfplay, start_fens=starts).play(4, 3, id_prefix="known")
    return [row for record in records for row in game_positions(record, get_policy_map("az4672"), 0)]


def test_both_decoders_train_drawn_known_endings_as_wins() -> None:
    table = records_to_table(drawn_endgame_rows())
    fens = table.column("fen").to_pylist()
    known = [known_ending_value(fen) for fen in fens]
    z = table.column("z").to_numpy().astype(np.float32)
    assert any(value is not None for value in known) and (z == 0).any()
    expected = np.array([z[row] if value is None else value for row, value in enumerate(known)], dtype=np.float32)
    assert (expected != z).any()  # drawn games of known wins are rescored
    _, _, plain = decode_batch(table, "az4672")
    _, _, slow = decode_batch(table, "az4672", known_endings=True)
    assert plain.numpy().tolist() == z.tolist()
    assert slow.numpy().tolist() == expected.tolist()
    spec = StreamSpec((), 8, 8, 0, 0, "az4672", value_head="wdl", known_endings=True)
    assert "fen" in stream_columns(spec)
    fast = GroupArrays.of(table.select(list(stream_columns(spec))), spec).target
    assert fast.tolist() == np.stack([expected > 0, expected == 0, expected < 0], axis=1).astype(np.float32).tolist()


def test_the_setting_is_read_and_checked_like_every_train_key() -> None:
    assert load_config(ROOT / "params.yaml", ["train.known_endings=true"]).train.known_endings is True
    assert TrainConfig().known_endings is False
