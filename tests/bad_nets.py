"""Checkpoint files a command must refuse (and one it must take), for the
bad-input tests: written once per module by a fixture."""

from __future__ import annotations

import os
from pathlib import Path


def write_nets(root: Path) -> None:
    """``good.pt`` (a tiny net), ``arch.pt`` (weights of 8 filters, a config
    of 16), ``corrupt.pt``, ``empty.pt``, a ``folder`` with a file in it and
    ``a_file`` (not a folder)."""
    import torch

    from models.net import AlphaZeroNet, NetConfig, net_state
    from pipeline.checkpoint import save_net

    tiny = NetConfig(blocks=1, filters=8, value_channels=4, value_hidden=16)
    torch.manual_seed(0)
    save_net(AlphaZeroNet(tiny), root / "good.pt")
    state = net_state(AlphaZeroNet(tiny))
    state["config"] = {**state["config"], "filters": 16}
    torch.save(state, root / "arch.pt")
    (root / "corrupt.pt").write_bytes(b"\x80\x02\x8a\x0a" + os.urandom(3000))
    (root / "empty.pt").write_bytes(b"")
    (root / "folder").mkdir()
    (root / "folder" / "notes.txt").write_text("not a checkpoint\n")
    (root / "a_file").write_text("a file, not a folder\n")
