"""A finished self-play game as shard rows ((s, pi, z) :class:`PositionRecord` s),
from either backend's record."""

from __future__ import annotations

from typing import TYPE_CHECKING

import chess
import numpy as np

from models.policy import PolicyMap
from pipeline.config_errors import ConfigError
from pipeline.selfplay.records import GameRecord, NativeGameRecord
from pipeline.shards import PositionRecord

if TYPE_CHECKING:
    from models.native_drivers import NativeGame

__all__ = ["game_positions"]


def game_positions(
    record: GameRecord | NativeGame, policy_map: PolicyMap, generation: int
) -> list[PositionRecord]:
    """The game's (s, pi, z) rows for a shard: pi is sparse over the visited
    moves, in ascending policy index (the same rows from both backends), with
    the search root's draw probability and the game's length in plies.

    ``record`` may be a native game (:class:`NativeGameRecord`, or the
    driver's ``NativeGame`` itself): its arrays are read directly, and pi is
    the search's target (visits / their sum for PUCT; the improved policy
    over every legal move for a Gumbel search).
    """
    if isinstance(record, NativeGameRecord):
        if record.policy_encoding != policy_map.name:
            raise ConfigError(
                f"game {record.game_id} was searched with policy encoding {record.policy_encoding!r}, "
                f"not {policy_map.name!r}"
            )
        return _native_positions(record.native, policy_map.name, generation)
    if not isinstance(record, GameRecord):
        return _native_positions(record, policy_map.name, generation)
    rows = []
    game_plies = len(record.plies)
    for index, ply in enumerate(record.plies):
        visits = ply.visits
        total = int(visits.sum())
        visited = np.flatnonzero(visits if ply.policy is None else ply.policy > 0)
        indices = policy_map.indices(chess.Board(ply.fen), [ply.moves[i] for i in visited])
        order = np.argsort(indices, kind="stable")
        indices, visited = indices[order], visited[order]
        if ply.policy is None:
            probs = (visits[visited] / total).astype(np.float32)
        else:  # Gumbel: the improved policy
            probs = np.asarray(ply.policy, dtype=np.float32)[visited]
        rows.append(
            PositionRecord(
                game_id=record.game_id,
                ply=index,
                fen=ply.fen,
                history=ply.history,
                meta=ply.meta,
                policy_encoding=policy_map.name,
                policy_index=indices,
                policy_prob=probs,
                z=record.z(index),
                root_q=ply.root_value,
                root_visits=total,
                full_search=ply.full_search,
                generation=generation,
                result=record.result,
                termination=record.termination,
                root_d=ply.root_draw,
                game_plies=game_plies,
            )
        )
    return rows


def _native_positions(game: NativeGame, policy_encoding: str, generation: int) -> list[PositionRecord]:
    """:func:`game_positions` of a native game, from its arrays."""
    rows = []
    offsets = game.policy_offsets
    targets = getattr(game, "policy_probs", None)  # the search's pi (Gumbel: the improved policy)
    root_d = getattr(game, "root_d", None)
    game_plies = len(game.moves)
    for ply in range(game_plies):
        span = slice(int(offsets[ply]), int(offsets[ply + 1]))
        indices = game.policy_index[span]
        visits = game.policy_visits[span]
        order = np.argsort(indices, kind="stable")
        indices, visits = indices[order], visits[order]
        total = int(visits.sum())
        probs = (visits / total).astype(np.float32) if targets is None else targets[span][order].astype(np.float32)
        rows.append(
            PositionRecord(
                game_id=game.game_id,
                ply=ply,
                fen=game.fens[ply],
                history=game.history[ply],
                meta=game.meta[ply],
                policy_encoding=policy_encoding,
                policy_index=indices,
                policy_prob=probs,
                z=game.z(ply),
                root_q=float(game.root_q[ply]),
                root_visits=total,
                full_search=bool(game.full_search[ply]),
                generation=generation,
                result=game.result,
                termination=game.termination,
                root_d=0.0 if root_d is None else float(root_d[ply]),
                game_plies=game_plies,
            )
        )
    return rows
