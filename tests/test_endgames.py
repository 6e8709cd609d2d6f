"""Endgame start positions (pipeline/selfplay/endgames.py), ``zerochess endgames``, the
curriculum (pipeline/selfplay/curriculum.py) and the ``endgame`` preset."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import chess
import chess.engine
import pytest

from models.evaluation import UniformEvaluator
from models.search_config import SearchConfig
from tests.helpers import ROOT
from tests.helpers.stockfish import needs_debian_stockfish
from zerochess.cli import main
from pipeline.config import ConfigError, SelfPlayConfig, load_config
from pipeline.players.stockfish import DEBIAN_PATH
from pipeline.selfplay import (
    CurriculumStage,
    SelfPlayWorker,
    load_start_positions,
    stage_for,
    start_fens_for,
)
from pipeline.selfplay.backward import fen_key
from pipeline.selfplay.endgames import endgame_fens, parse_kind, write_epd

ALL_KINDS = ["KQK", "KRK", "KBBK", "KBNK", "KPK", "KQKR"]
LETTERS = {chess.QUEEN: "Q", chess.ROOK: "R", chess.BISHOP: "B", chess.KNIGHT: "N", chess.PAWN: "P"}


def kind_of(board: chess.Board) -> str:
    """``K<side to move's pieces>K<other side's pieces>`` in the order Q R B N P."""

    def pieces(colour: chess.Color) -> str:
        return "".join(LETTERS[p] * len(board.pieces(p, colour)) for p in LETTERS)

    return f"K{pieces(board.turn)}K{pieces(not board.turn)}"


def test_kinds_are_parsed_and_bad_ones_named() -> None:
    kind = parse_kind("kqkr")
    assert (kind.name, kind.strong, kind.weak) == ("KQKR", (chess.QUEEN,), (chess.ROOK,))
    assert parse_kind("KBNK").strong == (chess.BISHOP, chess.KNIGHT)
    for bad, message in [("QK", "K<pieces>K<pieces>"), ("KXK", "unknown piece letter.*X"), ("KKQ", "strong side"),
                         ("KQRBNPQRKP", "at most")]:  # fmt: skip
        with pytest.raises(ConfigError, match=message):
            parse_kind(bad)


@pytest.mark.parametrize("strong", ["white", "black"])
def test_generated_starts_are_legal_playable_and_of_their_kinds(strong: str) -> None:
    fens = endgame_fens(ALL_KINDS, 300, seed=3, strong=strong)
    assert len(set(fens)) == 300
    kinds = Counter()
    for fen in fens:
        board = chess.Board(fen)
        assert board.is_valid() and board.outcome() is None, fen
        assert board.turn == (chess.WHITE if strong == "white" else chess.BLACK)  # the strong side moves
        kinds[kind_of(board)] += 1
        weak_to_move = board.copy()
        weak_to_move.turn = not board.turn  # no strong piece en prise
        assert not any(weak_to_move.color_at(m.to_square) == board.turn for m in weak_to_move.legal_moves), fen
        bishops = board.pieces(chess.BISHOP, board.turn)
        if len(bishops) == 2:  # KBBK: bishops on both colours
            assert bishops & chess.BB_LIGHT_SQUARES and bishops & chess.BB_DARK_SQUARES, fen
    assert set(kinds) == set(ALL_KINDS) and min(kinds.values()) >= 30  # the kinds in turn


def test_generation_is_seeded_and_honours_exclude() -> None:
    first = endgame_fens("KQK,KRK", 50, seed=1)
    assert endgame_fens("KQK,KRK", 50, seed=1) == first
    assert endgame_fens("KQK,KRK", 50, seed=2) != first
    other = endgame_fens("KQK,KRK", 50, seed=1, exclude=first)
    assert not set(other) & set(first)
    mixed = endgame_fens("KQK,KRK", 40, seed=1, strong="random")
    assert {chess.Board(fen).turn for fen in mixed} == {chess.WHITE, chess.BLACK}


def test_impossible_requests_are_errors() -> None:
    with pytest.raises(ConfigError, match="count must be >= 1"):
        endgame_fens("KQK", 0, seed=0)
    with pytest.raises(ConfigError, match="strong side"):
        endgame_fens("KQK", 1, seed=0, strong="grey")
    with pytest.raises(ConfigError, match="found only"):
        endgame_fens("KQK", 10, seed=0, max_attempts=5)


@needs_debian_stockfish
def test_mate_filter_keeps_stockfish_checked_mates_at_every_distance() -> None:
    fens = endgame_fens("KQK,KRK", 8, seed=5, max_mate=2, strong="random")
    distances = []
    with chess.engine.SimpleEngine.popen_uci(DEBIAN_PATH) as engine:
        for fen in fens:
            board = chess.Board(fen)
            info = engine.analyse(board, chess.engine.Limit(depth=14), game=object())  # a fresh hash
            mate = info["score"].pov(board.turn).mate()
            distances.append(mate)
    assert all(mate is not None and 1 <= mate <= 2 for mate in distances), str(distances)
    assert set(distances) == {1, 2}  # each distance (Stockfish's first mate found may not be the shortest)


def test_endgames_command_writes_a_start_positions_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "starts.epd"
    assert main(["endgames", "--out", str(out), "--kinds", "KBNK,KPK", "--count", "20", "--seed", "4"]) == 0
    fens = load_start_positions(out)
    assert len(fens) == 20 and {kind_of(chess.Board(fen)) for fen in fens} == {"KBNK", "KPK"}
    assert "zerochess endgames --out" in out.read_text().splitlines()[0]
    held_out = tmp_path / "held_out.epd"
    assert main(["endgames", "--out", str(held_out), "--kinds", "KBNK,KPK", "--count", "20", "--seed", "4",
                 "--exclude", str(out)]) == 0  # fmt: skip
    assert not set(load_start_positions(held_out)) & set(fens)
    assert main(["endgames", "--out", str(out), "--kinds", "KZK"]) == 2
    assert "unknown piece letter" in capsys.readouterr().err


@needs_debian_stockfish
def test_endgames_command_draws_the_bench_held_out_starts_of_one_kind(
    tmp_path: Path, bench_script: Callable[[str], ModuleType]
) -> None:
    """The README draws more held-out KQKR starts with ``zerochess endgames``
    in place of ``experiments/endgame_data.py``'s ``held_out_fens``: for one kind,
    the same seed and the same excluded files, the two give the same starts."""
    held_out_fens = bench_script("endgame_data").held_out_fens
    drawing = {"seed": 71, "mate_nodes": 200000, "walk_back": True}
    known = tmp_path / "known.epd"  # the first starts the seed draws: the exclusion must leave them out
    write_epd(known, held_out_fens("KQKR", 3, 6, exclude=[], **drawing), "known")
    out = tmp_path / "more.epd"
    assert main(["endgames", "--out", str(out), "--kinds", "KQKR", "--count", "8", "--seed", "71", "--max-mate", "6",
                 "--walk-back", "--mate-nodes", "200000", "--exclude", str(known)]) == 0  # fmt: skip
    expected = held_out_fens("KQKR", 8, 6, exclude=load_start_positions(known), **drawing)
    drawn = load_start_positions(out)
    assert len(drawn) == 8 and [fen_key(fen) for fen in drawn] == [fen_key(fen) for fen in expected]
    assert not {fen_key(fen) for fen in drawn} & {fen_key(fen) for fen in load_start_positions(known)}

# -- curriculum ------------------------------------------------------------

CURRICULUM = (
    CurriculumStage(until_generation=2, kinds=("KQK",)),
    CurriculumStage(until_generation=4, kinds=("KRK",), full_games=0.5),
    CurriculumStage(until_generation=6, full_games=1.0),
)


def test_stages_follow_the_generations() -> None:
    assert [stage_for(CURRICULUM, g) for g in (0, 1, 2, 3, 4, 5, 6, 7)] == [
        CURRICULUM[0], CURRICULUM[0], CURRICULUM[0], CURRICULUM[1], CURRICULUM[1], CURRICULUM[2], CURRICULUM[2], None]
    forever = (CurriculumStage(until_generation=2, kinds=("KQK",)), CurriculumStage(kinds=("KRK",)))
    assert stage_for(forever, 1000) == forever[1]
    assert stage_for((), 1) is None


def test_curriculum_starts_per_generation(tmp_path: Path) -> None:
    book = tmp_path / "book.epd"
    book.write_text("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq -\n")
    regular = load_start_positions(book)
    config = SelfPlayConfig(curriculum=CURRICULUM, start_positions=str(book), seed=1)
    first = start_fens_for(config, 1)
    assert {kind_of(chess.Board(fen)) for fen in first} == {"KQK"}
    assert start_fens_for(config, 1) == first and start_fens_for(config, 2) != first  # seeded by generation
    mixed = start_fens_for(config, 3)
    share = sum(fen in regular for fen in mixed) / len(mixed)
    assert abs(share - 0.5) < 0.01  # full_games: the regular starts make up half
    assert {kind_of(chess.Board(fen)) for fen in mixed if fen not in regular} == {"KRK"}
    assert start_fens_for(config, 5) == regular  # full_games 1
    assert start_fens_for(config, 7) == regular  # past the curriculum
    assert start_fens_for(SelfPlayConfig(), 1) is None  # no curriculum, no file: the standard start


def test_a_stage_can_read_a_file_and_defaults_to_the_standard_start(tmp_path: Path) -> None:
    epd = tmp_path / "kqk.epd"
    epd.write_text("4k3/8/8/8/8/8/8/Q3K3 w - -\n")
    stage = CurriculumStage(start_positions=str(epd), full_games=0.5)
    fens = start_fens_for(SelfPlayConfig(curriculum=(stage,)), 1)
    assert sorted(fens) == sorted(["4k3/8/8/8/8/8/8/Q3K3 w - - 0 1", chess.STARTING_FEN])


def test_a_curriculum_from_params_plays_its_starts() -> None:
    config = load_config(None, ["selfplay.curriculum=[{until_generation: 3, kinds: [KRK]}]", "selfplay.max_plies=2",
                                "selfplay.games_per_task=4", "selfplay.resign_threshold=-1"])  # fmt: skip
    worker = SelfPlayWorker(UniformEvaluator(), SearchConfig(num_simulations=8), config.selfplay,
                            start_fens_for(config.selfplay, generation=1))  # fmt: skip
    records = worker.play(games=4, seed=0)
    assert {kind_of(chess.Board(record.start_fen)) for record in records} == {"KRK"}


# -- the endgame preset ----------------------------------------------------


def test_endgame_preset_uses_stockfish_checked_kqk_krk_starts() -> None:
    config = load_config(ROOT / "params.yaml", preset="endgame")
    search, selfplay = config.search, config.selfplay
    assert (search.algorithm, search.fpu_mode, search.fpu_value, search.num_simulations, search.temperature_plies) == (
        "gumbel", "absolute", 0.0, 32, 2)  # what experiments/learning.py measured to learn (README)
    assert selfplay.full_search_prob == 1.0 and not selfplay.resign_enabled
    assert not (selfplay.adjudicate_material or selfplay.adjudicate_stockfish)  # every win is a mate
    train, held_out = load_start_positions(selfplay.start_positions), load_start_positions(config.gating.book)
    assert len(train) >= 600 and len(held_out) >= 100 and not set(train) & set(held_out)
    assert {kind_of(chess.Board(fen)) for fen in train + held_out} == {"KQK", "KRK"}
    assert all(chess.Board(fen).turn == chess.WHITE for fen in train + held_out)


def test_relative_start_files_resolve_in_the_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_start_positions("data/endgames.epd") == load_start_positions(ROOT / "data" / "endgames.epd")
    with pytest.raises(ConfigError, match="cannot read"):
        load_start_positions("data/missing.epd")


def test_without_a_curriculum_the_starts_are_the_start_positions_file() -> None:
    config = replace(SelfPlayConfig(), start_positions=str(ROOT / "data" / "endgames_eval.epd"))
    assert start_fens_for(config, 1) == load_start_positions(config.start_positions)


def test_a_stage_ends_early_once_a_generation_reaches_its_mate_rate() -> None:
    """``until_mate_rate``: the stage ends after the first of its generations
    whose measured mate rate reached it; later generations' measures, and
    rates of generations not before the one asked about, do not count."""
    from pipeline.selfplay.curriculum import stage_index

    stages = (CurriculumStage(until_generation=4, kinds=("KQK",), until_mate_rate=0.8),
              CurriculumStage(until_generation=10, kinds=("KRK",), until_mate_rate=0.9),
              CurriculumStage(kinds=("KQK", "KRK"), full_games=0.5))  # fmt: skip
    rates = {0: 0.1, 1: 0.5, 2: 0.85, 3: 0.8, 4: 0.7, 5: 0.92}
    assert [stage_index(stages, g, rates) for g in range(1, 8)] == [0, 0, 1, 1, 1, 2, 2]
    assert [stage_index(stages, g) for g in (1, 4, 5, 10, 11)] == [0, 0, 1, 1, 2]  # by generation only
    assert stage_index(stages, 2, {2: 0.99}) == 0  # generation 2's own measure comes after its self-play
    assert stage_index(stages, 12, {}) == 2


def test_until_mate_rate_needs_the_mate_rate_measure_and_a_rate() -> None:
    stage = {"until_generation": 4, "kinds": ["KQK"], "until_mate_rate": 0.8}
    overrides = [f"selfplay.curriculum=[{json.dumps(stage)}]"]
    with pytest.raises(ConfigError, match=r"selfplay\.curriculum\[0\]\.until_mate_rate \(0\.8\) needs gating\.measure: mate_rate, got 'none'"):
        load_config(ROOT / "params.yaml", overrides)
    config = load_config(ROOT / "params.yaml", [*overrides, "gating.measure=mate_rate"])
    assert config.selfplay.curriculum[0].until_mate_rate == 0.8
    with pytest.raises(ConfigError, match=r"until_mate_rate must be in \[0, 1\], got 1\.5"):
        CurriculumStage(kinds=("KQK",), until_mate_rate=1.5)


def test_the_loop_reads_measured_mate_rates_from_its_ledger(tmp_path: Path) -> None:
    from actors.loop import mate_rates
    from pipeline.loop.ledger import Ledger

    ledger = Ledger(tmp_path / "ledger.jsonl")
    ledger.append({"generation": 0, "stage": "measure", "figures": {"measure/mate_rate": 0.25}})
    ledger.append({"generation": 1, "stage": "train", "net": "x"})
    ledger.append({"generation": 1, "stage": "measure", "figures": {"measure/mate_rate": 0.5}})
    ledger.append({"generation": 2, "stage": "measure", "figures": {"measure/score_vs_gen0": 0.6}})
    assert mate_rates(Ledger(tmp_path / "ledger.jsonl")) == {0: 0.25, 1: 0.5}
