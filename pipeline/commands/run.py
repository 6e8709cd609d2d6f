"""``zerochess run``: the whole loop, generation after generation of
self-play -> training -> gating (resumable; see ``actors/loop.py``)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from pipeline.commands.checks import check_output_folder, load_book
from pipeline.commands.common import (
    add_params_arguments,
    add_ray_argument,
    config_from_args,
    print_event,
)

if TYPE_CHECKING:
    from pipeline.config import Config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_params_arguments(parser)
    parser.add_argument("--out", default="runs/pipeline",
                        help="run folder (rerun the same command to resume; default: runs/pipeline)")
    parser.add_argument("--init-checkpoint", help="start generation 0 from this net (e.g. zerochess pretrain's)")
    add_ray_argument(parser)
    parser.add_argument("--no-live", action="store_true",
                        help="one line per stage instead of the live status screen (the default off a terminal)")


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    check_output_folder("--out", args.out)
    if args.init_checkpoint:
        check_init_net(config, args.init_checkpoint)
    load_book(config.gating.book)  # the gate's inputs fail now, not after a generation of work
    if config.gating.ladder:
        from pipeline.players.stockfish import find_stockfish

        find_stockfish(config.gating.stockfish_path)
    return _run(args, config)


def check_init_net(config: Config, path: str) -> None:
    """``--init-checkpoint`` must load into ``config.net``'s architecture
    (checked before Ray starts and before MLflow records a run)."""
    import torch

    from models.net import AlphaZeroNet
    from pipeline.checkpoint import load_net, load_weights

    load_net(path, device="cpu")  # the file itself: readable, its weights fit its own config
    torch.manual_seed(0)
    load_weights(AlphaZeroNet(config.net), path)


def _run(args: argparse.Namespace, config: Config) -> int:
    if config.run.mode == "async":  # the three roles at once: actors/async_loop.py
        from pipeline.commands.run_async import run_async_command

        return run_async_command(args, config)
    from rich.console import Console

    from actors.loop import run_pipeline
    from actors.runtime import init_ray
    from pipeline.loop.text import vs_best_text
    from pipeline.status import RunStatus, StatusBoard
    from pipeline.training.tracking import mlflow_ui_command

    console = Console(stderr=True)
    init_ray(args.ray_address)
    board = StatusBoard(RunStatus(str(args.out), config.run.generations), console=console,
                        live=False if args.no_live else None)  # fmt: skip

    def on_event(text: str) -> None:
        if not board.live:  # the live screen lists recent events itself
            print_event(console, text)

    with board:
        result = run_pipeline(config, args.out, init_net=args.init_checkpoint, on_event=on_event, board=board)
    from pipeline.evaluation.measure import measure_text

    if result.get("measure_gen0"):
        print(f"generation 0 (random net): {measure_text(result['measure_gen0'])}")
    for entry in result["generations"]:
        gate = entry["gate"]
        vs_best = vs_best_text(gate) if "gate/elo_vs_best" in gate else "-"
        print(f"generation {entry['generation']}: loss/total {entry['train'].get('loss/total', float('nan')):.3f}, "
              f"{'promoted' if gate['gate/promoted'] else 'rejected'}, Elo vs best {vs_best}"
              + (f", {measure_text(entry['measure'])}" if entry.get("measure") else ""))  # fmt: skip
    _print_last_game(args.out, result)
    print(json.dumps({"best": result["best"], "mlflow": result["mlflow"], "parent_run": result["parent_run"]}))
    print(f"compare runs: {mlflow_ui_command(result['mlflow'])}  (then open http://127.0.0.1:5000)")
    return 0


def _print_last_game(out: str, result: dict) -> None:
    """The first gating game of the last generation, as PGN."""
    import io
    from pathlib import Path

    import chess.pgn

    if not result["generations"]:
        return
    last = result["generations"][-1]["generation"]
    for name in ("vs_best.pgn", "ladder_0.pgn"):
        path = Path(out) / f"gen{last:04d}" / "gate" / name
        if path.exists():
            game = chess.pgn.read_game(io.StringIO(path.read_text()))
            if game is not None:
                print(f"\nA gating game of generation {last} ({name}):\n{game}\n")
                return
