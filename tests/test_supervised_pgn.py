"""PGN reading and conversion: malformed games, compression, counts, the held-out split."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import random
from pathlib import Path

import chess
import chess.pgn
import numpy as np
import pytest

from models.policy import get_policy_map
from pipeline.shards import decode_targets, load_shards, table_to_records
from pipeline.supervised.config import SupervisedConfig
from pipeline.supervised.convert import PgnFileConverter, convert_files
from pipeline.supervised.pgn import (
    HeaderFilter,
    PgnOpenError,
    check_game,
    iter_games,
    open_pgn,
    parse_time_control,
)
from pipeline.supervised.rows import fast_fen
from pipeline.supervised.splits import (
    SupervisedDataError,
    find_pgn_files,
    is_heldout,
    prepare_output,
)
from tests.helpers import ROOT
from tests.helpers.boards import random_walk

SHIPPED = ROOT / "data" / "games" / "zerochess-mixed.pgn.gz"


def game(moves: str, result: str = "1-0", **headers: str) -> str:
    """PGN text of one game (Event, Result and ``headers``, then ``moves``)."""
    tags = {"Event": "t", "Result": result, **headers}
    head = "".join(f'[{key} "{value}"]\n' for key, value in tags.items())
    return f"{head}\n{moves}\n\n"


SCHOLAR = "1. e4 e5 2. Bc4 Nc6 3. Qh5 Nf6 4. Qxf7# 1-0"
CASES = {
    "ok": (game(SCHOLAR), None, 7),
    "illegal": (game("1. e4 e5 2. Ke3 Nc6 0-1", "0-1"), "parse-error", 0),
    "ambiguous": (game("1. Nf3 d5 2. Nd2 e5 1/2-1/2", "1/2-1/2"), "parse-error", 0),
    "null": (game("1. e4 -- 2. d4 1/2-1/2", "1/2-1/2"), "null-move", 0),
    "star": (game("1. e4 e5 *", "*"), "no-result", 0),
    "no-result-header": ("[Event \"t\"]\n\n1. e4 e5 1-0\n\n", "no-result", 0),
    "mismatch": (game("1. e4 e5 0-1", "1-0"), "result-mismatch", 0),
    "mate-contradiction": (game("1. f3 e5 2. g4 Qh4# 1-0", "1-0"), "result-mismatch", 0),
    "chess960": (game("1. e4 e5 1-0", Variant="Chess960",
                      FEN="bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9"),
                 "variant", 0),
    "crazyhouse": (game("1. e4 e5 1-0", Variant="Crazyhouse"), "variant", 0),
    "variations-comments": (game("1. e4 {best by test} e5 (1... c5 2. Nf3 (2. c3) d6) 2. Nf3 $1 "
                                 "Nc6 ; rest of line\n3. Bb5 a6 1/2-1/2", "1/2-1/2"), None, 6),
    "from-fen": (game("1. Ra8# 1-0", FEN="6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", SetUp="1"),
                 None, 1),
    "bad-fen": (game("1. e4 1-0", FEN="not a fen"), "parse-error", 0),
}


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def read_all(path: Path, header_filter: HeaderFilter | None = None) -> list:
    with open_pgn(path) as reader:
        return list(iter_games(reader, header_filter))


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_case_has_its_documented_outcome(tmp_path: Path, name: str) -> None:
    text, kind, plies = CASES[name]
    (parsed,) = read_all(write(tmp_path / "g.pgn", text))
    rejection = check_game(parsed)
    assert (rejection.kind if rejection else None) == kind, rejection
    if kind is None:
        assert len(parsed.moves) == plies


def test_python_chess_does_not_raise_but_records_errors() -> None:
    """The premise: read_game cuts the main line at an illegal move and records it."""
    built = chess.pgn.read_game(io.StringIO(CASES["illegal"][0]))
    assert built is not None and built.errors
    assert len(list(built.mainline_moves())) == 2


def test_a_file_of_every_case_converts_without_crashing(tmp_path: Path) -> None:
    names = sorted(CASES)
    text = "".join(CASES[name][0] for name in names)
    text += game("1. d4 d5 2. c4", "1-0")  # truncated at the end of the file
    path = write(tmp_path / "all.pgn", text)
    out = tmp_path / "out"
    prepare_output(out)
    report = convert_files([path], out, SupervisedConfig(heldout_fraction=0.5), "az4672")
    (file_report,) = report.files
    assert file_report.games == len(names) + 1
    accepted = [name for name in names if CASES[name][1] is None]
    assert file_report.accepted == len(accepted)
    assert sum(file_report.positions.values()) == sum(CASES[name][2] for name in accepted)
    expected = {}
    for name in names:
        if CASES[name][1] is not None:
            expected[CASES[name][1]] = expected.get(CASES[name][1], 0) + 1
    expected["truncated"] = 1
    assert file_report.dropped == dict(sorted(expected.items()))
    drops = [json.loads(line) for line in Path(file_report.dropped_log).read_text().splitlines()]
    assert len(drops) == sum(expected.values())
    raw = path.read_bytes()
    for drop in drops:  # each offset points at the first line of its game
        assert raw[drop["offset"]:].startswith(b"[Event"), drop
        assert raw.count(b"\n", 0, drop["offset"]) + 1 == drop["line"]
        assert drop["reason"]


def test_an_empty_or_blank_file_has_no_games(tmp_path: Path) -> None:
    for name, text in (("empty.pgn", ""), ("blank.pgn", "\n\n  \n% comment\n")):
        assert read_all(write(tmp_path / name, text)) == []
    out = tmp_path / "out"
    prepare_output(out)
    report = convert_files([tmp_path / "empty.pgn"], out, SupervisedConfig(), "az4672")
    assert report.totals()["games"] == 0 and report.files[0].shards == []


def test_non_utf8_bytes_are_read_as_latin1(tmp_path: Path) -> None:
    text = game(SCHOLAR, White="M\xfcller", Black="Bj\xf6rn").encode("latin-1")
    text += game("1. d4 d5 1/2-1/2", "1/2-1/2", White="Ren\xe9").encode("utf-8")
    text += b"\xff\xfe garbage \x80\x81\n\n"
    path = write(tmp_path / "latin1.pgn", text)
    with open_pgn(path) as reader:
        games = list(iter_games(reader))
        assert reader.non_utf8_lines == 3
    assert games[0].headers["White"] == "Müller" and games[1].headers["White"] == "René"
    assert check_game(games[0]) is None and check_game(games[1]) is None
    assert check_game(games[2]) is not None  # headerless garbage: no result


def test_binary_garbage_never_crashes(tmp_path: Path) -> None:
    rng = random.Random(0)
    noise = bytes(rng.randrange(256) for _ in range(20_000))
    path = write(tmp_path / "noise.pgn", noise + game(SCHOLAR).encode())
    out = tmp_path / "out"
    prepare_output(out)
    report = convert_files([path], out, SupervisedConfig(), "az4672")
    assert report.files[0].error == ""
    assert report.files[0].games >= 1


def test_a_game_over_the_byte_budget_is_dropped_and_the_next_one_read(tmp_path: Path) -> None:
    unclosed = game("1. e4 { this comment never ends\n" + "words words words\n" * 500 + "e5 1-0")
    path = write(tmp_path / "long.pgn", unclosed + game(SCHOLAR))
    with open_pgn(path, max_game_bytes=2_000) as reader:
        games = list(iter_games(reader))
    assert [check_game(g).kind if check_game(g) else None for g in games] == ["too-long", None]
    assert games[1].number == 2 and games[0].offset == 0


def test_compressed_files_read_like_plain_ones(tmp_path: Path) -> None:
    text = (CASES["ok"][0] + CASES["variations-comments"][0]).encode()
    plain = write(tmp_path / "g.pgn", text)
    paths = [plain, write(tmp_path / "g.pgn.gz", gzip.compress(text)),
             write(tmp_path / "g.pgn.bz2", bz2.compress(text)),
             write(tmp_path / "renamed.txt", gzip.compress(text))]  # magic bytes, not the name
    zstandard = pytest.importorskip("zstandard")
    paths.append(write(tmp_path / "g.pgn.zst", zstandard.ZstdCompressor().compress(text)))
    expected = [(g.headers, g.moves, g.offset) for g in read_all(plain)]
    for path in paths[1:]:
        assert [(g.headers, g.moves, g.offset) for g in read_all(path)] == expected, path


def test_a_corrupt_compressed_file_is_reported_not_raised(tmp_path: Path) -> None:
    data = gzip.compress((CASES["ok"][0] * 200).encode())
    path = write(tmp_path / "cut.pgn.gz", data[: len(data) // 2])
    out = tmp_path / "out"
    prepare_output(out)
    report = convert_files([path], out, SupervisedConfig(), "az4672")
    assert "cannot decompress" in report.files[0].error
    with pytest.raises(PgnOpenError, match="missing.pgn"), open_pgn(tmp_path / "missing.pgn"):
        pass


def test_header_filters_keep_games_without_the_header(tmp_path: Path) -> None:
    text = (game(SCHOLAR, WhiteElo="2100", BlackElo="1900", TimeControl="600+5")
            + game(SCHOLAR, WhiteElo="2100", BlackElo="1200", TimeControl="600+5")
            + game(SCHOLAR, WhiteElo="?", TimeControl="60+0")
            + game(SCHOLAR))
    path = write(tmp_path / "f.pgn", text)
    kinds = [check_game(g).kind if check_game(g) else None
             for g in read_all(path, HeaderFilter(min_elo=1500))]
    assert kinds == [None, "elo", None, None]
    kinds = [check_game(g).kind if check_game(g) else None
             for g in read_all(path, HeaderFilter(min_time_control_s=300))]
    assert kinds == [None, None, "time-control", None]


@pytest.mark.parametrize(("text", "seconds"), [
    ("300", 300.0), ("180+2", 260.0), ("40/7200:3600", 7200.0), ("*60", 60.0),
    ("-", None), ("?", None), ("", None), (None, None), ("abc", None),
])
def test_time_controls_are_parsed(text: str | None, seconds: float | None) -> None:
    assert parse_time_control(text) == seconds


def test_rows_hold_the_move_played_and_the_result(tmp_path: Path) -> None:
    path = write(tmp_path / "g.pgn", CASES["ok"][0] + game("1. d4 d5 2. c4 1/2-1/2", "1/2-1/2"))
    out = tmp_path / "out"
    prepare_output(out)
    convert_files([path], out, SupervisedConfig(heldout_fraction=0.0), "az4672")
    tables, bad = load_shards(out / "train", check_legality=True)
    assert bad == []
    records = table_to_records(tables[0])
    board = chess.Board()
    policy = get_policy_map("az4672")
    first = [r for r in records if r.game_id == "pgn0000-g0000001"]
    assert [r.ply for r in first] == list(range(7))
    for record, san in zip(first, ["e4", "e5", "Bc4", "Nc6", "Qh5", "Nf6", "Qxf7#"], strict=True):
        assert record.fen == board.fen()
        move = board.parse_san(san)
        assert list(record.policy_index) == [policy.move_to_index(board, move)]
        assert record.z == (1 if board.turn == chess.WHITE else -1)
        assert (record.root_visits, record.full_search, record.generation) == (0, True, 0)
        board.push(move)
    drawn = [r for r in records if r.game_id == "pgn0000-g0000002"]
    assert len(drawn) == 3 and all(r.z == 0 and r.termination == "pgn" for r in drawn)


def test_label_smoothing_spreads_mass_over_the_legal_moves(tmp_path: Path) -> None:
    path = write(tmp_path / "g.pgn", CASES["ok"][0])
    out = tmp_path / "out"
    prepare_output(out)
    settings = SupervisedConfig(heldout_fraction=0.0, label_smoothing=0.1)
    convert_files([path], out, settings, "az4672")
    tables, _ = load_shards(out / "train", check_legality=True)
    pi, _ = decode_targets(tables[0])
    assert np.allclose(pi.sum(axis=1), 1.0, atol=1e-5)
    assert pi[0].max() == pytest.approx(0.9 + 0.1 / 20)  # 20 legal moves at the start
    assert (pi[0] > 0).sum() == 20


def test_fast_fen_equals_python_chess() -> None:
    rng = random.Random(5)
    for _ in range(60):
        for board in random_walk(rng, rng.randrange(200)):
            assert fast_fen(board) == board.fen()
    for fen in ("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
                "4k3/8/8/8/3pP3/8/8/4K2R b K e3 0 1", "8/8/8/8/8/8/8/K6k w - - 99 80"):
        assert fast_fen(chess.Board(fen)) == chess.Board(fen).fen()


def test_the_split_is_stable_and_keeps_duplicates_together(tmp_path: Path) -> None:
    keys = [f"key {i}" for i in range(2000)]
    share = sum(is_heldout(key, 0.2) for key in keys) / len(keys)
    assert 0.17 < share < 0.23
    assert [is_heldout(k, 0.2) for k in keys] == [is_heldout(k, 0.2) for k in keys]
    assert not any(is_heldout(k, 0.0) for k in keys)
    same_moves = game(SCHOLAR, White="A") + game(SCHOLAR, White="B", Event="other")
    out = tmp_path / "out"
    prepare_output(out)
    report = convert_files([write(tmp_path / "d.pgn", same_moves)], out,
                           SupervisedConfig(heldout_fraction=0.5), "az4672")
    assert sorted(report.files[0].games_per_split.values()) == [0, 2]


def test_an_output_folder_with_shards_is_refused_unless_overwritten(tmp_path: Path) -> None:
    path = write(tmp_path / "g.pgn", CASES["ok"][0])
    out = tmp_path / "out"
    prepare_output(out)
    convert_files([path], out, SupervisedConfig(heldout_fraction=0.0), "az4672")
    with pytest.raises(SupervisedDataError, match="--overwrite"):
        prepare_output(out)
    prepare_output(out, overwrite=True)
    assert list((out / "train").glob("*.parquet")) == []


def test_inputs_are_found_in_folders_and_missing_ones_named(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    for name in ("a/x.pgn", "a/b/y.pgn.gz", "a/b/z.pgn.zst", "a/notes.txt"):
        write(tmp_path / name, "")
    names = [p.name for p in find_pgn_files([tmp_path / "a"])]
    assert names == ["y.pgn.gz", "z.pgn.zst", "x.pgn"]  # sorted by path
    with pytest.raises(SupervisedDataError, match="nowhere"):
        find_pgn_files([tmp_path / "nowhere"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(SupervisedDataError, match="no PGN files"):
        find_pgn_files([tmp_path / "empty"])


def test_progress_events_add_up_to_the_games(tmp_path: Path) -> None:
    path = write(tmp_path / "g.pgn", CASES["ok"][0] * 450)
    out = tmp_path / "out"
    prepare_output(out)
    converter = PgnFileConverter(path, out, "pgn0000", SupervisedConfig(), "az4672")
    events = list(converter.run())
    assert sum(e.delta for e in events) == 450 and events[-1].done
    assert [e.done for e in events[:-1]] == [False] * (len(events) - 1)


def test_the_shipped_pgn_converts_entirely(tmp_path: Path) -> None:
    """Every shipped game is accepted and the rows equal the plies python-chess counts."""
    with gzip.open(SHIPPED, "rt", encoding="utf-8") as handle:
        plies = []
        while (built := chess.pgn.read_game(handle)) is not None:
            assert not built.errors
            plies.append(len(list(built.mainline_moves())))
    assert 200 <= len(plies) <= 500 and SHIPPED.stat().st_size < 1_000_000
    out = tmp_path / "out"
    prepare_output(out)
    report = convert_files([SHIPPED], out, SupervisedConfig(), "az4672").totals()
    assert report["accepted"] == report["games"] == len(plies)
    assert report["train_positions"] + report["heldout_positions"] == sum(plies)
    train, _ = load_shards(out / "train", check_legality=False)
    heldout, _ = load_shards(out / "heldout", check_legality=False)
    train_ids = {g for t in train for g in t.column("game_id").to_pylist()}
    heldout_ids = {g for t in heldout for g in t.column("game_id").to_pylist()}
    assert heldout_ids and train_ids and not train_ids & heldout_ids
    assert len(train_ids) + len(heldout_ids) == len(plies)
