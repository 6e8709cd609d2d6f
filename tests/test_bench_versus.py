"""``experiments/versus.py``: same-generation matches between two learning runs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.helpers.nets import TINY_CONFIG


@pytest.fixture()
def versus(bench_script: Callable[[str], ModuleType]) -> Any:
    return bench_script("versus")


def fake_run(folder: Path, generations: list[int], nets: dict[int, Path] | None = None) -> Path:
    """A phase folder as ``experiments/learning.py`` leaves it: a ledger (with a
    torn last line) and a curve with its preset and overrides."""
    run = folder / "run"
    run.mkdir(parents=True)
    lines = [json.dumps({"generation": 0, "stage": "init", "net": str(folder / "gen0.pt")})]
    for generation in generations:
        net = (nets or {}).get(generation, folder / f"gen{generation}.pt")
        lines.append(json.dumps({"generation": generation, "stage": "selfplay"}))
        lines.append(json.dumps({"generation": generation, "stage": "train", "net": str(net)}))
    (run / "ledger.jsonl").write_text("\n".join(lines) + '\n{"generation": 9, "sta')
    (folder / "curve.json").write_text(json.dumps({"phase": "standard", "preset": "tiny", "generations": [],
                                                   "overrides": ["gating.simulations=2", "selfplay.device=cpu"]}))  # fmt: skip
    return folder


def test_the_nets_are_read_from_the_ledger(versus: Any, tmp_path: Path) -> None:
    nets = versus.trained_nets(fake_run(tmp_path / "a", [1, 2, 3]))
    assert sorted(nets) == [0, 1, 2, 3] and nets[2] == tmp_path / "a" / "gen2.pt"


def test_a_net_missing_from_disk_is_named(versus: Any, tmp_path: Path) -> None:
    nets_a, nets_b = {1: tmp_path / "a1.pt"}, {1: tmp_path / "b1.pt"}
    nets_a[1].write_bytes(b"")
    with pytest.raises(versus.VersusError, match=r"run B, generation 1: the ledger's net .*b1\.pt is not on disk"):
        versus.check_nets([(1, 1)], nets_a, nets_b)


def test_a_folder_without_a_ledger_is_named(versus: Any, tmp_path: Path) -> None:
    with pytest.raises(versus.VersusError, match=r"no run ledger at .*ledger\.jsonl"):
        versus.trained_nets(tmp_path)


def test_generations_pair_equal_numbers_and_each_runs_last(versus: Any) -> None:
    a, b = {g: Path(f"a{g}") for g in range(1, 165)}, {g: Path(f"b{g}") for g in range(1, 161)}
    assert versus.pick_pairs("25, 50,last,25", a, b) == [(25, 25), (50, 50), (164, 160)]


@pytest.mark.parametrize(("text", "message"), [
    ("170", "run A has no generation 170 \\(it has 1..164\\)"),
    ("162", "run B has no generation 162 \\(it has 1..160\\)"),
    ("first", "'first' is neither a generation number nor 'last'"),
    (" , ", "no generation in"),
])  # fmt: skip
def test_a_generation_not_in_both_runs_is_named(versus: Any, text: str, message: str) -> None:
    a, b = {g: Path(f"a{g}") for g in range(1, 165)}, {g: Path(f"b{g}") for g in range(1, 161)}
    with pytest.raises(versus.VersusError, match=message):
        versus.pick_pairs(text, a, b)


def test_a_net_against_itself_is_refused(versus: Any, tmp_path: Path) -> None:
    folder = fake_run(tmp_path / "a", [1, 2])
    with pytest.raises(versus.VersusError, match=r"generation 2 of both runs is the same net .*gen2\.pt"):
        versus.play(versus.parse([str(folder), str(folder), "--generations", "2"]))


def test_the_match_takes_the_reference_runs_settings_and_the_scripts_on_top(versus: Any, tmp_path: Path) -> None:
    folder = fake_run(tmp_path / "b", [1])
    config = versus.match_config(folder, ["search.twofold_draw=true"], max_plies=300, sims=None)
    assert (config.gating.simulations, config.gating.max_plies, config.search.twofold_draw) == (2, 300, True)
    assert versus.match_config(folder, [], max_plies=300, sims=7).gating.simulations == 7


def test_a_match_prints_as_a_table_row_with_true_minus_signs(versus: Any) -> None:
    match = {"score": 0.37, "wins": 18, "draws": 38, "losses": 44, "elo": -91.6, "elo_low": -156.2,
             "elo_high": 35.0, "conversion": {"ahead": 39, "won": 14}}  # fmt: skip
    row = versus.versus_line({"generation_a": 149, "generation_b": 160, "match": match})
    assert row == "| 149 / 160 | 0.37 (+18 =38 −44) | −92 [−156, +35] | 14/39 |"


def test_bad_options_exit_2_with_one_line(versus: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert versus.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    with pytest.raises(SystemExit) as stopped:
        versus.main([str(tmp_path / "a"), str(tmp_path / "b"), "--pairs", "0"])
    assert stopped.value.code == 2 and "--pairs must be >= 1, got 0" in capsys.readouterr().err
    folder = fake_run(tmp_path / "c", [1])
    assert versus.main([str(folder), str(folder), "--set", "search.no_such_key=1"]) == 2
    assert "no_such_key" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.usefixtures("local_ray")  # the script joins it (and shuts down no Ray of later tests' modules)
def test_two_runs_nets_play_their_matches_once(versus: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Real tiny nets on a local Ray: each pair plays its colour-swapped games,
    the record and PGN are written, and a rerun plays nothing again."""
    from models.net import AlphaZeroNet
    from pipeline.checkpoint import save_net

    nets = {}
    for name in ("a1", "a2", "b1"):
        nets[name] = tmp_path / f"{name}.pt"
        save_net(AlphaZeroNet(TINY_CONFIG), nets[name])
    fake_run(tmp_path / "a", [1, 2], {1: nets["a1"], 2: nets["a2"]})
    fake_run(tmp_path / "b", [1], {1: nets["b1"]})
    out = tmp_path / "out"
    argv = [str(tmp_path / "a"), str(tmp_path / "b"), "--generations", "1,last", "--pairs", "1",
            "--max-plies", "20", "--out", str(out)]  # fmt: skip
    assert versus.main(argv) == 0
    record = json.loads((out / "versus.json").read_text())
    assert list(record["matches"]) == ["1-1", "2-1"]
    for key, match in record["matches"].items():
        assert match["match"]["games"] == 2 and match["match"]["wins"] + match["match"]["draws"] \
            + match["match"]["losses"] == 2  # fmt: skip
        assert (out / f"gen{key}.pgn").read_text().count("[Event ") == 2
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1].startswith("| 2 / 1 | ")
    (out / "gen1-1.pgn").unlink()
    assert versus.main(argv) == 0
    assert not (out / "gen1-1.pgn").exists()  # not played again
    capsys.readouterr()
    assert versus.main([*argv, "--sims", "3"]) == 2  # other settings: not mixed into the same record
    assert "its matches were played with sims=2, not 3; give another --out" in capsys.readouterr().err
