"""bench/gpu.py runs end to end (its CPU smoke version: no GPU in CI)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


def test_gpu_bench_smoke_runs_on_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("bench_gpu", ROOT / "bench" / "gpu.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    threads = torch.get_num_threads()
    try:
        module.main(["--smoke"])
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert "GPU figures unmeasured" in out
    assert "forward fp32" in out and "batch     8" in out
    assert "self-play (native, 1 threads, 8 games in flight, fp32)" in out
    assert "network-bound share" in out
