"""``experiments/learning.py``'s endgame curriculum: the next kinds' start files, and
the move to them once the first kinds are mastered (a unit test of the bench:
its loop, ledger and evaluation are stood in for)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import chess
import pytest

from pipeline.evaluation.match import load_openings
from pipeline.selfplay import load_start_positions
from pipeline.selfplay.backward import fen_key

@pytest.fixture()
def endgame_data(learning: Any) -> Any:
    """``experiments/endgame_data.py`` as ``learning`` imported it (so a patch reaches its calls)."""
    return sys.modules[learning.endgame_starts.__module__]


def entry(**rates: float) -> dict[str, Any]:
    """An evaluation's mate figures (as ``mate_rate`` gives them), 10 games a kind."""
    kinds = {kind: {"mates": round(10 * rate), "games": 10, "rate": rate, "rate_low": 0.0, "rate_high": 1.0}
             for kind, rate in rates.items()}  # fmt: skip
    mates = sum(k["mates"] for k in kinds.values())
    return {"mate": {"mates": mates, "games": 10 * len(kinds), "rate": mates / max(10 * len(kinds), 1),
                     "rate_low": 0.0, "rate_high": 1.0, "kinds": kinds}}  # fmt: skip


def test_the_first_stage_is_mastered_when_every_kind_reaches_the_rate(learning: Any, tmp_path: Path) -> None:
    phase = learning.Phase("endgame", [], [], next_starts=tmp_path / "next.epd", master_kinds=("KQK", "KRK"),
                           master_rate=0.9)  # fmt: skip
    assert learning.mastered(phase, entry(KQK=0.95, KRK=0.9, KBNK=0.0))
    assert not learning.mastered(phase, entry(KQK=1.0, KRK=0.85))
    assert not learning.mastered(phase, entry(KQK=1.0))  # a kind not measured is not mastered
    assert not learning.mastered(phase, {"vs_gen0": {}})
    assert not learning.mastered(learning.Phase("endgame", [], []), entry(KQK=1.0, KRK=1.0))  # no next stage


def test_the_next_stage_starts_are_walked_back_and_join_the_evaluation(
        learning: Any, endgame_data: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    calls: list[dict[str, Any]] = []
    real = endgame_data.endgame_fens

    def drawn(kinds: str, count: int, seed: int, **options: Any) -> list[str]:
        calls.append({"kinds": kinds, "count": count, **options})
        return real(kinds, count, seed, exclude=options.get("exclude", ()))  # no Stockfish: placements only

    monkeypatch.setattr(endgame_data, "endgame_fens", drawn)
    args = argparse.Namespace(kinds="KQK,KRK", train_positions=20, max_mate=6, eval_positions=4,
                              next_kinds="KBBK,KBNK", next_train_positions=8, next_eval_positions=6,
                              next_max_mate=20, mate_nodes=1000, keep_first=0.2)  # fmt: skip
    learning.endgame_starts(args, tmp_path)
    following = [call for call in calls if call["kinds"] in ("KBBK,KBNK", "KBBK", "KBNK")]
    assert following and all(c["walk_back"] and c["mate_nodes"] == 1000 and c["max_mate"] == 20 for c in following)
    next_fens = load_start_positions(tmp_path / "endgames_next.epd")
    first = load_start_positions(tmp_path / "endgames_train.epd")
    assert len(next_fens) == 8 + 2 and next_fens[8:] == first[:2]  # a fifth of the starts from the first kinds
    held_out = [opening.fen for opening in load_openings(tmp_path / "endgames_eval.epd")]
    assert len(held_out) == 4 + 6 and not set(held_out) & set(next_fens[:8])
    knights = [bool(chess.Board(fen).pieces_mask(chess.KNIGHT, chess.WHITE) | chess.Board(fen).pieces_mask(chess.KNIGHT, chess.BLACK))
               for fen in held_out]  # fmt: skip
    assert sum(knights) == 3  # KBNK's share of the next kinds' held-out starts
    stamp = (tmp_path / "endgames_eval.epd").stat().st_mtime_ns
    learning.endgame_starts(args, tmp_path)  # a rerun keeps the starts
    assert (tmp_path / "endgames_eval.epd").stat().st_mtime_ns == stamp


def test_self_play_moves_on_after_the_first_mastered_evaluation(learning: Any, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Generations 1-2 play the first starts; generation 2's evaluation masters
    them; 3-4 play the next starts; the curve records the stage and the move,
    and a rerun goes on from the stage reached."""
    first, later = tmp_path / "first.epd", tmp_path / "next.epd"
    first.write_text("8/8/8/8/8/2k5/8/1QK5 w - - 0 1\n")
    later.write_text("8/8/8/8/8/2k5/8/1RK5 w - - 0 1\n")
    played: dict[int, str] = {}

    def run_pipeline(config: Any, folder: Path, **kwargs: Any) -> None:
        played[config.run.generations] = Path(config.selfplay.start_positions).name

    class Ledger:
        def __init__(self, path: Path) -> None:
            pass

        def find(self, generation: int, kind: str) -> dict[str, Any]:
            return {"summary": {"selfplay": {"games": 2}, "train": {}}, "net": f"net{generation}"}

    rates = {1: 0.5, 2: 0.95, 3: 0.2, 4: 0.99, 5: 0.3, 6: 0.3}
    monkeypatch.setattr(learning, "run_pipeline", run_pipeline)
    monkeypatch.setattr(learning, "Ledger", Ledger)
    monkeypatch.setattr(learning, "evaluate",
                        lambda phase, config, net, gen0, folder: entry(KQK=rates[int(net[3:])], KRK=1.0))  # fmt: skip
    phase = learning.Phase("endgame", [f"selfplay.start_positions={first}"], [], next_starts=later,
                           master_kinds=("KQK", "KRK"), master_rate=0.9)  # fmt: skip
    curve = learning.run_phase(phase, tmp_path / "out", 60.0, 4, "cpu")
    assert played == {1: "first.epd", 2: "first.epd", 3: "next.epd", 4: "next.epd"}
    assert [e["stage"] for e in curve] == ["first", "first", "next", "next"]
    assert [bool(e.get("moved_on")) for e in curve] == [False, True, False, False]
    learning.run_phase(phase, tmp_path / "out", 60.0, 6, "cpu")
    assert played[5] == played[6] == "next.epd"


def test_the_backward_stage_walks_back_unlabelled_and_raises_caps_on_mated_frontiers(
        learning: Any, endgame_data: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """``--backward``: held-out starts as before, training starts walked back
    without labels (none held out), the start file within the first caps; a
    generation whose frontier games were mated raises that kind's cap and
    rewrites the file; one that was not leaves it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    real = endgame_data.endgame_fens
    monkeypatch.setattr(endgame_data, "endgame_fens", lambda kinds, count, seed, **options: real(
        kinds, count, seed, exclude=options.get("exclude", ())))  # fmt: skip
    args = argparse.Namespace(kinds="KQK", train_positions=10, max_mate=6, eval_positions=2, next_kinds="KBBK,KBNK",
                              next_train_positions=40, next_eval_positions=4, next_max_mate=5, mate_nodes=1000,
                              keep_first=0.2, backward=True, start_cap=2, raise_step=2, raise_rate=0.7)  # fmt: skip
    learning.endgame_starts(args, tmp_path)
    walked = learning.load_walked(tmp_path / "endgames_walked.json")
    assert len(walked) == 40 and {w.distance for w in walked} == {1, 2, 3, 4, 5}
    held_out = {opening.fen for opening in load_openings(tmp_path / "endgames_eval.epd")}
    assert len(held_out) == 6 and not held_out & {w.fen for w in walked}
    distance = {fen_key(w.fen): w for w in walked}
    stage = [distance.get(fen_key(fen)) for fen in load_start_positions(tmp_path / "endgames_next.epd")]
    assert all(w.distance <= 2 for w in stage if w) and sum(w is None for w in stage) == 4  # a fifth: KQK

    phase = learning.Phase("endgame", [], [], next_starts=tmp_path / "endgames_next.epd", keep_first=0.2,
                           backward=learning.backward_rule(args), next_kinds=("KBBK", "KBNK"))  # fmt: skip
    shards = tmp_path / "endgame" / "run" / "shards"
    shards.mkdir(parents=True)
    frontier = {kind: [w.fen for w in walked if w.kind == kind and w.distance == 2] for kind in ("KBBK", "KBNK")}
    games = [(fen, "1-0") for fen in frontier["KBBK"]] * 4 + [(fen, "1/2-1/2") for fen in frontier["KBNK"]] * 4
    pq.write_table(pa.table({"game_id": [f"g{i}" for i in range(len(games))], "ply": [0] * len(games),
                             "fen": [fen for fen, _ in games], "result": [r for _, r in games]}),
                   shards / "gen0005-task00000.parquet")  # fmt: skip
    figures = learning.backward_step(phase, tmp_path / "endgame", 5)
    assert figures["caps"] == {"KBBK": 2, "KBNK": 2}
    assert figures["frontier_mates"] == {"KBBK": [16, 16], "KBNK": [0, 16]}
    assert json.loads((tmp_path / "endgames_caps.json").read_text()) == {"KBBK": 4, "KBNK": 2}
    stage = [distance.get(fen_key(fen)) for fen in load_start_positions(tmp_path / "endgames_next.epd")]
    assert max(w.distance for w in stage if w and w.kind == "KBBK") == 4
    assert max(w.distance for w in stage if w and w.kind == "KBNK") == 2


def test_the_endgame_supervised_start_labels_no_held_out_start(
        learning: Any, endgame_data: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """``--bootstrap`` in the endgame phase: the positions labelled are the
    next kinds' walked-back starts (strong side to move), a reply to each
    (weak side to move) and the first kinds' training starts; none is a
    held-out start, and a rerun keeps the file."""
    real = endgame_data.endgame_fens
    monkeypatch.setattr(endgame_data, "endgame_fens", lambda kinds, count, seed, **options: real(
        kinds, count, seed, exclude=options.get("exclude", ())))  # fmt: skip
    args = argparse.Namespace(kinds="KQK", train_positions=10, max_mate=6, eval_positions=2, next_kinds="KBBK,KBNK",
                              next_train_positions=4, next_eval_positions=4, next_max_mate=5, mate_nodes=1000,
                              keep_first=0.2, bootstrap_positions=40, bootstrap_labels="stockfish",
                              bootstrap_random_positions=0)  # fmt: skip
    learning.endgame_starts(args, tmp_path)
    folder = tmp_path / "endgame-bootstrap"
    folder.mkdir()
    path = learning.endgame_bootstrap_positions(args, tmp_path, folder)
    fens = load_start_positions(path)
    boards = [chess.Board(fen) for fen in fens]
    first = load_start_positions(tmp_path / "endgames_train.epd")
    assert fens[-10:] == first
    white = [board for board in boards[:-10] if board.turn == chess.WHITE]
    black = [board for board in boards[:-10] if board.turn == chess.BLACK]
    assert len(white) == 20 and 25 <= len(black) <= 30  # a few replies end the game
    assert all(board.pieces_mask(chess.BISHOP, chess.WHITE) for board in white)  # KBBK and KBNK
    held_out = {fen_key(opening.fen) for opening in load_openings(tmp_path / "endgames_eval.epd")}
    assert not held_out & {fen_key(fen) for fen in fens}
    stamp = path.stat().st_mtime_ns
    assert learning.endgame_bootstrap_positions(args, tmp_path, folder) == path
    assert path.stat().st_mtime_ns == stamp


def test_the_tablebase_start_labels_whole_table_lines_and_no_held_out_start(
        learning: Any, endgame_data: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """``--bootstrap-labels tablebases``: each chosen position brings its
    table-perfect game, every position once, none a held-out start, all of
    them in the tables; ``zerochess label --tablebases`` is what labels them."""
    from pipeline.supervised.tablebase_labels import probe
    from pipeline.training.tablebases import tablebase_store

    real = endgame_data.endgame_fens
    monkeypatch.setattr(endgame_data, "endgame_fens", lambda kinds, count, seed, **options: real(
        kinds, count, seed, exclude=options.get("exclude", ())))  # fmt: skip
    tables = tmp_path / "tables"
    args = argparse.Namespace(kinds="KQK", train_positions=10, max_mate=6, eval_positions=2, next_kinds="KRK",
                              next_train_positions=4, next_eval_positions=4, next_max_mate=5, mate_nodes=1000,
                              keep_first=0.2, bootstrap_positions=20, bootstrap_labels="tablebases",
                              bootstrap_random_positions=6, bootstrap_replies=0, bootstrap_blunders=0,
                              set=[f"train.tablebase_dir={tables}"])  # fmt: skip
    learning.endgame_starts(args, tmp_path)
    folder = tmp_path / "endgame-tablebases"
    folder.mkdir()
    fens = load_start_positions(learning.endgame_bootstrap_positions(args, tmp_path, folder))
    keys = [fen_key(fen) for fen in fens]
    assert len(keys) == len(set(keys)) > 30
    held_out = {fen_key(opening.fen) for opening in load_openings(tmp_path / "endgames_eval.epd")}
    assert not held_out & set(keys)
    store = tablebase_store(str(tables))
    plies = [probe(chess.Board(fen), store).plies for fen in fens]
    assert 1 in plies and all(p is None or p >= 1 for p in plies)  # lines run to the mate, which is left out

    # --bootstrap-replies: one random move from some of those positions, each new, none held out
    args.bootstrap_replies = 12
    again = tmp_path / "with-replies"
    again.mkdir()
    more = load_start_positions(learning.endgame_bootstrap_positions(args, tmp_path, again))
    assert more[: len(fens)] == fens
    replies = more[len(fens):]
    assert 6 <= len(replies) <= 12  # a reply that ends the game or repeats a position is dropped
    assert not {fen_key(fen) for fen in replies} & (set(keys) | held_out)
    after = {fen_key(board.fen()) for fen in fens for board in _one_move_later(fen)}
    assert all(fen_key(fen) in after for fen in replies)
    assert endgame_data.blunder_replies(fens, 12, []) == endgame_data.blunder_replies(fens, 12, [])  # seeded
    assert endgame_data.blunder_replies(fens, 0, []) == []

    # --bootstrap-blunders: positions just after a move that threw a won position away, by the tables
    config = learning.load_config(None, [f"train.tablebase_dir={tables}"])
    thrown = endgame_data.losing_moves(fens, 10, [], config)
    assert 1 <= len(thrown) <= 10 and not {fen_key(fen) for fen in thrown} & set(keys)
    for fen in thrown:
        board = chess.Board(fen)
        assert not board.is_game_over() and probe(board, store).result >= 0  # the mover's win is gone
        parents = [parent for parent in fens if fen_key(fen) in {fen_key(b.fen()) for b in _one_move_later(parent)}]
        assert any(probe(chess.Board(parent), store).result == 1 for parent in parents)
    assert endgame_data.losing_moves(fens, 10, [], config) == thrown and endgame_data.losing_moves(fens, 0, [], config) == []


def _one_move_later(fen: str) -> list[chess.Board]:
    board = chess.Board(fen)
    boards = []
    for move in board.legal_moves:
        board.push(move)
        boards.append(board.copy())
        board.pop()
    return boards


def test_the_anchor_fraction_keeps_the_supervised_labels_in_self_play(learning: Any, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """``--anchor-fraction`` reaches self-play's training as the supervised
    start's ``label/train`` folder and the share, cuts the labels into small
    shards, and is refused without ``--bootstrap`` or outside [0, 1)."""
    starts = tmp_path / "bench"
    starts.mkdir()
    for name in ("endgames_train.epd", "endgames_eval.epd"):
        (starts / name).write_text("8/8/8/8/8/3k4/8/Q3K3 w - - 0 1\n")
    phases: list[Any] = []
    built: list[int] = []

    def bootstrap_net(folder: Path, *args: Any) -> Path:
        built.append(args[-1])
        return folder / "pretrain" / "net.pt"

    monkeypatch.setattr(learning, "init_ray", lambda *args, **kwargs: None)
    monkeypatch.setattr(learning, "endgame_bootstrap_positions", lambda args, out, folder: folder / "positions.epd")
    monkeypatch.setattr(learning, "bootstrap_net", bootstrap_net)
    monkeypatch.setattr(learning, "run_phase", lambda phase, *args, **kwargs: phases.append(phase) or [])
    common = ["--out", str(starts), "--phase", "endgame", "--bootstrap"]
    assert learning.main([*common, "--anchor-fraction", "0.5"]) == 0
    assert learning.main(common) == 0
    anchored, plain = phases
    label = (starts / "endgame-bootstrap" / "label" / "train").resolve()
    assert anchored.overrides[-2:] == [f"train.anchor_dir={label}", "train.anchor_fraction=0.5"]
    assert not any(override.startswith("train.anchor") for override in plain.overrides)
    assert built == [learning.ANCHOR_SHARD_POSITIONS, 0]
    for wrong in (["--anchor-fraction", "1"], ["--anchor-fraction", "-0.1"]):
        with pytest.raises(SystemExit, match="--anchor-fraction must be in"):
            learning.main([*common, *wrong])
    with pytest.raises(SystemExit, match="goes with --bootstrap"):
        learning.main(["--out", str(starts), "--phase", "endgame", "--anchor-fraction", "0.5"])
    for name in ("replies", "blunders"):
        with pytest.raises(SystemExit, match=f"--bootstrap-{name} must be >= 0 and goes with --bootstrap-labels"):
            learning.main([*common, f"--bootstrap-{name}", "10"])
