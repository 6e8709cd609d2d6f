"""A wheel carries what the package needs: ``pip install .`` (not editable), then
``zerochess run --preset tiny`` from another folder, with no checkout on the path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT


def _run(command: list[str], cwd: Path, env: dict[str, str], timeout: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.mark.slow
def test_an_installed_wheel_runs_the_tiny_loop_from_another_folder(tmp_path: Path) -> None:
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "ZEROCHESS_BUILD_JOBS": "2"}
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"),
                  str(ROOT)], tmp_path, env, 1200)  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    wheel = next((tmp_path / "dist").glob("zerochess-*.whl"))
    target = tmp_path / "site"
    installed = _run([sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(wheel)],
                     tmp_path, env, 600)  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]
    assert (target / "pipeline" / "_shipped" / "presets" / "tiny.yaml").is_file()
    assert (target / "pipeline" / "_shipped" / "data" / "openings.epd").is_file()
    assert (target / "pipeline" / "_shipped" / "params.yaml").read_text() == (ROOT / "params.yaml").read_text()

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    probe = ("import pipeline, zerochess, models; "
             "print(pipeline.__file__, zerochess.__file__, models.__file__, sep='\\n')")  # fmt: skip
    env = {**env, "PYTHONPATH": str(target), "RAY_AUTH_MODE": "disabled"}
    where = _run([sys.executable, "-c", probe], elsewhere, env, 120)
    assert where.returncode == 0 and all(line.startswith(str(target)) for line in where.stdout.split()), where
    run = _run([sys.executable, "-m", "zerochess", "run", "--preset", "tiny", "--out", "runs/tiny",
                "--no-live", "--set", "run.generations=1"], elsewhere, env, 1200)  # fmt: skip  (the shipped params.yaml)
    assert run.returncode == 0, run.stderr[-3000:]
    assert (elsewhere / "runs" / "tiny" / "ledger.jsonl").is_file()
