"""The DVC pipeline (``dvc.yaml``): what each stage declares, the helper
actions of ``zerochess stage``, and (slow) a fresh copy of the repository
that ``dvc repro`` runs end to end, then finds up to date, then reruns only
the stages a changed parameter reaches."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.dvc_report import (
    WINDOW_INDEX,
    build_report,
    link_window,
    report_figures,
    train_facts,
    write_figures,
    write_report,
)
from pipeline.native_build import ensure_native, native_module_name
from tests.helpers import ROOT
from zerochess.commands.stage import STAGE_READS, declared_params

PIPELINE_COMMAND = "python -m pipeline"
PRESET_FLAGS = "--params params.yaml --preset tiny"


def dvc_spec() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))


def stage_body(spec: dict[str, Any], name: str) -> dict[str, Any]:
    stage = spec["stages"][name]
    return stage.get("do", stage)


# ---------------------------------------------------------------------------
# dvc.yaml as text: fast
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(STAGE_READS))
def test_each_stage_declares_the_keys_it_reads_under_the_file_that_sets_them(name: str) -> None:
    body = stage_body(dvc_spec(), name)
    declared = {source: keys for entry in body["params"] for source, keys in entry.items()}
    expected = declared_params(name, ROOT / "params.yaml")
    assert set(declared) == set(expected)
    for source, keys in expected.items():
        assert sorted(declared[source]) == sorted(keys), (
            f"{name}: {source} keys differ from `zerochess stage params`"
        )
    assert PRESET_FLAGS in body["cmd"]


def test_generations_chain_from_generation_zero() -> None:
    generations = dvc_spec()["vars"][0]["generations"]
    assert list(generations) == [f"gen{n:04d}" for n in range(1, len(generations) + 1)]
    for number, (key, item) in enumerate(generations.items(), 1):
        previous = f"gen{number - 1:04d}"
        assert item["generation"] == number and item["previous"] == previous
        # training continues from the newest trained net (generation 0: the random one)
        trained = "best.pt" if number == 1 else "train/net.pt"
        assert item["init"] == f"runs/dvc/{previous}/{trained}", key


def test_params_files_survive_dvcs_yaml_round_trip() -> None:
    """`dvc exp run -S` rewrites a params file with ruamel: params.yaml and
    every preset come back byte for byte, with no trailing spaces."""
    from dvc.utils.serialize._yaml import dumps_yaml, parse_yaml_for_update

    for path in [ROOT / "params.yaml", *sorted((ROOT / "presets").glob("*.yaml"))]:
        text = path.read_text(encoding="utf-8")
        assert dumps_yaml(parse_yaml_for_update(text, str(path))) == text, path.name
        assert not [line for line in text.splitlines() if line != line.rstrip()], path.name


def test_dvc_set_param_changes_exactly_one_line(tmp_path: Path) -> None:
    from dvc.utils.serialize import modify_yaml

    for source, key, value in (("params.yaml", "train.learning_rate", 0.05),
                               ("presets/tiny.yaml", "search.num_simulations", 16)):  # fmt: skip
        path = tmp_path / Path(source).name
        shutil.copy(ROOT / source, path)
        with modify_yaml(str(path)) as data:
            section, name = key.split(".")
            data[section][name] = value
        before = (ROOT / source).read_text(encoding="utf-8").splitlines()
        after = path.read_text(encoding="utf-8").splitlines()
        assert len(before) == len(after), source
        changed = [(old, new) for old, new in zip(before, after) if old != new]
        assert len(changed) == 1 and f"{name}: {value}" in changed[0][1], (source, changed)


def test_every_command_runs_this_checkouts_code() -> None:
    spec = dvc_spec()
    for name in spec["stages"]:
        cmd = stage_body(spec, name)["cmd"]
        assert cmd.startswith(PIPELINE_COMMAND), name
        assert "--ray-address" not in cmd and "--set" not in cmd, name


# ---------------------------------------------------------------------------
# zerochess stage helpers: fast
# ---------------------------------------------------------------------------


def test_link_window_links_the_shards_of_every_source(tmp_path: Path) -> None:
    first, second, window = tmp_path / "a", tmp_path / "b", tmp_path / "w"
    first.mkdir()
    second.mkdir()
    (first / "gen0001-task00000.parquet").write_bytes(b"one")
    (first / "selfplay.json").write_text("{}")  # not a shard
    (second / "gen0002-task00000.parquet").write_bytes(b"two")
    shards = link_window([first, second], window)
    assert [path.name for path in shards] == [
        "gen0001-task00000.parquet",
        "gen0002-task00000.parquet",
    ]
    assert (window / "gen0002-task00000.parquet").read_bytes() == b"two"
    assert not (window / "selfplay.json").exists()
    assert (window / WINDOW_INDEX).read_text().split() == [path.name for path in shards]
    assert link_window([first], window)[0].name == "gen0001-task00000.parquet"  # rerun: replaced


def test_train_facts_leave_out_timings_and_mlflow_ids() -> None:
    result = {"net_path": "t/net.pt", "steps": 20, "positions": 162, "seconds": 4.7,
              "mlflow_run_id": "c601", "tracking_uri": "sqlite:////tmp/x/mlflow.db",
              "metrics": {"loss/total": 6.07, "lr": 0.02, "throughput/samples_per_s": 1579.8}}  # fmt: skip
    assert train_facts(result) == {"net_path": "t/net.pt", "steps": 20, "positions": 162,
                                   "metrics": {"loss/total": 6.07, "lr": 0.02}}  # fmt: skip


def fake_checkout(root: Path, source_text: str) -> Path:
    (root / "models" / "native").mkdir(parents=True)
    (root / "models" / "native" / "core.cpp").write_text(source_text)
    # stands in for the real build: writes the module where build_ext --inplace would
    (root / "setup.py").write_text(
        f"from pathlib import Path\nPath('models/{native_module_name()}').write_text('built here')\n"
    )
    return root


def test_native_module_is_copied_when_the_sources_match_else_built(tmp_path: Path) -> None:
    workspace = fake_checkout(tmp_path / "workspace", "int f();")
    (workspace / "models" / native_module_name()).write_text("built in the workspace")
    same = fake_checkout(tmp_path / "same", "int f();")
    changed = fake_checkout(tmp_path / "changed", "int g();")
    assert ensure_native(same, workspace) == "copied"
    assert (same / "models" / native_module_name()).read_text() == "built in the workspace"
    assert ensure_native(same, workspace) == "present"
    assert ensure_native(changed, workspace) == "built"  # a stale binary is never copied
    assert (changed / "models" / native_module_name()).read_text() == "built here"
    assert ensure_native(fake_checkout(tmp_path / "alone", "int f();"), None) == "built"


def test_report_rows_metrics_and_plots(tmp_path: Path) -> None:
    run = tmp_path / "run"
    for generation, promote in ((1, True), (2, False)):
        folder = run / f"gen{generation:04d}"
        gate = {
            "promote": promote,
            "vs_best": {"pairings": [{"elo": 35.0 * generation, "score": 0.6}]},
            "ladder": [{"level": "stockfish:depth=1", "elo": -190.8, "score": 0.25 * (generation - 1),
                        "elo_clamped": generation == 1}],  # 0/2 and 1/2 both read -190.8
        }
        (folder / "gate").mkdir(parents=True)
        (folder / "gate" / "gate.json").write_text(json.dumps(gate))
        (folder / "train").mkdir()
        result = {"steps": 20, "positions": 100 * generation,
                  "metrics": {"loss/total": 3.0 / generation, "loss/policy": 2.5, "acc/top1": 0.1}}  # fmt: skip
        (folder / "train" / "result.json").write_text(json.dumps(result))
    (run / "gen0000").mkdir()  # the initial net: no gate, no row
    (run / "gen0003" / "train").mkdir(parents=True)  # not gated yet: no row
    rows = build_report(run)
    assert [row["generation"] for row in rows] == [1, 2]
    assert rows[0]["promoted"] == 1 and rows[1]["promoted"] == 0
    assert rows[1]["loss_total"] == 1.5 and rows[1]["elo_vs_best"] == 70.0
    assert rows[0]["ladder0_elo"] == -190.8 and rows[0]["window_positions"] == 100
    metrics_dir, plots = tmp_path / "reports" / "metrics", tmp_path / "reports" / "generations.json"
    metrics_dir.mkdir(parents=True)
    (metrics_dir / "gen0009.json").write_text("{}")  # stale: removed
    write_report(rows, metrics_dir, plots)
    assert sorted(path.name for path in metrics_dir.iterdir()) == ["gen0001.json", "gen0002.json"]
    second = json.loads((metrics_dir / "gen0002.json").read_text())
    assert second == {"generation": 2, "window_positions": 200, "loss_total": 1.5, "loss_policy": 2.5,
                      "promoted": 0, "elo_vs_best": 70.0, "ladder0_elo": -190.8,
                      "ladder0_elo_clamped": 0}  # fmt: skip
    assert json.loads((metrics_dir / "gen0001.json").read_text())["ladder0_elo_clamped"] == 1
    assert json.loads(plots.read_text()) == rows


def colour_pixels(figure: Any, colour: Any, shown: list[Any]) -> int:
    """The pixels of ``colour`` in ``figure`` drawn with only the lines in
    ``shown`` of its first axis visible (and no legend)."""
    import numpy as np
    from matplotlib.colors import to_rgb

    axis = figure.axes[0]
    axis.get_legend().set_visible(False)
    for line in axis.get_lines():
        line.set_visible(line in shown)
    figure.canvas.draw()
    pixels = np.asarray(figure.canvas.buffer_rgba())[..., :3].astype(float) / 255
    return int((np.abs(pixels - np.array(to_rgb(colour))).max(axis=-1) < 0.1).sum())


def test_the_total_loss_is_drawn_over_the_policy_loss_it_nearly_equals() -> None:
    """The total loss runs almost on the policy loss: where they coincide,
    the total (dashed, on top, in its own colour) and the policy loss both
    keep at least a third of the pixels each has drawn alone."""
    import matplotlib.pyplot as plt

    rows = [{"generation": g, "loss_policy": loss, "loss_value": 0.4, "loss_total": loss} for g, loss in
            ((1, 6.0), (2, 5.5), (3, 5.2))]  # fmt: skip
    figures = report_figures(rows)
    figure = figures["loss.png"]
    lines = figure.axes[0].get_lines()
    assert [line.get_label() for line in lines] == ["loss_policy", "loss_value", "loss_total"]
    assert lines[2].get_linestyle() != "-" and lines[2].get_color() != lines[0].get_color()
    for line in (lines[0], lines[2]):
        others = [other for other in lines if other is not line]
        colour = line.get_color()
        alone = colour_pixels(figure, colour, [line]) - colour_pixels(figure, colour, [])
        seen = colour_pixels(figure, colour, lines) - colour_pixels(figure, colour, others)
        assert seen > alone / 3, f"{line.get_label()} hidden: {seen} of its {alone} pixels show"
    for open_figure in figures.values():
        plt.close(open_figure)


def test_dvc_plots_show_the_report_figures_offline(tmp_path: Path) -> None:
    """``dvc plots show`` embeds the report's PNGs (no script from a CDN
    needed) in a page that declares its charset; the PNGs are byte-stable,
    as a DVC output of a rerun must be."""
    rows = [{"generation": 1, "loss_total": 5.9, "elo_vs_best": 0.0, "score_vs_best": 0.5,
             "ladder0_elo": -190.8, "ladder0_score": 0.0},
            {"generation": 2, "loss_total": 5.7, "elo_vs_best": 35.0, "score_vs_best": 0.6,
             "ladder0_elo": -120.0, "ladder0_score": 0.25}]  # fmt: skip
    repo = tmp_path / "repo"
    (repo / "reports").mkdir(parents=True)
    shutil.copy(ROOT / "dvc.yaml", repo / "dvc.yaml")
    shutil.copy(ROOT / "reports" / "plots.html", repo / "reports" / "plots.html")
    write_report(rows, repo / "reports" / "metrics", repo / "reports" / "generations.json")
    figures = write_figures(rows, repo / "reports" / "plots")
    first = [path.read_bytes() for path in figures]
    assert [path.read_bytes() for path in write_figures(rows, repo / "reports" / "plots")] == first
    dvc(repo, "init", "--no-scm", "-q")
    shutil.copy(ROOT / ".dvc" / "config", repo / ".dvc" / "config")  # html_template
    dvc(repo, "plots", "show", "-o", str(tmp_path / "html"))
    page = (tmp_path / "html" / "index.html").read_text()
    assert '<meta charset="utf-8">' in page
    assert "<script" not in page  # nothing to fetch: the page is whole offline
    for name in ("loss", "elo"):
        assert f'<img src="static/workspace_reports_plots_{name}.png"' in page
        assert (tmp_path / "html" / "static" / f"workspace_reports_plots_{name}.png").read_bytes()


# ---------------------------------------------------------------------------
# dvc repro on a fresh copy: slow
# ---------------------------------------------------------------------------


def copy_checkout(target: Path) -> Path:
    """The files git sees in this checkout (tracked and untracked, not
    ignored, uncommitted edits included), committed to a new git repository,
    plus the built native core."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    for name in sorted(set(filter(None, listed.split("\0")))):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is left out
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    # The native core is a build output (git-ignored): bring the built module
    # along, as `pip install -e .` would have built it in a fresh clone.
    for built in (ROOT / "models").glob("_native*.so"):
        shutil.copy2(built, target / "models" / built.name)
    target.mkdir(parents=True, exist_ok=True)
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "checkout copy"]):
        subprocess.run(["git", *command], cwd=target, check=True, env=dvc_env())
    return target


def dvc_env() -> dict[str, str]:
    env = {
        **os.environ,
        # the stages run `python -m pipeline`: this interpreter's environment
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "RAY_ADDRESS": "local",  # a fresh local Ray per stage, never another user's cluster
        "RAY_AUTH_MODE": "disabled",
        "DVC_NO_ANALYTICS": "1",
        "GIT_AUTHOR_NAME": "zerochess test",
        "GIT_AUTHOR_EMAIL": "test@zerochess.invalid",
        "GIT_COMMITTER_NAME": "zerochess test",
        "GIT_COMMITTER_EMAIL": "test@zerochess.invalid",
    }
    env.pop("MLFLOW_TRACKING_URI", None)  # training logs into its own run folder
    return env


def dvc(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # DVC's per-repository state goes beside the copy, not to /var/tmp/dvc
    env = {**dvc_env(), "DVC_SITE_CACHE_DIR": str(repo.parent / "dvc-site-cache")}
    result = subprocess.run(
        [sys.executable, "-m", "dvc", *args], cwd=repo, capture_output=True, text=True, check=False,
        timeout=900, env=env,
    )  # fmt: skip
    assert result.returncode == 0, (
        f"dvc {' '.join(args)}:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    )
    return result


def set_param(path: Path, key: str, value: Any) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    *sections, last = key.split(".")
    node = data
    for section in sections:
        node = node[section]
    node[last] = value
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def changed_stages(repo: Path) -> set[str]:
    return set(json.loads(dvc(repo, "status", "--json").stdout or "{}"))


@pytest.mark.slow
def test_dvc_repro_runs_the_short_run_then_only_what_a_param_change_reaches(tmp_path: Path) -> None:
    """... and a second from-scratch copy writes the same dvc.lock."""
    repo = copy_checkout(tmp_path / "repo")
    twin = copy_checkout(tmp_path / "twin")
    first = dvc(repo, "repro")
    generations = dvc_spec()["vars"][0]["generations"]
    for key in [
        "init",
        *(f"{stage}@{gen}" for gen in generations for stage in ("selfplay", "train", "gate")),
    ]:
        assert f"Running stage '{key}'" in first.stdout

    run = repo / "runs" / "dvc"
    for key, item in generations.items():
        folder = run / key
        shards = sorted(path.name for path in (folder / "shards").glob("*.parquet"))
        assert shards and all(name.startswith(key) for name in shards)
        assert set(shards) <= set((folder / "window" / WINDOW_INDEX).read_text().split())
        gate = json.loads((folder / "gate" / "gate.json").read_text())
        winner = (
            folder / "train" / "net.pt" if gate["promote"] else run / item["previous"] / "best.pt"
        )
        assert (folder / "best.pt").read_bytes() == winner.read_bytes()
        metrics = json.loads((repo / "reports" / "metrics" / f"{key}.json").read_text())
        assert metrics["generation"] == item["generation"] and metrics["loss_total"] > 0
    last_window = (run / list(generations)[-1] / "window" / WINDOW_INDEX).read_text().split()
    assert len({name[:7] for name in last_window}) == len(generations)  # every generation's shards
    rows = json.loads((repo / "reports" / "generations.json").read_text())
    assert [row["generation"] for row in rows] == [
        item["generation"] for item in generations.values()
    ]
    shown = json.loads(dvc(repo, "metrics", "show", "--json").stdout)
    assert any("reports/metrics/gen0001.json" in json.dumps(value) for value in shown.values())

    assert "Data and pipelines are up to date" in dvc(repo, "status").stdout
    dvc(twin, "repro")
    assert (twin / "dvc.lock").read_text() == (repo / "dvc.lock").read_text()
    second = dvc(repo, "repro")
    assert "Running stage" not in second.stdout

    params, preset = repo / "params.yaml", repo / "presets" / "tiny.yaml"
    original_params, original_preset = params.read_text(), preset.read_text()
    train_params = yaml.safe_load(original_params)["train"]
    set_param(params, "train.learning_rate", train_params["learning_rate"] * 2)
    assert changed_stages(repo) == {f"train@{gen}" for gen in generations}
    params.write_text(original_params)
    set_param(params, "gating.sprt_elo1", 45.0)
    assert changed_stages(repo) == {f"gate@{gen}" for gen in generations}
    params.write_text(original_params)
    set_param(preset, "search.num_simulations", 12)
    assert changed_stages(repo) == {
        f"{stage}@{gen}" for gen in generations for stage in ("selfplay", "gate")
    }
    preset.write_text(original_preset)
    assert changed_stages(repo) == set()
