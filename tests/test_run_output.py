"""What ``zerochess run`` prints off a terminal (``make demo > log``): the
report the README shows for ``make demo``, one line a generation, then the
gating game and the MLflow store; no log records, stage lines or library
notices (those are ``--verbose``'s).

The shapes are regular expressions, checked against the README's own example
lines, then against a real run of the demo preset (endgame starts, Gumbel
self-play, the mate-rate measure against Stockfish, an SPRT gate, no ladder)
on tiny settings, its stdout and stderr pipes, as in a log file.  Two such
runs at the same time print the same lines, apart from the positions a second
(the seeds are fixed and the gate records its pairs in schedule order).
"""

from __future__ import annotations

import io
import json
import logging
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.helpers.cli import child_env, set_args, zerochess_command
from tests.helpers.stockfish import have_stockfish


MATE_RATE = r"mate rate \d+/\d+ = \d\.\d\d \[\d\.\d\d, \d\.\d\d\]"
ELO = r"(?:[+-]\d+|\d+(?:\.\d+)?/\d+, (?:below|above) [+-]\d+)"  # +18, or a bound: 0/4, below -280
LOSS = r"\d+\.\d{3}"
GENERATION_0 = re.compile(rf"generation 0 \(random net\): {MATE_RATE}")
GENERATION = re.compile(
    rf"generation [1-9]\d*: \d+ games \(\d+ pos/s\), loss {LOSS} \(policy {LOSS}, value {LOSS}\), "
    rf"gate: (?:rejected|PROMOTED), vs best {ELO} Elo; {MATE_RATE}"
)
GAME_HEADER = re.compile(r"A gating game of generation [1-9]\d* \(\w+\.pgn\):")
MLFLOW_HINT = (re.compile(r"compare runs: \S*mlflow ui --backend-store-uri sqlite:///\S+ .*"),
               re.compile(r"\s*\(?then open http://127\.0\.0\.1:\d+\S*\)?"))  # fmt: skip

# The demo preset, shrunk: one generation of 4 games, 4 training steps, a 2-game gate and measure.
TINY_DEMO = {
    "net.filters": 16,
    "search.num_simulations": 8, "search.leaves_per_batch": 4,
    "selfplay.games_per_task": 2, "selfplay.max_plies": 30,
    "selfplay.device": "cpu", "selfplay.precision": "fp32", "selfplay.compile": "eager",
    "train.batch_size": 32, "train.max_steps": 4, "train.checkpoint_every": 2, "train.log_every": 2,
    "train.shuffle_buffer": 500, "train.threads": 1, "train.device": "cpu", "train.precision": "32-true",
    "gating.simulations": 4, "gating.max_games": 2, "gating.max_plies": 30,
    "gating.precision": "fp32", "gating.compile": "eager",
    "gating.measure_games": 2, "gating.measure_max_plies": 16, "gating.measure_defence": "depth=1",
    "run.generations": 1, "run.games_per_generation": 4,
}  # fmt: skip


def readme_report_lines() -> list[str]:
    """The example lines of the README's ``make demo`` section (its first ``text`` block)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("```text\n", 1)[1].split("```", 1)[0]
    return block.strip().splitlines()


def test_the_shapes_are_the_readmes() -> None:
    lines = readme_report_lines()
    assert GENERATION_0.fullmatch(lines[0]), lines[0]
    assert lines[1:] and all(GENERATION.fullmatch(line) for line in lines[1:]), lines[1:]


def check_report(stdout: str, generations: int) -> None:
    """``stdout`` is generation 0's line, one line a generation, then the
    trailer (:func:`check_trailer`), and nothing else."""
    lines = stdout.splitlines()
    assert GENERATION_0.fullmatch(lines[0]), stdout[:3000]
    for number, line in enumerate(lines[1 : generations + 1], start=1):
        assert GENERATION.fullmatch(line) and line.startswith(f"generation {number}: "), stdout[:3000]
    check_trailer(lines[generations + 1 :])


def check_trailer(lines: list[str]) -> None:
    """A blank line, the header of one gating game, the game as PGN (exactly
    as python-chess writes it), a blank line, the JSON summary, the MLflow hint."""
    import chess.pgn

    assert lines[0] == "" and GAME_HEADER.fullmatch(lines[1]), lines[:3]
    end = next(index for index, line in enumerate(lines) if line.startswith("{"))
    pgn = "\n".join(lines[2:end]).strip()
    game = chess.pgn.read_game(io.StringIO(pgn))
    assert game is not None and not game.errors and str(game) == pgn, pgn
    summary = json.loads(lines[end])
    assert set(summary) == {"best", "mlflow", "parent_run"}, summary
    hint = lines[end + 1 :]
    assert hint and len(hint) <= len(MLFLOW_HINT), hint
    assert all(pattern.fullmatch(line) for pattern, line in zip(MLFLOW_HINT, hint)), hint


def demo_command(out: Path) -> list[str]:
    """``zerochess run --preset demo`` on the tiny settings, into ``out``."""
    return zerochess_command("run", "--preset", "demo", "--out", str(out), *set_args(TINY_DEMO))


@pytest.fixture(scope="module")
def two_demo_runs(tmp_path_factory: pytest.TempPathFactory) -> list[subprocess.CompletedProcess[str]]:
    """Two runs of the tiny demo started at the same time (so they compete for
    the cores and their actors finish in different orders), stdout and stderr
    on pipes, as in a log file."""
    if not have_stockfish():
        pytest.skip("the demo's measure plays Stockfish")
    env = child_env("token")  # as zerochess runs it: ~/.ray/auth_token
    root = tmp_path_factory.mktemp("demos")
    runs = [subprocess.Popen(demo_command(root / f"demo{i}"), cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for i in (1, 2)]  # fmt: skip
    done = []
    for process in runs:
        stdout, stderr = process.communicate(timeout=1800)
        done.append(subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr))
    return done


@pytest.mark.slow
def test_the_demo_prints_its_report_and_nothing_else_off_a_terminal(
    two_demo_runs: list[subprocess.CompletedProcess[str]],
) -> None:
    for done in two_demo_runs:
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stderr == "", f"stderr holds more than the report:\n{done.stderr[-3000:]}"
        check_report(done.stdout, generations=1)


def comparable(stdout: str) -> list[str]:
    """The report's lines and the gating game, with what depends on timing
    (positions a second) or on the run folder (the players' net paths in the
    PGN headers, the JSON summary, the MLflow hint) masked or left out."""
    lines = stdout.splitlines()
    end = next(index for index, line in enumerate(lines) if line.startswith("{"))
    return [re.sub(r"/demo[12]/", "/demoN/", re.sub(r"\(\d+ pos/s\)", "(N pos/s)", line)) for line in lines[:end]]


@pytest.mark.slow
def test_two_demo_runs_print_the_same_lines(two_demo_runs: list[subprocess.CompletedProcess[str]]) -> None:
    first, second = (comparable(done.stdout) for done in two_demo_runs)
    assert first == second


def test_report_lines_stay_on_a_redirected_stdout_under_the_live_screen(monkeypatch: pytest.MonkeyPatch) -> None:
    """``make demo > log`` with stderr on a terminal: the live screen is drawn
    on the terminal, the report lines go to the log, not above the screen."""
    from rich.console import Console

    from pipeline.status import RunStatus, StatusBoard

    screen, log = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", log)
    board = StatusBoard(RunStatus("runs/demo", 1), console=Console(file=screen, force_terminal=True))
    assert board.live
    with board:
        print("generation 1: the report line")
    assert log.getvalue() == "generation 1: the report line\n"
    assert "the report line" not in screen.getvalue()


# ---------------------------------------------------------------- what --verbose brings back


@pytest.fixture
def levels_restored() -> Iterator[None]:
    names = ("", "lightning", "lightning.pytorch", "lightning.fabric")
    saved = {name: logging.getLogger(name).level for name in names}
    yield
    for name, level in saved.items():
        logging.getLogger(name).setLevel(level)


@pytest.mark.usefixtures("levels_restored")
def test_report_only_keeps_warnings_and_drops_progress_notes() -> None:
    from pipeline.quiet import report_only

    logging.getLogger().setLevel(logging.INFO)
    report_only()
    for name in ("pipeline.training.trainer", "pipeline.training.window", "pipeline.evaluation.gating",
                 "lightning.pytorch.utilities.rank_zero", "lightning.fabric.utilities.rank_zero"):  # fmt: skip
        logger = logging.getLogger(name)
        assert not logger.isEnabledFor(logging.INFO), name
        assert logger.isEnabledFor(logging.WARNING), name


def test_workers_forward_their_warnings_and_log_everything_under_verbose() -> None:
    from actors.runtime import _logging_options, verbose_worker_logging

    quiet, verbose = _logging_options(False), _logging_options(True)
    assert quiet == {"log_to_driver": True, "logging_level": logging.WARNING}  # no hook: warnings and up
    assert verbose["log_to_driver"] and verbose["logging_level"] == logging.INFO
    assert verbose["runtime_env"]["worker_process_setup_hook"] is verbose_worker_logging
