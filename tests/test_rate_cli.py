"""``zerochess rate`` with the real Stockfish binary and a tiny real net:
bad input answered in one line with exit status 2, and a whole rating (the
chain measured, then read from the cache) that ends with the summary line
and logs to MLflow."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers.bad_nets import write_nets
from tests.helpers.nets import TINY_CONFIG
from tests.helpers.stockfish import needs_stockfish
from zerochess.cli import main
from pipeline.players.stockfish import find_stockfish

TORCH_THREADS = 1
pytestmark = pytest.mark.usefixtures("torch_threads")
LINE = re.compile(r"^rating: (-?\d+) \[(-?\d+), (-?\d+)\] on Stockfish's UCI_Elo scale \((\d+) games, levels (.+)\)$")
QUICK = ["--params", "none", "--set", "gating.max_plies=60", "--games", "2", "--simulations", "2",
         "--max-levels", "2", "--level-games", "2", "--elo-nodes", "100", "--width", "0"]  # fmt: skip


@pytest.fixture(scope="module")
def nets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny net (``tiny``), one whose weights do not fit its config, and broken files."""
    root = tmp_path_factory.mktemp("rate_nets")
    write_nets(root)
    write_lc0_net(root / "lc0.pt")
    nets = {p.stem: p for p in root.iterdir()}
    return nets | {"tiny": nets["good"], "missing": root / "missing" / "net.pt"}


def write_lc0_net(path: Path) -> None:
    """A tiny net with lc0's 1858-move policy (the other nets use AlphaZero's 4672)."""
    import torch

    from models.net import AlphaZeroNet
    from pipeline.checkpoint import save_net

    torch.manual_seed(1)
    save_net(AlphaZeroNet(replace(TINY_CONFIG, policy_encoding="lc0_1858")), path)


def bad_cases(nets: dict[str, Path]) -> list[tuple[str, list[str], str]]:
    tiny = str(nets["tiny"])
    return [
        ("missing checkpoint", [str(nets["missing"])], "missing/net.pt"),
        ("checkpoint folder", [str(nets["folder"])], "is a folder"),
        ("corrupt checkpoint", [str(nets["corrupt"])], "corrupt.pt"),
        ("another architecture", [str(nets["arch"])], "arch.pt"),
        ("zero games", [tiny, "--games", "0"], "--games must be >= 1, got 0"),
        ("negative games", [tiny, "--games", "-4"], "--games must be >= 1, got -4"),
        ("zero simulations", [tiny, "--simulations", "0"], "--simulations must be >= 1, got 0"),
        ("zero levels", [tiny, "--max-levels", "0"], "--max-levels must be >= 1, got 0"),
        ("no Stockfish at --stockfish", [tiny, "--stockfish", "/nonexistent/stockfish"], "--stockfish /nonexistent/stockfish"),
        ("missing book", [tiny, "--openings", "/nonexistent/book.epd"], "--openings /nonexistent/book.epd"),
        ("cache under a file", [tiny, "--cache", str(nets["a_file"] / "levels.json")], "--cache"),
        ("unknown --set key", [tiny, "--set", "gating.bogus=1"], "gating.bogus"),
        ("no net at all", [], "a CHECKPOINT to rate, or --compare A B"),
        ("compare one net", ["--compare", tiny], "--compare takes two nets A B, got 1"),
        ("compare three nets", ["--compare", tiny, tiny, tiny], "--compare takes two nets A B, got 3"),
        ("compare another encoding", ["--compare", tiny, str(nets["lc0"])], "lc0_1858 policy encoding"),
        ("compare a missing net", ["--compare", tiny, str(nets["missing"])], "missing/net.pt"),
        ("a net and --compare", [tiny, "--compare", tiny, tiny], "drop CHECKPOINT"),
        ("simulations not a list of numbers", [tiny, "--simulations", "32,many"], "--simulations must be whole numbers"),
        ("zero simulations in a list", [tiny, "--simulations", "32,0"], "--simulations must be >= 1, got 0"),
        ("negative width", [tiny, "--width", "-5"], "--width must be a number of Elo >= 0"),
        ("max games below games", [tiny, "--max-games", "2"], "--max-games must be at least --games (20)"),
    ]  # fmt: skip


CASE_NAMES = [case[0] for case in bad_cases({k: Path(k) for k in ("tiny", "missing", "folder", "corrupt", "arch",
                                                                 "a_file", "lc0")})]  # fmt: skip


def check_one_line(code: int, out: str, err: str, needle: str) -> None:
    errors = [line for line in err.splitlines() if "error" in line.lower()]
    assert code == 2, err[-2000:]
    assert len(errors) == 1, err[-2000:]
    assert errors[0].startswith("zerochess rate: error: ") and needle in errors[0], errors[0]
    assert "Traceback" not in err and out == ""


@pytest.mark.parametrize("index", range(len(CASE_NAMES)), ids=CASE_NAMES)
def test_bad_input_is_one_line_exit_2_before_any_work(index: int, nets: dict[str, Path], tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    _, argv, needle = bad_cases(nets)[index]
    out, cache = tmp_path / "out", tmp_path / "cache" / "levels.json"
    has_cache = "--cache" in argv
    code = main(["rate", *argv, "--params", "none", "--out", str(out), *([] if has_cache else ["--cache", str(cache)])])
    check_one_line(code, *capsys.readouterr(), needle)
    assert not out.exists() and not cache.parent.exists()


def test_no_stockfish_anywhere_is_one_line(nets: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr("pipeline.players.stockfish.DEBIAN_PATH", str(tmp_path / "no" / "stockfish"))
    code = main(["rate", str(nets["tiny"]), "--params", "none", "--out", str(tmp_path / "out"),
                 "--cache", str(tmp_path / "levels.json")])  # fmt: skip
    check_one_line(code, *capsys.readouterr(), "Stockfish not found")
    assert not (tmp_path / "out").exists()


def read_store(uri: str) -> list:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("zerochess")
    return [] if experiment is None else client.search_runs([experiment.experiment_id])


@pytest.mark.slow
@needs_stockfish
def test_a_whole_rating_prints_the_summary_line_and_logs_to_mlflow(nets: dict[str, Path], tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    cache, out, uri = tmp_path / "cache" / "levels.json", tmp_path / "out", f"sqlite:///{tmp_path / 'mlflow.db'}"
    argv = ["rate", str(nets["tiny"]), *QUICK, "--cache", str(cache), "--out", str(out)]
    assert main([*argv, "--tracking-uri", uri]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    match = LINE.match(lines[-1])
    assert match, lines[-3:]
    rating, low, high, games = (int(match.group(i)) for i in range(1, 5))
    assert low <= rating <= high

    links = [line for line in lines if line.startswith("level ") and " vs " in line]
    played = [line for line in lines if line.startswith("level ") and ": score " in line]
    report = json.loads((out / "rating.json").read_text())
    ladder = [level["name"] for level in report["ladder"]]
    names = [level["name"] for level in report["levels"]]
    assert 1 <= len(played) <= 2 and len(names) == len(played) and games == 2 * len(played)
    assert names[0] == ladder[(len(ladder) - 1) // 2]  # the bisection starts in the middle
    assert all(name in played[i] for i, name in enumerate(names))
    assert report["chain_measured_now"] is True and report["games"] == games
    assert (out / "games.pgn").read_text().count("[Event ") == games

    engines = json.loads(cache.read_text())["engines"]
    ((engine, entry),) = engines.items()
    assert engine.startswith("Stockfish") and engine == report["stockfish"]
    assert 1 <= len(links) == len(entry["links"]) <= 11  # one line per link measured (a lost link ends the chain)
    below = {level["name"] for level in entry["levels"] if level["rating"] < 1350}
    assert below == {level["name"] for level in report["ladder"] if level["low"] < level["high"]}

    (run,) = read_store(uri)
    assert run.info.status == "FINISHED" and run.info.run_name == f"rate {nets['tiny'].name}"
    assert run.data.metrics["rating/elo"] == pytest.approx(rating, abs=0.5)
    assert run.data.metrics["rating/elo_low"] == pytest.approx(low, abs=0.5)
    assert run.data.metrics["rating/elo_high"] == pytest.approx(high, abs=0.5)
    assert run.data.params["rate.levels"] == ", ".join(names)
    assert run.data.params["rate.stockfish"] == engine
    assert f"mlflow: run {run.info.run_id}" in lines[-2]

    # again: the chain comes from the cache, and --no-mlflow logs nothing
    assert main([*argv, "--tracking-uri", uri, "--no-mlflow"]) == 0
    again = capsys.readouterr().out.strip().splitlines()
    assert LINE.match(again[-1]) and not [line for line in again if " vs " in line]
    assert json.loads((out / "rating.json").read_text())["chain_measured_now"] is False
    assert len(read_store(uri)) == 1


@pytest.mark.slow
@needs_stockfish
def test_compare_rates_two_nets_on_the_same_levels_at_each_search_size(nets: dict[str, Path], tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """``--compare A B --simulations 2,3``: for each size, B plays exactly A's
    matches (levels, games), the difference line and compare.json agree with
    the two ratings, and ``--width`` adds matches at the nearest level."""
    import torch

    from models.net import AlphaZeroNet
    from pipeline.checkpoint import save_net

    torch.manual_seed(5)
    other = save_net(AlphaZeroNet(TINY_CONFIG), tmp_path / "other.pt")
    out = tmp_path / "out"
    quick = [arg for arg in QUICK if arg not in ("--width", "0")]
    quick[quick.index("--simulations") + 1] = "2,3"
    argv = ["rate", "--compare", str(nets["tiny"]), str(other), *quick, "--width", "1", "--max-games", "6",
            "--cache", str(tmp_path / "levels.json"), "--out", str(out), "--no-mlflow"]  # fmt: skip
    assert main(argv) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    differences = [line for line in lines if line.startswith("difference: A - B = ")]
    assert len(differences) == 2
    for sims in (2, 3):
        document = json.loads((out / f"sims{sims}" / "compare.json").read_text())
        a, b = document["a"], document["b"]
        assert a["player"].endswith(f"sims={sims}") and b["player"].endswith(f"sims={sims}")
        assert [(lv["name"], lv["games"] + lv["aborted"]) for lv in a["levels"]] == \
            [(lv["name"], lv["games"] + lv["aborted"]) for lv in b["levels"]]
        assert a["games"] == 6  # the bisection's 2 levels, then matches until --max-games (a ±1 Elo width is never met)
        difference = document["difference"]
        assert difference["elo"] == pytest.approx(a["rating"] - b["rating"], abs=0.2)
        assert difference["low"] <= difference["elo"] <= difference["high"]
        for side in ("a", "b"):
            assert (out / f"sims{sims}" / side / "rating.json").exists()


# ------------------------------------------------------------------ gating.rate


def gate_config(*overrides: str):
    from pipeline.config import load_config

    return load_config(None, ["gating.ladder=[]", "gating.ladder_games=2", "gating.max_plies=40",
                              "gating.simulations=2", *overrides])  # fmt: skip


def no_games(players: list[str], openings: list, pairs: int, settings: object, *, sprt: object = None,
             pgn_path: str | None = None, on_pair: object = None):
    """A tournament runner that plays nothing (the SPRT stays undecided)."""
    from pipeline.evaluation.tournament import TournamentReport
    from pipeline.stats import Sprt

    return TournamentReport(players, sprt=Sprt(sprt) if sprt is not None else None)  # type: ignore[arg-type]


def test_the_gate_rates_only_a_promoted_net_and_only_when_asked(tmp_path: Path) -> None:
    from pipeline.evaluation.gating import run_gate

    # not promoted (the SPRT undecided): no rating, so no engine and no net file is needed
    decision = run_gate(gate_config("gating.rate=true"), str(tmp_path / "cand.pt"), str(tmp_path / "best.pt"),
                        tmp_path / "rejected", play=no_games)  # fmt: skip
    assert not decision.promote and "rating" not in decision.report
    # promoted (no incumbent) but gating.rate is off
    decision = run_gate(gate_config(), str(tmp_path / "cand.pt"), None, tmp_path / "off", play=no_games)
    assert decision.promote and "rating" not in decision.report
    assert not (tmp_path / "off" / "rating.pgn").exists()


@pytest.mark.slow
@needs_stockfish
def test_the_gate_rates_a_promoted_net_with_gating_rate(nets: dict[str, Path], tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    from pipeline.evaluation.gating import run_gate
    from pipeline.evaluation.rating_fit import Level
    from pipeline.evaluation.rating_levels import (
        LevelPlan,
        default_cache_path,
        engine_info,
        write_chain,
    )

    monkeypatch.setenv("ZEROCHESS_CACHE_DIR", str(tmp_path / "cache"))
    engine, plan = engine_info(find_stockfish()), LevelPlan(max_plies=40)
    chain = [Level("stockfish:nodes=1:random=1", 500.0, 400.0, 600.0)]  # a cached chain: nothing to measure
    write_chain(default_cache_path(), engine, plan, plan.elo_spec(engine.elo_min), chain, [])
    out = tmp_path / "gate"
    decision = run_gate(gate_config("gating.rate=true"), str(nets["tiny"]), None, out, play=no_games)
    rating = decision.report["rating"]
    assert decision.promote and rating["chain_measured_now"] is False
    assert LINE.match(rating["line"]) and rating["low"] <= rating["rating"] <= rating["high"]
    assert rating["ladder"][0]["name"] == "stockfish:nodes=1:random=1"
    assert 2 <= rating["games"] == 2 * len(rating["levels"])
    assert json.loads((out / "gate.json").read_text())["rating"]["line"] == rating["line"]
    assert (out / "rating.pgn").read_text().count("[Event ") == rating["games"]
