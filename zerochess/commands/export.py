"""``zerochess export --onnx CHECKPOINT OUT``: the network of a checkpoint as
an ONNX file (batch norm folded, dynamic batch axis), checked with ONNX
Runtime against torch on a few random positions.

``CHECKPOINT`` is a checkpoint file (:func:`pipeline.checkpoint.save_net`'s
format) or ``champion``: the MLflow registry's champion of a run, found as
``zerochess uci --checkpoint champion`` finds it (``--run``,
``--tracking-uri``, ``--model-name``).  The graph is described in
:mod:`pipeline.export` and in README's "Exporting the network to ONNX".
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.champion import CHAMPION, DEFAULT_MODEL_NAME, DEFAULT_RUN, champion_store

if TYPE_CHECKING:  # torch loads when the command runs, not for --help
    from models.net import AlphaZeroNet

DEFAULT_OPSET = 17
"""``pipeline.export.DEFAULT_OPSET``, repeated here so ``--help`` imports no torch."""

DEFAULT_POSITIONS = 8
"""Random positions on which the file is checked against torch."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--onnx",
        action="store_true",
        required=True,
        help="write an ONNX file (the only format for now): input 'planes' float32 "
        "[batch, 119, 8, 8], outputs 'policy' [batch, policy_size] logits and 'value' [batch]",
    )
    parser.add_argument(
        "checkpoint",
        metavar="CHECKPOINT",
        help=f"network checkpoint file, or '{CHAMPION}' for the MLflow registry's champion",
    )
    parser.add_argument("out", metavar="OUT", help="the ONNX file to write (replaced atomically)")
    parser.add_argument("--opset", type=int, default=DEFAULT_OPSET, help="ONNX opset version")
    parser.add_argument(
        "--positions",
        type=int,
        default=DEFAULT_POSITIONS,
        help="random positions on which ONNX Runtime's outputs are compared with torch's",
    )
    parser.add_argument(
        "--model-name",
        default=DEFAULT_MODEL_NAME,
        help=f"with {CHAMPION}: registered MLflow model whose '{CHAMPION}' alias is exported",
    )
    parser.add_argument(
        "--run",
        default=DEFAULT_RUN,
        help=f"with {CHAMPION}: the zerochess run folder whose mlflow.db holds it",
    )
    parser.add_argument(
        "--tracking-uri",
        help=f"with {CHAMPION}: MLflow tracking store "
        "(default: MLFLOW_TRACKING_URI, else --run's mlflow.db)",
    )


def _check_paths(checkpoint: str, out: Path) -> None:
    """Refuse an ``OUT`` that cannot be written or is the checkpoint itself,
    before any work.

    Raises:
        ExportError: naming ``OUT``.
    """
    from pipeline.export import ExportError, check_out_path

    check_out_path(out)
    if out.is_file() and Path(checkpoint).is_file() and os.path.samefile(out, checkpoint):
        raise ExportError(f"{out}: is the checkpoint itself; give another path for the ONNX file")


def _load(args: argparse.Namespace) -> tuple[AlphaZeroNet, str]:
    """The network named by ``CHECKPOINT`` (on the CPU) and where it came from."""
    from pipeline.checkpoint import load_net

    if args.checkpoint != CHAMPION:
        return load_net(args.checkpoint, device="cpu"), args.checkpoint
    from pipeline.uci.loading import champion_checkpoint

    with tempfile.TemporaryDirectory(prefix="zerochess-champion-") as folder:
        path, source = champion_checkpoint(
            args.model_name, champion_store(args.tracking_uri, args.run), Path(folder)
        )
        return load_net(path, device="cpu"), source


def _size(count: int) -> str:
    """``count`` bytes for people: ``312 kB``, ``94.1 MB``."""
    if count < 1_000_000:
        return f"{count / 1000:.0f} kB"
    return f"{count / 1_000_000:.1f} MB"


def run(args: argparse.Namespace) -> int:
    from pipeline.export import ExportError, export_onnx, sample_planes, verify_onnx

    if args.positions < 1:
        raise ExportError(f"--positions must be >= 1, got {args.positions}")
    out = Path(args.out)
    _check_paths(args.checkpoint, out)
    net, source = _load(args)
    path = export_onnx(net, out, opset=args.opset)
    policy_diff, value_diff = verify_onnx(path, net, sample_planes(args.positions))
    print(
        f"{path}: ONNX opset {args.opset}, {_size(path.stat().st_size)}, from {source} "
        f"({net.config.blocks}x{net.config.filters}, {net.config.policy_encoding}); "
        f"ONNX Runtime vs torch on {args.positions} positions: "
        f"max |diff| policy {policy_diff:.1e}, value {value_diff:.1e}"
    )
    return 0
