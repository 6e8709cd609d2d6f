"""Checkpoint files a command must refuse (and one it must take), for the
bad-input tests (``tests/test_bad_input_matrix.py``, ``test_rate_cli.py``):
written once per module by a fixture."""

from __future__ import annotations

import os
from pathlib import Path


def write_nets(root: Path) -> None:
    """``good.pt`` (a tiny net), ``arch.pt`` (weights of 8 filters, a config
    of 16), ``corrupt.pt``, ``empty.pt``, a ``folder`` with a file in it and
    ``a_file`` (not a folder)."""
    import torch

    from models.net import net_state
    from pipeline.checkpoint import save_net

    from .nets import tiny_net

    save_net(tiny_net(), root / "good.pt")
    state = net_state(tiny_net())
    state["config"] = {**state["config"], "filters": 16}
    torch.save(state, root / "arch.pt")
    (root / "corrupt.pt").write_bytes(b"\x80\x02\x8a\x0a" + os.urandom(3000))
    (root / "empty.pt").write_bytes(b"")
    (root / "folder").mkdir()
    (root / "folder" / "notes.txt").write_text("not a checkpoint\n")
    (root / "a_file").write_text("a file, not a folder\n")
