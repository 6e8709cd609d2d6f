"""experiments/table_agreement.py: a net's first move and value against the tables' verdicts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

import chess
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from models.net import AlphaZeroNet
from models.policy import indices
from pipeline.checkpoint import save_net
from pipeline.training.tablebases import tablebase_store
from tests.helpers.nets import TINY_CONFIG

WON = "8/8/8/3k4/8/8/8/Q3K3 w - - 0 1"  # KQK, White to move and win
FENS = [WON, "8/8/8/3k4/8/8/8/Q3K3 b - - 0 1", "8/8/8/3k4/8/8/8/R3K3 w - - 0 1", "8/8/2k5/8/8/8/8/Q3K3 w - - 0 1",
        "8/8/8/3k4/3Q4/8/8/4K3 b - - 0 1"]  # the last: Black takes the queen (not lost for the side to move)


@pytest.fixture()
def bench(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("table_agreement")


@pytest.fixture()
def labels(tmp_path: Path) -> Path:
    (tmp_path / "label" / "heldout").mkdir(parents=True)
    pq.write_table(pa.table({"fen": FENS}), tmp_path / "label" / "heldout" / "label-heldout-00000.parquet")
    return tmp_path / "label"


def always(move: str, value: float) -> Callable[[Sequence[chess.Board]], tuple[np.ndarray, np.ndarray]]:
    """Outputs that put the whole policy on ``move`` (where legal) and give every position ``value``."""

    def outputs(boards: Sequence[chess.Board]) -> tuple[np.ndarray, np.ndarray]:
        logits = np.zeros((len(boards), 4672), dtype=np.float32)
        for row, board in enumerate(boards):
            chosen = chess.Move.from_uci(move)
            if chosen in board.legal_moves:
                logits[row, indices(board, [chosen])[0]] = 50.0
        return logits, np.full(len(boards), value, dtype=np.float32)

    return outputs


def test_the_first_move_and_the_value_are_checked_against_the_tables(bench: ModuleType, tmp_path: Path) -> None:
    store = tablebase_store(str(tmp_path / "tables"))
    board = chess.Board(WON)
    # Qd4+ is taken by the king (bare kings: the win is gone); Qa5+ keeps it
    assert bench.agreement([board], always("a1d4", 1.0), store)[:2] == (0.0, 1.0)
    assert bench.agreement([board], always("a1a5", 0.0), store)[:2] == (1.0, 0.0)
    chance = bench.agreement([board], always("a1a5", 1.0), store)[2]
    assert 0.5 < chance < 1.0  # most moves keep the win, not all


def test_the_bench_reads_the_held_out_positions_of_the_kind(bench: ModuleType, labels: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    net = save_net(AlphaZeroNet(TINY_CONFIG), tmp_path / "n.pt")
    tables = ["--tablebase-dir", str(tmp_path / "tables"), "--threads", "1"]
    threads = torch.get_num_threads()
    try:
        assert bench.main([str(net), "--labels", str(labels), "--kind", "KQK", *tables]) == 0
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "2 held-out KQK positions, strong side to move"  # the won ones with White to move
    assert out[1].startswith(f"{net}: first move keeps the result ") and "a random move" in out[1]
    try:
        assert bench.main([str(net), "--labels", str(labels), "--kind", "KQK", "--side", "weak", *tables]) == 0
    finally:
        torch.set_num_threads(threads)
    assert capsys.readouterr().out.startswith("1 held-out KQK positions, weak side to move")
    with pytest.raises(SystemExit, match="no held-out KBNK position"):
        bench.main([str(net), "--labels", str(labels), "--kind", "KBNK", *tables])
    with pytest.raises(SystemExit, match="no heldout/ folder"):
        bench.main([str(net), "--labels", str(tmp_path), *tables])
    with pytest.raises(SystemExit, match="no such net"):
        bench.main([str(tmp_path / "none.pt"), "--labels", str(labels), "--kind", "KQK", *tables])
