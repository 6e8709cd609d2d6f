"""Players: Stockfish robustness (real engine), random mover, network player, specs."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import chess
import pytest
import torch

from models.net import AlphaZeroNet
from models.search_config import SearchConfig
from pipeline.checkpoint import save_net
from pipeline.evaluation.match import Opening, play_game
from pipeline.players.base import Limits, PlayerError
from pipeline.players.simple import NetPlayer, RandomPlayer
from pipeline.players.spec import PlayerContext, build_player
from pipeline.players.stockfish import EngineFailure, StockfishPlayer, StockfishSettings, find_stockfish
from tests.helpers.nets import TINY_CONFIG

START = Opening("start", chess.STARTING_FEN)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture
def weak_stockfish():
    player = StockfishPlayer(StockfishSettings(skill=0, depth=1, timeout_s=3.0, retries=2))
    yield player
    pid = player.pid
    player.close()
    assert pid is None or not alive(pid)


def test_stockfish_recovers_from_sigkill(weak_stockfish: StockfishPlayer) -> None:
    board = chess.Board()
    first = weak_stockfish.pid
    os.kill(first, signal.SIGKILL)
    move = weak_stockfish.play(board)
    assert move in board.legal_moves
    assert weak_stockfish.restarts == 1 and weak_stockfish.pid != first


def test_stockfish_recovers_from_a_frozen_process(weak_stockfish: StockfishPlayer) -> None:
    board = chess.Board()
    frozen = weak_stockfish.pid
    os.kill(frozen, signal.SIGSTOP)
    move = weak_stockfish.play(board)
    assert move in board.legal_moves and weak_stockfish.restarts == 1
    deadline = time.monotonic() + 5
    while alive(frozen) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(frozen)


def test_stockfish_refuses_an_invalid_board(weak_stockfish: StockfishPlayer) -> None:
    with pytest.raises(PlayerError, match="invalid position"):
        weak_stockfish.play(chess.Board("8/8/8/8/8/8/8/K7 w - - 0 1"))


def test_missing_or_broken_binary_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(PlayerError, match=r"gating.stockfish_path '/nowhere/stockfish'"):
        find_stockfish("/nowhere/stockfish")
    fake = tmp_path / "not-uci"
    fake.write_text("#!/bin/sh\necho hello\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(PlayerError, match=str(fake)):
        StockfishPlayer(StockfishSettings(depth=1, timeout_s=2.0), str(fake))


def test_a_silent_binary_names_the_handshake_timeout(tmp_path: Path) -> None:
    silent = tmp_path / "silent"
    silent.write_text("#!/bin/sh\nexec sleep 5\n")
    silent.chmod(0o755)
    with pytest.raises(PlayerError, match=r"did not finish its UCI handshake within 0.5 s"):
        StockfishPlayer(StockfishSettings(depth=1, start_timeout_s=0.5, retries=0), str(silent))


class Crashing:
    """A player whose engine keeps failing (unit test of the match loop)."""

    name = "crashing"

    def play(self, board: chess.Board, limits: Limits | None = None) -> chess.Move:
        raise EngineFailure("engine died three times")

    def new_game(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_failing_player_aborts_the_game_instead_of_losing() -> None:
    outcome = play_game(RandomPlayer(1), Crashing(), START, max_plies=50)
    assert outcome.result == "*" and outcome.aborted and "engine died" in outcome.termination
    assert outcome.score_for("random") is None


def test_games_end_by_the_rules_or_the_length_limit() -> None:
    with StockfishPlayer(StockfishSettings(skill=0, depth=1)) as engine:
        outcome = play_game(engine, RandomPlayer(2), START, max_plies=300)
    assert outcome.result == "1-0" and outcome.termination == "checkmate"
    short = play_game(RandomPlayer(3), RandomPlayer(4), START, max_plies=10)
    assert (short.result, short.termination, short.plies) == ("1/2-1/2", "max_plies", 10)


@pytest.mark.parametrize("backend", ["native", "python"])
def test_net_player_reuses_its_tree_and_moves_legally(tmp_path: Path, backend: str) -> None:
    torch.manual_seed(0)
    path = tmp_path / "net.pt"
    save_net(AlphaZeroNet(TINY_CONFIG), path)
    context = PlayerContext(search=SearchConfig(backend=backend), device="cpu")
    player = build_player(f"net:{path}:sims=12", context)
    assert isinstance(player, NetPlayer) and player.name.endswith("sims=12")
    outcome = play_game(player, RandomPlayer(5), START, max_plies=12)
    assert outcome.plies == 12 and not outcome.aborted
    tree = player._tree
    assert type(tree).__name__ == {"native": "NativeTree", "python": "GameTree"}[backend]
    assert tree is not None and len(tree.board.move_stack) >= 10  # one tree, advanced along the game


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("chess-god", "kind must be one of"),
        ("stockfish:skill=99", "skill must be in 0..20"),
        ("stockfish:skill=x", "skill must be a int"),
        ("stockfish:depth=1:colour=red", r"unknown field\(s\) \['colour'\]"),
        ("net", "expected net:PATH"),
        ("net:/no/such/net.pt", "/no/such/net.pt"),
    ],
)
def test_bad_player_specs_name_the_problem(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_player(spec, PlayerContext(device="cpu"))
