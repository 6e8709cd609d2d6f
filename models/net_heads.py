"""The building block and the heads of :class:`models.net.AlphaZeroNet`.

* :class:`ConvBN`: a bias-free convolution and its batch norm (the unit
  :mod:`models.inference_net` folds);
* :class:`PolicyHead`: the 73 move planes' logits, and with ``soft`` a second
  set of logits for KataGo's auxiliary soft-policy target (trained on the
  policy target raised to 1/4; never used by the search);
* :class:`ValueHead`: ``scalar`` (AlphaZero: one ``tanh`` value) or ``wdl``
  (lc0: three logits, win/draw/loss for the side to move).  Both heads have
  the same parameter names (``conv``, ``fc1``, ``fc2``); only ``fc2``'s
  output size differs (1 or 3), which is how a state dict tells them apart
  (:func:`value_head_of_state`);
* :class:`MovesLeftHead` (``NetConfig.moves_left``, lc0's moves-left head):
  the plies left to the game's end, >= 0 (:func:`moves_left_of_state` tells
  whether a state dict has it).

:class:`NetOutput` is what :meth:`models.net.AlphaZeroNet.forward_heads`
returns to training; ``forward`` returns ``(policy_logits, value)`` with the
value of a WDL head ``P(win) - P(loss)`` (:func:`wdl_value`), so the search,
the evaluators and the export see one scalar value whatever the head.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "MOVES_LEFT_SCALE",
    "VALUE_HEADS",
    "WDL_SIZE",
    "ConvBN",
    "MovesLeftHead",
    "NetOutput",
    "PolicyHead",
    "ValueHead",
    "head_mismatches",
    "moves_left_of_state",
    "value_head_of_state",
    "wdl_draw",
    "wdl_value",
]

VALUE_HEADS = ("scalar", "wdl")
"""``NetConfig.value_head`` settings."""

WDL_SIZE = 3
"""Logits of a ``wdl`` value head: win, draw, loss, from the side to move."""

_OUTPUTS = {"scalar": 1, "wdl": WDL_SIZE}

MOVES_LEFT_SCALE = 20.0
"""Plies per unit of the moves-left head's softplus output: the head predicts
``MOVES_LEFT_SCALE * softplus(x)`` plies, and the loss compares plies / this
scale (so a game's length of ~100 plies is ~5 units)."""


class NetOutput(NamedTuple):
    """Everything the network computes for a batch of ``B`` positions.

    Attributes:
        policy_logits: ``[B, policy_size]`` raw move logits.
        value: ``[B]`` in ``[-1, 1]``: ``tanh`` of the scalar head, or
            ``P(win) - P(loss)`` of the WDL head.
        wdl_logits: ``[B, 3]`` win/draw/loss logits of a WDL head; ``None``
            for a scalar head.
        moves_left: ``[B]`` plies left to the game's end (>= 0) of the
            moves-left head; ``None`` without it.
        soft_policy_logits: ``[B, policy_size]`` logits of the soft-policy
            output (``NetConfig.soft_policy``); ``None`` without it or when
            the caller asked for no auxiliary outputs.
    """

    policy_logits: torch.Tensor
    value: torch.Tensor
    wdl_logits: torch.Tensor | None
    moves_left: torch.Tensor | None = None
    soft_policy_logits: torch.Tensor | None = None


def wdl_value(wdl_logits: torch.Tensor) -> torch.Tensor:
    """``P(win) - P(loss)`` ``[B]`` of win/draw/loss logits ``[B, 3]`` (softmax)."""
    probabilities = F.softmax(wdl_logits, dim=1)
    return probabilities[:, 0] - probabilities[:, 2]


def wdl_draw(wdl_logits: torch.Tensor) -> torch.Tensor:
    """``P(draw)`` ``[B]`` of win/draw/loss logits ``[B, 3]`` (softmax)."""
    return F.softmax(wdl_logits, dim=1)[:, 1]


def value_head_of_state(state_dict: Mapping[str, Any]) -> str | None:
    """``scalar`` or ``wdl``, read from the output size of ``value_head.fc2``
    in a network state dict; ``None`` when the entry is missing or another size."""
    weight = state_dict.get("value_head.fc2.weight")
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2:
        return None
    return next((name for name, size in _OUTPUTS.items() if size == weight.shape[0]), None)


def moves_left_of_state(state_dict: Mapping[str, Any]) -> bool:
    """Whether a network state dict has a moves-left head."""
    return any(str(key).startswith("moves_left_head.") for key in state_dict)


def head_mismatches(
    problems: list[str], state_dict: Mapping[str, Any], value_head: str, moves_left: bool
) -> list[str]:
    """``problems`` (lines of shape or key mismatches between ``state_dict``
    and a model with ``value_head`` and ``moves_left``) with the lines a
    different head explains replaced by one line naming the setting:
    ``value_head: checkpoint 'wdl' vs model 'scalar'``, ``moves_left:
    checkpoint True vs model False``."""
    stored = value_head_of_state(state_dict)
    if stored is not None and stored != value_head:
        problems = [f"value_head: checkpoint {stored!r} vs model {value_head!r}"] + [
            line for line in problems if not line.startswith("value_head.fc2.")
        ]
    has_head = moves_left_of_state(state_dict)
    if has_head != moves_left:
        problems = [f"moves_left: checkpoint {has_head} vs model {moves_left}"] + [
            line for line in problems if not line.startswith("moves_left_head.")
        ]
    return problems


class ConvBN(nn.Module):
    """Bias-free square convolution followed by batch norm (no activation)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int) -> None:
        """Create a ``kernel_size`` x ``kernel_size`` 'same' convolution + BN."""
        super().__init__()
        self.conv = nn.Conv2d(
            in_channels, out_channels, kernel_size, padding=kernel_size // 2, bias=False
        )
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Return ``bn(conv(x))``."""
        return self.bn(self.conv(x))


class PolicyHead(nn.Module):
    """3x3 conv+BN+ReLU then a 1x1 conv (with bias) to the move planes; with
    ``soft``, a second 1x1 conv (``soft_out``) on the same features gives the
    soft-policy logits."""

    def __init__(self, filters: int, planes: int, soft: bool = False) -> None:
        """Create the head for a trunk of ``filters`` channels and ``planes`` move planes."""
        super().__init__()
        self.conv = ConvBN(filters, filters, 3)
        self.out = nn.Conv2d(filters, planes, 1)
        self.soft_out = nn.Conv2d(filters, planes, 1) if soft else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Return the logits ``(B, planes*64)`` in ``plane*64 + rank*8 + file`` order."""
        return self.out(F.relu(self.conv(x))).flatten(1)

    def forward_both(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The logits and the soft-policy logits (``None`` without ``soft``), same layout."""
        features = F.relu(self.conv(x))
        soft = self.soft_out(features).flatten(1) if self.soft_out is not None else None
        return self.out(features).flatten(1), soft


class ValueHead(nn.Module):
    """1x1 conv+BN+ReLU -> FC -> ReLU -> FC(1) -> tanh, or FC(3) logits for ``wdl``."""

    def __init__(self, filters: int, channels: int, hidden: int, kind: str = "scalar") -> None:
        """Create the head for a trunk of ``filters`` channels; ``kind`` is a :data:`VALUE_HEADS`."""
        super().__init__()
        if kind not in _OUTPUTS:
            raise ValueError(f"value head must be one of {list(VALUE_HEADS)}, got {kind!r}")
        self.kind = kind
        self.conv = ConvBN(filters, channels, 1)
        self.fc1 = nn.Linear(channels * 64, hidden)
        self.fc2 = nn.Linear(hidden, _OUTPUTS[kind])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Scalar: values in ``[-1, 1]`` with shape ``(B,)``; WDL: logits ``(B, 3)``."""
        hidden = F.relu(self.fc1(F.relu(self.conv(x)).flatten(1)))
        if self.kind == "wdl":
            return self.fc2(hidden)
        return torch.tanh(self.fc2(hidden)).squeeze(1)


class MovesLeftHead(nn.Module):
    """lc0's moves-left head: 1x1 conv+BN+ReLU -> FC -> ReLU -> FC(1) ->
    softplus, times :data:`MOVES_LEFT_SCALE`: the plies left to the game's
    end from the position, ``(B,)``, >= 0."""

    def __init__(self, filters: int, channels: int, hidden: int) -> None:
        """Create the head for a trunk of ``filters`` channels."""
        super().__init__()
        self.conv = ConvBN(filters, channels, 1)
        self.fc1 = nn.Linear(channels * 64, hidden)
        self.fc2 = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Plies left ``(B,)``, >= 0."""
        hidden = F.relu(self.fc1(F.relu(self.conv(x)).flatten(1)))
        return F.softplus(self.fc2(hidden)).squeeze(1) * MOVES_LEFT_SCALE
