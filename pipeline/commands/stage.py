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
import io
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from pipeline.commands.common import add_params_arguments, add_ray_argument, config_from_args

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
TIMING = "timing.json"  # volatile: .dvcignore keeps it out of DVC's hashes
TRAIN_FACTS = "facts.json"
# Self-play summary keys that measure speed, not the games.
SELFPLAY_TIMING_KEYS = ("positions_per_s",)
# result.json keys of a training run that differ from run to run.
VOLATILE_RESULT_KEYS = ("seconds", "mlflow_run_id", "tracking_uri")
VOLATILE_METRIC_PREFIXES = ("throughput/",)
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
METRIC_SUFFIXES = ("_elo", "_elo_clamped")


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


def train_facts(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` (a training run's ``result.json``) without what differs
    from run to run: timings, throughput, the MLflow run and store."""
    facts = {key: value for key, value in result.items() if key not in VOLATILE_RESULT_KEYS}
    metrics = facts.get("metrics", {})
    facts["metrics"] = {
        key: value for key, value in metrics.items() if not key.startswith(VOLATILE_METRIC_PREFIXES)
    }
    return facts


def _facts(args: argparse.Namespace) -> int:
    from pipeline.atomic import atomic_write

    folder = Path(args.train)
    facts = train_facts(json.loads((folder / "result.json").read_text(encoding="utf-8")))
    with atomic_write(folder / TRAIN_FACTS) as handle:
        handle.write(json.dumps(facts, indent=2).encode())
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
    result_file = folder / "train" / TRAIN_FACTS
    if not result_file.exists():  # a zerochess run folder: no facts.json
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
        if "elo_clamped" in level:  # 0/2 and 1/2 both read -190.8: only 1/2 is measured
            row[f"ladder{index}_elo_clamped"] = int(bool(level["elo_clamped"]))
    return row


def build_report(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of the generations of ``run_dir`` whose gate has run, in order."""
    folders = sorted(
        path for path in Path(run_dir).glob("gen[0-9][0-9][0-9][0-9]") if path.is_dir()
    )
    return [row for row in map(generation_row, folders) if row is not None]


def metrics_of(row: dict[str, Any]) -> dict[str, Any]:
    """The few figures of a generation that ``dvc metrics show`` lists (Elo
    vs every ladder level included, and whether it is only the clamp's
    bound); the plots file has them all."""
    return {
        key: value for key, value in row.items() if key in METRIC_KEYS or key.endswith(METRIC_SUFFIXES)
    }


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


LOSS_KEYS = ("loss_policy", "loss_value", "loss_total")
"""The curves of ``loss.png``, in drawing order: the total last, over its parts."""

LINE_STYLE: dict[str, Any] = {"marker": "o", "linestyle": "-"}
TOTAL_LINE_STYLE: dict[str, Any] = {"color": "black", "marker": "s", "markerfacecolor": "none",
                                    "linestyle": (0, (3, 3)), "zorder": 3}  # fmt: skip
"""``loss_total`` is the policy loss plus the weighted value, L2 (and soft
policy, moves left) terms, small beside it, so its curve runs almost on the
policy curve: dashed with gaps as long as its dashes, black, with open
squares and drawn on top, it leaves the policy curve visible through the gaps."""


def report_figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of the generations in ``rows`` by file name: ``loss.png``
    (policy, value and total loss) and ``elo.png`` (Elo against the best and
    the ladder levels).  The caller closes them."""
    import matplotlib

    matplotlib.use("Agg")
    elo_keys = ["elo_vs_best", *sorted(k for k in {k for row in rows for k in row} if k.endswith("_elo")
                                        and k.startswith("ladder"))]  # fmt: skip
    return {"loss.png": _chart(rows, "Training loss by generation", "loss", LOSS_KEYS),
            "elo.png": _chart(rows, "Elo by generation (candidate's view)", "Elo", elo_keys)}  # fmt: skip


def write_figures(rows: list[dict[str, Any]], folder: str | os.PathLike[str]) -> list[Path]:
    """``loss.png`` and ``elo.png`` of the generations in ``rows`` in ``folder``:
    whole generations on the x axis, titled axes, and an Elo that is only
    the clamp's bound (a score of 0 or 1, or a ladder level the gate marks
    ``elo_clamped``) drawn as an open triangle pointing down (up).  Returns
    the files written."""
    import matplotlib.pyplot as plt

    from pipeline.atomic import atomic_write

    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name, figure in report_figures(rows).items():
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})  # no version: stable bytes
        plt.close(figure)
        with atomic_write(target / name) as handle:
            handle.write(buffer.getvalue())
        written.append(target / name)
    return written


def _chart(rows: list[dict[str, Any]], title: str, ylabel: str, keys: Sequence[str]) -> Any:
    """One figure: a curve per key of ``keys`` that some row has, by generation."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    figure, axis = plt.subplots(figsize=(6, 4))
    bounds = False
    for key in keys:
        bounds |= _curve(axis, rows, key)
    if bounds:
        axis.plot([], [], "v", color="grey", markerfacecolor="white", label="clamped: the Elo is below (above) this")
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    axis.set(title=title, xlabel="generation", ylabel=ylabel)
    if axis.get_legend_handles_labels()[0]:
        axis.legend(fontsize="small")
    axis.grid(alpha=0.3)
    figure.tight_layout()
    return figure


def _curve(axis: Any, rows: list[dict[str, Any]], key: str) -> bool:
    """Draw ``row[key]`` by generation on ``axis`` (nothing when no row has
    it), its clamped Elo bounds as open triangles; whether there were any."""
    from pipeline.loop_plots import mark_bounds

    generations = [row["generation"] for row in rows]
    values = [row.get(key) for row in rows]
    if all(value is None for value in values):
        return False
    style = TOTAL_LINE_STYLE if key == "loss_total" else LINE_STYLE
    (line,) = axis.plot(generations, [float("nan") if v is None else v for v in values], label=key, **style)
    clamped = [_is_bound(row, key) for row in rows]
    below, above = ([(g, v) for g, v, c in zip(generations, values, clamped)
                     if c and v is not None and (v < 0) == side] for side in (True, False))  # fmt: skip
    return mark_bounds(axis, line.get_color(), below, above, facecolor="white", size=10)


def _is_bound(row: dict[str, Any], key: str) -> bool:
    """Whether the Elo ``row[key]`` is only the bound the estimate clamps to:
    the gate says so (``..._elo_clamped``), else the score is 0 or 1."""
    if f"{key}_clamped" in row:
        return bool(row[f"{key}_clamped"])
    score_key = {"elo_vs_best": "score_vs_best"}.get(key, key.replace("_elo", "_score"))
    return score_key != key and row.get(score_key) in (0.0, 1.0)


def _report(args: argparse.Namespace) -> int:
    rows = build_report(args.run)
    write_report(rows, args.metrics, args.plots)
    if args.figures:
        write_figures(rows, args.figures)
    print(json.dumps([metrics_of(row) for row in rows], indent=2))
    return 0


NATIVE_SOURCES = ("setup.py", "models/native")


def native_module_name() -> str:
    """The file name of ``models._native`` for this interpreter."""
    import importlib.machinery

    return "_native" + importlib.machinery.EXTENSION_SUFFIXES[0]


def editable_source() -> Path | None:
    """The checkout the installed ``zerochess`` distribution points to (an
    editable install), or None."""
    from importlib import metadata
    from urllib.parse import unquote, urlparse

    try:
        direct = metadata.distribution("zerochess").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    url = json.loads(direct or "{}").get("url", "")
    return Path(unquote(urlparse(url).path)) if url.startswith("file://") else None


def _same_native_sources(a: Path, b: Path) -> bool:
    def files(root: Path) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for name in NATIVE_SOURCES:
            path = root / name
            paths = sorted(path.rglob("*")) if path.is_dir() else [path]
            found.update({str(f.relative_to(root)): f.read_bytes() for f in paths if f.is_file()})
        return found

    return files(a) == files(b)


def ensure_native(root: Path, source: Path | None) -> str:
    """Make ``models._native`` importable in the checkout ``root``: "present"
    when it is there, "copied" from ``source`` (a checkout with the module
    built) when both have the same native sources, else "built" in place."""
    import shutil
    import subprocess
    import sys

    name = native_module_name()
    target = root / "models" / name
    if target.exists():
        return "present"
    built = None if source is None else source / "models" / name
    if built is not None and built.exists() and _same_native_sources(root, source):  # type: ignore[arg-type]
        temporary = target.with_name(f".{name}.copy")
        shutil.copy2(built, temporary)
        os.replace(temporary, target)
        return "copied"
    subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace", "-j", "2"],
        cwd=root, check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    return "built"


def _native(args: argparse.Namespace) -> int:
    how = ensure_native(Path.cwd(), editable_source())
    print(json.dumps({"native": native_module_name(), "how": how}))
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
