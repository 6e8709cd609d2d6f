"""How often a net's first policy move keeps the distance-to-mate tables'
result, and how often its value head has that result right, on the
held-out positions of a labelled folder (``zerochess label``'s
``heldout`` split) of one ending.

    .venv/bin/python experiments/table_agreement.py NET [NET ...] --labels runs/endings/endgame-tablebases/label --kind KQKR

``--side strong`` (the default) takes the positions won for the side to
move that holds the strong side's pieces; ``--side weak`` the positions of
the weak side to move that it does not lose (where the strong side has
just thrown a win away).  A net whose first move keeps the win in a share
p of the positions has to be rescued by its search once every 1 / (1 - p)
moves: over a mate 20 moves long, a few percent per move decide the game.
The baseline printed beside each net is the share a uniformly random legal
move keeps.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import chess
import numpy as np
import pyarrow.parquet as pq
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.encoding import encode_board  # noqa: E402
from models.net_heads import wdl_value  # noqa: E402
from models.policy import indices  # noqa: E402
from pipeline.checkpoint import load_net  # noqa: E402
from pipeline.selfplay.endgames import EndgameKind, parse_kind  # noqa: E402
from pipeline.shards import list_shards  # noqa: E402
from pipeline.supervised.tablebase_labels import move_verdicts, probe  # noqa: E402
from pipeline.training.tablebases import TablebaseStore, default_tablebase_dir, tablebase_store  # noqa: E402

Outputs = Callable[[Sequence[chess.Board]], tuple[np.ndarray, np.ndarray]]
"""Policy logits ``[B, 4672]`` and values ``[B]`` (side to move) of a batch of positions."""


def held_out_boards(labels: Path, kind: EndgameKind, side: str, store: TablebaseStore) -> list[chess.Board]:
    """The held-out positions of ``kind`` (either colour) for ``side``, in shard order."""
    folder = labels / "heldout"
    if not folder.is_dir():
        raise SystemExit(f"--labels {labels}: no heldout/ folder (zerochess label's output)")
    boards = []
    for path in list_shards(str(folder)):
        for fen in pq.read_table(path, columns=["fen"]).column("fen").to_pylist():
            board = chess.Board(fen)
            holder = _strong_colour(board, kind)
            if holder is None:
                continue
            result = probe(board, store).result
            if side == "strong" and board.turn == holder and result == 1:
                boards.append(board)
            elif side == "weak" and board.turn != holder and result >= 0:
                boards.append(board)
    return boards


def _strong_colour(board: chess.Board, kind: EndgameKind) -> chess.Color | None:
    """The colour holding ``kind``'s strong pieces when ``board`` has exactly its material, else None."""
    for colour in (chess.WHITE, chess.BLACK):
        mine = sorted(piece.piece_type for piece in board.piece_map().values() if piece.color == colour)
        theirs = sorted(piece.piece_type for piece in board.piece_map().values() if piece.color != colour)
        if mine == sorted((*kind.strong, chess.KING)) and theirs == sorted((*kind.weak, chess.KING)):
            return colour
    return None


def agreement(boards: Sequence[chess.Board], outputs: Outputs, store: TablebaseStore,
              batch: int = 512) -> tuple[float, float, float]:  # fmt: skip
    """Shares of ``boards`` where the policy's first legal move keeps the
    tables' result, where the value is right (above 0.5 for a win, below
    -0.5 for a loss, within 0.5 of 0 for a draw), and where a uniformly
    random legal move keeps the result (the baseline)."""
    keeps = right = chance = 0.0
    for start in range(0, len(boards), batch):
        chunk = boards[start : start + batch]
        logits, values = outputs(chunk)
        for row, board in enumerate(chunk):
            moves = list(board.legal_moves)
            verdicts = dict(move_verdicts(board, store))
            best = max(verdict.result for verdict in verdicts.values())
            first = moves[int(np.argmax(logits[row][indices(board, moves)]))]
            keeps += verdicts[first].result == best
            chance += sum(verdict.result == best for verdict in verdicts.values()) / len(moves)
            value = float(values[row])
            right += value > 0.5 if best == 1 else value < -0.5 if best == -1 else abs(value) <= 0.5
    count = max(len(boards), 1)
    return keeps / count, right / count, chance / count


def net_outputs(path: str) -> Outputs:
    """The net of ``path`` as an :data:`Outputs` (W - L for a WDL head)."""
    net = load_net(path).eval()

    def outputs(boards: Sequence[chess.Board]) -> tuple[np.ndarray, np.ndarray]:
        planes = torch.from_numpy(np.stack([encode_board(board) for board in boards])).float()
        with torch.no_grad():
            result = net(planes)
        logits, value = result[0].float(), result[1].float()
        if value.dim() == 2:
            value = wdl_value(value)
        return logits.numpy(), value.flatten().numpy()

    return outputs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("nets", nargs="+", help="net.pt files")
    parser.add_argument("--labels", required=True, help="a zerochess label folder (its heldout/ shards are read)")
    parser.add_argument("--kind", default="KQKR", help="the ending (e.g. KQKR, KBNK)")
    parser.add_argument("--side", choices=["strong", "weak"], default="strong",
                        help="strong: won positions of the strong side to move; weak: the weak side to move, not lost")
    parser.add_argument("--tablebase-dir", default="", help="the tables' folder (default: ~/.cache/zerochess/tablebases)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    args = parser.parse_args(argv)
    torch.set_num_threads(max(args.threads, 1))
    store = tablebase_store(args.tablebase_dir or str(default_tablebase_dir()))
    kind = parse_kind(args.kind)
    boards = held_out_boards(Path(args.labels), kind, args.side, store)
    if not boards:
        raise SystemExit(f"--labels {args.labels}: no held-out {kind.name} position for --side {args.side}")
    print(f"{len(boards)} held-out {kind.name} positions, {args.side} side to move")
    for path in args.nets:
        if not Path(path).is_file():
            raise SystemExit(f"{path}: no such net")
        keeps, right, chance = agreement(boards, net_outputs(path), store)
        print(f"{path}: first move keeps the result {keeps:.3f} (a random move: {chance:.3f}), value right {right:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
