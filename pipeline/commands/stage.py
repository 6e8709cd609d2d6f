"""``zerochess stage``: the steps of the DVC pipeline (``dvc.yaml``) that the
other subcommands do not cover.

``dvc.yaml`` unrolls the loop of ``zerochess run`` over a few generations with
``foreach``: per generation ``selfplay@genNNNN`` -> ``train@genNNNN`` ->
``gate@genNNNN`` (``zerochess train`` and ``zerochess gate --no-fail
--best-out`` do those), then one ``report``.  The actions here fill the gaps:

* ``init``: the random generation-0 network, seeded by ``selfplay.seed`` as
  ``zerochess run`` seeds it, and an empty replay window (only ``shards.txt``);
* ``selfplay``: ``run.games_per_generation`` self-play games with a network,
  shards plus ``selfplay.json`` (the summary) in one folder;
* ``window``: a generation's replay window, hard links to the shards of the
  previous window and of this generation, listed in ``shards.txt`` (one
  folder, as ``zerochess train --data`` wants; training takes the newest
  positions from it);
* ``report``: the per-generation figures of a run folder: one small metrics
  JSON per generation (``dvc metrics show``), one plots JSON, a list of
  all figures by generation (``dvc plots show``), and with ``--figures`` the
  same as static PNGs (``dvc plots show`` renders them offline);
* ``params``: the ``params:`` block each stage of ``dvc.yaml`` declares.

Stages run with ``--params params.yaml --preset tiny``, so a value comes from
the preset when it sets the key and from ``params.yaml`` otherwise.  DVC can
only watch files, so every stage declares each key it reads under the file
that supplies it (:func:`declared_params`); ``tests/test_dvc.py`` checks that
``dvc.yaml`` says exactly that.
"""

from __future__ import annotations

import argparse
import io
import json
import os
from pathlib import Path
from typing import Any

import yaml

from pipeline.commands.common import add_params_arguments, config_from_args

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
SELFPLAY_SUMMARY = "selfplay.json"
WINDOW_INDEX = "shards.txt"
# The figures of a generation that `dvc metrics show` lists (plus the Elo vs
# every ladder level); reports/generations.json, the plots file, has them all.
METRIC_KEYS = (
    "generation",
    "promoted",
    "loss_total",
    "loss_policy",
    "loss_value",
    "elo_vs_best",
    "window_positions",
)


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
    selfplay.add_argument(
        "--checkpoint", required=True, help="the network that plays (the current best)"
    )
    selfplay.add_argument(
        "--out", required=True, help="shard folder (selfplay.json is written beside them)"
    )
    selfplay.add_argument(
        "--ray-address", help="Ray cluster to join (default: start or find a local one)"
    )

    window = actions.add_parser("window", help="hard-link the shards of several folders into one")
    window.add_argument(
        "--add", action="append", required=True, metavar="DIR", help="shard folder (repeatable)"
    )
    window.add_argument("--out", required=True, help="the window folder")

    report = actions.add_parser("report", help="per-generation metrics and plots of a run folder")
    report.add_argument("--run", required=True, help="run folder holding genNNNN/ folders")
    report.add_argument(
        "--metrics", required=True, help="folder for genNNNN.json metrics (dvc metrics show)"
    )
    report.add_argument(
        "--plots", required=True, help="JSON list of per-generation rows (dvc plots show)"
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


def run(args: argparse.Namespace) -> int:
    action = {
        "init": _init,
        "selfplay": _selfplay,
        "window": _window,
        "report": _report,
        "params": _params,
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
    from actors.selfplay import init_ray, run_selfplay
    from pipeline.atomic import atomic_write
    from pipeline.checkpoint import load_net

    config = config_from_args(args)
    net = load_net(args.checkpoint)
    init_ray(args.ray_address)
    games = config.run.games_per_generation
    report = run_selfplay(config, args.out, games, net=net, generation=args.generation)
    summary = {"generation": args.generation, "checkpoint": args.checkpoint, **report.summary()}
    with atomic_write(Path(args.out) / SELFPLAY_SUMMARY) as handle:
        handle.write(json.dumps(summary, indent=2).encode())
    print(json.dumps(summary, indent=2))
    return 0


def link_window(sources: list[str | os.PathLike[str]], out: str | os.PathLike[str]) -> list[Path]:
    """Hard-link every shard of ``sources`` into ``out`` (a copy where links
    fail, e.g. across filesystems); return the shards of ``out``, sorted.

    A shard already in ``out`` under the same name is replaced.
    """
    import shutil

    from pipeline.shards import list_shards

    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    for source in sources:
        for shard in map(Path, list_shards(source)):
            temporary = target / f".{shard.name}.link"
            temporary.unlink(missing_ok=True)
            try:
                os.link(shard, temporary)
            except OSError:
                shutil.copyfile(shard, temporary)
            os.replace(temporary, target / shard.name)
    shards = [Path(path) for path in list_shards(target)]
    write_window_index(target, shards)
    return shards


def write_window_index(folder: str | os.PathLike[str], shards: list[Path]) -> None:
    """``WINDOW_INDEX`` in ``folder``: its shard names, one a line (also
    keeps an empty window from being an empty folder, which DVC warns about)."""
    from pipeline.atomic import atomic_write

    with atomic_write(Path(folder) / WINDOW_INDEX) as handle:
        handle.write("".join(f"{shard.name}\n" for shard in shards).encode())


def _window(args: argparse.Namespace) -> int:
    shards = link_window(args.add, args.out)
    print(json.dumps({"window": args.out, "shards": len(shards)}))
    return 0


def generation_row(folder: Path) -> dict[str, Any] | None:
    """The figures of one generation folder (``genNNNN/``), or None when its
    gate has not run: self-play size, final training losses, the gate."""
    gate_file = folder / "gate" / "gate.json"
    if not gate_file.exists():
        return None
    gate = json.loads(gate_file.read_text(encoding="utf-8"))
    row: dict[str, Any] = {"generation": int(folder.name.removeprefix("gen"))}
    selfplay_file = folder / "shards" / SELFPLAY_SUMMARY
    if selfplay_file.exists():
        selfplay = json.loads(selfplay_file.read_text(encoding="utf-8"))
        row.update(
            {
                f"selfplay_{key}": selfplay.get(key)
                for key in ("games", "positions", "mean_game_length")
            }
        )
    result_file = folder / "train" / "result.json"
    if result_file.exists():
        result = json.loads(result_file.read_text(encoding="utf-8"))
        row["train_steps"] = result.get("steps")
        row["window_positions"] = result.get("positions")
        for key, value in sorted(result.get("metrics", {}).items()):
            if key.startswith("loss/"):
                row[key.replace("/", "_")] = value
    row["promoted"] = int(bool(gate.get("promote")))
    head = (gate.get("vs_best") or {}).get("pairings") or [{}]
    row["elo_vs_best"] = head[0].get("elo")
    row["score_vs_best"] = head[0].get("score")
    for index, level in enumerate(gate.get("ladder", [])):
        row[f"ladder{index}_elo"] = level.get("elo")
        row[f"ladder{index}_score"] = level.get("score")
    return row


def build_report(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of the generations of ``run_dir`` whose gate has run, in order."""
    folders = sorted(
        path for path in Path(run_dir).glob("gen[0-9][0-9][0-9][0-9]") if path.is_dir()
    )
    return [row for row in map(generation_row, folders) if row is not None]


def metrics_of(row: dict[str, Any]) -> dict[str, Any]:
    """The few figures of a generation that ``dvc metrics show`` lists (Elo
    vs every ladder level included); the plots file has them all."""
    return {key: value for key, value in row.items() if key in METRIC_KEYS or key.endswith("_elo")}


def write_report(
    rows: list[dict[str, Any]], metrics_dir: str | os.PathLike[str], plots: str | os.PathLike[str]
) -> None:
    """``metrics_dir/genNNNN.json`` per generation (stale ones removed) and
    ``plots``, the JSON list of all rows."""
    from pipeline.atomic import atomic_write

    folder = Path(metrics_dir)
    folder.mkdir(parents=True, exist_ok=True)
    names = {f"gen{row['generation']:04d}.json" for row in rows}
    for stale in folder.glob("gen*.json"):
        if stale.name not in names:
            stale.unlink()
    for row in rows:
        with atomic_write(folder / f"gen{row['generation']:04d}.json") as handle:
            handle.write(json.dumps(metrics_of(row), indent=2).encode())
    with atomic_write(plots) as handle:
        handle.write(json.dumps(rows, indent=2).encode())


def write_figures(rows: list[dict[str, Any]], folder: str | os.PathLike[str]) -> list[Path]:
    """``loss.png`` and ``elo.png`` of the generations in ``rows`` in ``folder``:
    whole generations on the x axis, titled axes, and an Elo measured on a
    score of 0 (or 1), which is only the clamp's bound, drawn as an open
    triangle pointing down (up).  Returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    from pipeline.atomic import atomic_write

    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    generations = [row["generation"] for row in rows]
    elo_keys = ["elo_vs_best", *sorted(k for k in {k for row in rows for k in row} if k.endswith("_elo")
                                        and k.startswith("ladder"))]  # fmt: skip
    charts = [("loss.png", "Training loss by generation", "loss", ["loss_total", "loss_policy", "loss_value"]),
              ("elo.png", "Elo by generation (candidate's view)", "Elo", elo_keys)]  # fmt: skip
    written = []
    for name, title, ylabel, keys in charts:
        figure, axis = plt.subplots(figsize=(6, 4))
        bounds = False
        for key in keys:
            values = [row.get(key) for row in rows]
            if all(value is None for value in values):
                continue
            (line,) = axis.plot(generations, [float("nan") if v is None else v for v in values], "o-", label=key)
            score_key = {"elo_vs_best": "score_vs_best"}.get(key, key.replace("_elo", "_score"))
            scores = [row.get(score_key) for row in rows] if score_key != key else []
            for bound, marker in ((0.0, "v"), (1.0, "^")):
                points = [(g, v) for g, v, sc in zip(generations, values, scores) if sc == bound and v is not None]
                if points:
                    bounds = True
                    axis.plot(*zip(*points), marker, color=line.get_color(), markerfacecolor="white", markersize=10)
        if bounds:
            axis.plot([], [], "v", color="grey", markerfacecolor="white", label="bound (score 0: Elo below; 1: above)")
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        axis.set(title=title, xlabel="generation", ylabel=ylabel)
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize="small")
        axis.grid(alpha=0.3)
        figure.tight_layout()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})  # no version: stable bytes
        plt.close(figure)
        with atomic_write(target / name) as handle:
            handle.write(buffer.getvalue())
        written.append(target / name)
    return written


def _report(args: argparse.Namespace) -> int:
    rows = build_report(args.run)
    write_report(rows, args.metrics, args.plots)
    if args.figures:
        write_figures(rows, args.figures)
    print(json.dumps([metrics_of(row) for row in rows], indent=2))
    return 0


def declared_params(
    stage: str, params: str | os.PathLike[str] = DVC_PARAMS, preset: str = DVC_PRESET
) -> dict[str, list[str]]:
    """The keys ``stage`` reads, by the file that supplies their values:
    ``{"params.yaml": [...], "presets/tiny.yaml": [...]}`` (in config order)."""
    from pipeline.config import PRESETS_DIR, flatten, load_config

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
        for source, keys in declared_params(stage, args.params, args.preset).items():
            lines = textwrap.wrap(", ".join(keys), width=88, break_on_hyphens=False)
            print(f"  - {source}: [" + "\n      ".join(lines) + "]")
    return 0
