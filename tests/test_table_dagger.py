"""DAgger over the tables (``experiments/table_dagger.py`` and ``experiments/learning.py
--bootstrap-dagger``): the starts each round draws, the positions it takes
from the net's games, the training folder it mixes, and one real round
(Stockfish's defence on a local Ray cluster, ``zerochess label --tablebases``,
``zerochess pretrain --init-checkpoint``) on the 3-piece tables."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import chess
import chess.pgn
import pytest

from models.net import AlphaZeroNet
from pipeline.checkpoint import save_net
from pipeline.config import load_config
from pipeline.evaluation.match import load_openings
from pipeline.selfplay import load_start_positions
from pipeline.supervised.tablebase_labels import probe, table_line
from pipeline.training.tablebases import tablebase_store
from tests.helpers.stockfish import needs_stockfish

KQK_WON = "8/8/8/3k4/8/8/8/Q3K3 w - - 0 1"
KRK_WON = "8/8/8/3k4/8/8/8/R3K3 w - - 0 1"


@pytest.fixture()
def dagger(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("table_dagger")


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tables")


def _lines(store: Any) -> list[str]:
    """Both sides' positions of table-perfect KQK and KRK games, Black strong in half of them."""
    import random

    fens: list[str] = []
    for start in (KQK_WON, KRK_WON, "4k3/8/8/8/8/8/7q/2K5 b - - 0 1", "4k3/8/8/8/8/8/7r/2K5 b - - 0 1"):
        fens += [board.fen() for board in table_line(chess.Board(start), store, random.Random(1))]
    return fens


def test_the_starts_are_won_strong_side_to_move_white_within_the_bound_and_not_held_out(
        dagger: ModuleType, learning: Any, tables: Path) -> None:  # fmt: skip
    store = tablebase_store(str(tables))
    fens = _lines(store)
    held_out = [fens[0]]
    starts = dagger.dagger_starts(fens, learning.endgame_kind, ["KQK", "KRK"], 8, 30, held_out, store, seed=1)
    assert len(starts) == 8
    assert [learning.endgame_kind(fen) for fen in starts].count("KQK") == 4
    for fen in starts:
        board = chess.Board(fen)
        assert board.turn == chess.WHITE and dagger.strong_colour(board) == chess.WHITE
        verdict = probe(board, store)
        assert verdict.result == 1 and verdict.plies is not None and verdict.plies <= 30
        assert board.board_fen() != chess.Board(held_out[0]).board_fen()
    mirrored = {chess.Board(fen).mirror().board_fen() for fen in fens if chess.Board(fen).turn == chess.BLACK}
    assert any(chess.Board(fen).board_fen() in mirrored for fen in starts)  # Black-strong positions, turned round
    again = dagger.dagger_starts(fens, learning.endgame_kind, ["KQK", "KRK"], 8, 30, held_out, store, seed=1)
    assert again == starts
    assert dagger.dagger_starts(fens, learning.endgame_kind, ["KQK", "KRK"], 8, 30, held_out, store, seed=2) != starts
    short = dagger.dagger_starts(fens, learning.endgame_kind, ["KQK"], 50, 3, [], store, seed=1)
    assert short and all(probe(chess.Board(fen), store).plies <= 3 for fen in short)
    assert dagger.dagger_starts(fens, learning.endgame_kind, ["KBNK"], 5, 30, [], store, seed=1) == []
    with pytest.raises(ValueError, match="count and max_plies must be >= 1, got 0, 30"):
        dagger.dagger_starts(fens, learning.endgame_kind, ["KQK"], 0, 30, [], store, seed=1)


def test_weighted_starts_split_the_count_by_the_kinds_weights(dagger: ModuleType, learning: Any, tables: Path) -> None:
    store = tablebase_store(str(tables))
    fens = _lines(store)
    starts = dagger.dagger_starts(fens, learning.endgame_kind, ["KQK", "KRK"], 8, 30, [], store, seed=1, weights=[3, 1])
    assert [learning.endgame_kind(fen) for fen in starts] == ["KQK"] * 6 + ["KRK"] * 2
    equal = dagger.dagger_starts(fens, learning.endgame_kind, ["KQK", "KRK"], 8, 30, [], store, seed=1, weights=[2, 2])
    assert equal == dagger.dagger_starts(fens, learning.endgame_kind, ["KQK", "KRK"], 8, 30, [], store, seed=1)
    with pytest.raises(ValueError, match=r"one weight >= 1 for each of \['KQK', 'KRK'\], got \[1\]"):
        dagger.dagger_starts(fens, learning.endgame_kind, ["KQK", "KRK"], 8, 30, [], store, seed=1, weights=[1])


def test_kind_shares_read_optional_weights_and_name_a_bad_one(dagger: ModuleType) -> None:
    assert dagger.kind_shares("KBBK:2, KQKR:5,KBNK") == (["KBBK", "KQKR", "KBNK"], [2, 5, 1])
    assert dagger.kind_shares("KQKR,KBNK") == (["KQKR", "KBNK"], [1, 1])
    assert dagger.kind_quotas(450, [2, 5, 3]) == [90, 225, 135]
    assert dagger.kind_quotas(10, [1, 1, 1]) == [4, 4, 4]
    for text, named in (("KQKR:0", "'0'"), ("KQKR:x", "'x'"), ("KQKR:-2", "'-2'")):
        with pytest.raises(ValueError, match=f"weight of 'KQKR' must be a whole number >= 1, got {named}"):
            dagger.kind_shares(text)
    with pytest.raises(ValueError, match="kind 'KQKR' named twice"):
        dagger.kind_shares("KQKR:2,KQKR")
    with pytest.raises(ValueError, match="kind 'KQKR' named twice"):
        dagger.kind_shares("kqkr:2,KQKR")  # one kind however it is spelt
    with pytest.raises(ValueError, match="endgame kind 'KXK'"):
        dagger.kind_shares("KQKR,KXK:2")
    assert dagger.kind_shares("kbbk:2") == (["KBBK"], [2])
    with pytest.raises(ValueError, match="no endgame kinds given in ' , '"):
        dagger.kind_shares(" , ")
    with pytest.raises(ValueError, match="no kind before the weight in ':3'"):
        dagger.kind_shares("KQKR,:3")
    assert dagger.kind_shares(" KQKR : 2 ") == (["KQKR"], [2])


def test_the_visited_positions_are_the_nets_games_each_position_once(dagger: ModuleType, tmp_path: Path) -> None:
    pgn = tmp_path / "games.pgn"
    texts = []
    for white, moves in (("net:a.pt:sims=4", ["a1a2", "d5d4", "a2a1", "d4d5"]), ("stockfish:depth=10", ["a1a8"])):
        game = chess.pgn.Game()
        game.setup(chess.Board(KQK_WON))
        game.headers["White"] = white
        node: Any = game
        for uci in moves:
            node = node.add_variation(chess.Move.from_uci(uci))
        texts.append(str(game))
    pgn.write_text("\n\n".join(texts) + "\n")
    visited = dagger.visited_positions(pgn)
    # four positions before a move: the first comes back after two moves each, and counts once
    assert [chess.Board(fen).board_fen() for fen in visited] == [
        chess.Board(KQK_WON).board_fen(), "8/8/8/3k4/8/8/Q7/4K3", "8/8/8/8/3k4/8/Q7/4K3", "8/8/8/8/3k4/8/8/Q3K3"]
    assert dagger.visited_positions(tmp_path / "none.pgn") == []


def test_the_mix_holds_the_start_labels_and_each_rounds_repeat_times(dagger: ModuleType, tmp_path: Path) -> None:
    base, first, second = tmp_path / "base", tmp_path / "r1", tmp_path / "r2"
    for folder, parts in ((base, ("train", "heldout")), (first, ("train", "heldout")), (second, ("train",))):
        for part in parts:
            (folder / part).mkdir(parents=True)
            (folder / part / f"label-{part}-00000.parquet").write_bytes(b"rows")
    mix = dagger.mix_folder(tmp_path / "mix", base, [first, second], 3)
    train = sorted(path.name for path in (mix / "train").iterdir())
    assert len(train) == 1 + 2 * 3 and "label-train-00000.parquet" in train
    assert sorted(path.name for path in (mix / "heldout").iterdir()) == ["label-heldout-00000.parquet"]
    assert all((mix / "train" / name).resolve().read_bytes() == b"rows" for name in train)
    (mix / "train" / "quarantine").mkdir()  # what shard validation may have put aside
    dagger.mix_folder(tmp_path / "mix", base, [first], 2)  # its links made anew, not added to
    assert len([path for path in (mix / "train").iterdir() if path.is_symlink()]) == 1 + 2
    assert (mix / "train" / "quarantine").is_dir()
    with pytest.raises(ValueError, match="repeat must be >= 1, got 0"):
        dagger.mix_folder(tmp_path / "mix", base, [first], 0)


def test_the_bench_refuses_dagger_settings_that_cannot_apply(learning: Any, tmp_path: Path) -> None:
    common = ["--out", str(tmp_path), "--phase", "endgame", "--bootstrap"]
    with pytest.raises(SystemExit, match="--bootstrap-dagger must be >= 0 and goes with --bootstrap-labels tablebases"):
        learning.main([*common, "--bootstrap-dagger", "2"])
    with pytest.raises(SystemExit, match="--bootstrap-dagger must be >= 0"):
        learning.main([*common, "--bootstrap-labels", "tablebases", "--bootstrap-dagger", "-1"])
    with pytest.raises(SystemExit, match="--dagger-steps and --dagger-repeat must be >= 1, got 300, 0, 8"):
        learning.main([*common, "--bootstrap-labels", "tablebases", "--dagger-steps", "0"])
    with pytest.raises(SystemExit, match="--dagger-kinds: .*KXK"):
        learning.main([*common, "--bootstrap-labels", "tablebases", "--bootstrap-dagger", "1", "--dagger-kinds", "KXK"])
    with pytest.raises(SystemExit, match="--dagger-kinds: weight of 'KQKR' must be a whole number >= 1, got '0'"):
        learning.main([*common, "--bootstrap-labels", "tablebases", "--bootstrap-dagger", "1", "--dagger-kinds", "KQKR:0"])
    with pytest.raises(SystemExit, match="--dagger-kinds goes with --bootstrap-dagger"):
        learning.main([*common, "--bootstrap-labels", "tablebases", "--dagger-kinds", "KQKR"])


def test_the_rounds_evaluations_make_one_curve(learning: Any, tmp_path: Path) -> None:
    """``dagger/curve.json`` lists the rounds' ``eval.json`` in round order
    (round 10 after round 9), and a plot is drawn; no round: an empty curve, no plot."""
    dagger = tmp_path / "dagger"
    assert learning.save_rounds(dagger) == [] and not (dagger / "curve.png").exists()
    for number in (10, 9, 1):
        kinds = {"KQKR": {"mates": number, "games": 30, "rate": number / 30, "rate_low": 0.0, "rate_high": 1.0}}
        (dagger / f"round{number:02d}").mkdir(parents=True)
        (dagger / f"round{number:02d}" / "eval.json").write_text(json.dumps(
            {"round": number, "minutes": 3.0 * number, "mate": {"kinds": kinds}}))  # fmt: skip
    assert [entry["round"] for entry in learning.save_rounds(dagger)] == [1, 9, 10]
    assert [e["round"] for e in json.loads((dagger / "curve.json").read_text())["rounds"]] == [1, 9, 10]
    assert (dagger / "curve.png").stat().st_size > 0


@pytest.mark.slow
@needs_stockfish
@pytest.mark.usefixtures("local_ray")
def test_a_dagger_round_plays_labels_trains_on_and_is_evaluated(learning: Any, tmp_path: Path, tables: Path,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """One real round: the net plays its starts against Stockfish, the tables
    label what it reached, ``zerochess pretrain`` continues the net on the
    mix, and the new net is evaluated on the held-out starts; no round
    starts without time left; a rerun reuses the finished round."""
    store = tablebase_store(str(tables))
    folder = tmp_path / "endgame-tablebases"
    folder.mkdir()
    (tmp_path / "endgames_eval.epd").write_text(KQK_WON + "\n")
    learning.write_epd(folder / "positions.epd", _lines(store), "bootstrap")
    settings = [f"train.tablebase_dir={tables}", "gating.simulations=4", "search.num_simulations=4"]
    learning.zerochess("label", "--positions", str(folder / "positions.epd"), "--tablebases", "--out",
                       str(folder / "label"), "--preset", "tiny", *[x for s in settings for x in ("--set", s)])  # fmt: skip
    net = save_net(AlphaZeroNet(load_config(None, [], preset="tiny").net), tmp_path / "gen0.pt")
    args = argparse.Namespace(kinds="KQK,KRK", next_kinds="", max_mate=10, bootstrap_dagger=1, dagger_starts=4, dagger_kinds="KQK:3,KRK",
                              dagger_steps=3, dagger_repeat=2, set=settings)  # fmt: skip
    phase = learning.Phase("endgame", settings, load_openings(tmp_path / "endgames_eval.epd"))
    assert learning.dagger_net(args, tmp_path, folder, net, phase, "tiny", minutes=0.0) == net  # no time: no round
    assert not (folder / "dagger" / "round01").exists()
    trained = learning.dagger_net(args, tmp_path, folder, net, phase, "tiny")
    here = folder / "dagger" / "round01"
    evaluated = json.loads((here / "eval.json").read_text())
    assert evaluated["round"] == 1 and evaluated["mate"]["games"] == 1 and evaluated["minutes"] > 0
    assert "[dagger] round 1 (" in capsys.readouterr().out
    assert trained == here / "pretrain" / "net.pt" and trained.exists()
    starts = load_start_positions(here / "starts.epd")
    assert len(starts) == 4 and chess.Board(KQK_WON).board_fen() not in {chess.Board(f).board_fen() for f in starts}
    assert [learning.endgame_kind(fen) for fen in starts] == ["KQK"] * 3 + ["KRK"]  # --dagger-kinds KQK:3,KRK
    visited = load_start_positions(here / "visited.epd")
    assert len(visited) > len(starts)
    assert {chess.Board(fen).board_fen() for fen in starts} <= {chess.Board(fen).board_fen() for fen in visited}
    assert list((here / "label" / "train").glob("*.parquet"))
    mixed = list((here / "mix" / "train").iterdir())
    assert sum(path.name.startswith("dagger0-") for path in mixed) == 2 * len(list((here / "label" / "train").glob("*.parquet")))
    assert [entry["round"] for entry in json.loads((folder / "dagger" / "curve.json").read_text())["rounds"]] == [1]
    assert (folder / "dagger" / "curve.png").stat().st_size > 0
    monkeypatch.setattr(learning, "mate_rate", lambda *args: pytest.fail("a finished round is played again"))
    assert learning.dagger_net(args, tmp_path, folder, net, phase, "tiny") == trained
