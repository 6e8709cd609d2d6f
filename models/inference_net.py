"""The network as inference runs it: batch norm folded, input scale folded,
optionally traced and frozen or compiled.

:func:`fold_batch_norm` returns a copy of an :class:`~models.net.AlphaZeroNet`
whose every ``ConvBN`` is one convolution with a bias (``w' = w * g / s``,
``b' = beta + (b - mean) * g / s`` with ``s = sqrt(var + eps)``); the ONNX
export (:mod:`pipeline.export`) writes that graph.  :func:`fold_for_inference`
also moves the per-plane input scale into the stem's weights, so a forward pass reads the raw
``uint8`` planes with one cast and no batch-norm pass over the activations.
The outputs equal the original network's within float32 rounding; the
original network is left untouched (training and checkpoints keep the
unfolded form).

:func:`compile_for_inference` then optionally turns that copy into a graph:

* ``jit``: ``torch.jit.trace`` + ``torch.jit.freeze`` (oneDNN fuses the
  convolutions with their ReLUs and adds on CPU); any batch size.
* ``inductor``: ``torch.compile`` with inductor's C++ backend, one graph per
  batch-size bucket (:data:`BUCKETS`): an input is zero-padded to the
  smallest bucket that holds it, so nothing recompiles mid-run.

A compilation that fails falls back to the folded eager network and says so
in :attr:`CompiledNet.mode` and :attr:`CompiledNet.fallback`.

A net with a WDL or a moves-left head (:func:`has_aux`) runs wrapped in
:class:`AuxOutputs`, whose forward adds the search's auxiliary outputs
``aux [B, 2]`` (the draw probability and the plies left) to the logits and
values; every compile mode (eager, jit, inductor, ONNX Runtime) runs that
wrapper the same way.
"""

from __future__ import annotations

import copy
import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from models.net import INPUT_PLANES, AlphaZeroNet, NetConfig
from models.net_heads import ConvBN, wdl_draw

__all__ = ["BUCKETS", "COMPILE_MODES", "AuxOutputs", "CompiledNet", "compile_for_inference", "fold_batch_norm",
           "fold_for_inference", "has_aux", "resolve_compile"]

log = logging.getLogger(__name__)

COMPILE_MODES = ("auto", "eager", "jit", "inductor", "onnxruntime")
"""``compile`` settings: ``auto`` (:func:`resolve_compile`), eager (folded),
traced and frozen, or inductor."""

BUCKETS = (8, 16, 32, 64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096)
"""Batch sizes inductor graphs are built for; a larger batch runs in chunks."""


def _float64(tensor: torch.Tensor | None, default: torch.Tensor) -> torch.Tensor:
    """``tensor`` detached as float64, or ``default`` when it is absent."""
    return default if tensor is None else tensor.detach().double()


def _folded_conv(conv: nn.Conv2d, bn: nn.BatchNorm2d) -> nn.Conv2d:
    """A convolution with bias computing ``bn(conv(x))`` in eval mode.

    ``W' = W * g / sqrt(var + eps)`` per output channel and
    ``b' = beta + (b - mean) * g / sqrt(var + eps)`` (``b = 0`` without
    bias, ``g = 1, beta = 0`` without affine parameters); worked out in
    float64 and stored in the conv's dtype.
    """
    weight = conv.weight.detach().double()
    ones = torch.ones(weight.shape[0], dtype=torch.float64, device=weight.device)
    gamma = _float64(bn.weight, ones)
    beta = _float64(bn.bias, 0 * ones)
    mean = _float64(bn.running_mean, 0 * ones)
    var = _float64(bn.running_var, ones)
    bias = _float64(conv.bias, 0 * ones)
    factor = gamma / torch.sqrt(var + bn.eps)
    folded = nn.Conv2d(
        conv.in_channels,
        conv.out_channels,
        conv.kernel_size,  # type: ignore[arg-type]
        stride=conv.stride,  # type: ignore[arg-type]
        padding=conv.padding,  # type: ignore[arg-type]
        dilation=conv.dilation,  # type: ignore[arg-type]
        groups=conv.groups,
        bias=True,
        padding_mode=conv.padding_mode,
        device=conv.weight.device,
        dtype=conv.weight.dtype,
    )
    with torch.no_grad():
        folded.weight.copy_((weight * factor[:, None, None, None]).contiguous())
        folded.bias.copy_(beta + (bias - mean) * factor)  # type: ignore[union-attr]
    return folded


def fold_batch_norm(net: AlphaZeroNet) -> AlphaZeroNet:
    """Return a copy of ``net`` with every :class:`~models.net_heads.ConvBN`'s batch
    norm folded into its convolution (the conv gains a bias, the BN becomes
    ``nn.Identity``).

    The folding uses the BN's running statistics, i.e. the net's eval-mode
    behaviour; the copy is in eval mode, in the standard (contiguous) memory
    format, and gives the eval-mode outputs of ``net`` up to float rounding.
    ``net`` itself is not changed.  The copy's state dict no longer fits
    :class:`~models.net.AlphaZeroNet` (it has no BN entries): it is for
    inference and export, not for checkpoints.

    Raises:
        TypeError: ``net`` is not an :class:`~models.net.AlphaZeroNet`.
    """
    if not isinstance(net, AlphaZeroNet):
        raise TypeError(f"fold_batch_norm expects an AlphaZeroNet, got {type(net).__name__}")
    folded = copy.deepcopy(net).eval()
    folded = folded.to(memory_format=torch.contiguous_format)
    for module in folded.modules():
        if isinstance(module, ConvBN) and isinstance(module.bn, nn.BatchNorm2d):
            module.conv = _folded_conv(module.conv, module.bn)
            module.bn = nn.Identity()  # type: ignore[assignment]
    return folded


def fold_for_inference(net: AlphaZeroNet) -> AlphaZeroNet:
    """An eval-mode copy of ``net`` with batch norm and the input scale folded
    into the convolutions (same device, dtype and memory format)."""
    folded = fold_batch_norm(net).to(memory_format=_format_of(next(net.parameters())))
    stem = folded.stem.conv
    with torch.no_grad():
        stem.weight.mul_(folded.input_scale.reshape(1, -1, 1, 1).to(stem.weight.dtype))
    folded.input_scale = torch.ones_like(folded.input_scale)
    folded.scale_input = False
    for parameter in folded.parameters():
        parameter.requires_grad_(False)
    return folded


def has_aux(config: NetConfig) -> bool:
    """Whether a net of ``config`` gives the search auxiliary outputs: it has a
    WDL value head (the draw probability) or a moves-left head."""
    return config.value_head == "wdl" or config.moves_left


class AuxOutputs(nn.Module):
    """``net`` with the search's auxiliary outputs: forward returns
    ``(logits [B, P], value [B], aux [B, 2])``, aux = (P(draw) of a WDL head
    or 0, the moves-left head's plies or 0)."""

    def __init__(self, net: AlphaZeroNet) -> None:
        super().__init__()
        self.net = net
        self.train(net.training)  # a folded net is in eval mode: so is the wrapper (jit's freeze)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        output = self.net.forward_heads(x, auxiliary=False)
        value = output.value
        draw = wdl_draw(output.wdl_logits) if output.wdl_logits is not None else torch.zeros_like(value)
        moves_left = output.moves_left if output.moves_left is not None else torch.zeros_like(value)
        return output.policy_logits, value, torch.stack([draw, moves_left], dim=1)


Forward = Callable[[torch.Tensor], tuple[torch.Tensor, ...]]


@dataclass
class CompiledNet:
    """A forward function over prepared float inputs and how it was built.

    Attributes:
        forward: ``(B, 119, 8, 8)`` float input -> (logits, values), or
            (logits, values, aux) for an :class:`AuxOutputs` net.
        mode: what runs: ``eager`` (eager), ``jit`` or ``inductor``.
        requested: the ``compile`` setting.
        fallback: why the requested mode is not the one running ('' if it is).
    """

    forward: Forward
    mode: str
    requested: str
    fallback: str = ""
    buckets: tuple[int, ...] = field(default=())

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.forward(x)


def resolve_compile(requested: str, device: torch.device) -> str:
    """``auto`` is ``jit`` on a CPU (measured with the 2x32 and 6x64 nets on
    an AVX2 CPU: +5-10% positions/s over the folded eager net, built in under
    a second, any batch size) and ``eager`` on CUDA (today's CUDA path); other
    settings are kept."""
    if requested not in COMPILE_MODES:
        raise ValueError(f"compile must be one of {', '.join(COMPILE_MODES)}, got {requested!r}")
    if requested != "auto":
        return requested
    return "jit" if device.type == "cpu" else "eager"


def compile_for_inference(net: AlphaZeroNet | AuxOutputs, mode: str, example: torch.Tensor) -> CompiledNet:
    """Build ``mode``'s forward for the folded ``net`` (or its :class:`AuxOutputs`);
    ``example`` is a prepared input (its dtype and memory format) used to
    trace or warm up."""
    requested = mode
    mode = resolve_compile(mode, example.device)
    if mode == "eager":
        return CompiledNet(net, "eager", requested)
    try:
        with torch.inference_mode():
            if mode == "jit":
                with warnings.catch_warnings():  # the input checks are Python: traced as constants
                    warnings.simplefilter("ignore", torch.jit.TracerWarning)
                    warnings.simplefilter("ignore", DeprecationWarning)  # torch 2.13 deprecates jit
                    traced = torch.jit.freeze(torch.jit.trace(net, example, check_trace=False))
                traced(example)
                return CompiledNet(traced, "jit", requested)
            if mode == "onnxruntime":
                return _onnxruntime(net, example, requested)
            return _inductor(net, example, requested)
    except Exception as error:  # noqa: BLE001 - any compiler failure falls back to eager
        text = str(error).strip()
        reason = f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"
        log.warning("compile=%s failed (%s); running the eager network", mode, reason)
        return CompiledNet(net, "eager", requested, fallback=reason)


def _inductor(net: AlphaZeroNet | AuxOutputs, example: torch.Tensor, requested: str) -> CompiledNet:
    import torch._dynamo  # noqa: PLC0415 - only when inductor is asked for

    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, len(BUCKETS) + 4)
    compiled = torch.compile(net, dynamic=False)

    def forward(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        size = x.shape[0]
        if size > BUCKETS[-1]:
            parts = [forward(chunk) for chunk in x.split(BUCKETS[-1])]
            return tuple(torch.cat([p[i] for p in parts]) for i in range(len(parts[0])))
        bucket = next(b for b in BUCKETS if b >= size)
        if bucket != size:
            pad = x.new_zeros((bucket - size, *x.shape[1:])).contiguous(memory_format=_format_of(x))
            x = torch.cat([x, pad]).contiguous(memory_format=_format_of(x))
        return tuple(output[:size] for output in compiled(x))

    forward(example)
    return CompiledNet(forward, "inductor", requested, buckets=BUCKETS)


ONNX_INPUT = "planes"
ONNX_OUTPUTS = ("policy", "value")
ONNX_AUX_OUTPUT = "aux"
"""The third output of an :class:`AuxOutputs` net run by ONNX Runtime."""


def onnx_bytes(net: AlphaZeroNet | AuxOutputs, opset: int = 17) -> bytes:
    """``net`` (CPU, float32, standard memory format) as a serialized ONNX
    model: input ``planes`` and outputs ``policy``, ``value`` (and ``aux``
    for an :class:`AuxOutputs` net), all with a dynamic ``batch`` axis;
    torch's TorchScript exporter (``dynamo=False``), which needs only the
    ``onnx`` package and works offline."""
    import io  # noqa: PLC0415

    example = torch.zeros(2, INPUT_PLANES, 8, 8)  # not 1: nothing specialised to a single position
    outputs = (*ONNX_OUTPUTS, ONNX_AUX_OUTPUT) if isinstance(net, AuxOutputs) else ONNX_OUTPUTS
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        # The exporter's deprecation notice, and tracer notes on the forward's
        # shape check (a Python bool, constant for these shapes).
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (example,), buffer, input_names=[ONNX_INPUT], output_names=list(outputs),
                          opset_version=opset, dynamo=False,
                          dynamic_axes={name: {0: "batch"} for name in (ONNX_INPUT, *outputs)})  # fmt: skip
    return buffer.getvalue()


def _onnxruntime(net: AlphaZeroNet | AuxOutputs, example: torch.Tensor, requested: str) -> CompiledNet:
    """The folded net exported to ONNX in memory and run by ONNX Runtime's CPU
    provider (graph optimisations on, ``torch.get_num_threads()`` intra-op
    threads that sleep instead of spinning between calls, so the search
    threads keep their cores).  Needs the ``onnxruntime`` and ``onnx``
    packages (``pip install 'zerochess[export]'``)."""
    import onnxruntime  # noqa: PLC0415 - optional dependency

    if example.device.type != "cpu":
        raise ValueError("compile=onnxruntime runs on the CPU only")
    model = onnx_bytes(copy.deepcopy(net).to(memory_format=torch.contiguous_format))
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])

    def forward(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        planes = x.float().contiguous().numpy()
        return tuple(torch.from_numpy(output) for output in session.run(None, {ONNX_INPUT: planes}))

    forward(example)
    return CompiledNet(forward, "onnxruntime", requested)


def _format_of(x: torch.Tensor) -> torch.memory_format:
    return torch.channels_last if x.is_contiguous(memory_format=torch.channels_last) else torch.contiguous_format
