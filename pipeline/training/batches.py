"""A training batch's forms and the fast way to make them: a shuffle group's
columns as numpy arrays once (:class:`GroupArrays`), a batch decoded from them
in one native pass (:func:`pipeline.shards.decode.decode_rows`), and the
compact batch (history words and sparse pi, about 1/20 of the bytes) that
loader workers hand to the trainer's process, which builds planes and dense
pi on its device (:func:`expand_batch`).  :mod:`pipeline.training.data` uses
them; its ``reference`` decoder is the readable path they are tested against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Protocol

import numpy as np
import pyarrow as pa
import torch

from pipeline.shards import ShardTableError
from pipeline.shards.decode import (
    decode_history,
    decode_meta,
    decode_rows,
    list_numpy,
    policy_sizes,
    take_list_items,
)
from pipeline.training.known_endings import rescore_known_endings
from pipeline.training.tablebases import rescore_tablebases, tablebase_store
from pipeline.training.targets import (
    MOVES_LEFT_COLUMNS,
    Q_COLUMNS,
    moves_left_targets,
    value_targets,
    wdl_targets,
)

__all__ = ["BASE_COLUMNS", "Batch", "BatchSpec", "CompactBatch", "GroupArrays", "concat_compact", "expand_batch",
           "known_ending_columns", "stream_columns"]

BASE_COLUMNS = ("history", "meta", "policy_encoding", "policy_index", "policy_prob", "z", "full_search")
"""The columns every batch needs (the value target ``z`` of a scalar head)."""
Batch = tuple[torch.Tensor, ...]
"""(planes ``[B, 119, 8, 8]`` uint8, pi ``[B, P]`` float32, value target float32:
``[B]`` for a scalar value head, ``[B, 3]`` (win, draw, loss) for a WDL head),
and for a net with a moves-left head the plies left ``[B]`` float32 (-1:
unknown)."""


class BatchSpec(Protocol):
    """What a batch's decoding depends on (a :class:`pipeline.training.data.StreamSpec`)."""

    policy_encoding: str
    value_target: str
    q_ratio: float
    value_head: str
    moves_left: bool
    known_endings: bool
    tablebases: str


class CompactBatch(NamedTuple):
    """A batch before its planes and dense pi are built (about 1/20 of the bytes):
    what DataLoader workers hand to the trainer's process, which builds the
    :data:`Batch` on its device (:func:`expand_batch`, called by
    :meth:`ShardDataModule.on_after_batch_transfer`).

    history ``[B, 8, 14]`` int64 (the uint64 words), meta ``[B, 7]`` uint8,
    the policy lists (offsets ``[B + 1]`` int64 into index ``[K]`` int32 and
    prob ``[K]`` float32), the value target, the plies left (or None)."""

    history: torch.Tensor
    meta: torch.Tensor
    offsets: torch.Tensor
    index: torch.Tensor
    prob: torch.Tensor
    target: torch.Tensor
    plies_left: torch.Tensor | None
    policy_size: int


_SWAP_COLOURS = [*range(6, 12), *range(6), 12, 13]
_BIT_PLANES = (0, 2, 3, 4, 5)  # meta planes shown as all ones / zeros (112, 114..117)


def expand_batch(compact: CompactBatch) -> Batch:
    """The :data:`Batch` of a compact batch, on the compact batch's device: the
    same tensors as :func:`decode_batch` (native :func:`~pipeline.shards.decode.decode_rows`
    on the CPU, torch ops elsewhere, e.g. on the GPU)."""
    if compact.history.device.type == "cpu":
        planes, pi = decode_rows(
            compact.history.numpy().view(np.uint64),
            compact.meta.numpy(),
            compact.offsets.numpy(),
            compact.index.numpy().astype(np.uint16),
            compact.prob.numpy(),
            np.arange(compact.history.shape[0], dtype=np.int64),
            compact.policy_size,
        )
        planes_t, pi_t = torch.from_numpy(planes), torch.from_numpy(pi)
    else:
        planes_t, pi_t = expand_torch(compact)
    batch = (planes_t, pi_t, compact.target)
    return (*batch, compact.plies_left) if compact.plies_left is not None else batch


def concat_compact(batches: list[CompactBatch]) -> CompactBatch:
    """One compact batch of ``batches``' rows, in order (their policy lists' offsets shifted)."""
    ends = [int(batch.offsets[-1]) for batch in batches]
    shifts = np.cumsum([0, *ends[:-1]])
    offsets = [batches[0].offsets[:1]] + [batch.offsets[1:] + int(shift) for batch, shift in zip(batches, shifts)]
    plies = [batch.plies_left for batch in batches]
    return CompactBatch(
        torch.cat([batch.history for batch in batches]),
        torch.cat([batch.meta for batch in batches]),
        torch.cat(offsets),
        torch.cat([batch.index for batch in batches]),
        torch.cat([batch.prob for batch in batches]),
        torch.cat([batch.target for batch in batches]),
        torch.cat(plies) if all(p is not None for p in plies) else None,  # type: ignore[arg-type]
        batches[0].policy_size,
    )


def expand_torch(compact: CompactBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """(planes, pi) of a compact batch with torch ops on its device (the
    readable form of :func:`models.encoding.encode_snapshots` on tensors)."""
    history, meta = compact.history, compact.meta
    size, device = history.shape[0], history.device
    shifts = torch.arange(64, device=device, dtype=torch.int64)
    bits = ((history.unsqueeze(-1) >> shifts) & 1).to(torch.uint8).view(size, 8, 14, 8, 8)
    # Black to move: "our" pieces are black's, ranks mirrored (the byte swap).
    swap = torch.tensor(_SWAP_COLOURS, device=device)
    flipped = bits.index_select(2, swap).flip(-2)
    black = (meta[:, 0] != 0).view(size, 1, 1, 1, 1)
    history_planes = torch.where(black, flipped, bits).reshape(size, 112, 8, 8)
    values = meta.clone()
    values[:, _BIT_PLANES] = (meta[:, _BIT_PLANES] != 0).to(torch.uint8)
    meta_planes = values.view(size, 7, 1, 1).expand(size, 7, 8, 8)
    planes = torch.cat([history_planes, meta_planes], dim=1).contiguous()
    lengths = compact.offsets[1:] - compact.offsets[:-1]
    rows = torch.repeat_interleave(torch.arange(size, device=device), lengths)
    pi = torch.zeros(size, compact.policy_size, dtype=torch.float32, device=device)
    if compact.index.numel() and int(compact.index.max()) >= compact.policy_size:
        raise ShardTableError("policy_index", f"index >= policy size {compact.policy_size}")
    pi.index_put_((rows, compact.index.long()), compact.prob, accumulate=True)
    return planes, pi


def known_ending_columns(spec: BatchSpec) -> tuple[str, ...]:
    """The shard columns ``train.known_endings`` and ``train.tablebases`` read (none when both are off)."""
    return ("fen",) if spec.known_endings or spec.tablebases else ()


def rescore_rows(
    table: pa.Table,
    z: np.ndarray,
    plies_left: np.ndarray | None,
    known_endings: bool,
    tablebases: str,
) -> tuple[np.ndarray, np.ndarray | None]:
    """``z`` and the plies left of ``table``'s rows, rescored where the
    material decides the result (``known_endings``) and then where the
    tables in folder ``tablebases`` hold the position (empty: off)."""
    if not known_endings and not tablebases:
        return z, plies_left
    fens = table.column("fen").to_pylist()
    if known_endings:
        z = rescore_known_endings(fens, z)
    if tablebases:
        z, plies_left = rescore_tablebases(fens, z, plies_left, tablebase_store(tablebases))
    return z, plies_left


def stream_columns(spec: BatchSpec) -> tuple[str, ...]:
    """The shard columns the stream's batches need."""
    extra = () if spec.value_target == "z" else Q_COLUMNS
    return (*BASE_COLUMNS, *extra, *(MOVES_LEFT_COLUMNS if spec.moves_left else ()), *known_ending_columns(spec))


@dataclass(frozen=True)
class GroupArrays:
    """A shuffle group's columns as numpy arrays (views of the Arrow buffers)
    and its targets, computed once for the group; :meth:`batch` decodes rows."""

    history: np.ndarray
    meta: np.ndarray
    offsets: np.ndarray
    index: np.ndarray
    prob: np.ndarray
    policy_size: int
    target: np.ndarray
    plies_left: np.ndarray | None

    @classmethod
    def of(cls, table: pa.Table, spec: BatchSpec) -> GroupArrays:
        """Raises ShardTableError when a row's policy encoding is not the spec's."""
        size = policy_sizes([spec.policy_encoding])[spec.policy_encoding]
        encodings = table.column("policy_encoding").unique().to_pylist()
        if encodings and encodings != [spec.policy_encoding]:
            raise ShardTableError("policy_encoding", f"expected only {spec.policy_encoding!r}",
                                  value=encodings)  # fmt: skip
        offsets, index = list_numpy(table, "policy_index")
        prob_offsets, prob = list_numpy(table, "policy_prob")
        if not np.array_equal(offsets, prob_offsets):
            raise ShardTableError("policy_prob", "list lengths differ from policy_index")
        z = table.column("z").to_numpy().astype(np.float32)
        plies_left = moves_left_targets(table) if spec.moves_left else None
        z, plies_left = rescore_rows(table, z, plies_left, spec.known_endings, spec.tablebases)
        targets = wdl_targets if spec.value_head == "wdl" else value_targets
        return cls(
            decode_history(table),
            decode_meta(table),
            offsets,
            index.astype(np.uint16, copy=False),
            prob.astype(np.float32, copy=False),
            size,
            targets(table, z, spec.value_target, spec.q_ratio),
            plies_left,
        )

    def compact(self, rows: np.ndarray) -> CompactBatch:
        """The compact batch of group rows ``rows`` (:func:`expand_batch` gives :meth:`batch`)."""
        offsets, items = take_list_items(self.offsets, rows)
        return CompactBatch(
            torch.from_numpy(self.history[rows].view(np.int64)),
            torch.from_numpy(self.meta[rows]),
            torch.from_numpy(offsets),
            torch.from_numpy(self.index[items].astype(np.int32)),
            torch.from_numpy(self.prob[items]),
            torch.from_numpy(self.target[rows]),
            torch.from_numpy(self.plies_left[rows]) if self.plies_left is not None else None,
            self.policy_size,
        )

    def batch(self, rows: np.ndarray) -> Batch:
        """The batch of group rows ``rows`` (the same tensors as :func:`decode_batch`)."""
        planes, pi = decode_rows(
            self.history, self.meta, self.offsets, self.index, self.prob, rows, self.policy_size
        )
        batch = (torch.from_numpy(planes), torch.from_numpy(pi), torch.from_numpy(self.target[rows]))
        if self.plies_left is not None:
            return (*batch, torch.from_numpy(self.plies_left[rows]))
        return batch
