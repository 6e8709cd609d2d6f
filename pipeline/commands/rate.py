"""``zerochess rate CHECKPOINT``: the network's rating on Stockfish's UCI_Elo scale.

The net (at a fixed number of simulations) plays Stockfish levels chosen by
a bisection over a ladder, colour-swapped pairs from the opening book, and
one maximum-likelihood rating with a 95% interval is fitted to every game
(:mod:`pipeline.evaluation.rating`).  The ladder is Stockfish's ``UCI_Elo``
settings (1350-2850 in Stockfish 15.1) and, below them, Stockfish playing a
share of random moves, measured against ``UCI_Elo`` 1350 once per Stockfish
version and cached.  Prints one line per level played and last
``rating: R [LO, HI] on Stockfish's UCI_Elo scale (N games, levels ...)``;
writes ``OUT/rating.json`` and ``OUT/games.pgn`` and logs an MLflow run.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.commands.checks import UsageError, check_output_folder, load_book, require_at_least
from pipeline.commands.common import add_params_arguments, config_from_args

if TYPE_CHECKING:
    from pipeline.config import Config
    from pipeline.evaluation.rating import RateReport, RateRequest


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("checkpoint", help="the network to rate (a zerochess checkpoint, e.g. runs/demo/best.pt)")
    add_params_arguments(parser)
    parser.add_argument("--games", type=int, default=20,
                        help="games against each level visited (colour-swapped pairs: an odd count is rounded up)")  # fmt: skip
    parser.add_argument("--simulations", type=int, help="the net's search simulations a move (default gating.simulations)")
    parser.add_argument("--max-levels", type=int, default=6,
                        help="levels played at most (the bisection closes after at most log2(ladder size + 1))")  # fmt: skip
    parser.add_argument("--stockfish", metavar="PATH",
                        help="Stockfish binary (default gating.stockfish_path, else stockfish on PATH or /usr/games/stockfish)")  # fmt: skip
    parser.add_argument("--openings", help="EPD book the games start from (default gating.openings)")
    parser.add_argument("--cache", metavar="FILE",
                        help="levels cache (default $ZEROCHESS_CACHE_DIR/stockfish_levels.json, else "
                             "~/.cache/zerochess/stockfish_levels.json)")  # fmt: skip
    parser.add_argument("--remeasure", action="store_true", help="measure the levels below UCI_Elo's minimum again")
    parser.add_argument("--level-games", type=int, default=100,
                        help="games of each link of the chain of levels below UCI_Elo's minimum (when measured)")  # fmt: skip
    parser.add_argument("--elo-nodes", type=int, default=50_000,
                        help="Stockfish nodes a move of the UCI_Elo levels (Stockfish calibrated them at 60 s + 0.6 s)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="seed of the weak levels' random moves")
    parser.add_argument("--out", default="runs/rate", help="folder for rating.json, games.pgn and mlflow.db")
    parser.add_argument("--tracking-uri", help="MLflow store (default: $MLFLOW_TRACKING_URI, else OUT/mlflow.db)")
    parser.add_argument("--no-mlflow", action="store_true", help="do not log the rating to MLflow")


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    request = check_rate_inputs(args, config)
    report = _rate(request)
    return _finish(args, config, report)


def check_rate_inputs(args: argparse.Namespace, config: Config) -> RateRequest:
    """Every value checked before an engine starts or a file is written; each
    error names the option or file."""
    from pipeline.checkpoint import load_net
    from pipeline.evaluation.gating import match_settings
    from pipeline.evaluation.rating import RateRequest
    from pipeline.evaluation.rating_levels import LevelPlan, default_cache_path
    from pipeline.players.stockfish import find_stockfish

    for option, value in (("--games", args.games), ("--simulations", args.simulations),
                          ("--max-levels", args.max_levels), ("--level-games", args.level_games),
                          ("--elo-nodes", args.elo_nodes)):  # fmt: skip
        require_at_least(option, value)
    load_net(args.checkpoint, device="cpu")  # missing, a folder, corrupt, another architecture: names the file
    stockfish = _stockfish(args.stockfish or config.gating.stockfish_path, "--stockfish" if args.stockfish else "")
    find_stockfish(stockfish)
    openings = load_book(args.openings or config.gating.book, "--openings" if args.openings else "gating.openings")
    check_output_folder("--out", args.out)
    cache = Path(args.cache) if args.cache else default_cache_path()
    if cache.is_dir():
        raise UsageError(f"--cache {cache}: is a folder, not a file")
    check_output_folder("--cache", cache.parent)
    context = replace(match_settings(config).context, stockfish_path=stockfish)
    plan = LevelPlan(elo_nodes=args.elo_nodes, games_per_link=args.level_games, max_plies=config.gating.max_plies)
    return RateRequest(checkpoint=args.checkpoint, simulations=args.simulations or config.gating.simulations,
                       games=args.games, max_levels=args.max_levels, openings=openings, context=context,
                       max_plies=config.gating.max_plies, plan=plan, cache=cache, remeasure=args.remeasure,
                       seed=args.seed, book=args.openings or config.gating.book)  # fmt: skip


def _stockfish(path: str, option: str) -> str:
    """The configured binary (resolved on PATH); an explicit ``--stockfish``
    that is not an executable file is an error naming the option."""
    import shutil

    if path and option:
        found = shutil.which(path) or path
        if not (os.path.isfile(found) and os.access(found, os.X_OK)):
            raise UsageError(f"{option} {path}: not an executable file (no Stockfish found there)")
        return found
    return path


def _rate(request: RateRequest) -> RateReport:
    from pipeline.evaluation.rating import rate_checkpoint

    def event(text: str) -> None:
        print(text, flush=True)

    event(f"rating {request.player} ({request.games} games a level, levels cache {request.cache})")
    return rate_checkpoint(request, on_event=event)


def _finish(args: argparse.Namespace, config: Config, report: RateReport) -> int:
    from pipeline.atomic import atomic_write

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with atomic_write(out / "rating.json") as handle:
        handle.write((json.dumps(report.as_dict(), indent=2) + "\n").encode("utf-8"))
    with atomic_write(out / "games.pgn") as handle:
        handle.write(report.pgn().encode("utf-8"))
    caveat = report.rating.caveat()
    if caveat:
        print(f"note: {caveat}", flush=True)
    if not args.no_mlflow:
        uri, run_id = log_rating(args, config, report, out)
        print(f"mlflow: run {run_id} in {uri}", flush=True)
    print(report.rating.line(), flush=True)
    return 0


def log_rating(args: argparse.Namespace, config: Config, report: RateReport, out: Path) -> tuple[str, str]:
    """One MLflow run in the experiment ``train.experiment``: the rating as
    metrics ``rating/elo``, ``rating/elo_low``, ``rating/elo_high``, the
    levels and settings as params, rating.json and games.pgn as artifacts."""
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    from pipeline.config import flatten
    from pipeline.training.tracking import (
        EXPERIMENT_KIND_TAG,
        TRAINING_KIND,
        mark_training_experiment,
        resolve_tracking_uri,
    )

    uri, artifacts = resolve_tracking_uri(out, args.tracking_uri)
    client = MlflowClient(uri)
    name = config.train.experiment
    experiment = client.get_experiment_by_name(name)
    experiment_id = (experiment.experiment_id if experiment is not None else client.create_experiment(
        name, artifact_location=artifacts, tags={EXPERIMENT_KIND_TAG: TRAINING_KIND}))  # fmt: skip
    mark_training_experiment(client, experiment_id)
    run = client.create_run(experiment_id, run_name=f"rate {Path(args.checkpoint).name}",
                            tags={"zerochess.command": "rate"})  # fmt: skip
    run_id = run.info.run_id
    try:
        now = int(time.time() * 1000)
        fit = report.rating.fit
        metrics = {"rating/elo": fit.rating, "rating/elo_low": fit.low, "rating/elo_high": fit.high,
                   "rating/games": fit.games, "rating/score": fit.score}  # fmt: skip
        params = {**rating_params(report), **{k: v for k, v in flatten(config).items() if k.startswith("search.")}}
        client.log_batch(run_id, metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items()],
                         params=[Param(k, str(v)[:6000]) for k, v in params.items()])  # fmt: skip
        for artifact in ("rating.json", "games.pgn"):
            client.log_artifact(run_id, str(out / artifact))
    except BaseException:
        client.set_terminated(run_id, "FAILED")
        raise
    client.set_terminated(run_id, "FINISHED")
    return uri, run_id


def rating_params(report: RateReport) -> dict[str, object]:
    """The rating's settings and levels as MLflow params (``rate.*``)."""
    request, ladder = report.request, report.ladder
    return {
        "rate.checkpoint": request.checkpoint,
        "rate.simulations": request.simulations,
        "rate.games_per_level": 2 * request.pairs,
        "rate.max_levels": request.max_levels,
        "rate.levels": ", ".join(result.level.name for result in report.rating.results),
        "rate.stockfish": ladder.engine.name,
        "rate.anchor": ladder.anchor,
        "rate.elo_nodes": request.plan.elo_nodes,
        "rate.level_games": request.plan.games_per_link,
        "rate.chain": ", ".join(f"{level.name}={level.rating:.0f}" for level in ladder.chain),
        "rate.openings": request.book,
        "rate.max_plies": request.max_plies,
        "rate.seed": request.seed,
    }
