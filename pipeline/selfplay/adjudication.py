"""Scoring a self-play game that reached ``selfplay.max_plies``: deviations from AlphaZero.

AlphaZero scores a game that reaches its length limit as a draw (``max_plies``
here), so a long game teaches the value head nothing.  Two options, both off
unless the configuration (or a preset) turns them on, give such a game a
result from knowledge that is not the network's own:

* ``selfplay.adjudicate_material``: the side ahead in material by at least
  ``selfplay.material_margin`` points (pawn 1, knight 3, bishop 3, rook 5,
  queen 9) wins, otherwise a draw; termination ``material``.
* ``selfplay.adjudicate_stockfish``: a short Stockfish search of the final
  position (``selfplay.stockfish_adjudication_nodes`` nodes): a win for the side
  it scores beyond ``selfplay.stockfish_adjudication_cp`` centipawns (or with
  a mate), otherwise a draw; termination ``stockfish_adjudication``.

:class:`Adjudicator` applies them; :class:`~pipeline.selfplay.worker.SelfPlayWorker`
calls it for each game that ended with ``max_plies``, on both search backends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import chess

from pipeline.config_errors import ConfigError
from pipeline.selfplay.config import SelfPlayConfig

if TYPE_CHECKING:
    import chess.engine

__all__ = ["PIECE_POINTS", "Adjudicator", "check_adjudication", "material_balance", "stockfish_for_adjudication"]

PIECE_POINTS = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}
"""Material points of each piece type (the project's one table of them; kings count nothing)."""
MATERIAL = "material"
STOCKFISH = "stockfish_adjudication"
_MATE_CP = 100_000


def material_balance(board: chess.Board) -> int:
    """White's material minus Black's, in points (P1 N3 B3 R5 Q9)."""
    return sum(
        points * (len(board.pieces(piece, chess.WHITE)) - len(board.pieces(piece, chess.BLACK)))
        for piece, points in PIECE_POINTS.items()
    )


def _winner_result(white_ahead: bool, black_ahead: bool) -> str:
    return "1-0" if white_ahead else "0-1" if black_ahead else "1/2-1/2"


def stockfish_for_adjudication(selfplay: SelfPlayConfig) -> str:
    """The Stockfish binary ``selfplay.adjudicate_stockfish`` uses; a
    :class:`ConfigError` naming the path and the setting when it is missing."""
    from pipeline.players.base import PlayerError
    from pipeline.players.stockfish import DEBIAN_PATH, find_stockfish

    try:
        return find_stockfish(selfplay.stockfish_path)
    except PlayerError:
        where = repr(selfplay.stockfish_path) if selfplay.stockfish_path else f"stockfish on PATH nor {DEBIAN_PATH}"
        raise ConfigError(
            f"selfplay.adjudicate_stockfish is on but Stockfish was not found ({where} is not an executable "
            "file); install it (apt-get install stockfish), set selfplay.stockfish_path, or turn "
            "selfplay.adjudicate_stockfish off"
        ) from None


def check_adjudication(selfplay: SelfPlayConfig) -> None:
    """Fail before any game starts when an adjudication cannot run (Stockfish missing)."""
    if selfplay.adjudicate_stockfish:
        stockfish_for_adjudication(selfplay)


class Adjudicator:
    """Gives a game that reached ``max_plies`` a result (see the module docstring).

    Stockfish (when used) starts at the first position it scores and stays up
    until :meth:`close`; its path is checked when the adjudicator is made.
    """

    def __init__(self, selfplay: SelfPlayConfig) -> None:
        self.selfplay = selfplay
        self._path = stockfish_for_adjudication(selfplay) if selfplay.adjudicate_stockfish else ""
        self._engine: chess.engine.SimpleEngine | None = None

    @property
    def enabled(self) -> bool:
        return self.selfplay.adjudicate_material or self.selfplay.adjudicate_stockfish

    def adjudicate(self, board: chess.Board) -> tuple[str, str] | None:
        """``(result, termination)`` for the final position of a game that hit
        the length limit, or None when no adjudication is on."""
        if self.selfplay.adjudicate_stockfish:
            return self._stockfish(board), STOCKFISH
        if self.selfplay.adjudicate_material:
            balance = material_balance(board)
            margin = self.selfplay.material_margin
            return _winner_result(balance >= margin, balance <= -margin), MATERIAL
        return None

    def _stockfish(self, board: chess.Board) -> str:
        import chess.engine

        if self._engine is None:
            self._engine = chess.engine.SimpleEngine.popen_uci(self._path)
            self._engine.configure({"Threads": 1, "Hash": 16})
        limit = chess.engine.Limit(nodes=self.selfplay.stockfish_adjudication_nodes)
        score = self._engine.analyse(board, limit)["score"].white().score(mate_score=_MATE_CP)
        threshold = self.selfplay.stockfish_adjudication_cp
        return _winner_result(score > threshold, score < -threshold)

    def close(self) -> None:
        """Stop Stockfish (if it was started)."""
        if self._engine is not None:
            engine, self._engine = self._engine, None
            try:
                engine.quit()
            except Exception:  # noqa: BLE001 - a dead engine: nothing left to stop
                engine.close()

    def __enter__(self) -> Adjudicator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
