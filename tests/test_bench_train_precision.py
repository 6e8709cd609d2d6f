"""bench/train_precision.py runs end to end on a CPU, and refuses CUDA where there is none."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest
import torch


@pytest.fixture()
def bench(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("train_precision")  # it imports its folder's train.py: bench_script puts bench/ on the path


TINY = ["--steps", "4", "--warmup", "1", "--repeats", "1", "--every", "2", "--blocks", "1", "--filters", "8",
        "--batch", "16", "--precisions", "32-true"]  # fmt: skip


def test_the_precision_bench_prints_rate_and_loss_curve(capsys: pytest.CaptureFixture[str], bench: ModuleType) -> None:
    threads = torch.get_num_threads()
    try:
        bench.main([*TINY, "--accelerator", "auto"])
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    where = "cuda" if torch.cuda.is_available() else "cpu (native bf16:"
    assert "1x8 net, batch 16, 4 steps" in out and where in out
    assert "32-true" in out and "samples/s (x1.00)" in out and "loss curve" in out


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA present")
def test_cuda_is_refused_in_one_line_without_a_gpu(capsys: pytest.CaptureFixture[str], bench: ModuleType) -> None:
    with pytest.raises(SystemExit) as stopped:
        bench.main([*TINY, "--accelerator", "cuda"])
    assert stopped.value.code == 2
    assert "--accelerator cuda: no CUDA device here" in capsys.readouterr().err
