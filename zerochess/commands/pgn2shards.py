"""``zerochess pgn2shards``: PGN games into train/held-out Parquet shards.

Streams any number of PGN files (plain, ``.gz``, ``.bz2``, ``.zst``) in
bounded memory; several files are converted in parallel on Ray. See
:mod:`pipeline.supervised.convert` for the rows and the split and
:mod:`pipeline.supervised.pgn` for which games are dropped or filtered.
Exit status: 0; 1 when no game was accepted (a line says how many were read,
dropped and filtered); 2 on bad input (a missing, binary or corrupt file,
said in one line before anything is written).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

from zerochess.commands.checks import UsageError, check_output_folder, require_at_least
from zerochess.commands.common import add_params_arguments, add_ray_argument, config_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_params_arguments(parser)
    parser.add_argument("--pgn", action="append", required=True, metavar="FILE_OR_DIR",
                        help="a PGN file or a folder searched for *.pgn[.gz|.bz2|.zst] (repeatable)")
    parser.add_argument("--out", default="runs/pgn",
                        help="output folder: OUT/train, OUT/heldout, OUT/dropped, "
                             "OUT/pgn2shards.json (default runs/pgn)")
    parser.add_argument("--min-elo", type=int,
                        help="keep games whose ratings present are all >= N (supervised.min_elo)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the shards of an earlier run in OUT")
    parser.add_argument("--workers", type=int,
                        help="files converted at once on Ray (supervised.workers)")
    parser.add_argument("--no-ray", action="store_true",
                        help="convert the files one after the other in this process")
    add_ray_argument(parser, "Ray cluster to join (default: start a local one)")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import Progress, TextColumn, TimeElapsedColumn

    from pipeline.supervised.convert import convert_files, write_manifest
    from pipeline.supervised.pgn import check_pgn_start
    from pipeline.supervised.splits import find_pgn_files, prepare_output

    config = config_from_args(args)
    require_at_least("--workers", args.workers)
    require_at_least("--min-elo", args.min_elo, 0)
    settings = config.supervised
    if args.min_elo is not None:
        settings = replace(settings, min_elo=args.min_elo)
    if args.workers is not None:
        settings = replace(settings, workers=args.workers)
    encoding = config.net.policy_encoding
    files = find_pgn_files(args.pgn)
    # missing, empty or corrupt at the start: an error before any output
    binary = [path for path in files if check_pgn_start(path)]
    check_output_folder("--out", args.out)
    created = not Path(args.out).exists()
    prepare_output(args.out, overwrite=args.overwrite)
    use_ray = len(files) > 1 and settings.workers > 1 and not args.no_ray
    console = Console(stderr=True)
    started = time.perf_counter()
    with Progress(TextColumn("pgn2shards"), TextColumn("{task.fields[status]}"),
                  TimeElapsedColumn(), console=console) as progress:  # fmt: skip
        bar = progress.add_task("games", total=None, status="")
        totals = {"games": 0}
        done_files: set[str] = set()

        def on_progress(event) -> None:
            totals["games"] += event.delta
            if event.done:
                done_files.add(event.tag)
            rate = totals["games"] / max(time.perf_counter() - started, 1e-9)
            progress.update(bar, status=f"{totals['games']} games  {rate:.0f} games/s  "
                                        f"files {len(done_files)}/{len(files)}")

        if use_ray:
            from actors.runtime import init_ray
            from actors.supervised import convert_files_on_ray

            init_ray(args.ray_address)
            report = convert_files_on_ray(files, args.out, settings, encoding, on_progress)
        else:
            report = convert_files(files, args.out, settings, encoding, on_progress)
    totals = report.totals()
    if totals["accepted"] == 0:
        errors = [f.error for f in report.files if f.error]
        errors += [f"PGN {path}: binary data (a NUL byte in its first bytes), not PGN text" for path in binary]
        if errors:
            if created:  # nothing useful was written: leave no folder behind
                shutil.rmtree(args.out, ignore_errors=True)
            raise UsageError(errors[0] + (f" (and {len(errors) - 1} more file(s))" if len(errors) > 1 else ""))
    manifest = write_manifest(args.out, report, settings, encoding)
    print(json.dumps({"out": args.out, "manifest": str(manifest), **totals}, indent=2))
    if totals["accepted"] == 0:
        print(f"zerochess pgn2shards: error: no game accepted from {len(files)} file(s) "
              f"({totals['games']} read; dropped {totals.get('dropped', {})}, filtered {totals.get('filtered', {})})",
              file=sys.stderr)  # fmt: skip
        return 1
    return 0
