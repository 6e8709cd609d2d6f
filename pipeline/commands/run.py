"""``zerochess run``: the whole loop, generation after generation of
self-play -> training -> gating (resumable; see ``actors/loop.py``)."""

from __future__ import annotations

import argparse
import json

from rich.console import Console

from pipeline.commands.common import add_params_arguments, config_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_params_arguments(parser)
    parser.add_argument("--out", default="runs/pipeline", help="run folder (rerun the same command to resume)")
    parser.add_argument("--init-checkpoint", help="start generation 0 from this net (e.g. zerochess pretrain's)")
    parser.add_argument("--ray-address", help="Ray cluster to join, e.g. auto (default: RAY_ADDRESS, else start a local one)")
    parser.add_argument("--no-live", action="store_true",
                        help="one line per stage instead of the live status screen (the default off a terminal)")


def run(args: argparse.Namespace) -> int:
    from actors.loop import run_pipeline
    from actors.selfplay import init_ray

    from pipeline.status import RunStatus, StatusBoard

    config = config_from_args(args)
    console = Console(stderr=True)
    init_ray(args.ray_address)
    board = StatusBoard(RunStatus(str(args.out), config.run.generations), console=console,
                        live=False if args.no_live else None)  # fmt: skip

    def on_event(text: str) -> None:
        if not board.live:  # the live screen lists recent events itself
            console.print(f"[bold]{text}")

    with board:
        result = run_pipeline(config, args.out, init_net=args.init_checkpoint, on_event=on_event, board=board)
    for entry in result["generations"]:
        gate = entry["gate"]
        print(f"generation {entry['generation']}: loss/total {entry['train'].get('loss/total', float('nan')):.3f}, "
              f"{'promoted' if gate['gate/promoted'] else 'rejected'}, "
              f"Elo vs best {gate.get('gate/elo_vs_best', float('nan')):+.0f}")  # fmt: skip
    _print_last_game(args.out, result)
    print(json.dumps({"best": result["best"], "mlflow": result["mlflow"], "parent_run": result["parent_run"]}))
    print(f"compare runs: mlflow ui --backend-store-uri {result['mlflow']}  (then open http://127.0.0.1:5000)")
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
