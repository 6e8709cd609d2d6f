"""The configuration error, and the checks every parameter section uses to raise it.

Every section's ``__post_init__`` (``selfplay``, ``train``, ``supervised``,
``gating``, ``run``, ``demo``) validates its values with these helpers, so a
bad value reads the same everywhere: ``SECTION.KEY must be WHAT, got VALUE``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any


class ConfigError(ValueError):
    """A bad parameter: the message names the file, the dotted key and the value."""


PRECISIONS = ("auto", "fp32", "bf16")
"""``models.precision.PRECISIONS``, repeated so config loading imports no torch."""

COMPILE_MODES = ("auto", "eager", "jit", "inductor", "onnxruntime")
"""``models.inference_net.COMPILE_MODES``, repeated for the same reason."""


def require(key: str, value: object, ok: bool, what: str) -> None:
    """Raise ``KEY must be WHAT, got VALUE`` (a :class:`ConfigError`) unless ``ok``."""
    if not ok:
        raise ConfigError(f"{key} must be {what}, got {value!r}")


def check_each(section: str, config: object, names: Iterable[str], ok: Callable[[Any], bool], what: str) -> None:
    """:func:`require` ``ok(value)`` of each attribute ``names`` of ``config``,
    naming it ``SECTION.NAME``."""
    for name in names:
        value = getattr(config, name)
        require(f"{section}.{name}", value, ok(value), what)


def check_at_least(section: str, config: object, names: Iterable[str], minimum: int) -> None:
    """Each attribute ``names`` of ``config`` is ``>= minimum``
    (``SECTION.NAME must be >= MINIMUM, got VALUE``)."""
    check_each(section, config, names, lambda value: value >= minimum, f">= {minimum}")


def require_one_of(key: str, value: object, options: Sequence[str]) -> None:
    """``value`` is one of ``options`` (``KEY must be one of A, B, got VALUE``)."""
    require(key, value, value in options, f"one of {', '.join(options)}")


def check_inference(section: str, precision: str, compile_mode: str) -> None:
    """Raise a :class:`ConfigError` naming ``SECTION.precision`` or
    ``SECTION.compile`` and the allowed values when either is unknown."""
    require_one_of(f"{section}.precision", precision, PRECISIONS)
    require_one_of(f"{section}.compile", compile_mode, COMPILE_MODES)
