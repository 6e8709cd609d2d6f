"""The number format of the network's inference: detection and calibration.

``precision`` (``selfplay.precision``, ``gating.precision``, the UCI option
``Precision``, ``analyse --precision``) takes one of :data:`PRECISIONS`:

* ``fp32``: float32 everywhere (what the search equivalence tests and DVC's
  reproducible ``dvc.lock`` pin: reduced precision differs from CPU to CPU).
* ``bf16``: the forward runs under bfloat16 autocast.  On a CPU without a
  native bf16 unit it still runs, slowly (20-35x slower measured on AVX2
  machines), with a warning naming the missing instruction sets.
* ``auto``: on CUDA, bf16 autocast (the tensor cores' format).  On a CPU, bf16
  only where the CPU computes it natively (AMX-BF16 or AVX512-BF16, as
  detected by PyTorch's cpuinfo, never guessed from the model name) *and* a
  start-up calibration of a few batches shows it faster than float32;
  float32 elsewhere.

:func:`choose_precision` returns a :class:`PrecisionChoice` that says what was
chosen and why, for the status line, the actors' logs and MLflow.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

__all__ = [
    "PRECISIONS",
    "PrecisionChoice",
    "PrecisionError",
    "check_precision",
    "choose_precision",
    "cpu_bf16_support",
    "cpu_int8_support",
]

log = logging.getLogger(__name__)

PRECISIONS = ("auto", "fp32", "bf16")
"""The values a ``precision`` setting accepts."""

_DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


class PrecisionError(ValueError):
    """A precision setting names no known format."""


def check_precision(key: str, value: object) -> str:
    """``value`` if it is one of :data:`PRECISIONS`; else an error naming ``key``."""
    if value not in PRECISIONS:
        raise PrecisionError(f"{key} must be one of {', '.join(PRECISIONS)}, got {value!r}")
    return str(value)


def _cpu_flag(name: str) -> bool:
    probe = getattr(torch.cpu, name, None)
    try:
        return bool(probe()) if probe is not None else False
    except RuntimeError:  # pragma: no cover - cpuinfo failed to initialise
        return False


def cpu_bf16_support() -> str | None:
    """The instruction set with which this CPU computes bf16 natively
    (``"AMX-BF16"`` or ``"AVX512-BF16"``), or None (e.g. an AVX2-only CPU)."""
    if _cpu_flag("_is_amx_tile_supported"):
        return "AMX-BF16"
    if _cpu_flag("_is_avx512_bf16_supported"):
        return "AVX512-BF16"
    return None


def cpu_int8_support() -> str | None:
    """The int8 dot-product instruction set (``"AVX512-VNNI"``), or None."""
    return "AVX512-VNNI" if _cpu_flag("_is_vnni_supported") else None


@dataclass(frozen=True)
class PrecisionChoice:
    """What a role's network computes in, and why.

    Attributes:
        requested: the setting (``auto``, ``fp32`` or ``bf16``).
        name: what runs: ``fp32``, ``bf16`` or ``fp16`` (CUDA autocast).
        device: ``cpu`` or ``cuda``.
        reason: one line for logs and the status screen, e.g.
            ``"auto on cpu: no AMX-BF16/AVX512-BF16 (AVX2) -> fp32"``.
        calibration: positions/s measured at start-up per candidate
            (empty when nothing was measured).
    """

    requested: str
    name: str
    device: str
    reason: str
    calibration: tuple[tuple[str, float], ...] = ()

    @property
    def autocast_dtype(self) -> torch.dtype | None:
        """The autocast dtype of the forward, None for float32."""
        return _DTYPES[self.name]


Forward = Callable[[torch.dtype | None], None]
"""One forward pass of a calibration batch in the given autocast dtype."""


def choose_precision(
    requested: str,
    device: torch.device | str,
    forward: Forward | None = None,
    cuda_autocast: str = "bf16",
    rounds: int = 3,
) -> PrecisionChoice:
    """Resolve ``requested`` on ``device``.

    Args:
        requested: one of :data:`PRECISIONS`.
        device: where the network runs.
        forward: runs one calibration batch under an autocast dtype; needed
            for ``auto`` on a CPU with native bf16 (else fp32 is kept).
        cuda_autocast: what ``auto`` means on CUDA (``bf16``, ``fp16``, or
            ``fp32`` for no autocast).
        rounds: calibration rounds; fp32 and bf16 alternate within a round and
            each side's median over the rounds decides.
    """
    check_precision("precision", requested)
    kind = torch.device(device).type
    if kind == "cuda":
        name = cuda_autocast if requested == "auto" else requested
        return PrecisionChoice(requested, name, kind, f"{requested} on cuda -> {name}")
    if kind != "cpu":
        return PrecisionChoice(requested, "fp32", kind, f"{requested} on {kind} -> fp32")
    native = cpu_bf16_support()
    if requested == "fp32":
        return PrecisionChoice(requested, "fp32", kind, "fp32 on cpu (set)")
    if requested == "bf16":
        if native is None:
            log.warning(
                "precision bf16 on a CPU without AMX-BF16 or AVX512-BF16 (%s): bf16 runs emulated, "
                "measured 20-35x slower than fp32 on such CPUs", _cpu_capability())
        return PrecisionChoice(requested, "bf16", kind, f"bf16 on cpu (set; native: {native or 'none'})")
    if native is None:
        return PrecisionChoice(requested, "fp32", kind,
                               f"auto on cpu: no AMX-BF16/AVX512-BF16 ({_cpu_capability()}) -> fp32")  # fmt: skip
    if forward is None:
        return PrecisionChoice(requested, "fp32", kind, f"auto on cpu: {native}, not calibrated -> fp32")
    rates = calibrate(forward, rounds)
    name = "bf16" if rates["bf16"] > rates["fp32"] else "fp32"
    reason = (f"auto on cpu: {native}, calibration bf16 {rates['bf16']:.0f} vs fp32 "
              f"{rates['fp32']:.0f} batches/s -> {name}")  # fmt: skip
    return PrecisionChoice(requested, name, kind, reason, (("fp32", rates["fp32"]), ("bf16", rates["bf16"])))


def calibrate(forward: Forward, rounds: int = 3, batches: int = 2) -> dict[str, float]:
    """Median batches/s of ``forward`` in fp32 and in bf16, alternating (one
    warm-up batch each first, so one-off set-up is not timed)."""
    samples: dict[str, list[float]] = {"fp32": [], "bf16": []}
    for name in samples:
        forward(_DTYPES[name])
    for _ in range(max(1, rounds)):
        for name, rates in samples.items():
            started = time.perf_counter()
            for _ in range(batches):
                forward(_DTYPES[name])
            rates.append(batches / max(time.perf_counter() - started, 1e-9))
    return {name: sorted(rates)[len(rates) // 2] for name, rates in samples.items()}


def _cpu_capability() -> str:
    try:
        return str(torch.backends.cpu.get_cpu_capability())
    except (AttributeError, RuntimeError):  # pragma: no cover - very old torch
        return "unknown"
