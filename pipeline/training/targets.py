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

A win/draw/loss value head (``net.value_head: wdl``) learns a distribution
over (win, draw, loss) instead (:func:`wdl_targets`): z is one-hot, a q in
[-1, 1] with the root's draw probability D (shard column ``root_d``; 0 when
the search had none) is ``[(1 + q - D) / 2, D, (1 - q - D) / 2]`` (clipped
to a distribution), and ``mix`` mixes the two distributions with the same
weights, so the target's ``W - L`` is the scalar target above.

The moves-left head (``net.moves_left``) learns the plies left to the game's
end, ``game_plies - ply`` (:func:`moves_left_targets`; -1 where the game's
length is unknown, and such rows are left out of its loss).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.training.config import VALUE_TARGETS

LABEL_TERMINATION = "stockfish"
"""``termination`` of rows written by ``zerochess label`` (their root_q is Stockfish's value)."""

Q_COLUMNS = ("root_q", "root_visits", "termination", "root_d")
"""The shard columns a q or mix target reads besides z."""
MOVES_LEFT_COLUMNS = ("ply", "game_plies")
"""The shard columns the moves-left target reads."""
UNKNOWN_MOVES_LEFT = -1.0
"""The moves-left target of a row whose game length is unknown."""


def outcome_distribution(z: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """One-hot (win, draw, loss) ``[N, 3]`` of outcomes z in {-1, 0, 1} (side to move)."""
    return np.stack([z > 0, z == 0, z < 0], axis=1).astype(np.float32)


def expected_score_distribution(
    value: npt.NDArray[np.float32], draw: npt.NDArray[np.float32] | None = None
) -> npt.NDArray[np.float32]:
    """``[(1 + v - d) / 2, d, (1 - v - d) / 2]`` ``[N, 3]`` of values v in
    [-1, 1] and draw probabilities d (default 0): the (win, draw, loss)
    distribution with ``W - L = v`` and D = d.  A d above ``1 - |v|`` (no
    such distribution) is clipped: W and L at 0, then normalised to sum 1."""
    value = value.astype(np.float32)
    draw = np.zeros_like(value) if draw is None else np.clip(draw.astype(np.float32), 0.0, 1.0)
    win = np.maximum((1.0 + value - draw) / 2.0, 0.0)
    loss = np.maximum((1.0 - value - draw) / 2.0, 0.0)
    distribution = np.stack([win, draw, loss], axis=1)
    return (distribution / distribution.sum(axis=1, keepdims=True)).astype(np.float32)


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


def wdl_targets(
    table: pa.Table, z: npt.NDArray[np.float32], value_target: str, q_ratio: float
) -> npt.NDArray[np.float32]:
    """The (win, draw, loss) target ``[N, 3]`` of each row of ``table`` for a WDL
    value head (z is its decoded outcome column); rows sum to 1."""
    outcome = outcome_distribution(z)
    if value_target == "z":
        return outcome
    if value_target not in VALUE_TARGETS:
        raise ValueError(f"train.value_target must be one of {VALUE_TARGETS}, got {value_target!r}")
    q = np.clip(table.column("root_q").to_numpy(zero_copy_only=False).astype(np.float32), -1.0, 1.0)
    draw = None  # a table without the column (not read from a shard) has no D
    if "root_d" in table.column_names:
        draw = table.column("root_d").to_numpy(zero_copy_only=False).astype(np.float32)
    weight = 1.0 if value_target == "q" else float(q_ratio)
    mixed = (1.0 - weight) * outcome + weight * expected_score_distribution(q, draw)
    return np.where(has_q(table)[:, None], mixed, outcome).astype(np.float32)


def moves_left_targets(table: pa.Table) -> npt.NDArray[np.float32]:
    """The plies left to the game's end ``[N]`` of each row, ``game_plies -
    ply``; :data:`UNKNOWN_MOVES_LEFT` where the game's length is unknown."""
    ply = table.column("ply").to_numpy(zero_copy_only=False).astype(np.float32)
    game_plies = table.column("game_plies").to_numpy(zero_copy_only=False).astype(np.float32)
    return np.where(game_plies >= 0, game_plies - ply, UNKNOWN_MOVES_LEFT).astype(np.float32)
