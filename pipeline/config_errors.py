"""The configuration error, importable by every module that declares parameters."""


class ConfigError(ValueError):
    """A bad parameter: the message names the file, the dotted key and the value."""


PRECISIONS = ("auto", "fp32", "bf16")
"""``models.precision.PRECISIONS``, repeated so config loading imports no torch."""

COMPILE_MODES = ("auto", "eager", "jit", "inductor", "onnxruntime")
"""``models.inference_net.COMPILE_MODES``, repeated for the same reason."""


def check_inference(section: str, precision: str, compile_mode: str) -> None:
    """Raise a :class:`ConfigError` naming ``SECTION.precision`` or
    ``SECTION.compile`` and the allowed values when either is unknown."""
    if precision not in PRECISIONS:
        raise ConfigError(f"{section}.precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if compile_mode not in COMPILE_MODES:
        raise ConfigError(f"{section}.compile must be one of {', '.join(COMPILE_MODES)}, got {compile_mode!r}")
