"""``zerochess stage``: the steps of the DVC pipeline (``dvc.yaml``) that the
other subcommands do not cover.

``dvc.yaml`` unrolls the loop of ``zerochess run`` over a few generations with
``foreach``: per generation ``selfplay@genNNNN`` -> ``train@genNNNN`` ->
``gate@genNNNN`` (``zerochess train`` and ``zerochess gate --no-fail
--best-out`` do those), then one ``report``.  The actions here fill the gaps:

* ``init``: the random generation-0 network, seeded by ``selfplay.seed`` as
  ``zerochess run`` seeds it, and an empty replay window (only ``shards.txt``);
* ``selfplay``: ``run.games_per_generation`` self-play games with a network,
  shards plus ``selfplay.json`` (the summary) in one folder, and the speed in
  ``timing.json`` beside it;
* ``facts``: the reproducible part of a training run's ``result.json`` (steps,
  positions, losses) as ``facts.json`` in the run folder;
* ``window``: a generation's replay window, hard links to the shards of the
  previous window and of this generation, listed in ``shards.txt`` (one
  folder, as ``zerochess train --data`` wants; training takes the newest
  positions from it);
* ``report``: the per-generation figures of a run folder: one small metrics
  JSON per generation (``dvc metrics show``), one plots JSON, a list of
  all figures by generation (``dvc plots show``), and with ``--figures`` the
  same as static PNGs (``dvc plots show`` renders them offline);
* ``params``: the ``params:`` block each stage of ``dvc.yaml`` declares;
* ``native``: make ``models._native`` importable in this checkout: a temporary
  copy of ``dvc exp run --temp``/``--queue`` lacks the git-ignored module,
  so it is copied from the editable install when the native sources match,
  else built in place.

Reproducibility: timings, MLflow run ids, the MLflow store and the training
run's ``result.json`` and ``run.json`` are volatile.  The stages write the
timings to ``timing.json`` files and the reproducible facts to
``selfplay.json`` and ``facts.json``; ``.dvcignore`` keeps the volatile files
out of DVC's outputs and dependencies, so a from-scratch ``dvc repro`` with
the same seed writes the same ``dvc.lock``.

Stages run with ``--params params.yaml --preset tiny``, so a value comes from
the preset when it sets the key and from ``params.yaml`` otherwise.  DVC can
only watch files, so every stage declares each key it reads under the file
that supplies it (:func:`declared_params`); ``tests/test_dvc.py`` checks that
``dvc.yaml`` says exactly that.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import yaml

from pipeline.dvc_report import (
    SELFPLAY_SUMMARY,
    SELFPLAY_TIMING_KEYS,
    TIMING,
    TRAIN_FACTS,
    build_report,
    link_window,
    metrics_of,
    train_facts,
    write_figures,
    write_report,
    write_window_index,
)
from pipeline.native_build import editable_source, ensure_native, native_module_name
from zerochess.commands.common import add_params_arguments, add_ray_argument, config_from_args

# What each compute stage of dvc.yaml reads from the config: whole sections or
# single dotted keys.  Self-play and gating load their networks from files, so
# they do not read ``net``; MLflow logging of the whole config is a record,
# not a dependency.
STAGE_READS: dict[str, tuple[str, ...]] = {
    "init": ("net", "selfplay.seed"),
    "selfplay": ("search", "selfplay", "run.games_per_generation"),
    "train": ("net", "train"),
    "gate": ("gating", "search", "selfplay.device", "selfplay.seed"),
}
DVC_PARAMS = "params.yaml"
DVC_PRESET = "tiny"
def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    init = actions.add_parser("init", help="write the random generation-0 network")
    add_params_arguments(init)
    init.add_argument("--out", required=True, help="network file to write")
    init.add_argument(
        "--window", help="also create this empty replay window folder (shards.txt only)"
    )

    selfplay = actions.add_parser(
        "selfplay", help="play run.games_per_generation games with a network"
    )
    add_params_arguments(selfplay)
    selfplay.add_argument(
        "--generation", type=int, required=True, help="generation stored in the shards"
    )
    add_required(
        selfplay,
        ("--checkpoint", "the network that plays (the current best)"),
        ("--out", "shard folder (selfplay.json is written beside them)"),
    )
    add_ray_argument(selfplay, "Ray cluster to join (default: start or find a local one)")

    window = actions.add_parser("window", help="hard-link the shards of several folders into one")
    window.add_argument(
        "--add", action="append", required=True, metavar="DIR", help="shard folder (repeatable)"
    )
    window.add_argument("--out", required=True, help="the window folder")

    facts = actions.add_parser(
        "facts", help="the reproducible part of a training run's result.json, as facts.json"
    )
    facts.add_argument("--train", required=True, help="the training run folder")

    actions.add_parser(
        "native",
        help="make models._native importable here (copy it from the editable install when "
        "the native sources match, else build it in place)",
    )

    report = actions.add_parser("report", help="per-generation metrics and plots of a run folder")
    add_required(
        report,
        ("--run", "run folder holding genNNNN/ folders"),
        ("--metrics", "folder for genNNNN.json metrics (dvc metrics show)"),
        ("--plots", "JSON list of per-generation rows (dvc plots show)"),
    )
    report.add_argument(
        "--figures", help="folder for loss.png and elo.png (static plots: dvc plots show renders "
        "them without the internet, unlike its vega charts)"
    )

    params = actions.add_parser("params", help="print the params: block of each stage of dvc.yaml")
    params.add_argument(
        "--params", default=DVC_PARAMS, help="parameter file (default: params.yaml)"
    )
    params.add_argument(
        "--preset", default=DVC_PRESET, help="preset the stages use (default: tiny)"
    )


def add_required(parser: argparse.ArgumentParser, *options: tuple[str, str]) -> None:
    """Required string options, as ``(flag, help)`` pairs."""
    for flag, text in options:
        parser.add_argument(flag, required=True, help=text)


def run(args: argparse.Namespace) -> int:
    action = {
        "init": _init,
        "selfplay": _selfplay,
        "window": _window,
        "facts": _facts,
        "report": _report,
        "params": _params,
        "native": _native,
    }
    return action[args.action](args)


def _init(args: argparse.Namespace) -> int:
    import torch

    from models.net import AlphaZeroNet
    from pipeline.checkpoint import save_net

    config = config_from_args(args)
    torch.manual_seed(config.selfplay.seed)  # as actors.loop seeds generation 0
    save_net(AlphaZeroNet(config.net), args.out)
    if args.window:
        write_window_index(args.window, [])
    print(json.dumps({"net": args.out, "window": args.window}))
    return 0


def _selfplay(args: argparse.Namespace) -> int:
    from actors.runtime import init_ray
    from actors.selfplay import run_selfplay
    from pipeline.atomic import atomic_write
    from pipeline.checkpoint import load_net

    config = config_from_args(args)
    net = load_net(args.checkpoint)
    init_ray(args.ray_address)
    games = config.run.games_per_generation
    report = run_selfplay(config, args.out, games, net=net, generation=args.generation)
    summary = {"generation": args.generation, "checkpoint": args.checkpoint, **report.summary()}
    timing = {key: summary.pop(key) for key in SELFPLAY_TIMING_KEYS if key in summary}
    for name, content in ((SELFPLAY_SUMMARY, summary), (TIMING, timing)):
        with atomic_write(Path(args.out) / name) as handle:
            handle.write(json.dumps(content, indent=2).encode())
    print(json.dumps({**summary, **timing}, indent=2))
    return 0


def _facts(args: argparse.Namespace) -> int:
    from pipeline.atomic import atomic_write

    folder = Path(args.train)
    facts = train_facts(json.loads((folder / "result.json").read_text(encoding="utf-8")))
    with atomic_write(folder / TRAIN_FACTS) as handle:
        handle.write(json.dumps(facts, indent=2).encode())
    return 0


def _window(args: argparse.Namespace) -> int:
    shards = link_window(args.add, args.out)
    print(json.dumps({"window": args.out, "shards": len(shards)}))
    return 0


def _report(args: argparse.Namespace) -> int:
    rows = build_report(args.run)
    write_report(rows, args.metrics, args.plots)
    if args.figures:
        write_figures(rows, args.figures)
    print(json.dumps([metrics_of(row) for row in rows], indent=2))
    return 0


def _native(args: argparse.Namespace) -> int:
    how = ensure_native(Path.cwd(), editable_source())
    print(json.dumps({"native": native_module_name(), "how": how}))
    return 0


def declared_params(
    stage: str, params: str | os.PathLike[str] = DVC_PARAMS, preset: str = DVC_PRESET
) -> dict[str, list[str]]:
    """The keys ``stage`` reads, by the file that supplies their values:
    ``{"params.yaml": [...], "presets/tiny.yaml": [...]}`` (in config order)."""
    from pipeline.config import flatten, load_config
    from pipeline.resources import PRESETS_DIR

    reads = STAGE_READS[stage]
    keys = [
        key
        for key in flatten(load_config(params))
        if any(key == read or key.startswith(f"{read}.") for read in reads)
    ]
    preset_path = PRESETS_DIR / f"{preset}.yaml"
    from_preset = set(_dotted_keys(yaml.safe_load(preset_path.read_text(encoding="utf-8")) or {}))
    return {
        Path(params).name: [key for key in keys if key not in from_preset],
        f"presets/{preset}.yaml": [key for key in keys if key in from_preset],
    }


def _dotted_keys(data: dict[str, Any], prefix: str = "") -> list[str]:
    keys: list[str] = []
    for key, value in data.items():
        if isinstance(value, dict):
            keys += _dotted_keys(value, f"{prefix}{key}.")
        else:
            keys.append(f"{prefix}{key}")
    return keys


def _params(args: argparse.Namespace) -> int:
    """Print each stage's ``params:`` block, in the flow style of ``dvc.yaml``."""
    import textwrap

    for stage in STAGE_READS:
        print(f"# {stage}\nparams:")
        for source, keys in declared_params(stage, args.params or DVC_PARAMS, args.preset).items():
            lines = textwrap.wrap(", ".join(keys), width=88, break_on_hyphens=False)
            print(f"  - {source}: [" + "\n      ".join(lines) + "]")
    return 0
