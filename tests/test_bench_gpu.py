"""bench/gpu.py runs end to end (its CPU smoke version: no GPU in CI)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest
import torch


def test_gpu_bench_smoke_runs_on_cpu(capsys: pytest.CaptureFixture[str],
                                     bench_script: Callable[[str], ModuleType]) -> None:  # fmt: skip
    module = bench_script("gpu")
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
