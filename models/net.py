"""AlphaZero-style residual policy/value network for chess.

The network reads the 119 AlphaZero input planes (``(B, 119, 8, 8)``, raw
``uint8`` values as produced by the encoder) and returns policy logits and a
scalar value per position:

* policy: 73 move planes x 8 x 8 squares flattened C-order to 4672 logits
  (``index = plane * 64 + rank * 8 + file``, same square layout as the input
  planes), or, for the ``"lc0_1858"`` encoding, the 1858 logits gathered from
  those 4672 by a fixed index vector;
* value: in ``[-1, 1]`` from the side to move's perspective, shape ``(B,)``:
  the ``tanh`` output of the scalar head, or ``P(win) - P(loss)`` of the
  win/draw/loss head (``value_head: wdl``), whose three logits
  :meth:`AlphaZeroNet.forward_heads` returns for training, beside the
  moves-left head's plies left (``moves_left: true``).

The heads and the conv+BN unit live in :mod:`models.net_heads`.

This module is pure: it does no file I/O, reads no environment, prints
nothing. Serialisation to disk lives in ``pipeline.checkpoint``; here we only
build and validate plain in-memory state dictionaries.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from models.net_heads import (
    VALUE_HEADS,
    ConvBN,
    MovesLeftHead,
    NetOutput,
    PolicyHead,
    ValueHead,
    head_mismatches,
    wdl_value,
)

__all__ = [
    "NET_STATE_FORMAT",
    "INPUT_PLANES",
    "POLICY_PLANES",
    "POLICY_SIZES",
    "MOVE_COUNT_PLANE",
    "MOVE_COUNT_SCALE",
    "NO_PROGRESS_PLANE",
    "NO_PROGRESS_SCALE",
    "PRESETS",
    "VALUE_HEADS",
    "NetConfig",
    "NetOutput",
    "AlphaZeroNet",
    "NetStateError",
    "ArchitectureMismatchError",
    "net_state",
    "config_from_state",
    "net_from_state",
    "load_weights_into",
    "pick_device",
    "count_parameters",
    "wdl_value",
]

NET_STATE_FORMAT = "zerochess-net/1"
"""Value of the ``"format"`` key of dictionaries built by :func:`net_state`."""

INPUT_PLANES = 119
"""Number of input planes (8 history steps x 14 + 7 constant planes)."""

POLICY_PLANES = 73
"""Move-type planes of the AlphaZero policy (56 queen, 8 knight, 9 underpromotion)."""

POLICY_SIZES: dict[str, int] = {"az4672": POLICY_PLANES * 64, "lc0_1858": 1858}
"""Number of policy logits for each supported ``policy_encoding``."""

MOVE_COUNT_PLANE = 113
"""Input plane holding the ply count (capped at 255 by the encoder)."""

MOVE_COUNT_SCALE = 1.0 / 255.0
"""Multiplier for :data:`MOVE_COUNT_PLANE`: maps the capped ply count to [0, 1]."""

NO_PROGRESS_PLANE = 118
"""Input plane holding the half-move (no-progress) clock (capped at 255)."""

NO_PROGRESS_SCALE = 1.0 / 100.0
"""Multiplier for :data:`NO_PROGRESS_PLANE`: 1.0 at the 50-move-rule threshold (100 plies)."""

_AZ_SIZE = POLICY_SIZES["az4672"]


# --------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------


def _check_int(name: str, value: object, minimum: int) -> None:
    """Raise ``ValueError`` unless ``value`` is a (non-bool) int >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"NetConfig.{name} must be an int >= {minimum}, got {value!r}")


@dataclass(frozen=True)
class NetConfig:
    """Architecture of an :class:`AlphaZeroNet`."""

    blocks: int = 6
    """Number of residual blocks in the trunk (>= 1)."""
    filters: int = 64
    """Channels of the stem, every residual block and the policy head's 3x3 convolution (>= 1)."""
    se_ratio: int = 0
    """Squeeze-excitation reduction ratio. ``0`` disables SE; otherwise every block gets an
    lc0-style SE unit with ``filters // se_ratio`` hidden units that outputs a per-channel
    sigmoid scale and additive bias (needs ``se_ratio <= filters``)."""
    policy_encoding: str = "az4672"
    """``"az4672"`` (73x8x8 logits, flattened) or ``"lc0_1858"`` (1858 logits gathered from the
    4672 by the index vector of ``models.policy.get_policy_map("lc0_1858")``)."""
    value_channels: int = 32
    """Output channels of the value head's 1x1 convolution (AlphaZero: 1, lc0: 32)."""
    value_hidden: int = 256
    """Width of the value head's hidden fully connected layer (AlphaZero: 256)."""
    value_head: str = "scalar"
    """``"scalar"`` (AlphaZero: one ``tanh`` value) or ``"wdl"`` (lc0: three logits,
    win/draw/loss for the side to move, trained with cross-entropy; the value the search sees is
    ``W - L``)."""
    soft_policy: bool = False
    """KataGo's auxiliary soft-policy output: a second set of policy logits trained on the policy
    target raised to 1/4 and renormalised (``train.soft_policy_weight``); the search never reads
    it."""
    moves_left: bool = False
    """add lc0's moves-left head (plies to the game's end, its value and hidden sizes those of
    the value head); the search can use it (``search.moves_left_*``)."""

    def __post_init__(self) -> None:
        """Validate every field; errors name the field and the bad value."""
        _check_int("blocks", self.blocks, 1)
        _check_int("filters", self.filters, 1)
        _check_int("se_ratio", self.se_ratio, 0)
        if self.se_ratio > self.filters:
            raise ValueError(
                f"NetConfig.se_ratio must be <= filters ({self.filters}) so the SE "
                f"unit has at least one hidden unit, got {self.se_ratio!r}"
            )
        _check_int("value_channels", self.value_channels, 1)
        _check_int("value_hidden", self.value_hidden, 1)
        if self.policy_encoding not in POLICY_SIZES:
            raise ValueError(
                f"NetConfig.policy_encoding must be one of {sorted(POLICY_SIZES)}, "
                f"got {self.policy_encoding!r}"
            )
        if not isinstance(self.soft_policy, bool):
            raise ValueError(f"NetConfig.soft_policy must be a bool, got {self.soft_policy!r}")
        if self.value_head not in VALUE_HEADS:
            raise ValueError(
                f"NetConfig.value_head must be one of {list(VALUE_HEADS)}, got {self.value_head!r}"
            )
        if not isinstance(self.moves_left, bool):
            raise ValueError(f"NetConfig.moves_left must be true or false, got {self.moves_left!r}")

    @property
    def policy_size(self) -> int:
        """Number of policy logits the network outputs."""
        return POLICY_SIZES[self.policy_encoding]

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a plain ``dict`` (JSON/YAML friendly)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NetConfig:
        """Build a config from a mapping; missing keys take their defaults.

        Raises:
            ValueError: ``data`` is not a mapping, has unknown keys (all are
                named) or holds an invalid value.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"NetConfig.from_dict expects a mapping, got {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(str(k) for k in data if k not in known)
        if unknown:
            raise ValueError(f"unknown NetConfig keys {unknown}; known keys are {sorted(known)}")
        return cls(**dict(data))

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> NetConfig:
        """Return the named preset from :data:`PRESETS`, with field overrides.

        Raises:
            ValueError: unknown preset name, or an invalid/unknown override.
        """
        if name not in PRESETS:
            raise ValueError(
                f"unknown NetConfig preset {name!r}; known presets are {sorted(PRESETS)}"
            )
        return cls.from_dict({**PRESETS[name].to_dict(), **overrides})


PRESETS: dict[str, NetConfig] = {
    # Unit tests and smoke runs: ~60k parameters.
    "tiny": NetConfig(blocks=2, filters=16, value_channels=8, value_hidden=64),
    # CPU self-play/training default: ~1.1M parameters.
    "cpu": NetConfig(blocks=6, filters=64),
    # AlphaZero paper network (20 x 256, 1-channel value conv, 256 hidden).
    "paper": NetConfig(blocks=20, filters=256, value_channels=1, value_hidden=256),
}
"""Named configurations; use :meth:`NetConfig.preset` to get one with overrides."""


# --------------------------------------------------------------------------
# Network modules
# --------------------------------------------------------------------------


class SqueezeExcitation(nn.Module):
    """lc0-style SE unit: global average pool -> FC -> ReLU -> FC -> (scale, bias).

    The output is ``sigmoid(w) * x + b`` with per-channel ``w`` and ``b``.
    """

    def __init__(self, channels: int, hidden: int) -> None:
        """Create the two fully connected layers (``channels -> hidden -> 2*channels``)."""
        super().__init__()
        self.fc1 = nn.Linear(channels, hidden)
        self.fc2 = nn.Linear(hidden, 2 * channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Rescale and shift the channels of ``x`` from its global statistics."""
        pooled = x.mean(dim=(2, 3))
        gamma, beta = self.fc2(F.relu(self.fc1(pooled))).chunk(2, dim=1)
        return torch.sigmoid(gamma)[:, :, None, None] * x + beta[:, :, None, None]


class ResidualBlock(nn.Module):
    """Two 3x3 conv+BN layers, optional SE, skip added before the final ReLU."""

    def __init__(self, filters: int, se_ratio: int) -> None:
        """Create a block with ``filters`` channels; ``se_ratio == 0`` means no SE."""
        super().__init__()
        self.conv1 = ConvBN(filters, filters, 3)
        self.conv2 = ConvBN(filters, filters, 3)
        self.se = SqueezeExcitation(filters, filters // se_ratio) if se_ratio else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Return ``relu(x + se(bn2(conv2(relu(bn1(conv1(x)))))))``."""
        out = self.conv2(F.relu(self.conv1(x)))
        if self.se is not None:
            out = self.se(out)
        return F.relu(out + x)


def _input_scale() -> torch.Tensor:
    """Per-plane multipliers ``(1, 119, 1, 1)``: 1 except the two count planes."""
    scale = torch.ones(1, INPUT_PLANES, 1, 1)
    scale[0, MOVE_COUNT_PLANE] = MOVE_COUNT_SCALE
    scale[0, NO_PROGRESS_PLANE] = NO_PROGRESS_SCALE
    return scale


def _gather_index(encoding: str) -> torch.Tensor | None:
    """Return the int64 index vector selecting ``encoding``'s logits from the 4672.

    ``"az4672"`` is the network's native layout and needs no index (``None``);
    other encodings come from ``models.policy.get_policy_map`` (imported
    lazily so the default encoding works without that module).

    Raises:
        ValueError: the policy map's ``gather_index`` is missing or malformed.
    """
    if encoding == "az4672":
        return None
    from models.policy import get_policy_map  # noqa: PLC0415 - optional dependency

    raw = getattr(get_policy_map(encoding), "gather_index", None)
    if raw is None:
        raise ValueError(f"policy map for {encoding!r} has no gather_index")
    index = torch.from_numpy(np.array(raw, dtype=np.int64))  # copy: source may be read-only
    expected = POLICY_SIZES[encoding]
    if index.shape != (expected,):
        raise ValueError(
            f"gather_index for {encoding!r} must have shape ({expected},), got {tuple(index.shape)}"
        )
    if int(index.min()) < 0 or int(index.max()) >= _AZ_SIZE or index.unique().numel() != expected:
        raise ValueError(
            f"gather_index for {encoding!r} must hold {expected} distinct values in [0, {_AZ_SIZE})"
        )
    return index


class AlphaZeroNet(nn.Module):
    """Residual policy/value network (AlphaZero layout, optional lc0 SE units).

    ``forward`` accepts the raw planes (``uint8`` or any numeric dtype, *not*
    pre-scaled): it casts them to the network's dtype and device and
    multiplies plane :data:`MOVE_COUNT_PLANE` by :data:`MOVE_COUNT_SCALE` and
    plane :data:`NO_PROGRESS_PLANE` by :data:`NO_PROGRESS_SCALE` (buffer
    ``input_scale``, not saved in the state dict). Works unchanged after
    ``net.to(memory_format=torch.channels_last)``; the input is then converted
    to channels-last too.

    Buffers ``input_scale`` and ``policy_gather`` (lc0_1858 only) are derived
    from constants/config and are non-persistent, so the state dicts of the
    two policy encodings are interchangeable.
    """

    policy_gather: torch.Tensor | None

    def __init__(self, config: NetConfig | None = None) -> None:
        """Build the network for ``config`` (default :class:`NetConfig`)."""
        super().__init__()
        self.config = config if config is not None else NetConfig()
        cfg = self.config
        self.register_buffer("input_scale", _input_scale(), persistent=False)
        self.scale_input = True  # False once the scale is folded into the stem (models.inference_net)
        self.register_buffer("policy_gather", _gather_index(cfg.policy_encoding), persistent=False)
        self.stem = ConvBN(INPUT_PLANES, cfg.filters, 3)
        self.blocks = nn.Sequential(
            *(ResidualBlock(cfg.filters, cfg.se_ratio) for _ in range(cfg.blocks))
        )
        self.policy_head = PolicyHead(cfg.filters, POLICY_PLANES, soft=cfg.soft_policy)
        self.value_head = ValueHead(
            cfg.filters, cfg.value_channels, cfg.value_hidden, cfg.value_head
        )
        self.moves_left_head = (
            MovesLeftHead(cfg.filters, cfg.value_channels, cfg.value_hidden) if cfg.moves_left else None
        )

    @property
    def policy_size(self) -> int:
        """Number of policy logits per position."""
        return self.config.policy_size

    def _prepare_input(self, planes: torch.Tensor | np.ndarray) -> torch.Tensor:
        """Validate the shape, cast, scale the count planes and match memory format."""
        x = torch.as_tensor(planes)
        if x.dim() != 4 or tuple(x.shape[1:]) != (INPUT_PLANES, 8, 8):
            raise ValueError(
                f"AlphaZeroNet expects input of shape (B, {INPUT_PLANES}, 8, 8), "
                f"got {tuple(x.shape)}"
            )
        scale = self.input_scale
        x = x.to(device=scale.device, dtype=scale.dtype)
        if self.scale_input:
            x = x * scale
        if self.stem.conv.weight.is_contiguous(memory_format=torch.channels_last):
            x = x.contiguous(memory_format=torch.channels_last)
        return x

    def forward_heads(self, planes: torch.Tensor | np.ndarray, auxiliary: bool = True) -> NetOutput:
        """Return the policy logits, the value, (WDL head) the win/draw/loss
        logits, (moves-left head) the plies left and, with ``auxiliary``, the
        outputs only training reads (the soft-policy logits).

        Raises:
            ValueError: input is not ``(B, 119, 8, 8)``.
        """
        trunk = self.blocks(F.relu(self.stem(self._prepare_input(planes))))
        if auxiliary:
            logits, soft = self.policy_head.forward_both(trunk)
        else:
            logits, soft = self.policy_head(trunk), None
        logits, soft = self._gather(logits), self._gather(soft)
        head = self.value_head(trunk)
        moves_left = self.moves_left_head(trunk) if self.moves_left_head is not None else None
        if self.config.value_head == "wdl":
            return NetOutput(logits, wdl_value(head), head, moves_left, soft)
        return NetOutput(logits, head, None, moves_left, soft)

    def _gather(self, logits: torch.Tensor | None) -> torch.Tensor | None:
        """The encoding's logits out of the 4672 (lc0_1858), else ``logits``."""
        if logits is None or self.policy_gather is None:
            return logits
        return logits.index_select(1, self.policy_gather)

    def forward(self, planes: torch.Tensor | np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """Return ``(policy_logits [B, policy_size], value [B])`` for raw input planes
        (a WDL head's value is ``P(win) - P(loss)``).

        Raises:
            ValueError: input is not ``(B, 119, 8, 8)``.
        """
        output = self.forward_heads(planes, auxiliary=False)
        return output.policy_logits, output.value


# --------------------------------------------------------------------------
# In-memory state helpers (no file I/O)
# --------------------------------------------------------------------------


class NetStateError(ValueError):
    """A net state dictionary is malformed (wrong format key, bad config, ...)."""


class ArchitectureMismatchError(ValueError):
    """A state dict does not fit a network's architecture.

    Attributes:
        mismatches: One line per offending parameter, e.g.
            ``"stem.conv.weight: checkpoint (64, 119, 3, 3) vs model (16, 119, 3, 3)"``.
        source: Where the weights came from (e.g. a checkpoint path), or ``None``.
    """

    MAX_LISTED = 8
    """How many mismatching parameters the message lists before summarising."""

    def __init__(self, mismatches: Sequence[str], source: str | None = None) -> None:
        """Build the message from the mismatch lines and optional source."""
        self.mismatches = tuple(mismatches)
        self.source = source
        shown = list(self.mismatches[: self.MAX_LISTED])
        hidden = len(self.mismatches) - len(shown)
        if hidden:
            shown.append(f"... and {hidden} more")
        origin = f"{source}: " if source else ""
        super().__init__(
            f"{origin}checkpoint weights do not match the model architecture "
            f"({len(self.mismatches)} mismatches): " + "; ".join(shown)
        )


def _unwrap(net: nn.Module) -> AlphaZeroNet:
    """Return the :class:`AlphaZeroNet` inside ``torch.compile``/DataParallel wrappers."""
    inner: object = net
    for _ in range(4):
        if isinstance(inner, AlphaZeroNet):
            return inner
        wrapped = getattr(inner, "_orig_mod", None)
        inner = wrapped if wrapped is not None else getattr(inner, "module", None)
    raise TypeError(f"expected an AlphaZeroNet (possibly wrapped), got {type(net).__name__}")


def net_state(net: nn.Module) -> dict[str, Any]:
    """Return ``{"format", "config", "state_dict"}`` describing ``net`` (tensors are not copied)."""
    model = _unwrap(net)
    return {
        "format": NET_STATE_FORMAT,
        "config": model.config.to_dict(),
        "state_dict": model.state_dict(),
    }


def config_from_state(state: Mapping[str, Any]) -> NetConfig:
    """Validate the format key of a :func:`net_state` dict and return its config.

    Raises:
        NetStateError: not a mapping, wrong/missing format, or invalid config.
    """
    if not isinstance(state, Mapping):
        raise NetStateError(f"net state must be a mapping, got {type(state).__name__}")
    fmt = state.get("format")
    if fmt != NET_STATE_FORMAT:
        raise NetStateError(f"net state format must be {NET_STATE_FORMAT!r}, got {fmt!r}")
    try:
        return NetConfig.from_dict(state.get("config"))  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise NetStateError(f"invalid config in net state: {exc}") from exc


def _shape(tensor: torch.Tensor) -> tuple[int, ...]:
    """Return the shape of ``tensor`` as a plain tuple."""
    return tuple(tensor.shape)


def _state_mismatches(
    loaded: Mapping[str, torch.Tensor], expected: Mapping[str, torch.Tensor]
) -> list[str]:
    """List missing, unexpected and wrongly-shaped entries (model order first)."""
    problems: list[str] = []
    for name, ref in expected.items():
        if name not in loaded:
            problems.append(f"{name}: missing from checkpoint, model {_shape(ref)}")
        elif _shape(loaded[name]) != _shape(ref):
            problems.append(f"{name}: checkpoint {_shape(loaded[name])} vs model {_shape(ref)}")
    for name, value in loaded.items():
        if name not in expected:
            problems.append(f"{name}: unexpected in checkpoint {_shape(value)}, not in model")
    return problems


def load_weights_into(
    net: nn.Module, state_dict: Mapping[str, Any], source: str | None = None
) -> None:
    """Load ``state_dict`` into ``net`` strictly (all keys, all shapes).

    Args:
        net: The target network (may be wrapped by ``torch.compile``).
        state_dict: Parameter/buffer tensors by name.
        source: Optional origin (e.g. a path) quoted in error messages.

    Raises:
        NetStateError: ``state_dict`` is not a mapping of tensors.
        ArchitectureMismatchError: keys or shapes differ; names every
            parameter with both shapes (a scalar value head against a WDL
            one is named as ``value_head`` with both settings, a moves-left
            head against none as ``moves_left``).
    """
    model = _unwrap(net)
    if not isinstance(state_dict, Mapping):
        raise NetStateError(f"state_dict must be a mapping, got {type(state_dict).__name__}")
    bad = sorted(str(k) for k, v in state_dict.items() if not isinstance(v, torch.Tensor))
    if bad:
        raise NetStateError(f"state_dict entries are not tensors: {bad[:8]}")
    problems = _state_mismatches(state_dict, model.state_dict())
    # One line naming a head's setting: the parameter lines it explains are left out.
    problems = head_mismatches(problems, state_dict, model.config.value_head, model.config.moves_left)
    has_soft = any(str(key).startswith("policy_head.soft_out.") for key in state_dict)
    if has_soft != model.config.soft_policy:
        problems = [f"soft_policy: checkpoint {has_soft} vs model {model.config.soft_policy}"] + [
            line for line in problems if not line.startswith("policy_head.soft_out.")
        ]
    if problems:
        raise ArchitectureMismatchError(problems, source)
    model.load_state_dict(state_dict, strict=True)


def net_from_state(
    state: Mapping[str, Any], device: torch.device | str | None = None
) -> AlphaZeroNet:
    """Rebuild a network from a :func:`net_state` dict, in eval mode.

    Args:
        state: Dictionary produced by :func:`net_state`.
        device: Where to put the network (default: CPU).

    Raises:
        NetStateError: malformed state (format, config, missing state_dict).
        ArchitectureMismatchError: weights do not fit the stored config.
    """
    config = config_from_state(state)
    if "state_dict" not in state:
        raise NetStateError("net state has no 'state_dict' entry")
    net = AlphaZeroNet(config)
    load_weights_into(net, state["state_dict"])
    return net.to(device if device is not None else "cpu").eval()


# --------------------------------------------------------------------------
# Small utilities
# --------------------------------------------------------------------------


def pick_device(requested: str | torch.device = "auto") -> torch.device:
    """Resolve ``"auto"`` (CUDA if available, else CPU), ``"cpu"`` or ``"cuda[:N]"`` to a device.

    Raises:
        ValueError: unparseable/unsupported device, or CUDA requested but
            unavailable (or the index is out of range).
    """
    name = str(requested).strip().lower()
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except (RuntimeError, ValueError) as exc:
        raise ValueError(f"invalid device {requested!r}: use 'auto', 'cpu' or 'cuda[:N]'") from exc
    if device.type == "cpu":
        return device
    if device.type != "cuda":
        raise ValueError(f"unsupported device {requested!r}: use 'auto', 'cpu' or 'cuda[:N]'")
    if not torch.cuda.is_available():
        raise ValueError(
            f"device {requested!r} requested but CUDA is not available "
            f"(torch {torch.__version__}); use 'auto' or 'cpu'"
        )
    count = torch.cuda.device_count()
    if device.index is not None and device.index >= count:
        raise ValueError(f"device {requested!r} requested but only {count} CUDA device(s) exist")
    return device


def count_parameters(net: nn.Module, trainable_only: bool = False) -> int:
    """Return the number of parameters of ``net`` (optionally only trainable ones)."""
    return sum(p.numel() for p in net.parameters() if p.requires_grad or not trainable_only)
