"""What a newcomer meets first (issue 51, item 8): an uncreatable ``--out``
refused before any work, a run folder or its ``best.txt`` accepted where a
network is asked for, ``uci``/``play`` with the champion quiet on stderr, one
torch thread by default for the interactive commands, and MLflow steps that
let the generations' runs draw one curve."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import pytest
import torch

from models.net import AlphaZeroNet, NetConfig
from pipeline.atomic import unwritable_reason
from pipeline.checkpoint import CheckpointError, follow_best_pointer, load_net, save_net
from pipeline.config import load_config
from pipeline.loop.ledger import write_best
from pipeline.loop.tracker import Tracker
from pipeline.training.tracking import ResumableMLFlowLogger
from pipeline.uci.loading import load_player
from tests.helpers import ROOT
from tests.helpers.cli import child_env, run_zerochess, set_args
from tests.helpers.nets import TINY_NET
from zerochess.cli import build_parser, main
from zerochess.commands.uci import DEFAULT_THREADS

TINY = [*TINY_NET, "selfplay.device=cpu"]


@pytest.fixture
def run_folder(tmp_path: Path) -> Path:
    """A run folder as ``zerochess run`` leaves it: a net and ``best.txt`` naming it."""
    torch.manual_seed(0)
    net = save_net(AlphaZeroNet(NetConfig(blocks=1, filters=8)), tmp_path / "run" / "gen0001" / "net.pt")
    write_best(tmp_path / "run", str(net))
    return tmp_path / "run"


# ---------------------------------------------------------------- --out


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs Linux's /proc")
def test_an_uncreatable_folder_is_named_even_for_root() -> None:
    """``/proc`` passes a permission check for root; the probe folder finds out."""
    reason = unwritable_reason("/proc/zc")
    assert reason is not None and reason.startswith("/proc is not writable")


def test_a_writable_folder_passes_and_keeps_no_probe(tmp_path: Path) -> None:
    assert unwritable_reason(tmp_path / "a" / "b") is None
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "file").write_text("x")
    assert unwritable_reason(tmp_path / "file" / "out") == f"{tmp_path / 'file'} is not a folder"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs Linux's /proc")
def test_run_refuses_proc_before_ray_starts(capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    assert main(["run", "--preset", "tiny", "--params", "none", "--out", "/proc/zc"]) == 2
    assert time.monotonic() - started < 10
    err = capsys.readouterr().err
    assert "--out /proc/zc: /proc is not writable" in err
    assert "ray" not in sys.modules or not __import__("ray").is_initialized()


# ---------------------------------------------------------------- best.txt


def test_a_run_folder_and_its_best_txt_name_the_best_net(run_folder: Path) -> None:
    net = run_folder / "gen0001" / "net.pt"
    assert Path(follow_best_pointer(run_folder)) == net
    assert Path(follow_best_pointer(run_folder / "best.txt")) == net
    assert follow_best_pointer(net) == net
    assert load_net(run_folder / "best.txt").config.filters == 8
    assert load_net(run_folder).config.blocks == 1


def test_an_empty_pointer_is_named(tmp_path: Path) -> None:
    (tmp_path / "best.txt").write_text("\n")
    with pytest.raises(CheckpointError, match=f"{tmp_path / 'best.txt'}: the best-network pointer is empty"):
        load_net(tmp_path / "best.txt")


def test_rate_help_suggests_what_the_demo_writes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["rate", "--help"])
    text = capsys.readouterr().out
    assert "best.pt" not in text
    assert "best.txt" in text and "runs/demo" in text


# ---------------------------------------------------------------- champion, quietly


@pytest.fixture
def champion_run(run_folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``run_folder`` with an MLflow store whose registry holds a champion."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    config = load_config(None, TINY)
    tracker = Tracker(config, run_folder)
    run_id = tracker.generation_run(1, None)
    tracker.register(run_id, str(run_folder / "gen0001" / "net.pt"))
    tracker.finish(run_id)
    tracker.finish(tracker.parent_id)
    return run_folder


@pytest.mark.slow
def test_uci_with_the_champion_writes_nothing_to_stderr(champion_run: Path) -> None:
    env = child_env(MLFLOW_TRACKING_URI="")
    env.pop("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", None)
    done = run_zerochess("uci", "--checkpoint", "champion", "--run", str(champion_run), *set_args(TINY), env=env,
                         stdin="uci\nisready\nquit\n", timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "readyok" in done.stdout
    assert done.stderr == ""


def test_quiet_libraries_turns_off_mlflows_download_bar_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.quiet import quiet_libraries

    monkeypatch.delenv("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", raising=False)
    quiet_libraries()
    assert os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] == "false"
    monkeypatch.setenv("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "true")
    quiet_libraries()
    assert os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] == "true"


# ---------------------------------------------------------------- threads


def test_play_and_uci_use_one_thread_unless_asked(run_folder: Path) -> None:
    assert DEFAULT_THREADS == 1
    args = build_parser(only="play").parse_args(["play"])
    assert args.threads == DEFAULT_THREADS
    before = torch.get_num_threads()
    try:
        loaded = load_player(load_config(None, TINY), checkpoint=str(run_folder), threads=DEFAULT_THREADS)
        assert loaded.threads == 1 and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_zero_threads_is_refused_before_loading(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["play", "--threads", "0", "--params", "none"]) == 2
    assert "--threads must be >= 1, got 0" in capsys.readouterr().err


# ---------------------------------------------------------------- MLflow steps


def test_a_training_runs_steps_continue_the_generations_before(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    logger = ResumableMLFlowLogger(experiment_name="steps", tracking_uri=uri, step_offset=200)
    logger.log_metrics({"loss/total": 1.5}, step=4)
    logger.log_metrics({"loss/total": 1.2}, step=9)
    history = mlflow.MlflowClient(uri).get_metric_history(logger.run_id, "loss/total")
    assert [m.step for m in history] == [204, 209]


def test_a_closed_pipe_ends_a_command_quietly() -> None:
    """``zerochess params | head``: the reader leaves early; no error line."""
    code = ("import sys\nimport zerochess.commands.params as command\nfrom zerochess.cli import main\n"
            "def run(args):\n    raise BrokenPipeError(32, 'Broken pipe')\n"
            "command.run = run\nsys.exit(main(['params']))\n")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 141 and done.stderr == "", done.stderr


def test_the_recipe_is_read_from_any_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ``--params`` a command reads ``params.yaml`` of the working
    folder, else the project's own (the checkout's here, a wheel's copy there)."""
    from pipeline.resources import recipe_params
    from zerochess.commands.common import params_file

    monkeypatch.chdir(tmp_path)
    assert recipe_params() == ROOT / "params.yaml"
    assert params_file(None) == str(ROOT / "params.yaml") and params_file("none") is None
    (tmp_path / "params.yaml").write_text("net:\n  blocks: 3\n")
    assert params_file(None) == "params.yaml"
