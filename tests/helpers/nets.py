"""Tiny networks for the tests: one small config, the same sizes as ``--set``
overrides, a seeded factory, random input planes, and the errors of loading
one architecture's weights into another."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import torch

from models.net import MOVE_COUNT_PLANE, NO_PROGRESS_PLANE, AlphaZeroNet, NetConfig

TINY_CONFIG = NetConfig(blocks=1, filters=8, value_channels=4, value_hidden=16)
"""The smallest network the tests build, save or train: one block of 8 filters."""

TINY_NET = ["net.blocks=1", "net.filters=8", "net.value_channels=4", "net.value_hidden=16"]
"""``TINY_CONFIG``'s sizes as ``key=value`` overrides (``load_config``; ``--set`` pairs: ``tests.helpers.cli.set_args``)."""


def tiny_net(seed: int = 0, config: NetConfig = TINY_CONFIG, **overrides: Any) -> AlphaZeroNet:
    """A network of ``config`` (with field ``overrides``) initialised from ``seed``, in eval mode."""
    torch.manual_seed(seed)
    return AlphaZeroNet(dataclasses.replace(config, **overrides)).eval()


def binary_planes(count: int, seed: int = 0) -> torch.Tensor:
    """``count`` seeded uint8 input stacks of 0s and 1s."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, 2, (count, 119, 8, 8), generator=generator, dtype=torch.uint8)


def random_planes(count: int, seed: int = 0) -> torch.Tensor:
    """``count`` seeded uint8 input stacks in the encoder's value ranges: 0/1
    planes, a ply count up to 255 and a no-progress clock up to 100."""
    generator = torch.Generator().manual_seed(seed)
    planes = torch.randint(0, 2, (count, 119, 8, 8), generator=generator, dtype=torch.uint8)
    planes[:, MOVE_COUNT_PLANE] = torch.randint(0, 256, (count, 1, 1), generator=generator, dtype=torch.uint8)
    planes[:, NO_PROGRESS_PLANE] = torch.randint(0, 101, (count, 1, 1), generator=generator, dtype=torch.uint8)
    return planes


def head_mismatch_messages(source: AlphaZeroNet, target: AlphaZeroNet, expected: str,
                           folder: Path) -> tuple[str, str, str]:  # fmt: skip
    """The three ``ArchitectureMismatchError`` messages of loading ``source``'s
    weights into ``target``'s architecture: its state dict, a saved net file
    and a training checkpoint resumed (files written into ``folder``); each
    must match the pattern ``expected``."""
    from models.net import ArchitectureMismatchError, load_weights_into
    from pipeline.checkpoint import load_weights, save_net
    from pipeline.training.checkpointing import check_checkpoint_net

    with pytest.raises(ArchitectureMismatchError, match=expected) as direct:
        load_weights_into(target, source.state_dict(), source="x.pt")
    with pytest.raises(ArchitectureMismatchError, match=expected) as saved:
        load_weights(target, save_net(source, folder / "net.pt"))
    checkpoint = folder / "last.ckpt"
    state = {"net_config": source.config.to_dict(), "state_dict": {f"net.{k}": v for k, v in source.state_dict().items()}}
    torch.save(state, checkpoint)
    with pytest.raises(ArchitectureMismatchError, match=expected) as resumed:
        check_checkpoint_net(checkpoint, target.config)
    return str(direct.value), str(saved.value), str(resumed.value)
