"""The value target a batch trains on: the game outcome z, the search's root q, or a mix.

AlphaZero trains the value head on the game outcome z only.  lc0 (its
``q_ratio``) and KataGo also use the root value q of the search that chose the
move: q carries signal from every position, even in drawn or adjudicated
games, while z is unbiased but noisy.  ``train.value_target``:

* ``z``: the outcome (AlphaZero);
* ``q``: the stored root q (for Stockfish-labelled positions: Stockfish's
  evaluation as an expected score);
* ``mix``: ``(1 - q_ratio) * z + q_ratio * q``.

Rows without a q (positions converted from PGN games: no search, no label)
keep z whatever the setting.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.training.config import VALUE_TARGETS

LABEL_TERMINATION = "stockfish"
"""``termination`` of rows written by ``zerochess label`` (their root_q is Stockfish's value)."""

Q_COLUMNS = ("root_q", "root_visits", "termination")
"""The shard columns a q or mix target reads besides z."""


def has_q(table: pa.Table) -> npt.NDArray[np.bool_]:
    """Rows whose ``root_q`` is a real estimate: searched (visits > 0) or labelled."""
    searched = table.column("root_visits").to_numpy(zero_copy_only=False) > 0
    labelled = pc.equal(table.column("termination"), LABEL_TERMINATION)
    return searched | labelled.to_numpy(zero_copy_only=False).astype(bool)


def value_targets(
    table: pa.Table, z: npt.NDArray[np.float32], value_target: str, q_ratio: float
) -> npt.NDArray[np.float32]:
    """The value target of each row of ``table`` (z is its decoded outcome column)."""
    if value_target == "z":
        return z
    if value_target not in VALUE_TARGETS:
        raise ValueError(f"train.value_target must be one of {VALUE_TARGETS}, got {value_target!r}")
    q = np.clip(table.column("root_q").to_numpy(zero_copy_only=False).astype(np.float32), -1.0, 1.0)
    weight = 1.0 if value_target == "q" else float(q_ratio)
    mixed = (1.0 - weight) * z + weight * q
    return np.where(has_q(table), mixed, z).astype(np.float32)
