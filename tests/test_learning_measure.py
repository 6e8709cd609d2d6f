"""The loop's per-generation learning measure (``gating.measure``):
the figures from known games, the config, the status line, the plot, and a
tiny run with the measure on."""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import ModuleType

import pytest

from pipeline.config import ConfigError, load_config
from pipeline.evaluation.match import GameOutcome, Opening
from pipeline.evaluation.measure import mate_rate_figures, measure_text, score_figures, wilson_interval
from pipeline.stats import StatsError
from tests.helpers import ROOT
from tests.helpers.cli import child_env, run_zerochess, set_args
from tests.helpers.nets import TINY_CONFIG
from tests.helpers.stockfish import needs_stockfish

NET = "net:gen0003/net.pt:sims=16"
SF = "stockfish:depth=10"
WHITE_TO_MOVE = Opening("w1", "8/8/8/8/8/2k5/8/Q3K3 w - - 0 1")
BLACK_TO_MOVE = Opening("b1", "q3k3/8/2K5/8/8/8/8/8 b - - 0 1")


def game(white: str, black: str, opening: Opening, result: str, termination: str, plies: int = 9) -> GameOutcome:
    return GameOutcome(white, black, opening.name, result, termination, plies, "")


# ---------------------------------------------------------------- Wilson interval


@pytest.mark.parametrize(
    ("successes", "trials", "expected"),
    [(5, 10, (0.5, 0.2366, 0.7634)), (0, 10, (0.0, 0.0, 0.2775)), (10, 10, (1.0, 0.7225, 1.0)),
     (4, 24, (0.1667, 0.0668, 0.3585))],
)  # fmt: skip
def test_wilson_interval_matches_the_textbook_values(successes: int, trials: int, expected: tuple) -> None:
    assert wilson_interval(successes, trials) == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize(("successes", "trials"), [(0, 0), (3, 2), (-1, 4)])
def test_wilson_interval_rejects_impossible_counts(successes: int, trials: int) -> None:
    with pytest.raises(StatsError, match=f"{successes}/{trials}"):
        wilson_interval(successes, trials)


# ---------------------------------------------------------------- mate rate from games


def test_mate_rate_counts_the_nets_mates_as_the_side_to_move_only() -> None:
    games = [
        game(NET, SF, WHITE_TO_MOVE, "1-0", "checkmate", plies=7),  # the net mates with White
        game(SF, NET, WHITE_TO_MOVE, "1-0", "checkmate", plies=3),  # Stockfish attacks: not counted
        game(SF, NET, BLACK_TO_MOVE, "0-1", "checkmate", plies=11),  # the net mates with Black
        game(NET, SF, BLACK_TO_MOVE, "0-1", "checkmate"),  # Stockfish attacks: not counted
        game(NET, SF, WHITE_TO_MOVE, "1/2-1/2", "max_plies", plies=100),  # no mate within the plies
        game(NET, SF, WHITE_TO_MOVE, "1/2-1/2", "stalemate"),
        game(NET, SF, WHITE_TO_MOVE, "*", "aborted: stockfish died"),  # aborted: left out
    ]
    figures = mate_rate_figures(games, NET, [WHITE_TO_MOVE, BLACK_TO_MOVE])
    rate, low, high = wilson_interval(2, 4)
    assert figures["measure/mates"] == 2 and figures["measure/mate_games"] == 4
    assert figures["measure/mate_rate"] == 0.5
    assert (figures["measure/mate_rate_low"], figures["measure/mate_rate_high"]) == pytest.approx((low, high))
    assert figures["measure/mate_plies_median"] == 11


def test_mate_rate_of_no_counted_game_is_empty() -> None:
    assert mate_rate_figures([game(SF, NET, WHITE_TO_MOVE, "1-0", "checkmate")], NET, [WHITE_TO_MOVE]) == {}


def test_the_measure_text_gives_counts_interval_and_bounds() -> None:
    figures = mate_rate_figures([game(NET, SF, WHITE_TO_MOVE, "1-0", "checkmate")] * 5
                                + [game(NET, SF, WHITE_TO_MOVE, "1/2-1/2", "max_plies")] * 19, NET, [WHITE_TO_MOVE])  # fmt: skip
    assert measure_text(figures) == "mate rate 5/24 = 0.21 [0.09, 0.40]"
    lost = {"score": 0.0, "elo": -280.4, "elo_low": None, "elo_high": None, "games": 4, "wins": 0, "draws": 0,
            "losses": 4}  # fmt: skip
    won = {"score": 0.625, "elo": 88.7, "elo_low": -50.0, "elo_high": 250.0, "games": 8, "wins": 4, "draws": 2,
           "losses": 2}  # fmt: skip
    text = measure_text({**score_figures(won, "gen0"), **score_figures(lost, "random")})
    assert text == "vs gen0 0.62 [0.43, 0.81] (+4 =2 -2), vs random 0/4, below -280 Elo (+0 =0 -4)"


# ---------------------------------------------------------------- config


def test_the_measure_settings_are_validated_and_name_the_value() -> None:
    with pytest.raises(ConfigError, match="gating.measure must be one of none, mate_rate, vs_gen0, got 'mates'"):
        load_config(None, ["gating.measure=mates"])
    with pytest.raises(ConfigError, match="gating.measure_games must be even for vs_gen0.*got 5"):
        load_config(None, ["gating.measure=vs_gen0", "gating.measure_games=5"])
    with pytest.raises(ConfigError, match="gating.measure_games must be >= 1, got 0"):
        load_config(None, ["gating.measure_games=0"])
    with pytest.raises(ConfigError, match="gating.measure_defence"):
        load_config(None, ["gating.measure=mate_rate", "gating.measure_defence="])
    with pytest.raises(ConfigError, match="unknown key.*gating.measure_game\\b"):
        load_config(None, ["gating.measure_game=4"])
    assert load_config(None, ["gating.measure=mate_rate", "gating.measure_games=5"]).gating.measure_games == 5


def test_the_demo_preset_measures_mate_rate_on_held_out_starts() -> None:
    gating = load_config(ROOT / "params.yaml", preset="demo").gating
    assert gating.measure == "mate_rate" and gating.measure_book.endswith("endgames_eval.epd")
    assert not gating.always_promote  # a real gate
    assert load_config(ROOT / "params.yaml").gating.measure == "none"


# ---------------------------------------------------------------- status line, screen, plot


def _summary(generation: int, rate: float) -> dict:
    mates = round(rate * 24)
    low, high = wilson_interval(mates, 24)[1:]
    return {"generation": generation, "selfplay": {"games": 32}, "train": {"loss/total": 3.0},
            "gate": {"gate/promoted": 1.0, "gate/elo_vs_best": 120.0, "gate/score_vs_best": 0.67,
                     "gate/games_vs_best": 12.0},
            "measure": {"measure/mate_rate": mates / 24, "measure/mate_rate_low": low, "measure/mate_rate_high": high,
                        "measure/mates": float(mates), "measure/mate_games": 24.0}}  # fmt: skip


def test_the_status_line_and_the_screen_show_the_measure() -> None:
    from rich.console import Console

    from pipeline.loop.text import status_line
    from pipeline.status import RunStatus, render

    line = status_line(_summary(3, 0.5))
    assert "gate: PROMOTED" in line and line.endswith("; mate rate 12/24 = 0.50 [0.31, 0.69]")
    console = Console(file=io.StringIO(), width=160, color_system=None)
    console.print(render(RunStatus("runs/x", 8, learning="generation 3: mate rate 12/24 = 0.50 [0.31, 0.69]")))
    screen = console.file.getvalue()  # type: ignore[attr-defined]
    assert any("learning" in row and "generation 3: mate rate 12/24" in row for row in screen.splitlines())


def test_the_plot_draws_the_measure_from_generation_zero_with_whole_generations() -> None:
    import matplotlib.pyplot as plt

    from pipeline.loop_plots import elo_figure

    history = [_summary(1, 0.25), _summary(2, 0.5)]
    figure = elo_figure(history, baseline=_summary(0, 0.125)["measure"])
    elo_axis, measure_axis = figure.axes
    (line,) = [line for line in measure_axis.get_lines() if line.get_label().startswith("mate rate")]
    assert list(line.get_xdata()) == [0, 1, 2]
    assert list(line.get_ydata()) == pytest.approx([3 / 24, 6 / 24, 12 / 24])
    low, high = measure_axis.get_xlim()
    ticks = [t for t in measure_axis.get_xticks() if low <= t <= high]
    assert ticks and all(float(t).is_integer() for t in ticks)
    assert len(elo_figure([{k: v for k, v in history[0].items() if k != "measure"}]).axes) == 1  # no measure: one panel
    plt.close("all")


# ---------------------------------------------------------------- a tiny run with the measure on


@pytest.mark.slow
def test_a_tiny_run_records_the_measure_in_the_ledger_mlflow_and_the_plot(tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    out = tmp_path / "run"
    overrides = ["run.generations=1", "gating.measure=mate_rate", "gating.measure_openings=data/endgames_eval.epd",
                 "gating.measure_games=2", "gating.measure_max_plies=16", "gating.measure_defence=depth=1"]  # fmt: skip
    done = run_zerochess("run", "--preset", "tiny", "--out", str(out), "--no-live", *set_args(overrides),
                         env=child_env("token"), timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    ledger = [json.loads(line) for line in (out / "ledger.jsonl").read_text().splitlines()]
    measures = {entry["generation"]: entry["figures"] for entry in ledger if entry["stage"] == "measure"}
    assert sorted(measures) == [0, 1]
    for figures in measures.values():
        assert figures["measure/mate_games"] == 2 and 0.0 <= figures["measure/mate_rate"] <= 1.0
    report = done.stdout.splitlines()  # the report lines (tests/test_run_output.py checks their shape)
    assert report[0].startswith("generation 0 (random net): mate rate")
    assert report[1].startswith("generation 1: ") and "; mate rate" in report[1]
    assert (out / "gen0001" / "measure" / "mate_rate.pgn").exists()
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["generations"][0]["measure"] == measures[1] and metrics["measure_gen0"] == measures[0]
    assert (out / "elo.png").stat().st_size > 0
    client = MlflowClient(f"sqlite:///{out}/mlflow.db")
    parent = json.loads((out / "pipeline.json").read_text())["run_id"]
    steps = sorted(m.step for m in client.get_metric_history(parent, "measure/mate_rate"))
    assert steps == [0, 1]


# ---------------------------------------------------------------- experiments/learning.py --rate


@pytest.mark.slow
@needs_stockfish
def test_the_learning_bench_rates_each_evaluation_point_with_rate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  learning: ModuleType) -> None:  # fmt: skip
    """``--rate`` reaches every phase, and an evaluation point then carries a
    real rating (a tiny net, 2 games at 1 level of a cached chain) in its
    record and its printed line; without it, nothing is rated."""
    from models.net import AlphaZeroNet
    from pipeline.checkpoint import save_net
    from pipeline.evaluation.rating_fit import Level
    from pipeline.evaluation.rating_levels import LevelPlan, default_cache_path, engine_info, write_chain
    from pipeline.players.stockfish import find_stockfish

    phases: list = []
    monkeypatch.setattr(learning, "init_ray", lambda *args, **kwargs: None)
    monkeypatch.setattr(learning, "run_phase", lambda phase, *args, **kwargs: phases.append(phase) or [])
    rate = ["--rate", "--rate-games", "2", "--rate-levels", "1"]
    assert learning.main(["--out", str(tmp_path / "bench"), "--phase", "standard", *rate]) == 0
    assert learning.main(["--out", str(tmp_path / "bench"), "--phase", "standard"]) == 0
    assert [(p.rate_games, p.rate_levels, p.rate_max_plies) for p in phases] == [(2, 1, 400), (0, 6, 400)]

    monkeypatch.setenv("ZEROCHESS_CACHE_DIR", str(tmp_path / "cache"))
    engine, plan = engine_info(find_stockfish()), LevelPlan(max_plies=40)
    chain = [Level(f"stockfish:nodes=1:random={share}", 100.0 * i, 100.0 * i - 50, 100.0 * i + 50)
             for i, share in enumerate((1.0, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.5, 0.45))]  # fmt: skip
    write_chain(default_cache_path(), engine, plan, plan.elo_spec(engine.elo_min), chain, [])  # nothing to measure
    net = tmp_path / "net.pt"
    save_net(AlphaZeroNet(TINY_CONFIG), net)
    scored = {"score": 0.5, "score_low": 0.4, "score_high": 0.6, "wins": 1, "draws": 0, "losses": 1}
    monkeypatch.setattr(learning, "match", lambda *args: scored)  # the matches are not what is tested here
    config = load_config(None, ["gating.simulations=2", "selfplay.device=cpu"])
    phase = learning.Phase("standard", [], [], rate_games=2, rate_levels=1, rate_max_plies=40)
    entry = {"generation": 0, "loss": {}, **learning.evaluate(phase, config, str(net), str(net), tmp_path / "eval")}
    rating = entry["rating"]
    assert rating["games"] == 2 and rating["levels"] == ["stockfish:nodes=1:random=0.45"]
    assert rating["low"] <= rating["rating"] <= rating["high"] and rating["chain_measured_now"] is False
    assert f"rating {rating['rating']:.0f} [{rating['low']:.0f}, {rating['high']:.0f}] (2 games)" in learning.line(entry)
    assert (tmp_path / "eval" / "rating.pgn").read_text().count("[Event ") == 2
    assert "rating" not in learning.evaluate(learning.Phase("standard", [], []), config, str(net), str(net),
                                             tmp_path / "plain")  # fmt: skip
