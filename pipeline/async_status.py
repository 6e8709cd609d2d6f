"""The live screen of the asynchronous loop (``run.mode: async``): the three
roles at once.

* **self-play pool** — actors alive (of the configured count), games and
  positions so far, games/s and positions/s over the last minute, the net
  version the pool plays with (promotions so far);
* **trainer** — its step, the replay window (positions, shards), the
  training samples per self-play position against the target
  (``run.train_samples_per_position``) and its state: ``training``,
  ``waiting for self-play`` (ratio control: it is ahead) or ``self-play
  ahead`` (self-play produces faster than it trains), the last losses and
  candidates exported;
* **gatekeeper** — the candidates being gated and the latest verdicts.

:class:`AsyncStatusBoard` is :class:`pipeline.status.StatusBoard` with this
screen (a redraw on a terminal, nothing off one).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from pipeline.loop.budget import time_left_text
from pipeline.status import LOSS_KEYS, LoopStatus, StatusBoard


@dataclass
class AsyncStatus(LoopStatus):
    """Everything the async screen shows."""

    out: str
    candidates_target: int
    pool_workers: int = 0
    pool_alive: int = 0
    games: int = 0
    positions: int = 0
    training_positions: int = 0
    net_version: int = 0
    trainer_state: str = "waiting for the first games"
    window_shards: int = 0
    samples_per_position: float = 0.0
    samples_per_position_target: float = 0.0
    candidates: int = 0
    gates_in_flight: list[str] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)


def render_async(status: AsyncStatus) -> Panel:
    """The status as one rich panel (pure: the same status, the same panel)."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan", justify="right")
    table.add_column()
    table.add_row(
        "self-play pool",
        f"{status.pool_alive}/{status.pool_workers} actors, net v{status.net_version}   "
        f"{status.games} games, {status.positions:,} positions   "
        f"{status.games_per_s:.2f} games/s, {status.positions_per_s:.0f} positions/s",
    )
    losses = ", ".join(f"{key.split('/')[1]} {status.losses[key]:.3f}" for key in LOSS_KEYS if key in status.losses)
    table.add_row(
        "trainer",
        f"step {status.step}   {status.trainer_state}   window {status.window_positions:,} positions "
        f"({status.window_shards} shards)   samples/position {status.samples_per_position:.2f} "
        f"(target {status.samples_per_position_target:g})",
    )
    target = status.candidates_target or "no limit"
    budget = time_left_text(status.deadline, status.budget_s)
    table.add_row("", f"losses: {losses or '-'}   candidates {status.candidates} / {target}"
                  + (f"   time: {budget}" if budget else ""))  # fmt: skip
    table.add_row("gatekeeper", f"gating: {', '.join(status.gates_in_flight) or '-'}")
    for verdict in status.verdicts[-3:]:
        table.add_row("", verdict)
    table.add_row("best net", status.best or "-")
    table.add_row("MLflow", status.mlflow or "-")
    recent = Text("\n".join(status.recent[-4:]), style="dim")
    total = time.monotonic() - status.started
    return Panel(Group(table, recent), title=f"zerochess run (async): {status.out}", subtitle=f"{total:.0f} s")


class AsyncStatusBoard(StatusBoard):
    """A :class:`StatusBoard` holding an :class:`AsyncStatus`."""

    def __init__(self, status: AsyncStatus, console: Console | None = None, live: bool | None = None) -> None:
        super().__init__(status, console, live=False)  # type: ignore[arg-type]
        show = self.console.is_terminal if live is None else live
        if show:
            self._live = Live(get_renderable=lambda: render_async(self.status), console=self.console,
                              refresh_per_second=2, transient=False)  # fmt: skip
