"""The DVC pipeline's bookkeeping (``zerochess stage``'s ``facts``, ``window`` and ``report``).

A training run's reproducible facts (``result.json`` less its timings), a
generation's replay window as hard links with its index, and the report of a
run folder: a metrics JSON per generation, one plots file, and the same
figures as PNGs (loss, and the Elo with clamped values drawn as open
triangles, by :func:`pipeline.loop_plots.mark_bounds`).  The CLI module
:mod:`zerochess.commands.stage` parses the arguments and calls these.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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


def train_facts(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` (a training run's ``result.json``) without what differs
    from run to run: timings, throughput, the MLflow run and store."""
    facts = {key: value for key, value in result.items() if key not in VOLATILE_RESULT_KEYS}
    metrics = facts.get("metrics", {})
    facts["metrics"] = {
        key: value for key, value in metrics.items() if not key.startswith(VOLATILE_METRIC_PREFIXES)
    }
    return facts


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

