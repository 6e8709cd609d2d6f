"""``zerochess run`` with ``run.mode: async``: the self-play pool, the trainer
and the gatekeeper at the same time (``actors/async_loop.py``)."""

from __future__ import annotations

import argparse
import json

from zerochess.commands.common import print_event
from pipeline.config import Config


def run_async_command(args: argparse.Namespace, config: Config) -> int:
    """Run the asynchronous loop with the live three-role screen; print the verdicts."""
    from rich.console import Console

    from actors.async_loop import run_async
    from actors.runtime import init_ray
    from pipeline.async_status import AsyncStatus, AsyncStatusBoard
    from pipeline.training.tracking import mlflow_ui_hint

    console = Console(stderr=True)
    init_ray(args.ray_address, verbose=args.verbose)
    board = AsyncStatusBoard(AsyncStatus(str(args.out), config.run.generations), console=console,
                             live=False if args.no_live else None)  # fmt: skip

    def on_event(text: str) -> None:
        if not board.live:
            print_event(console, text)

    with board:
        result = run_async(config, args.out, init_net=args.init_checkpoint, on_event=on_event, board=board)
    for entry in result["candidates"]:
        print(f"candidate {entry['generation']}: {'promoted' if entry['promote'] else 'rejected'} "
              f"({entry.get('reason', '')})")  # fmt: skip
    busy = ", ".join(f"{role} {value:.0%}" for role, value in result["busy"].items() if role != "wall_s")
    print(f"{result['games']} games, {result['positions']} positions, trainer step {result['step']}, "
          f"best net v{result['version']}; busy: {busy}")  # fmt: skip
    print(json.dumps({"best": result["best"], "mlflow": result["mlflow"], "parent_run": result["parent_run"]}))
    print(mlflow_ui_hint(result["mlflow"], result["experiment_id"]))
    return 0
