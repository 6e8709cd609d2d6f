"""``zerochess rate CHECKPOINT``: the network's rating on Stockfish's UCI_Elo scale.

The net (at a fixed number of simulations) plays Stockfish levels chosen by
a bisection over a ladder, colour-swapped pairs from the opening book, and
one maximum-likelihood rating with a 95% interval is fitted to every game
(:mod:`pipeline.evaluation.rating`).  After the bisection, more matches at the
level nearest the rating narrow the interval to ``--width`` (±75 Elo by
default) or until ``--max-games``.  ``--simulations 32,800`` rates the net at
each search size in turn (``OUT/simsN/``); ``--compare A B`` rates A, then B
on the same levels with the same games, and prints their difference with its
own interval (``OUT/a/``, ``OUT/b/``, ``OUT/compare.json``).  The ladder is Stockfish's ``UCI_Elo``
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

from zerochess.commands.checks import UsageError, check_output_folder, require_at_least
from zerochess.commands.common import add_params_arguments, config_from_args

if TYPE_CHECKING:
    from pipeline.config import Config
    from pipeline.evaluation.rating import RateReport, RateRequest


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("checkpoint", nargs="?",
                        help="the network to rate: a checkpoint file, or a run folder or its best.txt for the run's best net (e.g. runs/demo)")  # fmt: skip
    parser.add_argument("--compare", nargs="+", metavar="NET",
                        help="two networks A B instead of CHECKPOINT: both rated on the same levels, and A - B "
                             "with its own interval")  # fmt: skip
    add_params_arguments(parser)
    parser.add_argument("--games", type=int, default=20,
                        help="games of each match against a level (colour-swapped pairs: an odd count is rounded up)")  # fmt: skip
    parser.add_argument("--simulations", metavar="N[,N...]",
                        help="the net's search simulations a move; several (32,800) rate at each in turn "
                             "(default gating.simulations)")  # fmt: skip
    parser.add_argument("--max-levels", type=int, default=6,
                        help="levels the bisection plays at most (it closes after at most log2(ladder size + 1))")  # fmt: skip
    parser.add_argument("--width", type=float, default=75.0,
                        help="after the bisection, matches at the level nearest the rating until its 95%% interval "
                             "is within +- this many Elo (0: the bisection alone)")  # fmt: skip
    parser.add_argument("--max-games", type=int, default=200,
                        help="games against the levels at most, with --width (the bisection's included)")  # fmt: skip
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
    nets = checked_nets(args)
    requests = check_rate_inputs(args, config, nets[0])
    for request in requests:
        out = Path(args.out) if len(requests) == 1 else Path(args.out) / f"sims{request.simulations}"
        if len(nets) == 2:
            _compare(args, config, request, nets[1], out)
        else:
            _finish(args, config, _rate(request), out)
    return 0


def checked_nets(args: argparse.Namespace) -> list[str]:
    """CHECKPOINT, or the two nets of ``--compare`` (same policy encoding); a
    run folder or its ``best.txt`` stands for the network it names."""
    from pipeline.checkpoint import follow_best_pointer

    if args.compare is None:
        if args.checkpoint is None:
            raise UsageError("a CHECKPOINT to rate, or --compare A B, is needed")
        return [str(follow_best_pointer(args.checkpoint))]
    if args.checkpoint is not None:
        raise UsageError(f"--compare rates its two nets: drop CHECKPOINT {args.checkpoint}")
    if len(args.compare) != 2:
        raise UsageError(f"--compare takes two nets A B, got {len(args.compare)}: {' '.join(args.compare)}")
    from pipeline.checkpoint import load_net

    nets = [str(follow_best_pointer(path)) for path in args.compare]
    first, second = (load_net(path, device="cpu") for path in nets)
    encodings = [net.config.policy_encoding for net in (first, second)]
    if encodings[0] != encodings[1]:
        raise UsageError(f"--compare: {args.compare[0]} uses the {encodings[0]} policy encoding, "
                         f"{args.compare[1]} the {encodings[1]} policy encoding: compare nets of one encoding")  # fmt: skip
    return nets


def parse_simulations(text: str | None, default: int) -> list[int]:
    """``--simulations``: one count or several, comma-separated, each >= 1."""
    if text is None:
        return [default]
    counts = []
    for item in text.split(","):
        try:
            counts.append(int(item))
        except ValueError:
            raise UsageError(f"--simulations must be whole numbers (32 or 32,800), got {text!r}") from None
        require_at_least("--simulations", counts[-1])
    return counts


def check_rate_inputs(args: argparse.Namespace, config: Config, checkpoint: str) -> list[RateRequest]:
    """Every value checked before an engine starts or a file is written; each
    error names the option or file.  One request per ``--simulations`` count."""
    from pipeline.checkpoint import load_net
    from pipeline.evaluation.gating import match_settings
    from pipeline.evaluation.rating import RateRequest
    from pipeline.evaluation.rating_levels import LevelPlan, default_cache_path
    from pipeline.players.stockfish import find_stockfish

    for option, value in (("--games", args.games), ("--max-levels", args.max_levels),
                          ("--level-games", args.level_games), ("--elo-nodes", args.elo_nodes)):  # fmt: skip
        require_at_least(option, value)
    simulations = parse_simulations(args.simulations, config.gating.simulations)
    if not (args.width >= 0 and args.width != float("inf")):
        raise UsageError(f"--width must be a number of Elo >= 0, got {args.width!r}")
    if args.width > 0 and args.max_games < args.games:
        raise UsageError(f"--max-games must be at least --games ({args.games}) with --width, got {args.max_games}")
    load_net(checkpoint, device="cpu")  # missing, a folder, corrupt, another architecture: names the file
    stockfish = _stockfish(args.stockfish or config.gating.stockfish_path, "--stockfish" if args.stockfish else "")
    find_stockfish(stockfish)
    from pipeline.evaluation.match import load_book
    openings = load_book(args.openings or config.gating.book, "--openings" if args.openings else "gating.openings")
    check_output_folder("--out", args.out)
    cache = Path(args.cache) if args.cache else default_cache_path()
    if cache.is_dir():
        raise UsageError(f"--cache {cache}: is a folder, not a file")
    check_output_folder("--cache", cache.parent)
    context = replace(match_settings(config).context, stockfish_path=stockfish)
    plan = LevelPlan(elo_nodes=args.elo_nodes, games_per_link=args.level_games, max_plies=config.gating.max_plies)
    return [RateRequest(checkpoint=checkpoint, simulations=count, games=args.games, max_levels=args.max_levels,
                        openings=openings, context=context, max_plies=config.gating.max_plies, plan=plan,
                        cache=cache, remeasure=args.remeasure, seed=args.seed,
                        book=args.openings or config.gating.book, width=args.width,
                        max_games=args.max_games if args.width > 0 else 0)
            for count in simulations]  # fmt: skip


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


def _event(text: str) -> None:
    print(text, flush=True)


def _rate(request: RateRequest) -> RateReport:
    from pipeline.evaluation.rating import rate_checkpoint

    _event(f"rating {request.player} ({request.games} games a match, levels cache {request.cache})")
    return rate_checkpoint(request, on_event=_event)


def _compare(args: argparse.Namespace, config: Config, request: RateRequest, other: str, out: Path) -> None:
    """Both nets on the same levels; their reports in OUT/a and OUT/b, the difference in OUT/compare.json."""
    from pipeline.atomic import atomic_write
    from pipeline.evaluation.rating import rate_pair

    _event(f"rating {request.player} ({request.games} games a match, levels cache {request.cache})")
    first, second, difference = rate_pair(request, other, on_event=_event)
    _finish(args, config, first, out / "a")
    _finish(args, config, second, out / "b")
    games = second.rating.fit.games
    document = {"a": first.as_dict(), "b": second.as_dict(), "difference": difference.as_dict(),
                "simulations": request.simulations, "games_each": games}  # fmt: skip
    with atomic_write(out / "compare.json") as handle:
        handle.write((json.dumps(document, indent=2) + "\n").encode("utf-8"))
    print(difference.line("A", "B", games), flush=True)


def _finish(args: argparse.Namespace, config: Config, report: RateReport, out: Path) -> None:
    from pipeline.atomic import atomic_write

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
    run = client.create_run(experiment_id, run_name=f"rate {Path(report.request.checkpoint).name}",
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
        "rate.width": request.width,
        "rate.max_games": request.max_games,
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
