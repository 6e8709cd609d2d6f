"""The live status screen of ``zerochess run`` (pipeline/status.py)."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest
import torch
from rich.console import Console

from pipeline.status import RunStatus, StatusBoard, TrainingStatus, render


def _text(status: RunStatus) -> str:
    console = Console(file=io.StringIO(), width=120, color_system=None)
    console.print(render(status))
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_render_shows_every_figure_the_issue_names() -> None:
    status = RunStatus("runs/x", generations=5, generation=3, stage="gating", games_done=12, games_target=32,
                       games_per_s=1.5, window_positions=4096, step=40, max_steps=150,
                       losses={"loss/total": 3.25, "loss/policy": 2.5, "loss/value": 0.75},
                       gate_verdict="generation 2: PROMOTED (SPRT accepted H1)", elo_vs_best=85.0,
                       ladder_elo={"stockfish:skill=0:depth=1": -420.0}, mlflow="sqlite:///m.db")  # fmt: skip
    text = _text(status)
    for expected in ("3 / 5", "gating", "12 / 32 games", "1.50 games/s", "4,096 positions", "step 40 / 150",
                     "total 3.250", "policy 2.500", "value 0.750", "PROMOTED", "+85", "-420", "sqlite:///m.db"):
        assert expected in text, expected


def test_board_updates_fields_and_rejects_unknown_ones() -> None:
    board = StatusBoard(RunStatus("out", 2), live=False)
    board.update(generation=1, stage="self-play")
    started = board.status.stage_started
    board.update(stage="training")
    assert board.status.stage == "training" and board.status.stage_started >= started
    with pytest.raises(AttributeError, match="gamez"):
        board.update(gamez=3)
    for index in range(30):
        board.note(f"line {index}")
    assert board.status.recent[-1] == "line 29" and len(board.status.recent) == 20
    assert not board.live


def test_live_board_draws_on_a_terminal_console() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=100)
    with StatusBoard(RunStatus("runs/live", 1), console=console) as board:
        assert board.live
        board.update(generation=1, stage="self-play", games_done=3, games_target=8)
    assert "3 / 8 games" in buffer.getvalue()


def test_training_callback_copies_losses_and_step() -> None:
    board = StatusBoard(RunStatus("out", 1), live=False)
    callback = TrainingStatus(board, every=5)
    trainer = SimpleNamespace(global_step=10, callback_metrics={"loss/total": torch.tensor(2.0),
                                                                "loss/value": torch.tensor(0.5), "lr": torch.tensor(0.1)})  # fmt: skip
    callback.on_train_batch_end(trainer, None, None, None, 0)  # type: ignore[arg-type]
    assert board.status.step == 10 and board.status.losses == {"loss/total": 2.0, "loss/value": 0.5}
    trainer.global_step = 11
    trainer.callback_metrics = {"loss/total": torch.tensor(1.0)}
    callback.on_train_batch_end(trainer, None, None, None, 0)  # type: ignore[arg-type]
    assert board.status.losses["loss/total"] == 2.0  # only every 5th step
