"""bench/train_precision.py runs end to end on a CPU, and refuses CUDA where there is none."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


def load_bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(ROOT / "bench"))  # the bench imports its folder's train.py
    spec = importlib.util.spec_from_file_location("bench_train_precision", ROOT / "bench" / "train_precision.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TINY = ["--steps", "4", "--warmup", "1", "--repeats", "1", "--every", "2", "--blocks", "1", "--filters", "8",
        "--batch", "16", "--precisions", "32-true"]  # fmt: skip


def test_the_precision_bench_prints_rate_and_loss_curve(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    threads = torch.get_num_threads()
    try:
        load_bench(monkeypatch).main([*TINY, "--accelerator", "auto"])
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    where = "cuda" if torch.cuda.is_available() else "cpu (native bf16:"
    assert "1x8 net, batch 16, 4 steps" in out and where in out
    assert "32-true" in out and "samples/s (x1.00)" in out and "loss curve" in out


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA present")
def test_cuda_is_refused_in_one_line_without_a_gpu(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SystemExit) as stopped:
        load_bench(monkeypatch).main([*TINY, "--accelerator", "cuda"])
    assert stopped.value.code == 2
    assert "--accelerator cuda: no CUDA device here" in capsys.readouterr().err
