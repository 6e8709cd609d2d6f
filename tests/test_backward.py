"""The backward curriculum over mate distance (pipeline/selfplay/backward.py):
caps that rise with the frontier's mates, balanced start files, saved state,
and the games read back from real self-play shards."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.config import ConfigError
from pipeline.selfplay import load_start_positions
from pipeline.selfplay.backward import (
    BackwardRule,
    Walked,
    fen_key,
    frontier_mates,
    load_caps,
    load_walked,
    raise_caps,
    save_caps,
    save_walked,
    stage_fens,
    started_games,
)
from pipeline.selfplay.endgames import walked_back_starts, write_epd


def walked(kinds: str = "KBNK,KQKR", count: int = 24, max_distance: int = 6) -> list[Walked]:
    names = kinds.split(",")
    starts = walked_back_starts(kinds, count, seed=3, max_distance=max_distance)
    return [Walked(fen, _kind(fen, names), d) for fen, d in starts]


def _kind(fen: str, names: list[str]) -> str:
    return "KBNK" if "N" in fen.split()[0] else "KQKR" if "KQKR" in names else names[0]


def test_stage_starts_stay_within_each_cap_and_balance_the_kinds() -> None:
    starts = walked()
    fens = stage_fens(starts, {"KBNK": 2, "KQKR": 6}, kept=["8/8/8/8/8/2k5/8/1QK5 w - - 0 1"], keep_share=0.2)
    where = {s.fen: s for s in starts}
    drawn = [where[fen] for fen in fens if fen in where]
    assert all(s.distance <= (2 if s.kind == "KBNK" else 6) for s in drawn)
    kbnk = sum(s.kind == "KBNK" for s in drawn)
    assert kbnk == len(drawn) - kbnk == 12  # KQKR's 12 starts within 6; KBNK's 4 within 2, repeated to 12
    assert len({s.fen for s in drawn if s.kind == "KBNK"}) == 4
    assert fens[24:] == ["8/8/8/8/8/2k5/8/1QK5 w - - 0 1"] * 6  # a fifth of 30


def test_a_cap_with_no_start_and_a_bad_share_name_themselves() -> None:
    starts = walked("KQKR", count=6, max_distance=3)
    with pytest.raises(ConfigError, match="KBNK"):
        stage_fens(starts, {"KQKR": 3, "KBNK": 3})
    with pytest.raises(ConfigError, match="keep_share.*1.5"):
        stage_fens(starts, {"KQKR": 3}, keep_share=1.5)


def test_caps_rise_on_the_frontier_only_and_stop_at_the_maximum() -> None:
    rule = BackwardRule(start_cap=2, step=2, raise_rate=0.7, max_distance=6, min_games=4)
    starts = [Walked(_on_first_rank("Q", d), "KQK", d) for d in range(1, 7)]
    starts += [Walked(_on_first_rank("R", d), "KRK", d) for d in range(1, 6)]
    caps = {"KQK": 4, "KRK": 4}
    games = [(starts[0].fen, "1-0")] * 10  # KQK distance 1: not the frontier of cap 4
    games += [(starts[2].fen, "1-0")] * 3 + [(starts[3].fen, "1/2-1/2")]  # KQK 3 and 4: 3 of 4
    games += [(starts[8].fen, "1-0")] * 2 + [(starts[9].fen, "1-0")]  # KRK 3 and 4: 3 games only
    mates = frontier_mates(games, starts, caps)
    assert mates == {"KQK": (3, 4), "KRK": (3, 3)}
    assert raise_caps(caps, mates, rule) == {"KQK": 6, "KRK": 4}  # KRK: fewer than min_games
    assert raise_caps({"KQK": 6, "KRK": 4}, {"KQK": (4, 4)}, rule)["KQK"] == 6  # the maximum
    assert raise_caps(caps, {"KQK": (2, 4)}, rule) == caps  # 2 of 4 < 0.7


def _on_first_rank(piece: str, file: int) -> str:
    """A distinct position for each ``file`` (1-6): the piece on that file of the first rank, the king on h1."""
    return f"8/8/8/8/8/2k5/8/{file - 1 or ''}{piece}{7 - file or ''}K w - - 0 1"


def test_black_strong_starts_count_black_wins() -> None:
    starts = [Walked("8/8/8/8/8/2K5/8/1qk5 b - - 0 1", "KQK", 2)]
    assert frontier_mates([(starts[0].fen, "0-1"), (starts[0].fen, "1-0")], starts, {"KQK": 2}) == {"KQK": (1, 2)}


def test_bad_rules_name_the_value() -> None:
    with pytest.raises(ConfigError, match="start_cap.*got 0"):
        BackwardRule(start_cap=0)
    with pytest.raises(ConfigError, match="step.*got 0"):
        BackwardRule(step=0)
    with pytest.raises(ConfigError, match="raise_rate.*got 0.0"):
        BackwardRule(raise_rate=0.0)


def test_state_round_trips_and_bad_files_name_themselves(tmp_path: Path) -> None:
    starts = walked(count=8, max_distance=2)
    save_walked(tmp_path / "walked.json", starts)
    assert load_walked(tmp_path / "walked.json") == starts
    rule = BackwardRule()
    assert load_caps(tmp_path / "caps.json", ["KBNK"], rule) == {"KBNK": 2}
    save_caps(tmp_path / "caps.json", {"KBNK": 8})
    assert load_caps(tmp_path / "caps.json", ["KBNK", "KQKR"], rule) == {"KBNK": 8, "KQKR": 2}
    (tmp_path / "bad.json").write_text('[{"fen": "x"}]')
    with pytest.raises(ConfigError, match="bad.json.*distance"):
        load_walked(tmp_path / "bad.json")
    (tmp_path / "caps_bad.json").write_text("[1, 2]")
    with pytest.raises(ConfigError, match="caps_bad.json"):
        load_caps(tmp_path / "caps_bad.json", ["KBNK"], rule)


def test_the_stage_file_is_a_start_file(tmp_path: Path) -> None:
    starts = walked(count=8, max_distance=2)
    fens = stage_fens(starts, {"KBNK": 2, "KQKR": 1})
    write_epd(tmp_path / "stage.epd", fens, "backward")
    assert [fen_key(fen) for fen in load_start_positions(tmp_path / "stage.epd")] == [fen_key(fen) for fen in fens]


def test_started_games_take_each_games_first_recorded_position(tmp_path: Path) -> None:
    table = pa.table({"game_id": ["a", "a", "b"], "ply": [1, 0, 0],
                      "fen": ["later", "start-a", "start-b"], "result": ["1-0", "1-0", "1/2-1/2"]})  # fmt: skip
    pq.write_table(table, tmp_path / "gen0001-task00000.parquet")
    assert sorted(started_games([tmp_path / "gen0001-task00000.parquet"])) == [("start-a", "1-0"), ("start-b", "1/2-1/2")]
    pq.write_table(pa.table({"game_id": ["a"]}), tmp_path / "narrow.parquet")
    with pytest.raises(ConfigError, match="narrow.parquet"):
        started_games([tmp_path / "narrow.parquet"])


def test_each_distance_is_played_as_often_as_the_most_common_one() -> None:
    ones = [Walked(_on_first_rank("Q", file), "KQK", 1) for file in range(1, 6)]
    two = [Walked(_on_first_rank("Q", 6), "KQK", 2)]
    fens = stage_fens(ones + two, {"KQK": 2})
    assert len(fens) == 10 and fens.count(two[0].fen) == 5  # half the games from the frontier, not a sixth
