"""The network behind the search's :class:`~models.search.Evaluator` protocol.

A batch of leaves becomes one ``(B, 119, 8, 8)`` uint8 tensor, one forward
pass, then a softmax over each leaf's legal moves only (the logits of its
moves are gathered with one indexing operation for the whole batch).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from models.net import AlphaZeroNet
from models.policy import get_policy_map
from models.evaluation import Leaf, encode_leaves


class NetEvaluator:
    """Evaluates leaves with an :class:`AlphaZeroNet` on its device.

    Args:
        net: the network; it is put in eval mode.
        channels_last: use the channels-last memory format (faster on CPU).
    """

    needs_planes = True

    def __init__(self, net: AlphaZeroNet, channels_last: bool = True) -> None:
        self.net = net.eval()
        self.device = next(net.parameters()).device
        self.policy_map = get_policy_map(net.config.policy_encoding)
        self.memory_format = torch.channels_last if channels_last else torch.contiguous_format
        if channels_last:
            self.net.to(memory_format=torch.channels_last)
        self.positions = 0
        self.calls = 0

    @torch.inference_mode()
    def evaluate(self, leaves: Sequence[Leaf]) -> list[tuple[np.ndarray, float]]:
        planes = torch.from_numpy(encode_leaves(leaves)).to(self.device, non_blocking=True)
        planes = planes.contiguous(memory_format=self.memory_format)
        logits, values = self.net(planes)
        counts = [len(leaf.moves) for leaf in leaves]
        indices = np.concatenate([self.policy_map.indices(leaf.board, leaf.moves) for leaf in leaves])
        rows = np.repeat(np.arange(len(leaves)), counts)
        picked = logits[torch.from_numpy(rows).to(self.device), torch.from_numpy(indices).to(self.device)]
        picked_np = picked.float().cpu().numpy().astype(np.float64)
        values_np = values.float().cpu().numpy().astype(np.float64)
        self.positions += len(leaves)
        self.calls += 1
        results = []
        offset = 0
        for count, value in zip(counts, values_np):
            segment = picked_np[offset : offset + count]
            offset += count
            segment = np.exp(segment - segment.max())
            results.append((segment / segment.sum(), float(value)))
        return results
