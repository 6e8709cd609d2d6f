"""The live one-screen status of ``zerochess run``.

:class:`RunStatus` is the state (generation, stage, games/s, positions in the
replay window, losses, last gate verdict, Elo against the Stockfish ladder,
the learning measure);
:class:`StatusBoard` updates it and, on a terminal, redraws it in place with
rich's ``Live``.  Off a terminal (CI, a pipe, ``make demo | tee``) nothing is
redrawn: the run's report lines are the log (``--verbose`` adds one line per stage).
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import lightning.pytorch as pl
from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from pipeline.evaluation.elo_text import elo_text
from pipeline.loop.budget import time_left_text

LOSS_KEYS = ("loss/total", "loss/policy", "loss/value", "loss/l2")


@dataclass(kw_only=True)
class LoopStatus:
    """What both loops' screens show (:class:`RunStatus` and
    :class:`pipeline.async_status.AsyncStatus` add their own)."""

    stage: str = "starting"
    games_per_s: float = 0.0
    positions_per_s: float = 0.0
    window_positions: int = 0
    step: int = 0
    losses: dict[str, float] = field(default_factory=dict)
    best: str = ""
    mlflow: str = ""
    recent: list[str] = field(default_factory=list)
    deadline: float | None = None  # monotonic end of run.hours (None: no time budget)
    budget_s: float = 0.0
    started: float = field(default_factory=time.monotonic)
    stage_started: float = field(default_factory=time.monotonic)


@dataclass
class RunStatus(LoopStatus):
    """Everything the status screen of the generation loop shows."""

    out: str
    generations: int
    generation: int = 0
    games_done: int = 0
    games_target: int = 0
    max_steps: int = 0
    gate_verdict: str = "-"
    elo_vs_best: float | None = None
    ladder_elo: dict[str, float] = field(default_factory=dict)
    ladder_scores: dict[str, tuple[float, int]] = field(default_factory=dict)
    learning: str = "-"
    inference: str = "-"


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def render(status: RunStatus) -> Panel:
    """The status as one rich panel (pure: the same status, the same panel)."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan", justify="right")
    table.add_column()
    elapsed = time.monotonic() - status.stage_started
    budget = time_left_text(status.deadline, status.budget_s)
    table.add_row("generation", f"{status.generation} / {status.generations or 'no limit'}   "
                  f"stage: {status.stage} ({elapsed:.0f} s)" + (f"   time: {budget}" if budget else ""))
    table.add_row(
        "self-play",
        f"{status.games_done} / {status.games_target} games, {status.games_per_s:.2f} games/s, "
        f"{status.positions_per_s:.0f} positions/s",
    )
    table.add_row("network", status.inference)
    table.add_row("replay window", f"{status.window_positions:,} positions")
    losses = ", ".join(f"{key.split('/')[1]} {status.losses[key]:.3f}" for key in LOSS_KEYS if key in status.losses)
    table.add_row("training", f"step {status.step} / {status.max_steps}   {losses or '-'}")
    table.add_row("last gate", f"{status.gate_verdict}   Elo vs best {_fmt(status.elo_vs_best, '+.0f')}")
    ladder = "   ".join(f"{level} {elo_text(elo, *status.ladder_scores.get(level, (None, None)))}"
                         for level, elo in status.ladder_elo.items())  # fmt: skip
    table.add_row("Stockfish ladder", ladder or "-")
    table.add_row("learning", status.learning)
    table.add_row("best net", status.best or "-")
    table.add_row("MLflow", status.mlflow or "-")
    recent = Text("\n".join(status.recent[-4:]), style="dim")
    total = time.monotonic() - status.started
    return Panel(Group(table, recent), title=f"zerochess run: {status.out}", subtitle=f"{total:.0f} s")


class StatusBoard:
    """Holds a :class:`RunStatus`; on a terminal, shows it live.

    Use as a context manager; :meth:`update` changes fields and redraws
    (rich redraws at most ``refresh_per_second`` times a second)."""

    def __init__(self, status: RunStatus, console: Console | None = None, live: bool | None = None) -> None:
        self.status = status
        self.console = console or Console(stderr=True)
        show = self.console.is_terminal if live is None else live
        # What is printed meanwhile goes above the screen, but stdout only when it is this
        # terminal too: redirected (make demo > log), the report lines stay in the file.
        self._live = (
            Live(get_renderable=lambda: render(self.status), console=self.console, refresh_per_second=2,
                 transient=False, redirect_stdout=sys.stdout.isatty())  # fmt: skip
            if show
            else None
        )

    def __enter__(self) -> StatusBoard:
        if self._live is not None:
            self._saved_handlers = _log_through(self.console)
            self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.refresh()
            self._live.stop()
            root = logging.getLogger()
            root.handlers[:] = self._saved_handlers

    @property
    def live(self) -> bool:
        return self._live is not None

    def update(self, **changes: Any) -> None:
        if "stage" in changes and changes["stage"] != self.status.stage:
            self.status.stage_started = time.monotonic()
        for key, value in changes.items():
            if not hasattr(self.status, key):
                raise AttributeError(f"RunStatus has no field {key!r}")
            setattr(self.status, key, value)

    def note(self, line: str) -> None:
        """Add a line to the recent-events list (and print it off a terminal)."""
        self.status.recent = [*self.status.recent[-19:], line]


def _log_through(console: Console) -> list[logging.Handler]:
    """Send log records through ``console`` so they print above the live screen
    instead of tearing it; Lightning's start-up chatter is kept to warnings.
    Returns the root logger's previous handlers."""
    from rich.logging import RichHandler

    root = logging.getLogger()
    saved = list(root.handlers)
    root.handlers[:] = [RichHandler(console=console, show_path=False, rich_tracebacks=False)]
    for name in ("lightning.pytorch", "lightning.fabric", "mlflow"):
        logging.getLogger(name).setLevel(logging.WARNING)
    return saved


class TrainingStatus(pl.Callback):
    """Lightning callback that copies the step and the losses onto a board."""

    def __init__(self, board: StatusBoard, every: int = 5) -> None:
        self.board = board
        self.every = max(1, every)

    def on_train_batch_end(self, trainer: pl.Trainer, *args: Any, **kwargs: Any) -> None:
        if trainer.global_step % self.every:
            return
        metrics = {key: float(value) for key, value in trainer.callback_metrics.items() if key in LOSS_KEYS}
        self.board.update(step=int(trainer.global_step), losses={**self.board.status.losses, **metrics})
