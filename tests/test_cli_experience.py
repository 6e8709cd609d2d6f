"""What a newcomer meets on the command line (issue 15): errors from Ray
tasks in one line, quiet libraries, unwrapped status lines, Elo bounds shown
as bounds, MLflow opening on the runs and no run left RUNNING, fast help."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.helpers.nets import TINY_NET
from zerochess.cli import COMMANDS, main, one_line, user_error


# ---------------------------------------------------------------- errors


def _ray_task_error(cause: BaseException) -> BaseException:
    """The error ``ray.get`` raises for a task that raised ``cause``."""
    from ray.exceptions import RayTaskError

    traceback_text = "\x1b[36mray::MatchActor.play_pair()\x1b[39m\n  File \"x.py\", line 1\n" + repr(cause)
    return RayTaskError("play_pair", traceback_text, cause).as_instanceof_cause()


def test_a_ray_task_error_reaches_the_user_as_its_cause_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from zerochess.commands import params
    from pipeline.players.base import PlayerError

    error = _ray_task_error(PlayerError("player spec 'rnadom': kind must be one of net, stockfish, uct, random"))
    assert "\x1b[" in str(error)  # what Ray would print
    assert user_error(error) and one_line(error) == str(error.cause)

    def fail(args: object) -> int:
        raise error

    monkeypatch.setattr(params, "run", fail)
    assert main(["params"]) == 2
    err = capsys.readouterr().err
    assert err == "zerochess params: error: player spec 'rnadom': kind must be one of net, stockfish, uct, random\n"


def test_a_bug_inside_a_ray_task_keeps_its_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    from zerochess.commands import params

    error = _ray_task_error(KeyError("oops"))
    assert not user_error(error)

    def fail(args: object) -> int:
        raise error

    monkeypatch.setattr(params, "run", fail)
    with pytest.raises(KeyError):
        main(["params"])


def test_os_errors_name_the_path() -> None:
    assert one_line(FileNotFoundError(2, "No such file or directory", "runs/x.pt")) == \
        "runs/x.pt: No such file or directory"  # fmt: skip


def test_run_help_states_the_default_out(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "default: runs/pipeline" in " ".join(capsys.readouterr().out.split())


# ---------------------------------------------------------------- fast help

HEAVY = ("torch", "ray", "mlflow", "lightning")


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_imports_no_heavy_library(command: str) -> None:
    """``--help`` answers without torch, Ray, MLflow or Lightning (each takes
    0.5-2 s to import)."""
    code = (
        "import sys\nfrom zerochess.cli import main\n"
        f"try:\n    main({[command] if command else []!r} + ['--help'])\nexcept SystemExit:\n    pass\n"
        f"print('HEAVY', sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "HEAVY []" in result.stderr, result.stderr[-2000:]
    assert "usage: zerochess" in result.stdout


# ---------------------------------------------------------------- quiet


def test_lightnings_notices_are_dropped_and_its_warnings_kept() -> None:
    from pipeline.quiet import quiet_libraries

    quiet_libraries()
    logger = logging.getLogger("lightning.pytorch.utilities.rank_zero")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        logger.info("GPU available: False, used: False")
        logger.info("TPU available: False, using: 0 TPU cores")
        logger.info("💡 Tip: For seamless cloud logging and experiment tracking, try installing litlogger")
        logger.info("`Trainer.fit` stopped: `max_steps=20` reached.")
        logger.warning("the dataloader does not have many workers")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    assert stream.getvalue().splitlines() == ["the dataloader does not have many workers"]


def test_native_stderr_is_muted_only_inside_the_block(capfd: pytest.CaptureFixture[str]) -> None:
    from pipeline.quiet import native_stderr_muted

    os.write(2, b"before\n")
    with native_stderr_muted():
        os.write(2, b"core_worker.cc: constructor arguments in the object store\n")
    with native_stderr_muted(enabled=False):
        os.write(2, b"verbose\n")
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "before\nverbose\nafter\n"


def test_a_status_line_is_not_wrapped_off_a_terminal() -> None:
    from rich.console import Console

    from zerochess.commands.common import print_event

    buffer = io.StringIO()
    console = Console(file=buffer, width=80, force_terminal=False)
    line = "generation 1: 8 games (65 pos/s), loss 5.946 (policy 5.932, value 0.004), gate: rejected, " \
           "vs best +0 Elo, ladder SF0 0/2, below -191 [bold] not markup"  # fmt: skip
    print_event(console, line)
    assert buffer.getvalue() == line + "\n"


# ---------------------------------------------------------------- Elo bounds


def test_a_clamped_elo_reads_as_a_bound() -> None:
    from pipeline.evaluation.elo_text import elo_text

    assert elo_text(-280.4, 0.0, 4) == "0/4, below -280"
    assert elo_text(280.4, 1.0, 4) == "4/4, above +280"
    assert elo_text(35.2, 0.55, 20) == "+35"
    assert elo_text(35.2) == "+35"


def _history() -> list[dict]:
    return [
        {"generation": g, "gate": {"gate/promoted": 0.0, "gate/elo_vs_best": 0.0, "gate/score_vs_best": 0.5,
                                   "gate/games_vs_best": 4.0, "ladder/0/elo": elo, "ladder/0/score": score,
                                   "ladder/0/games": 4.0}}  # fmt: skip
        for g, elo, score in [(1, -280.4, 0.0), (2, -120.0, 0.25)]
    ]


def test_the_status_line_shows_the_ladders_bound() -> None:
    from pipeline.loop.text import status_line

    summary = {**_history()[0], "train": {"loss/total": 5.9}, "selfplay": {"games": 8}}
    line = status_line(summary)
    assert "ladder SF0 0/4, below -280" in line and "vs best +0 Elo" in line


def test_the_elo_plot_has_whole_generations_and_marks_bounds() -> None:
    import matplotlib.pyplot as plt

    from pipeline.loop_plots import elo_figure

    figure = elo_figure(_history())
    axis = figure.axes[0]
    low, high = axis.get_xlim()
    ticks = [t for t in axis.get_xticks() if low <= t <= high]
    assert ticks and all(float(t).is_integer() for t in ticks)
    markers = {(line.get_marker(), tuple(line.get_xdata())) for line in axis.get_lines()}
    assert ("v", (1,)) in markers  # generation 1 scored 0/4: a bound
    assert ("o", (2,)) in markers  # generation 2 scored 1/4: a measurement
    plt.close(figure)


# ---------------------------------------------------------------- MLflow


def test_the_mlflow_hint_uses_this_environments_mlflow_on_localhost() -> None:
    from pipeline.training.tracking import mlflow_ui_command

    command = mlflow_ui_command("sqlite:////tmp/run/mlflow.db")
    program = command.split()[0]
    assert Path(program).resolve() == (Path(sys.executable).parent / "mlflow").resolve()
    assert command.endswith("ui --backend-store-uri sqlite:////tmp/run/mlflow.db --host 127.0.0.1")


def test_a_failed_run_opens_on_its_runs_and_leaves_none_running(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """The experiment is tagged as model training (MLflow's UI opens it on its
    runs); a run that fails mid-generation ends its MLflow runs as FAILED."""
    from mlflow.tracking import MlflowClient

    import actors.loop as loop
    from pipeline.config import load_config

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)

    def broken_selfplay(*args: object, **kwargs: object) -> None:
        raise ValueError("self-play failed on purpose")

    monkeypatch.setattr(loop, "run_selfplay", broken_selfplay)
    config = load_config(None, TINY_NET)
    with pytest.raises(ValueError, match="on purpose"):
        loop.run_pipeline(config, tmp_path / "run")
    client = MlflowClient(f"sqlite:///{tmp_path / 'run' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name(config.train.experiment)
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    runs = client.search_runs([experiment.experiment_id])
    statuses = {run.info.run_name: run.info.status for run in runs}
    assert statuses["gen0001"] == "FAILED" and statuses["pipeline run"] == "FAILED", statuses
    assert "RUNNING" not in statuses.values()


def test_the_training_bar_counts_steps_not_epochs() -> None:
    from types import SimpleNamespace

    from pipeline.training.trainer import _StepProgressBar

    bar = _StepProgressBar()
    bar._trainer = SimpleNamespace(max_steps=20, max_epochs=-1)  # noqa: SLF001 - what Lightning sets on attach
    assert bar._get_train_description(0) == "training to step 20"  # noqa: SLF001 - not "Epoch 0/-2"


def test_the_uci_and_export_commands_name_the_champion_without_importing_torch() -> None:
    """The champion's names live in ``pipeline.champion`` once; the commands' ``--help`` loads no torch."""
    probe = ("import sys\nfrom zerochess.commands import export, uci\n"
             "assert 'torch' not in sys.modules, 'torch imported'\n"
             "from pipeline.champion import CHAMPION\nassert uci.CHAMPION is CHAMPION and export.CHAMPION is CHAMPION\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
