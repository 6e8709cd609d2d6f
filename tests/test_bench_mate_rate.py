"""experiments/mate_rate.py: a net's mates from ending starts under several search
settings, against the real Stockfish on a local Ray cluster."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from models.net import AlphaZeroNet
from pipeline.checkpoint import save_net
from pipeline.config import load_config
from tests.helpers.stockfish import needs_stockfish

STARTS = ("8/8/8/8/8/3k4/8/Q3K3 w - - 0 1", "7k/8/6K1/8/8/8/8/1Q6 w - - 0 1",
          "8/8/8/3k4/8/8/8/R3K3 w - - 0 1")  # fmt: skip


@pytest.fixture()
def bench(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("mate_rate")


@pytest.mark.slow
@needs_stockfish
@pytest.mark.usefixtures("local_ray")  # the bench joins it and leaves it for the fixture to shut down
def test_each_setting_gets_a_row_of_mates_by_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  bench: ModuleType) -> None:  # fmt: skip
    net = save_net(AlphaZeroNet(load_config(None, [], preset="tiny").net), tmp_path / "net.pt")
    starts = tmp_path / "starts.epd"
    starts.write_text("".join(f"{fen}\n" for fen in STARTS))
    code = bench.main([str(net), "--starts", str(starts), "--kinds", "KQK", "--simulations", "4",
                       "--preset", "tiny", "--out", str(tmp_path / "out"),
                       "--try", "search.moves_left_slope=0.1 search.moves_left_cap=1.0"])  # fmt: skip
    assert code == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if " mates " in line]
    assert len(rows) == 2 and rows[0].startswith("baseline") and "moves_left_slope=0.1" in rows[1]
    assert all("KQK " in row and "/2" in row and "KRK" not in row for row in rows)
    assert (tmp_path / "out" / "row1" / "mate.pgn").exists()


def test_a_missing_net_or_no_start_of_the_kinds_is_one_line(tmp_path: Path, bench: ModuleType) -> None:
    starts = tmp_path / "starts.epd"
    starts.write_text(STARTS[0] + "\n")
    with pytest.raises(SystemExit, match="no such file"):
        bench.main([str(tmp_path / "none.pt"), "--starts", str(starts)])
    net = tmp_path / "net.pt"
    net.write_bytes(b"")
    with pytest.raises(SystemExit, match="no start of the kinds"):
        bench.main([str(net), "--starts", str(starts), "--kinds", "KBNK"])
    with pytest.raises(SystemExit, match="--simulations must be >= 1"):
        bench.main([str(net), "--starts", str(starts), "--simulations", "0"])
