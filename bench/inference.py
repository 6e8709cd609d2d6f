"""The network's raw forward under each inference setting, side by side.

For each net (the default 6x64 and the 2x32 of ``presets/cpu.yaml``) and
batch size, it times the forward of the uint8 planes to (logits, values):

* ``unfolded``: the training network itself, channels-last, float32, fed
  uint8 planes already in channels-last order (the evaluator's path before
  batch norm folding: the baseline of the ratios);
* every ``PRECISION:COMPILE`` of ``--variants`` through
  :class:`models.net_evaluator.NetEvaluator` (its folded network, compiled
  as asked, at its precision; ``bf16`` is skipped on a CPU without native
  bf16 unless ``--force-bf16``: emulated, it is 20-35x slower).

All settings take turns within each of ``--rounds`` rounds of ``--seconds``
each; a round's ratios are taken within the round (load from other processes
drifts into every setting of a round alike) and the medians over rounds are
printed, with the build time of each setting and the CPU.

    .venv/bin/python bench/inference.py [--rounds 7] [--seconds 1.5] [--batches 256 1024]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch

from models.net import AlphaZeroNet, NetConfig
from models.net_evaluator import NetEvaluator
from models.precision import cpu_bf16_support, cpu_int8_support
from pipeline.config import load_config

Forward = Callable[[np.ndarray], object]


def settings(net: AlphaZeroNet, variants: list[str], batch: int, force_bf16: bool) -> dict[str, tuple[Forward, float]]:
    """name -> (forward over uint8 planes, seconds to build)."""
    unfolded = net.to(memory_format=torch.channels_last)
    def before(planes: np.ndarray) -> object:  # as the evaluator did: uint8 to channels-last, then the net
        return unfolded(torch.from_numpy(planes).contiguous(memory_format=torch.channels_last))

    built: dict[str, tuple[Forward, float]] = {"unfolded": (before, 0.0)}
    for variant in variants:
        precision, _, compiled = variant.partition(":")
        if precision == "bf16" and cpu_bf16_support() is None and not force_bf16:
            print(f"  {variant}: skipped, no native bf16 on this CPU (--force-bf16 to time it anyway)")
            continue
        started = time.perf_counter()
        evaluator = NetEvaluator(net, precision=precision, compile=compiled or "eager", calibration_batch=batch)
        built[variant] = (evaluator._forward, time.perf_counter() - started)
        print(f"  {variant:<18} {evaluator.describe()}")
    return built


def measure(built: dict[str, tuple[Forward, float]], batch: int, rounds: int, seconds: float) -> dict[str, list[float]]:
    """Positions/s of every setting in every round."""
    planes = np.random.default_rng(0).integers(0, 2, (batch, 119, 8, 8), dtype=np.uint8)
    rates: dict[str, list[float]] = {name: [] for name in built}
    with torch.inference_mode():
        for forward, _ in built.values():
            forward(planes)
        for _ in range(rounds):
            for name, (forward, _) in built.items():
                count, started = 0, time.perf_counter()
                while time.perf_counter() - started < seconds:
                    forward(planes)
                    count += batch
                rates[name].append(count / (time.perf_counter() - started))
    return rates


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            return next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), "?")
    except OSError:
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=1.5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batches", type=int, nargs="+", default=[256])
    parser.add_argument("--nets", nargs="+", default=["2x32", "6x64"], choices=["2x32", "6x64"])
    parser.add_argument("--variants", nargs="+",
                        default=["fp32:eager", "fp32:jit", "fp32:inductor", "fp32:onnxruntime", "bf16:eager",
                                 "bf16:jit", "auto:auto"])  # fmt: skip
    parser.add_argument("--force-bf16", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"CPU: {cpu_name()}; native bf16: {cpu_bf16_support() or 'none'}; int8 VNNI: {cpu_int8_support() or 'none'}; "
          f"torch {torch.__version__}, {args.threads} threads; median of {args.rounds} rounds x {args.seconds} s")
    nets = {"6x64": NetConfig.preset("cpu"), "2x32": load_config(None, preset="cpu").net}
    for key in args.nets:
        for batch in args.batches:
            torch.manual_seed(0)
            net = AlphaZeroNet(nets[key]).eval()
            print(f"\n{key} net, batch {batch}")
            built = settings(net, args.variants, batch, args.force_bf16)
            rates = measure(built, batch, args.rounds, args.seconds)
            for name, values in rates.items():
                ratio = statistics.median(v / base for v, base in zip(values, rates["unfolded"]))
                print(f"  {name:<18} {statistics.median(values):>9,.0f} positions/s  x{ratio:.2f} of unfolded "
                      f"(built in {built[name][1]:.1f} s)")


if __name__ == "__main__":
    main()
