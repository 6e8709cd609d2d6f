"""The AlphaZero loss ``(z - v)^2 - pi^T log p + c ||theta||^2`` and the training metrics.

Pure torch, no Lightning: :func:`loss_terms` returns every term separately so
that each can be logged, and :func:`decayed_weights` names the parameters the
L2 term covers: the weights of convolutions and linear layers, never
BatchNorm scales and shifts nor biases.

A win/draw/loss value head replaces ``(z - v)^2`` by the cross-entropy of its
three logits against a (win, draw, loss) target distribution
(:func:`pipeline.training.targets.wdl_targets`); it is still the ``value``
term, logged under the same name.

A moves-left head adds lc0's moves-left term: the Huber loss (delta 1) of its
plies left against the game's, both divided by
:data:`~models.net_heads.MOVES_LEFT_SCALE` (20 plies), over the rows whose
game length is known, weighted by ``train.moves_left_weight``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from models.net_heads import MOVES_LEFT_SCALE

__all__ = ["LossTerms", "decayed_weights", "l2_penalty", "loss_terms", "split_decay_groups"]

_DECAYED_LAYERS = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear)


@dataclass(frozen=True)
class LossTerms:
    """The loss of one batch, term by term (scalar tensors).

    Attributes:
        policy: cross-entropy ``-sum(pi * log_softmax(logits))`` against the
            full visit distribution, averaged over the batch.
        value: mean squared error ``(z - v)^2``; for a WDL head the
            cross-entropy ``-sum(target * log_softmax(wdl_logits))``.
        l2: ``c * ||theta||^2`` over :func:`decayed_weights`.
        total: ``policy + value_weight * value + l2``: what is logged as
            ``loss/total`` whether L2 goes through the loss or the optimizer.
        objective: what is differentiated: ``total``, or ``total - l2`` when
            the optimizer applies L2 as weight decay.
        soft_policy: KataGo's auxiliary soft-policy cross-entropy: the
            soft-policy logits against ``pi ** (1/4)`` renormalised (0 without
            that output).  ``total`` adds it with its weight.
        moves_left: the moves-left term (0 without a moves-left head or rows
            of known game length), unweighted.
        policy_top1: share of positions whose highest logit is argmax pi.
        value_sign_accuracy: share of decisive positions (z != 0) where
            sign(v) == z; NaN when the batch has none.  For a WDL target, z
            is its ``W - L``.
    """

    policy: torch.Tensor
    value: torch.Tensor
    l2: torch.Tensor
    total: torch.Tensor
    objective: torch.Tensor
    policy_top1: torch.Tensor
    value_sign_accuracy: torch.Tensor
    soft_policy: torch.Tensor
    moves_left: torch.Tensor | None = None


SOFT_POLICY_POWER = 0.25
"""KataGo's soft-policy target is the policy target raised to this power, renormalised."""


def soft_policy_target(pi: torch.Tensor) -> torch.Tensor:
    """``pi ** (1/4)`` renormalised per row (zeros stay zero)."""
    soft = pi.clamp(min=0).pow(SOFT_POLICY_POWER)
    return soft / soft.sum(dim=1, keepdim=True).clamp(min=torch.finfo(soft.dtype).tiny)


def decayed_weights(net: nn.Module) -> list[nn.Parameter]:
    """The weights of every convolution and linear layer of ``net`` (not biases, not BatchNorm)."""
    return [m.weight for m in net.modules() if isinstance(m, _DECAYED_LAYERS)]


def split_decay_groups(net: nn.Module) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
    """(decayed weights, every other trainable parameter) of ``net``, in module order."""
    decayed = decayed_weights(net)
    ids = {id(p) for p in decayed}
    others = [p for p in net.parameters() if p.requires_grad and id(p) not in ids]
    return decayed, others


def l2_penalty(weights: Iterable[torch.Tensor], coefficient: float) -> torch.Tensor:
    """``coefficient * sum of squared entries`` of ``weights``."""
    squares = [w.pow(2).sum() for w in weights]
    if not squares:
        return torch.zeros(())
    return coefficient * torch.stack(squares).sum()


def moves_left_loss(predicted: torch.Tensor, plies_left: torch.Tensor) -> torch.Tensor:
    """Huber loss (delta 1) of predicted against target plies left ``[B]``,
    both divided by :data:`MOVES_LEFT_SCALE`, averaged over the rows whose
    target is known (>= 0); 0 when none is."""
    known = plies_left >= 0
    if not bool(known.any()):
        return predicted.sum() * 0.0  # keeps the graph (and DDP's gradients) connected
    scaled = predicted.float()[known] / MOVES_LEFT_SCALE
    return F.huber_loss(scaled, plies_left.float()[known] / MOVES_LEFT_SCALE, delta=1.0)


def loss_terms(
    logits: torch.Tensor,
    value: torch.Tensor,
    pi: torch.Tensor,
    z: torch.Tensor,
    weights: Iterable[torch.Tensor],
    *,
    l2: float,
    value_weight: float = 1.0,
    l2_in_loss: bool = True,
    wdl_logits: torch.Tensor | None = None,
    soft_logits: torch.Tensor | None = None,
    soft_weight: float = 0.0,
    moves_left: torch.Tensor | None = None,
    plies_left: torch.Tensor | None = None,
    moves_left_weight: float = 1.0,
) -> LossTerms:
    """The loss terms and metrics of a batch.

    Args:
        logits: policy logits ``[B, P]``.
        value: value head output ``[B]`` in [-1, 1].
        pi: visit distributions ``[B, P]`` (rows sum to 1).
        z: value targets ``[B]`` in [-1, 1] from the side to move (game
            outcomes, root q or a mix); with ``wdl_logits``, (win, draw,
            loss) distributions ``[B, 3]`` (rows sum to 1).
        weights: the parameters of the L2 term (:func:`decayed_weights`).
        l2: the coefficient c.
        value_weight: weight of the value MSE.
        l2_in_loss: differentiate the L2 term (False when the optimizer's
            weight decay applies it; it is then computed without gradient).
        wdl_logits: the win/draw/loss logits ``[B, 3]`` of a WDL value head
            (``None`` for a scalar head); the value term is then their
            cross-entropy against ``z``.
        soft_logits: the soft-policy logits ``[B, P]`` (``None`` without that
            output); their cross-entropy against :func:`soft_policy_target`
            is added to the loss with ``soft_weight``.
        moves_left: the moves-left head's plies left ``[B]`` (``None``
            without the head).
        plies_left: their targets ``[B]`` (-1: unknown), with ``moves_left``.
        moves_left_weight: weight of the moves-left term.

    Raises:
        ValueError: ``z``'s shape does not fit the head (``[B]`` scalar, ``[B, 3]`` WDL).
    """
    logits = logits.float()
    pi = pi.to(logits.dtype)
    z = z.to(logits.dtype)
    value = value.float()
    policy = -(pi * F.log_softmax(logits, dim=1)).sum(dim=1).mean()
    if wdl_logits is None:
        if z.dim() != 1:
            raise ValueError(f"a scalar value head needs targets [B], got {tuple(z.shape)}")
        value_mse = (z - value).pow(2).mean()
    else:
        if z.dim() != 2 or z.shape[1] != wdl_logits.shape[1]:
            raise ValueError(f"a WDL value head needs targets [B, 3], got {tuple(z.shape)}")
        value_mse = -(z * F.log_softmax(wdl_logits.float(), dim=1)).sum(dim=1).mean()
        z = z[:, 0] - z[:, 2]
    if l2_in_loss:
        penalty = l2_penalty(weights, l2).to(logits.device)
    else:
        with torch.no_grad():
            penalty = l2_penalty(weights, l2).to(logits.device)
    soft = torch.zeros((), device=logits.device)
    if soft_logits is not None:
        soft = -(soft_policy_target(pi) * F.log_softmax(soft_logits.float(), dim=1)).sum(dim=1).mean()
    data_loss = policy + value_weight * value_mse + soft_weight * soft
    moves_left_term = None
    if moves_left is not None:
        if plies_left is None or plies_left.shape != moves_left.shape:
            raise ValueError("a moves-left head needs plies-left targets [B]")
        moves_left_term = moves_left_loss(moves_left, plies_left.to(moves_left.device))
        data_loss = data_loss + moves_left_weight * moves_left_term
    with torch.no_grad():
        top1 = (logits.argmax(dim=1) == pi.argmax(dim=1)).float().mean()
        decisive = z != 0
        correct = (torch.sign(value) == z) & decisive
        sign_accuracy = correct.sum() / decisive.sum()  # NaN (0/0) without decisive rows
    return LossTerms(
        policy=policy,
        value=value_mse,
        l2=penalty,
        total=data_loss + penalty,
        objective=data_loss + penalty if l2_in_loss else data_loss,
        policy_top1=top1,
        value_sign_accuracy=sign_accuracy,
        soft_policy=soft,
        moves_left=moves_left_term,
    )
