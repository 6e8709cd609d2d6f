"""Players for evaluation matches: one small interface, several kinds.

A player chooses a move for a position under :class:`Limits`; see
:mod:`pipeline.players.base`.  Kinds: the network with PUCT search
(``net``), Stockfish (``stockfish``), a uniformly random mover (``random``)
and pure MCTS with random rollouts, optionally RAVE (``uct``).
"""
