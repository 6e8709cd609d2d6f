"""Draw adjudication (``selfplay.draw_adjudication_*``): self-play time saved.

Plays the same games (same seed, same net) with draw adjudication off and
with each setting given, on the native backend with a preset's network and
self-play settings (a randomly initialised net, seeded), and
prints per setting: mean game length, positions, wall seconds, positions
per second, the terminations, and the draw play-through games that would
have been adjudicated and were decided (false draws).  Its root |q|
quantiles show where a threshold would bite.

    .venv/bin/python bench/draw_adjudication.py [--preset cpu] [--games 16] \
        [--setting 40:10:0.05] [--setting 60:20:0.02] [--playthrough 0.0]

A setting is ``plies:window:q``.
"""

from __future__ import annotations

import argparse
import collections
import time
from dataclasses import replace

import numpy as np
import torch

from models.net import AlphaZeroNet
from models.net_evaluator import NetEvaluator
from pipeline.config import Config, load_config
from pipeline.selfplay import SelfPlayWorker


def parse_setting(text: str) -> tuple[int, int, float]:
    plies, window, q = text.split(":")
    return int(plies), int(window), float(q)


def play(config: Config, evaluator: NetEvaluator, games: int, seed: int) -> dict[str, object]:
    worker = SelfPlayWorker(evaluator, config.search, config.selfplay)
    started = time.perf_counter()
    records = worker.play(games, seed=seed)
    seconds = time.perf_counter() - started
    root_q = np.abs(np.concatenate([record.native.root_q for record in records]))  # type: ignore[attr-defined]
    stats = worker.stats
    return {
        "mean_plies": stats.positions / max(stats.games, 1),
        "positions": stats.positions,
        "seconds": seconds,
        "positions_per_s": stats.positions / seconds,
        "terminations": dict(collections.Counter(record.termination for record in records)),
        "false_draws": f"{stats.false_draws}/{sum(r.would_draw is not None for r in records)}",
        "abs_q_quantiles": np.round(np.quantile(root_q, [0.1, 0.5, 0.9]), 3).tolist(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--games", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--setting", action="append", default=[], help="plies:window:q (repeatable)")
    parser.add_argument("--playthrough", type=float, default=0.0, help="draw_adjudication_playthrough")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    config = load_config(preset=args.preset)
    config = replace(config, selfplay=replace(config.selfplay, games_per_task=args.games, device="cpu"))
    torch.manual_seed(config.selfplay.seed)
    net = AlphaZeroNet(config.net)
    evaluator = NetEvaluator(net.eval(), precision="auto", compile="auto")
    settings = [(0, config.selfplay.draw_adjudication_window, config.selfplay.draw_adjudication_q)]
    settings += [parse_setting(text) for text in args.setting or ["40:10:0.05"]]
    for plies, window, q in settings:
        selfplay = replace(config.selfplay, draw_adjudication_plies=plies, draw_adjudication_window=window,
                           draw_adjudication_q=q, draw_adjudication_playthrough=args.playthrough)  # fmt: skip
        result = play(replace(config, selfplay=selfplay), evaluator, args.games, args.seed)
        name = "off" if plies == 0 else f"{plies}:{window}:{q:g}"
        print(name, " ".join(f"{key}={value}" for key, value in result.items()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
