"""``zerochess uci`` driven through python-chess exactly as a GUI drives it,
with a tiny checkpoint (1 block x 8 filters), and a game against Stockfish."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import chess
import chess.engine
import pytest
import torch

from models.net import AlphaZeroNet, NetConfig
from pipeline.checkpoint import save_net
from tests.helpers import ROOT
from tests.helpers.cli import zerochess_command

START_TIMEOUT_S = 120.0  # importing torch on a busy shared machine


def uci_command(*args: str) -> list[str]:
    return zerochess_command("uci", "--params", "none", *args)


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    return save_net(
        AlphaZeroNet(NetConfig(blocks=1, filters=8)), tmp_path_factory.mktemp("net") / "tiny.pt"
    )


@pytest.fixture(scope="module")
def engine(tiny_checkpoint: Path) -> Iterator[chess.engine.SimpleEngine]:
    engine = chess.engine.SimpleEngine.popen_uci(
        uci_command("--checkpoint", str(tiny_checkpoint), "--device", "cpu"),
        timeout=START_TIMEOUT_S,
        cwd=ROOT,
    )
    yield engine
    engine.quit()


def assert_legal_line(board: chess.Board, pv: list[chess.Move]) -> None:
    board = board.copy()
    for move in pv:
        assert move in board.legal_moves, f"{move} in {board.fen()}"
        board.push(move)


def test_engine_identifies_itself_with_its_options(engine: chess.engine.SimpleEngine) -> None:
    assert engine.id["name"].startswith("zerochess")
    assert {"Threads", "BatchSize", "Simulations", "CPuct", "Temperature", "MultiPV"} <= set(
        engine.options
    )


@pytest.mark.parametrize("limit", [chess.engine.Limit(nodes=60), chess.engine.Limit(time=0.3)])
def test_play_returns_a_legal_move_with_info(
    engine: chess.engine.SimpleEngine, limit: chess.engine.Limit
) -> None:
    board = chess.Board()
    board.push_san("e4")
    result = engine.play(board, limit, info=chess.engine.INFO_ALL)
    assert result.move in board.legal_moves
    info = result.info
    assert info["depth"] >= 1 and info["nodes"] >= 1 and "nps" in info
    assert isinstance(info["score"].relative, chess.engine.Cp)
    assert info["pv"][0] == result.move
    assert_legal_line(board, info["pv"])


def test_analyse_with_nodes_and_multipv(engine: chess.engine.SimpleEngine) -> None:
    board = chess.Board()
    infos = engine.analyse(board, chess.engine.Limit(nodes=300), multipv=3)
    assert [info["multipv"] for info in infos] == [1, 2, 3]
    assert len({info["pv"][0] for info in infos}) == 3
    for info in infos:
        assert info["nodes"] >= 300 and info["depth"] == len(info["pv"])
        assert_legal_line(board, info["pv"])


def test_analyse_with_time_finds_the_mate(engine: chess.engine.SimpleEngine) -> None:
    board = chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
    info = engine.analyse(board, chess.engine.Limit(time=0.5))
    assert info["score"].white() == chess.engine.Mate(1)
    assert info["pv"] == [chess.Move.from_uci("a1a8")]


def test_multipv_at_a_proven_mate_gives_every_line(engine: chess.engine.SimpleEngine) -> None:
    """As lc0 and Stockfish: the mate first, then the next moves with their
    scores; the nodes are the simulations asked for, not a replayed proof."""
    board = chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
    infos = engine.analyse(board, chess.engine.Limit(nodes=400), multipv=3, game=object())
    assert [info["multipv"] for info in infos] == [1, 2, 3]
    assert infos[0]["score"].white() == chess.engine.Mate(1)
    assert all(isinstance(info["score"].relative, chess.engine.Cp) for info in infos[1:])
    assert len({info["pv"][0] for info in infos}) == 3
    for info in infos:
        assert info["nodes"] <= 400
        assert_legal_line(board, info["pv"])


def test_stop_during_infinite_analysis_answers_promptly(engine: chess.engine.SimpleEngine) -> None:
    board = chess.Board()
    with engine.analysis(board) as analysis:  # go infinite
        time.sleep(1.5)
        stopped = time.monotonic()
        analysis.stop()
        best = analysis.wait()
    assert time.monotonic() - stopped < 10.0  # generous: one network batch is milliseconds
    assert best.move in board.legal_moves
    assert analysis.info.get("nodes", 0) > 0


def test_garbage_input_does_not_kill_the_engine() -> None:
    garbage = [
        "hello engine",
        "go nodes banana",
        "position fen this is not a fen",
        "position startpos moves e2e5",
        "setoption name NoSuchOption value 3",
        "setoption name MultiPV value -1",
        "\x00\x1b[2J\xff",
        "ponderhit",
    ]
    script = (
        "\n".join(
            ["uci", *garbage, "isready", "position startpos", "go nodes 20", "isready", "quit"]
        )
        + "\n"
    )
    result = subprocess.run(
        uci_command("--uniform"),
        input=script,
        check=False,
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_S,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines.count("readyok") == 2
    assert sum(line.startswith("info string") for line in lines) >= len(garbage) - 1
    best = next(line for line in lines if line.startswith("bestmove")).split()[1]
    assert chess.Move.from_uci(best) in chess.Board().legal_moves


def test_missing_checkpoint_exits_2_naming_the_file(tmp_path: Path) -> None:
    result = subprocess.run(
        uci_command("--checkpoint", str(tmp_path / "absent.pt")),
        input="uci\n", check=False, capture_output=True, text=True, timeout=START_TIMEOUT_S, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 2
    assert "absent.pt" in result.stderr and "uciok" not in result.stdout


def test_a_whole_game_against_stockfish_completes(engine: chess.engine.SimpleEngine) -> None:
    stockfish = chess.engine.SimpleEngine.popen_uci(
        shutil.which("stockfish") or "/usr/games/stockfish"
    )
    try:
        stockfish.configure({"Skill Level": 0, "Threads": 1})
        board = chess.Board()
        clock = {chess.WHITE: 6.0, chess.BLACK: 6.0}
        increment = 0.1
        while not board.is_game_over(claim_draw=True) and board.ply() < 400:
            if board.turn == chess.WHITE:  # zerochess on a clock: exercises time management
                limit = chess.engine.Limit(
                    white_clock=clock[chess.WHITE], black_clock=clock[chess.BLACK],
                    white_inc=increment, black_inc=increment,
                )  # fmt: skip
                started = time.monotonic()
                result = engine.play(board, limit, game="vs-stockfish")
                clock[chess.WHITE] += increment - (time.monotonic() - started)
                assert clock[chess.WHITE] > 0, "zerochess lost on time"
            else:
                result = stockfish.play(board, chess.engine.Limit(depth=1))
            assert result.move in board.legal_moves
            board.push(result.move)
        assert board.is_game_over(claim_draw=True) or board.ply() == 400
    finally:
        stockfish.quit()
